// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.qiogate.QIoGateGClass;
import io.gatehouse.testkit.FakeBottom;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.MemTrQueueFactory;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Revision;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A live upgrade of C_MQIOGATE (and of its C_QIOGATE children) keeps the broadcast joins in flight: an
 * EV_ON_DURABLE that comes after the upgrade still completes the join a message began before it, and the sender is
 * told once. Routing and the streaks go on as they were.
 */
class MqIoGateHandoverTest {
    @TempDir
    Path tmp;

    final MemTrQueueFactory qf = new MemTrQueueFactory();
    final ManualClock clock = new ManualClock();
    final LogCapture logs = new LogCapture();
    YunoRuntime rt;

    @AfterEach
    void close() {
        logs.close();
        if (rt != null) rt.close();
    }

    static String child(String name) {
        return "{\"name\":\"" + name + "\",\"gclass\":\"C_QIOGATE\",\"kw\":{\"topic_name\":\"gate_events\"},"
                + "\"children\":[{\"name\":\"" + name + "\",\"gclass\":\"C_FAKE_BOTTOM\"}]}";
    }

    void givenGate(String kw, String... children) {
        List<String> c = new ArrayList<>();
        for (String n : children) c.add(child(n));
        String cfg = "{\"services\":[{\"name\":\"__output_side__\",\"gclass\":\"C_MQIOGATE\",\"kw\":" + kw
                + ",\"children\":[" + String.join(",", c) + "]}]}";
        rt = YunoRuntime.builder().name("t").dataDir(tmp).clock(clock).upgradeGraceMs(60_000)
                .gclass(MqIoGate.SPEC, new QIoGateGClass(qf).spec(), FakeBottom.SPEC).config(cfg).build().start();
    }

    GObj gate() {
        return rt.call(() -> rt.yuno().service("__output_side__"));
    }

    int sendDurable(Recorder sender, String id) {
        ObjectNode kw = Kw.create().put("id", id);
        kw.putObject(Kw.DURABLE).put("tag", "t-" + id);
        return rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, kw, sender.gobj()));
    }

    int send(String json) {
        return rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, Kw.parse(json), null));
    }

    void drainLoop() {
        rt.run(() -> { });
        rt.run(() -> { });
    }

    void makeDurable(int queue) {
        MemTrQueueFactory.Mem q = qf.opened.get(queue);
        rt.run(q::makeDurable);
        drainLoop();
    }


    @Test
    void shouldCompleteAJoinBegunBeforeTheUpgradeWithTheDurabilityThatComesAfter() {
        qf.autoDurable = false;
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2", "Q3");
        Recorder sender = Recorder.create(rt, "sender");
        assertEquals(0, sendDurable(sender, "1"));
        makeDurable(0);
        GObjBehavior old = rt.call(() -> gate().behavior());

        Revision.handOver(rt, Revision.next(MqIoGate.SPEC), 1);

        assertNotSame(old, rt.call(() -> gate().behavior()));
        makeDurable(1);
        assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "one copy still to be durable");
        makeDurable(2);
        Recorder.Event told = sender.await(Ev.EV_ON_DURABLE, 5000);
        assertNotNull(told, "the join completed by the new revision");
        assertEquals("t-1", told.kw.path("tag").asText());
        assertEquals("__output_side__", told.src);
        drainLoop();
        assertEquals(1, sender.count(Ev.EV_ON_DURABLE), "once");
    }

    @Test
    void shouldCompleteTheJoinWhenTheGateAndItsChildrenAreUpgradedWhileSuspended() {
        qf.autoDurable = false;
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2");
        Recorder sender = Recorder.create(rt, "sender");
        assertEquals(0, sendDurable(sender, "1"));
        rt.gclassesGone(List.of("C_MQIOGATE"));
        rt.gclassesGone(List.of("C_QIOGATE"));
        makeDurable(0);
        makeDurable(1);
        assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "suspended children tell nobody");
        Revision.handOver(rt, new QIoGateGClass(qf).spec(), 2);
        drainLoop();
        assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "the children told the gate, which still waits for its revision");
        Revision.handOver(rt, Revision.next(MqIoGate.SPEC), 1);
        assertNotNull(sender.await(Ev.EV_ON_DURABLE, 5000), "the held EV_ON_DURABLEs complete the join");
        drainLoop();
        assertEquals(1, sender.count(Ev.EV_ON_DURABLE));
    }

    @Test
    void shouldNotTellAJoinThatFailedBeforeTheUpgrade() {
        qf.autoDurable = false;
        qf.failingTopics.add("Q2/gate_events");
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2", "Q3");
        Recorder sender = Recorder.create(rt, "sender");
        assertEquals(-1, sendDurable(sender, "1"));
        Revision.handOver(rt, Revision.next(MqIoGate.SPEC), 1);
        makeDurable(0);
        makeDurable(2);
        assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "Q2 did not store its copy");
        qf.failingTopics.clear();
        assertEquals(0, send("{\"id\":\"ok\"}"));
        assertEquals(1L, logs.with("Broadcast: every child stores its copy again").get(0).fields.get("refused"),
                "the streak went on across the upgrade: " + logs.all());
        assertEquals(1, logs.count("Broadcast: a child could not store its copy (said once until every child stores)"),
                logs.all().toString());
    }

    @Test
    void shouldRouteAsBeforeAndAnswerTheSameStats() {
        givenGate("{\"method\":\"lastdigits\",\"digits\":1}", "output-0", "output-1");
        send("{\"id\":\"dev-0043\"}");
        JsonNode before = rt.command("stats-yuno service=__output_side__").get("data");
        Revision.handOver(rt, Revision.next(MqIoGate.SPEC), 1);
        assertEquals(before, rt.command("stats-yuno service=__output_side__").get("data"));
        ObjectNode which = rt.command("command-yuno service=__output_side__ command=which-child key=dev-0042");
        assertEquals("output-0", which.path("data").path("child").asText(), which.toString());
        send("{\"id\":\"dev-0045\"}");
        assertEquals(2, rt.command("stats-yuno service=__output_side__").get("data").get("output-1")
                .get("msgs_in_queue").asInt());
    }

    @Test
    void shouldRebuildWhenTheNewRevisionTakesNoStateAndLoseNothing() {
        givenGate("{\"method\":\"lastdigits\",\"digits\":1}", "output-0", "output-1");
        send("{\"id\":\"dev-0042\"}");
        send("{\"id\":\"dev-0043\"}");
        GObj before = gate();
        ObjectNode report = rt.gclassArrived(Revision.of(MqIoGate.SPEC, 0, MqIoGate.SPEC.factory()));
        assertEquals("__output_side__", report.get("rebuilt").get(0).get("service").asText(), report.toString());
        assertEquals(1, logs.count("Live upgrade not possible, service rebuilt from its config"), logs.all().toString());
        assertNotSame(before, gate());
        JsonNode st = rt.command("stats-yuno service=__output_side__").get("data");
        assertEquals(1, st.get("output-0").get("msgs_in_queue").asInt(), "the queues loaded what was pending");
        assertEquals(1, st.get("output-1").get("msgs_in_queue").asInt());
        assertTrue(report.get("rebuilt").get(0).get("reason").asText().contains("does not take state"));
    }
}
