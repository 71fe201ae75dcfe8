// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.relay;

import com.fasterxml.jackson.databind.JsonNode;
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
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A live upgrade of C_RELAY keeps its subscriptions, its gate check deadline and its streaks; what waits for the
 * output's EV_ON_DURABLE is acked upstream by the new revision when it comes. The stand-ins are RelayTest's.
 */
class RelayHandoverTest {
    private static final long GRACE_MS = 100;

    private final ManualClock clock = new ManualClock();
    private final LogCapture logs = new LogCapture();
    private YunoRuntime rt;

    @BeforeEach
    void setUp() {
        rt = YunoRuntime.builder().name("relay").clock(clock).upgradeGraceMs(GRACE_MS)
                .gclass(Relay.SPEC, RelayTest.GATE, RelayTest.DURABLE_OUTPUT)
                .config("{\"services\": ["
                        + "{\"name\": \"in\", \"gclass\": \"C_IOGATE\"},"
                        + "{\"name\": \"out\", \"gclass\": \"C_SOME_DURABLE_OUTPUT\"},"
                        + "{\"name\": \"relay\", \"gclass\": \"C_RELAY\", \"kw\": {\"input\": \"in\", \"output\": \"out\"}}]}")
                .build().start();
    }

    @AfterEach
    void tearDown() {
        logs.close();
        rt.close();
    }

    private void receiveWithMd(String id, int rowid) {
        String json = "{\"id\": \"" + id + "\", \"__md_trq__\": {\"__msg_rowid__\": " + rowid + ", \"__msg_t__\": 9}}";
        rt.run(() -> {
            ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer(json, StandardCharsets.UTF_8));
            kw.putObject(Kw.TEMP).put("channel", "in-1");
            rt.service("in").publish(Ev.EV_ON_MESSAGE, kw);
        });
    }

    private RelayTest.FakeDurableOutput output() {
        return rt.call(() -> (RelayTest.FakeDurableOutput) rt.service("out").behavior());
    }

    private List<String> storedIds() {
        return rt.call(() -> {
            List<String> ids = new ArrayList<>();
            for (ObjectNode m : output().stored) ids.add(m.get("id").asText());
            return ids;
        });
    }

    private List<ObjectNode> acks() {
        return rt.call(() -> new ArrayList<>(((RelayTest.FakeGate) rt.service("in").behavior()).sent));
    }

    private JsonNode stats() {
        return rt.command("stats-yuno service=relay").get("data");
    }


    private void upgrade() {
        Revision.handOver(rt, Revision.next(Relay.SPEC), 1);
    }

    @Test
    void shouldAckUpstreamWhatTheOutputMakesDurableAfterTheUpgrade() {
        receiveWithMd("before", 5);
        GObjBehavior old = rt.call(() -> rt.service("relay").behavior());
        JsonNode statsBefore = stats();
        upgrade();
        assertNotSame(old, rt.call(() -> rt.service("relay").behavior()));
        assertEquals(statsBefore, stats(), "same counters");
        assertTrue(acks().isEmpty());
        rt.run(() -> output().confirmAll());
        assertEquals(1, acks().size(), "acked by the new revision");
        assertTrue(acks().get(0).get("payload").asText().contains("\"__msg_rowid__\":5"), acks().toString());
        assertTrue(acks().get(0).get("has_temp").asBoolean(), "on the connection the message came from");
        receiveWithMd("after", 6);
        assertEquals(List.of("before", "after"), storedIds(), "subscribed once: each message forwarded once");
        assertEquals(1, stats().get("acks_sent").asInt());
        assertEquals(2, stats().get("txMsgs").asInt());
    }

    @Test
    void shouldCheckTheGatesAtTheOldDeadline() {
        clock.advance(300);                            // the next check is due at 500
        rt.gclassesGone(List.of("C_IOGATE"));
        rt.gclassArrived(RelayTest.GATE);              // a plain gate, rebuilt: nobody is subscribed to it
        upgrade();
        clock.advance(199);
        receiveWithMd("not-yet", 1);
        assertTrue(storedIds().isEmpty(), "not before the old deadline");
        clock.advance(1);
        receiveWithMd("at-500", 2);
        assertEquals(List.of("at-500"), storedIds(), "subscribed again at the old deadline, not 500 ms after the upgrade");
    }

    @Test
    void shouldHoldWhatComesWhileSuspendedAndCheckNoGateMeanwhile() {
        receiveWithMd("m1", 1);
        rt.gclassesGone(List.of("C_RELAY"));
        receiveWithMd("m2", 2);
        rt.run(() -> output().confirmAll());           // m1 durable while the relay waits: held too
        clock.advance(50);
        assertEquals(List.of("m1"), storedIds());
        assertTrue(acks().isEmpty());
        upgrade();
        assertEquals(List.of("m1", "m2"), storedIds(), "in the order they came");
        assertEquals(1, acks().size(), "m1 acked by the new revision");
        assertEquals(2, stats().get("rxMsgs").asInt());
    }

    @Test
    void shouldGoOnWithTheStreakOfAMissingOutput() {
        rt.gclassesGone(List.of("C_SOME_DURABLE_OUTPUT"));
        clock.advance(GRACE_MS);                      // the output's service is down until its gclass is back
        receiveWithMd("lost-1", 1);
        receiveWithMd("lost-2", 2);
        upgrade();
        receiveWithMd("lost-3", 3);
        assertEquals(1, logs.count("Output gate NOT FOUND, messages not forwarded until it is back"),
                "said once for the streak across the upgrade: " + logs.all());
        rt.gclassArrived(RelayTest.DURABLE_OUTPUT);
        receiveWithMd("back", 4);
        assertEquals(3L, logs.with("Output gate back").get(0).fields.get("refused"), logs.all().toString());
        assertEquals(3, stats().get("nacks_sent").asInt());
    }

    @Test
    void shouldRebuildWhenTheNewRevisionTakesNoState() {
        receiveWithMd("waiting", 1);
        GObj before = rt.call(() -> rt.service("relay"));
        ObjectNode report = rt.gclassArrived(Revision.of(Relay.SPEC, 0, Relay.SPEC.factory()));
        assertEquals("relay", report.get("rebuilt").get(0).get("service").asText(), report.toString());
        assertEquals(1, logs.count("Live upgrade not possible, service rebuilt from its config"), logs.all().toString());
        assertNotSame(before, rt.call(() -> rt.service("relay")));
        rt.run(() -> output().confirmAll());
        assertTrue(acks().isEmpty(), "the old relay is gone: its producer is not acked and sends again (0 lost)");
        receiveWithMd("next", 2);
        assertEquals(List.of("waiting", "next"), storedIds(), "the rebuilt relay forwards");
    }

    /** The relay over an output that answers tokens: the acks owed go to the next revision with their routes. */
    private void startWithTokenOutput(int relayStateVersion) {
        rt.close();
        rt = YunoRuntime.builder().name("relay").clock(clock).upgradeGraceMs(GRACE_MS)
                .gclass(Revision.of(Relay.SPEC, relayStateVersion, Relay.SPEC.factory()), RelayTest.GATE,
                        RelayTest.TOKEN_OUTPUT)
                .config("{\"services\": ["
                        + "{\"name\": \"in\", \"gclass\": \"C_IOGATE\"},"
                        + "{\"name\": \"out\", \"gclass\": \"C_SOME_TOKEN_OUTPUT\"},"
                        + "{\"name\": \"relay\", \"gclass\": \"C_RELAY\", \"kw\": {\"input\": \"in\", \"output\": \"out\"}}]}")
                .build().start();
    }

    @Test
    void shouldAckTheTokensToldAfterTheUpgradeWithWhatTheOldRevisionKept() {
        startWithTokenOutput(Relay.STATE_VERSION);
        for (int i = 1; i <= 300; i++) receiveWithMd("m" + i, i);
        rt.run(() -> output().confirmTokens(new ArrayList<>(output().tokens.subList(0, 100)), 0));
        assertEquals(100, acks().size());
        upgrade();
        assertEquals(200, stats().get("pending_acks").asInt(), "the acks owed, handed over");
        receiveWithMd("m301", 301);
        List<Long> tokens = rt.call(() -> new ArrayList<>(output().tokens));
        assertEquals(301L, tokens.get(300), "the new revision's tokens follow the old one's");
        rt.run(() -> output().confirmTokens(tokens.subList(100, 301), 0));
        List<ObjectNode> acks = acks();
        assertEquals(301, acks.size());
        for (int i = 1; i <= 301; i++) {
            assertEquals("{\"__md_trq__\":{\"__msg_rowid__\":" + i + ",\"__msg_t__\":9,\"result\":0}}",
                    acks.get(i - 1).get("payload").asText());
            assertTrue(acks.get(i - 1).get("has_temp").asBoolean(), "on the connection it came from");
        }
        assertEquals(0, stats().get("pending_acks").asInt());
    }

    @Test
    void shouldAckABatchOnceWhenItsLastMessagesAreToldAfterTheUpgrade() {
        startWithTokenOutput(Relay.STATE_VERSION);
        for (int req = 1; req <= 2; req++) {
            int r = req;
            rt.run(() -> {
                ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer("{\"a\":1}\n{\"a\":2}\n{\"a\":3}",
                        StandardCharsets.UTF_8));
                kw.putObject(Kw.MD_TRQ).put("conn", 5).put("req", r);
                Kw.putRef(kw, Kw.BATCH, new int[] {0, 7, 8, 15, 16, 23});
                kw.putObject(Kw.TEMP).put("channel", "in-1");
                rt.service("in").publish(Ev.EV_ON_MESSAGE, kw);
            });
        }
        // the first batch: one message told and one refused before the upgrade (answered: a nack), one after;
        // the second: two told before, the last after
        rt.run(() -> output().confirmTokens(List.of(1L, 2L, 2L), 0));
        rt.run(() -> output().confirmTokens(List.of(1L), -1));
        assertEquals(List.of("{\"__md_trq__\":{\"conn\":5,\"req\":1,\"result\":-1}}"), payloads());
        upgrade();
        assertEquals(2, stats().get("pending_acks").asInt(), "both batches, one of them answered, handed over");
        rt.run(() -> output().confirmTokens(List.of(1L, 2L), 0));
        assertEquals(List.of("{\"__md_trq__\":{\"conn\":5,\"req\":1,\"result\":-1}}",
                "{\"__md_trq__\":{\"conn\":5,\"req\":2,\"result\":0}}"), payloads());
        assertEquals(0, stats().get("pending_acks").asInt());
    }

    private List<String> payloads() {
        List<String> out = new ArrayList<>();
        for (ObjectNode a : acks()) out.add(a.get("payload").asText());
        return out;
    }

    @Test
    void shouldTakeTheStateOfARevisionBeforeTokens() {
        startWithTokenOutput(1);
        receiveWithMd("m1", 1);
        // the revision running declared state version 1: the new one (2) takes it
        ObjectNode report = rt.gclassArrived(Relay.SPEC);
        assertEquals(0, report.path("rebuilt").size(), report.toString());
        receiveWithMd("m2", 2);
        rt.run(() -> output().confirmTokens(new ArrayList<>(output().tokens), 0));
        assertEquals(2, acks().size());
    }
}
