package io.gatehouse.relay;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RelayTest {
    /** Stands for an input C_IOGATE: records what is sent back to it (the acks). */
    static final class FakeGate implements GObjBehavior {
        final List<ObjectNode> sent = new ArrayList<>();
        final GObj gobj;

        FakeGate(GObj g) { this.gobj = g; }

        int acSend(String ev, ObjectNode kw, GObj src) {
            ByteBuf b = Kw.takeGbuffer(kw);
            ObjectNode copy = Kw.withoutRefs(kw);
            if (b != null) {
                copy.put("payload", b.toString(StandardCharsets.UTF_8));
                b.release();
            }
            copy.put("has_temp", kw.has(Kw.TEMP));
            sent.add(copy);
            return 0;
        }
    }

    /**
     * Any output that confirms durability (a queue, a Kafka producer): keeps the messages and who waits for their
     * EV_ON_DURABLE, refuses when told to, and confirms when the test says so.
     */
    static final class FakeQueue implements GObjBehavior {
        final GObj gobj;
        final List<ObjectNode> stored = new ArrayList<>();
        final List<GObj> waiting = new ArrayList<>();
        final List<ObjectNode> pendingDurable = new ArrayList<>();
        boolean refuse;

        FakeQueue(GObj g) {
            this.gobj = g;
        }

        int acSend(String ev, ObjectNode kw, GObj src) {
            if (refuse) return -1;
            JsonNode d = kw.remove(Kw.DURABLE);
            stored.add(kw);
            if (d instanceof ObjectNode) {
                waiting.add(src);
                pendingDurable.add((ObjectNode) d);
            }
            return 0;
        }

        /** Tells every waiting sender, as a queue does after the fsync. */
        void confirmAll() {
            for (int i = 0; i < waiting.size(); i++) waiting.get(i).send(Ev.EV_ON_DURABLE, pendingDurable.get(i), gobj);
            waiting.clear();
            pendingDurable.clear();
        }
    }

    static final GClassSpec<FakeGate> GATE = GClassSpec.builder("C_IOGATE", FakeGate.class)
            .description("a plain gate: takes messages, confirms nothing")
            .fsm(Fsm.<FakeGate>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, FakeGate::acSend)
                    .publishes(Ev.EV_ON_MESSAGE).build())
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(FakeGate::new).build();
    /** Named like no gclass the relay could know: the relay goes by the spec's declaration alone. */
    static final GClassSpec<FakeQueue> QUEUE = GClassSpec.builder("C_SOME_DURABLE_OUTPUT", FakeQueue.class)
            .description("an output that stores and confirms durability")
            .fsm(Fsm.<FakeQueue>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, FakeQueue::acSend).build())
            .confirmsDurability()
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(FakeQueue::new).build();

    private YunoRuntime rt;

    @AfterEach
    void tearDown() {
        if (rt != null) rt.close();
    }

    private void start(String outputGclass) {
        rt = YunoRuntime.builder().name("relay").gclass(Relay.SPEC, GATE, QUEUE)
                .config("{\"services\": ["
                        + "{\"name\": \"in\", \"gclass\": \"C_IOGATE\"},"
                        + "{\"name\": \"out\", \"gclass\": \"" + outputGclass + "\"},"
                        + "{\"name\": \"relay\", \"gclass\": \"C_RELAY\", \"kw\": {\"input\": \"in\", \"output\": \"out\"}}]}")
                .build().start();
    }

    private void receive(String json) {
        rt.run(() -> {
            GObj in = rt.service("in");
            ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer(json, StandardCharsets.UTF_8));
            ObjectNode temp = kw.putObject(Kw.TEMP);
            temp.put("channel", "in-1");
            in.publish(Ev.EV_ON_MESSAGE, kw);
        });
    }

    private FakeQueue queue() {
        return rt.call(() -> (FakeQueue) rt.service("out").behavior());
    }

    private FakeGate input() {
        return rt.call(() -> (FakeGate) rt.service("in").behavior());
    }

    @Test
    void shouldAckUpstreamOnlyAfterTheQueueSaysDurable() {
        start("C_SOME_DURABLE_OUTPUT");
        receive("{\"id\": \"msg-1\", \"__md_trq__\": {\"__msg_rowid__\": 5, \"__msg_t__\": 9}}");
        assertEquals(1, rt.call(() -> queue().stored.size()));
        ObjectNode stored = rt.call(() -> queue().stored.get(0));
        assertEquals("msg-1", stored.get("id").asText());
        assertNull(stored.get("__md_trq__"), "the upstream metadata is not stored downstream");
        assertNull(stored.get(Kw.DURABLE), "the durability request is the output's, not part of the message");
        assertTrue(rt.call(() -> input().sent.isEmpty()), "no ack before durability");
        rt.run(() -> queue().confirmAll());
        List<ObjectNode> acks = rt.call(() -> input().sent);
        assertEquals(1, acks.size());
        assertTrue(acks.get(0).get("payload").asText().contains("\"__msg_rowid__\":5"), acks.toString());
        assertTrue(acks.get(0).get("payload").asText().contains("\"result\":0"), acks.toString());
        assertTrue(acks.get(0).get("has_temp").asBoolean(), "the ack goes back on the same connection");
    }

    @Test
    void shouldNackWhatTheOutputRefuses() {
        start("C_SOME_DURABLE_OUTPUT");
        rt.run(() -> queue().refuse = true);
        receive("{\"id\": \"msg-2\", \"__md_trq__\": {\"__msg_rowid__\": 6, \"__msg_t__\": 9}}");
        List<ObjectNode> answers = rt.call(() -> input().sent);
        assertEquals(1, answers.size(), "a nack, so the producer resends without waiting for its ack timeout");
        assertTrue(answers.get(0).get("payload").asText().contains("\"result\":-1"), answers.toString());
        assertEquals(1, rt.command("stats-yuno service=relay").get("data").get("nacks_sent").asInt());
        assertEquals(1, rt.command("stats-yuno service=relay").get("data").get("refused").asInt());
    }

    @Test
    void shouldCountButNotForwardBadJsonToAQueue() {
        start("C_SOME_DURABLE_OUTPUT");
        receive("not json");
        assertEquals(0, rt.call(() -> queue().stored.size()));
        assertEquals(1, rt.command("stats-yuno service=relay").get("data").get("bad_json").asInt());
    }

    @Test
    void shouldForwardRawBytesToAPlainGateAndAckAtOnce() {
        start("C_IOGATE");
        receive("{\"id\": \"msg-3\", \"__md_trq__\": {\"__msg_rowid__\": 7, \"__msg_t__\": 9}}");
        List<ObjectNode> out = rt.call(() -> ((FakeGate) rt.service("out").behavior()).sent);
        assertEquals(1, out.size());
        assertTrue(out.get(0).get("payload").asText().startsWith("{\"id\": \"msg-3\""));
        assertFalse(out.get(0).get("has_temp").asBoolean(), "the input route is not sent to the output");
        assertEquals(1, rt.call(() -> input().sent.size()));
    }
}
