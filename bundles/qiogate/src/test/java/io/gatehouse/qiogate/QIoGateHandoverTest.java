// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.core.YunoRuntime;
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
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A live upgrade of C_QIOGATE (and of the trqueue under it) keeps the gate: the same queue handle, or the topic
 * opened again through the new trqueue, and the in-flight window with its times, retries and bytes, so nothing in
 * flight is sent again and the acks that come after the upgrade clear what they ack. The new revision is a second
 * spec of the same behaviour class, as a second bundle revision registers it.
 */
class QIoGateHandoverTest {
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

    // --- given/when/then helpers ---

    /** The revision of C_QIOGATE the DS component of a qiogate bundle registers over {@code factory}. */
    static GClassSpec<?> revision(MemTrQueueFactory factory) {
        return new QIoGateGClass(factory).spec();
    }

    void givenGate(String kw) {
        String cfg = "{\"services\":[{\"name\":\"q\",\"gclass\":\"C_QIOGATE\",\"kw\":" + kw
                + ",\"children\":[{\"name\":\"b\",\"gclass\":\"C_FAKE_BOTTOM\"}]}]}";
        rt = YunoRuntime.builder().name("t").dataDir(tmp).clock(clock).upgradeGraceMs(60_000)
                .gclass(revision(qf), FakeBottom.SPEC).config(cfg).build().start();
    }

    GObj gate() {
        return rt.call(() -> rt.yuno().service("q"));
    }

    QIoGate behaviour() {
        return rt.call(() -> (QIoGate) gate().behavior());
    }

    FakeBottom bottom() {
        return rt.call(() -> (FakeBottom) rt.yuno().service("q").child("b").behavior());
    }

    TrQueue queue() {
        return rt.call(() -> ((QIoGate) gate().behavior()).queue());
    }

    void send(int n) {
        for (int i = 1; i <= n; i++) {
            String id = String.valueOf(i);
            assertEquals(0, rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, Kw.create().put("id", id), null)));
        }
        // the gate sends after the events, in the same turn of the loop: before the test moves the clock
        rt.run(() -> { });
    }

    void ack(int index, int result) {
        ObjectNode m = bottom().sent().get(index);
        rt.run(() -> bottom().ack(m, result));
    }

    JsonNode stats() {
        ObjectNode env = rt.command("stats-yuno service=q");
        assertEquals(0, env.get("result").asInt(), env.toString());
        return env.get("data");
    }

    JsonNode viewQueue() {
        ObjectNode env = rt.command("command-yuno service=q command=view-queue");
        assertEquals(0, env.get("result").asInt(), env.toString());
        return env.get("data");
    }

    void upgrade(GClassSpec<?> to) {
        Revision.handOver(rt, to, 1);
    }


    List<String> durableTags(Recorder r) {
        List<String> tags = new ArrayList<>();
        for (Recorder.Event e : r.events(Ev.EV_ON_DURABLE)) tags.add(e.kw.path("tag").asText());
        return tags;
    }

    // --- The gate's own upgrade ---

    @Test
    void shouldSendAMessageWhoseSendPassTheUpgradeOvertook() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        // the upgrade comes in the same turn as the message, after it was queued and before its send pass ran
        rt.run(() -> {
            assertEquals(0, gate().send(Ev.EV_SEND_MESSAGE, Kw.create().put("id", "1"), null));
            upgrade(revision(qf));
        });
        rt.run(() -> { });
        assertEquals(List.of(1L), bottom().sentRowids(), "sent by the new revision, without waiting for a poll tick");
        ack(0, 0);
        clock.advance(600_000);
        assertEquals(List.of(1L), bottom().sentRowids(), "once: the old revision's pass sent nothing");
        assertEquals(0, stats().get("msgs_in_queue").asInt());
    }

    @Test
    void shouldKeepTheQueueAndTheWindowAndSendNothingAgain() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send(4);
        ack(1, 0);
        JsonNode statsBefore = stats();
        JsonNode viewBefore = viewQueue();
        GObj g = gate();
        QIoGate old = behaviour();
        TrQueue q = queue();

        upgrade(revision(qf));

        assertSame(g, gate(), "the same gobj");
        assertNotSame(old, behaviour(), "a behaviour of the new revision");
        assertSame(q, queue(), "the same queue handle: nothing is loaded again");
        assertEquals(statsBefore, stats(), "same stats");
        assertEquals(viewBefore, viewQueue(), "same queue view: rows in flight, retries, times");
        assertEquals(List.of(1L, 2L, 3L, 4L), bottom().sentRowids(), "nothing sent again");

        ack(0, 0);
        ack(2, 0);
        ack(3, 0);
        assertEquals(0, stats().get("msgs_in_queue").asInt());
        assertEquals(0, stats().get("pending_acks").asInt());
        assertEquals(4, stats().get("acks").asInt(), "acks of before and after the upgrade");
        assertEquals(0, qf.topic("t").pendingOnDisk());
        send(1);
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), bottom().sentRowids(), "the next message follows the frontier");
        ack(4, 0);
        clock.advance(600_000);
        assertEquals(5, bottom().sent().size(), "no resend ever");
    }

    @Test
    void shouldResendAtTheOldAckDeadlinesAndKeepTheNackDelays() {
        givenGate("{\"topic_name\":\"t\",\"timeout_poll\":100,\"timeout_ack\":1,\"retry_delay\":300}");
        rt.run(() -> bottom().open());
        send(2);                     // sent at 0: due at 1000
        clock.advance(50);
        ack(1, -1);                  // rowid 2 nacked at 50: due again at 350, sent by the tick of 400
        clock.advance(150);          // t = 200

        upgrade(revision(qf));

        clock.advance(199);
        assertEquals(List.of(1L, 2L), bottom().sentRowids(), "the nacked one not before its retry delay");
        clock.advance(1);
        assertEquals(List.of(1L, 2L, 2L), bottom().sentRowids(), "at the first tick after its old retry deadline");
        clock.advance(599);
        assertEquals(3, bottom().sent().size(), "rowid 1 not before its old ack deadline");
        clock.advance(1);
        assertEquals(List.of(1L, 2L, 2L, 1L), bottom().sentRowids(), "at the old ack deadline (t = 1000)");
        JsonNode st = stats();
        assertEquals(2, st.get("retries").asInt(), "one retry per resend: the nack's and the timeout's");
        assertEquals(1, st.get("nacks").asInt());
        ack(2, 0);
        ack(3, 0);
        assertEquals(0, stats().get("msgs_in_queue").asInt());
    }

    @Test
    void shouldTickAtTheOldPhaseAfterTheUpgrade() {
        givenGate("{\"topic_name\":\"t\",\"timeout_poll\":1000,\"timeout_ack\":1}");
        rt.run(() -> bottom().open());
        clock.advance(300);
        send(1);                     // due at 1300: resent by the first tick at or after it, the one at 2000
        clock.advance(900);          // t = 1200
        upgrade(revision(qf));
        clock.advance(799);
        assertEquals(1, bottom().sent().size(), "the tick of 2000 has not come");
        clock.advance(1);
        assertEquals(2, bottom().sent().size(), "the tick at the old phase sends it again");
    }

    @Test
    void shouldHoldAcksWhileSuspendedAndApplyThemAfterTheHandover() {
        givenGate("{\"topic_name\":\"t\",\"timeout_poll\":100,\"timeout_ack\":1}");
        rt.run(() -> bottom().open());
        send(3);
        clock.advance(200);
        assertEquals(List.of("C_QIOGATE"), rt.gclassesGone(List.of("C_QIOGATE")));   // Bundle.update() began
        ack(0, 0);
        assertEquals(3, stats().get("msgs_in_queue").asInt(), "the ack waits in core");
        assertTrue(rt.command("command-yuno service=q command=view-queue").get("result").asInt() < 0,
                "commands that read the queue wait for the upgrade");
        clock.advance(1000);         // t = 1200: past the ack deadline, but a suspended gate sends nothing
        assertEquals(3, bottom().sent().size());

        upgrade(revision(qf));

        assertEquals(2, stats().get("msgs_in_queue").asInt(), "the held ack cleared its message");
        clock.advance(0);
        assertEquals(List.of(1L, 2L, 3L, 2L, 3L), bottom().sentRowids(),
                "the deadlines that passed while suspended come at once, for the unacked only");
    }

    @Test
    void shouldTellDurabilityOnceToTheSendersThatWaitedAcrossTheUpgrade() {
        qf.autoDurable = false;
        givenGate("{\"topic_name\":\"t\"}");
        Recorder sender = Recorder.create(rt, "sender");
        for (int i = 1; i <= 3; i++) {
            ObjectNode kw = Kw.create().put("id", String.valueOf(i));
            kw.putObject(Kw.DURABLE).put("tag", "t" + i);
            assertEquals(0, rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, kw, sender.gobj())));
        }
        rt.run(() -> ((MemTrQueueFactory.Mem) queue()).makeDurable(1));
        rt.run(() -> { });
        assertEquals(List.of("t1"), durableTags(sender));

        upgrade(revision(qf));
        rt.run(() -> ((MemTrQueueFactory.Mem) queue()).makeDurable());
        rt.run(() -> { });
        rt.run(() -> { });
        assertEquals(List.of("t1", "t2", "t3"), durableTags(sender), "once each, from the new revision");
        assertEquals("q", sender.events(Ev.EV_ON_DURABLE).get(2).src);
    }

    @Test
    void shouldTellDurabilityThatCameWhileSuspendedOnceTheNewRevisionIsThere() {
        qf.autoDurable = false;
        givenGate("{\"topic_name\":\"t\"}");
        Recorder sender = Recorder.create(rt, "sender");
        ObjectNode kw = Kw.create().put("id", "1");
        kw.putObject(Kw.DURABLE).put("tag", "t1");
        assertEquals(0, rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, kw, sender.gobj())));
        rt.gclassesGone(List.of("C_QIOGATE"));
        rt.run(() -> ((MemTrQueueFactory.Mem) queue()).makeDurable());
        rt.run(() -> { });
        assertTrue(durableTags(sender).isEmpty(), "a suspended gate tells nobody");
        upgrade(revision(qf));
        rt.run(() -> { });
        assertEquals(List.of("t1"), durableTags(sender));
    }

    // --- trqueue changing under the gate ---

    @Test
    void shouldOpenTheTopicAgainThroughTheUpdatedTrqueueAndKeepTheWindow() {
        qf.autoDurable = false;
        givenGate("{\"topic_name\":\"t\"}");
        Recorder sender = Recorder.create(rt, "sender");
        rt.run(() -> bottom().open());
        send(3);
        ObjectNode kw = Kw.create().put("id", "4");
        kw.putObject(Kw.DURABLE).put("tag", "t4");
        assertEquals(0, rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, kw, sender.gobj())));
        ack(0, 0);
        TrQueue before = queue();

        // Bundle.update() of trqueue: its factory service goes, C_QIOGATE's component with it (core suspends the
        // gates), the old factory closes its queues, the new trqueue's factory comes, and C_QIOGATE with it.
        rt.gclassesGone(List.of("C_QIOGATE"));
        qf.close();
        MemTrQueueFactory updated = new MemTrQueueFactory(qf);
        updated.autoDurable = false;
        upgrade(revision(updated));

        assertTrue(((MemTrQueueFactory.Mem) before).isClosed());
        assertEquals(1, updated.opened.size(), "opened again through the new factory");
        assertSame(updated.opened.get(0), queue());
        assertEquals(1, logs.count("Upgrade: queue opened again through the trqueue now serving, in-flight window kept"),
                logs.all().toString());
        JsonNode st = stats();
        assertEquals(3, st.get("msgs_in_queue").asInt());
        assertEquals(3, st.get("pending_acks").asInt(), "still in flight, not sent again");
        assertEquals(List.of(1L, 2L, 3L, 4L), bottom().sentRowids());
        rt.run(() -> { });
        assertEquals(List.of("t4"), durableTags(sender), "the old trqueue forced what it wrote when it closed");

        ack(1, 0);
        ack(2, 0);
        ack(3, 0);
        assertEquals(0, stats().get("msgs_in_queue").asInt(), "acks after the upgrade clear the window");
        assertEquals(0, qf.topic("t").pendingOnDisk());
        send(1);
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), bottom().sentRowids());
        ack(4, 0);
        assertEquals(0, qf.topic("t").pendingOnDisk());
        clock.advance(600_000);
        assertEquals(5, bottom().sent().size(), "no resend");
    }

    @Test
    void shouldMoveToAHigherTrqueueInstalledBesideAndBackOnRollback() {
        givenGate("{\"topic_name\":\"t\",\"timeout_poll\":100,\"timeout_ack\":1}");
        rt.run(() -> bottom().open());
        send(3);
        clock.advance(500);
        MemTrQueueFactory higher = new MemTrQueueFactory(qf);

        // The greedy reference moves to the higher-ranked factory: the component goes and comes back with it, the
        // lower trqueue stays active (its handle still open, holding the topic's lock until the gate lets it go).
        rt.gclassesGone(List.of("C_QIOGATE"));
        upgrade(revision(higher));
        assertSame(higher.opened.get(0), queue());
        assertTrue(qf.opened.get(0).isClosed(), "the lower trqueue's handle was let go");
        ack(0, 0);
        assertEquals(2, stats().get("pending_acks").asInt());

        // The higher jar taken out again: back to the lower trqueue, with the window.
        rt.gclassesGone(List.of("C_QIOGATE"));
        higher.close();
        upgrade(revision(qf));
        assertSame(qf.opened.get(1), queue());
        assertEquals(2, stats().get("pending_acks").asInt());
        clock.advance(499);
        assertEquals(3, bottom().sent().size(), "nothing sent again before the old deadline");
        clock.advance(1);
        assertEquals(List.of(1L, 2L, 3L, 2L, 3L), bottom().sentRowids(), "the unacked ones at their deadline");
        ack(1, 0);
        ack(2, 0);
        assertEquals(0, stats().get("msgs_in_queue").asInt());
    }

    /**
     * What makes the move to a higher trqueue happen in OSGi: the component's reference to the factory is static
     * and greedy, so DS makes the component again when a better-ranked factory (a higher trqueue) registers.
     */
    @Test
    void shouldDeclareAGreedyStaticReferenceToTheFactory() throws java.io.IOException {
        String xml = java.nio.file.Files.readString(
                java.nio.file.Path.of("target/classes/OSGI-INF/io.gatehouse.qiogate.QIoGateGClass.xml"));
        assertTrue(xml.contains("interface=\"io.gatehouse.api.queue.TrQueueFactory\""), xml);
        assertTrue(xml.contains("policy-option=\"greedy\""), xml);
        assertFalse(xml.contains("policy=\"dynamic\""), xml);
    }

    @Test
    void shouldOpenAgainAHandleClosedUnderTheGateThroughTheSameFactory() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send(2);
        rt.gclassesGone(List.of("C_QIOGATE"));
        TrQueue q = queue();
        rt.run(q::close);
        upgrade(revision(qf));
        assertEquals(2, qf.opened.size(), "a closed handle is not kept");
        assertEquals(2, stats().get("pending_acks").asInt());
        ack(0, 0);
        ack(1, 0);
        assertEquals(0, stats().get("msgs_in_queue").asInt());
    }

    // --- When it cannot be handed over ---

    @Test
    void shouldRebuildAndLoseNothingWhenTheNewRevisionTakesNoState() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send(3);
        ack(0, 0);
        GObj before = gate();
        ObjectNode report = rt.gclassArrived(Revision.of(QIoGate.SPEC, 0, g -> new QIoGate(g, qf)));
        assertEquals(0, report.get("gobjs_migrated").asInt());
        assertEquals("q", report.get("rebuilt").get(0).get("service").asText());
        assertTrue(report.get("rebuilt").get(0).get("reason").asText().contains("does not take state"), report.toString());
        assertEquals(1, logs.count("Live upgrade not possible, service rebuilt from its config"), logs.all().toString());
        assertNotSame(before, gate());
        assertEquals(2, stats().get("msgs_in_queue").asInt(), "what was pending is on disk");
        rt.run(() -> bottom().open());
        assertEquals(List.of(2L, 3L), bottom().sentRowids(), "sent again by the rebuilt gate: 0 lost");
    }

    @Test
    void shouldRebuildWhenTheStateIsOfAVersionItDoesNotTake() {
        String cfg = "{\"services\":[{\"name\":\"q\",\"gclass\":\"C_QIOGATE\",\"kw\":{\"topic_name\":\"t\"},"
                + "\"children\":[{\"name\":\"b\",\"gclass\":\"C_FAKE_BOTTOM\"}]}]}";
        GClassSpec<QIoGate> future = Revision.of(QIoGate.SPEC, 3, g -> new QIoGate(g, qf));
        rt = YunoRuntime.builder().name("t").dataDir(tmp).clock(clock).gclass(future, FakeBottom.SPEC).config(cfg)
                .build().start();
        rt.run(() -> bottom().open());
        send(2);
        ObjectNode report = rt.gclassArrived(revision(qf));   // a downgrade to a revision that knows version 1 only
        assertTrue(report.get("rebuilt").get(0).get("reason").asText().contains("takes state versions 1 to 2, not 3"),
                report.toString());
        assertEquals(2, stats().get("msgs_in_queue").asInt());
        assertTrue(queue() != null && qf.opened.get(0) != queue(), "the handle of the refused state was closed");
        assertTrue(qf.opened.get(0).isClosed());
    }

    @Test
    void shouldHoldNothingOnceExported() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send(1);
        QIoGate old = behaviour();
        upgrade(revision(qf));
        assertEquals(null, rt.call(old::queue), "the old behaviour let the queue go");
        GObjBehavior now = rt.call(() -> gate().behavior());
        assertFalse(now == old);
    }
}
