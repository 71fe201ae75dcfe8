// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.sink;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Revision;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A live upgrade of C_SINK keeps the ids it has seen (so a duplicate after the upgrade is still told apart), its
 * counters, its subscriptions and its gate check deadline. The stand-in gate is SinkTest's.
 */
class SinkHandoverTest {
    private final ManualClock clock = new ManualClock();
    private final LogCapture logs = new LogCapture();
    private YunoRuntime rt;

    @BeforeEach
    void setUp() {
        rt = YunoRuntime.builder().name("sink").clock(clock).upgradeGraceMs(60_000).gclass(Sink.SPEC, SinkTest.GATE)
                .config("{\"services\": [{\"name\": \"in\", \"gclass\": \"C_IOGATE\"},"
                        + "{\"name\": \"sink\", \"gclass\": \"C_SINK\", \"kw\": {\"input\": \"in\", \"max_ids\": 2}}]}")
                .build().start();
    }

    @AfterEach
    void tearDown() {
        rt.close();
        logs.close();
    }

    private void receive(String id) {
        String json = "{\"id\": \"" + id + "\"}";
        rt.run(() -> rt.service("in").publish(Ev.EV_ON_MESSAGE,
                Kw.withGbuffer(Unpooled.copiedBuffer(json, StandardCharsets.UTF_8))));
    }

    private ObjectNode stats() {
        return (ObjectNode) rt.command("stats-yuno service=sink").get("data");
    }

    private ObjectNode checkIds(int from, int to) {
        return (ObjectNode) rt.command("command-yuno service=sink command=check-ids from=" + from + " to=" + to)
                .get("data");
    }

    private void upgrade() {
        Revision.handOver(rt, Revision.next(Sink.SPEC), 1);
    }

    @Test
    void shouldTellDuplicatesAndGapsOfIdsSeenBeforeTheUpgrade() {
        for (int i = 0; i < 1000; i += 2) receive("msg-" + i);
        receive("a");
        receive("b");
        receive("c");                                  // past max_ids: untracked, ids_overflow
        ObjectNode statsBefore = stats();
        ObjectNode idsBefore = checkIds(0, 999);
        GObjBehavior old = rt.call(() -> rt.service("sink").behavior());

        upgrade();

        assertNotSame(old, rt.call(() -> rt.service("sink").behavior()));
        assertEquals(statsBefore, stats(), "same counters and overflow flag");
        assertEquals(idsBefore, checkIds(0, 999), "same gaps: 500 of 1000 missing, the first at 1");
        receive("msg-998");
        receive("a");
        receive("msg-999");
        ObjectNode st = stats();
        assertEquals(2, st.get("duplicates").asInt(), "msg-998 and a were seen before the upgrade");
        assertEquals(statsBefore.get("distinct_ids").asInt() + 1, st.get("distinct_ids").asInt());
        assertEquals(499, checkIds(0, 999).get("missing").asInt());
        assertEquals(999, checkIds(0, -1).get("to").asInt(), "the highest id seen, across the upgrade");
    }

    @Test
    void shouldCheckTheGatesAtTheOldDeadline() {
        clock.advance(300);                            // the next check is due at 500
        rt.gclassesGone(List.of("C_IOGATE"));
        rt.gclassArrived(SinkTest.GATE);               // rebuilt: nobody listens to the new gate yet
        upgrade();
        clock.advance(199);
        receive("msg-1");
        assertEquals(0, stats().get("rxMsgs").asInt(), "not before the old deadline");
        clock.advance(1);
        receive("msg-2");
        assertEquals(1, stats().get("rxMsgs").asInt(), "subscribed again at the old deadline");
    }

    @Test
    void shouldCountWhatCameWhileSuspendedOnceTheNewRevisionIsThere() {
        receive("msg-1");
        rt.gclassesGone(List.of("C_SINK"));
        receive("msg-1");
        receive("msg-2");
        assertEquals(1, stats().get("rxMsgs").asInt(), "held in core");
        upgrade();
        ObjectNode st = stats();
        assertEquals(3, st.get("rxMsgs").asInt());
        assertEquals(1, st.get("duplicates").asInt());
        assertEquals(2, st.get("distinct_ids").asInt());
    }

    @Test
    void shouldRebuildAndStartFreshWhenTheNewRevisionTakesNoState() {
        receive("msg-1");
        GObj before = rt.call(() -> rt.service("sink"));
        ObjectNode report = rt.gclassArrived(Revision.of(Sink.SPEC, 0, Sink.SPEC.factory()));
        assertEquals("sink", report.get("rebuilt").get(0).get("service").asText(), report.toString());
        assertEquals(1, logs.count("Live upgrade not possible, service rebuilt from its config"), logs.all().toString());
        assertNotSame(before, rt.call(() -> rt.service("sink")));
        assertEquals(0, stats().get("rxMsgs").asInt(), "built again from its config");
        receive("msg-2");
        assertEquals(1, stats().get("rxMsgs").asInt(), "and listening");
    }
}
