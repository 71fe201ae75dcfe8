package io.gatehouse.relay;

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

    /** Stands for a C_QIOGATE: keeps the messages and their durability callbacks, refuses when told to. */
    static final class FakeQueue implements GObjBehavior {
        final List<ObjectNode> stored = new ArrayList<>();
        final List<Runnable> pendingDurable = new ArrayList<>();
        boolean refuse;

        FakeQueue(GObj g) {}

        int acSend(String ev, ObjectNode kw, GObj src) {
            if (refuse) return -1;
            Runnable r = Kw.ref(kw, Relay.ON_DURABLE, Runnable.class);
            kw.remove(Relay.ON_DURABLE);
            stored.add(kw);
            if (r != null) pendingDurable.add(r);
            return 0;
        }
    }

    static final GClassSpec<FakeGate> GATE = GClassSpec.builder("C_IOGATE", FakeGate.class)
            .fsm(Fsm.<FakeGate>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, FakeGate::acSend)
                    .publishes(Ev.EV_ON_MESSAGE).build())
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(FakeGate::new).build();
    static final GClassSpec<FakeQueue> QUEUE = GClassSpec.builder("C_QIOGATE", FakeQueue.class)
            .fsm(Fsm.<FakeQueue>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, FakeQueue::acSend).build())
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
        start("C_QIOGATE");
        receive("{\"id\": \"msg-1\", \"__md_trq__\": {\"__msg_rowid__\": 5, \"__msg_t__\": 9}}");
        assertEquals(1, rt.call(() -> queue().stored.size()));
        ObjectNode stored = rt.call(() -> queue().stored.get(0));
        assertEquals("msg-1", stored.get("id").asText());
        assertNull(stored.get("__md_trq__"), "the upstream metadata is not stored downstream");
        assertTrue(rt.call(() -> input().sent.isEmpty()), "no ack before durability");
        rt.run(() -> queue().pendingDurable.forEach(Runnable::run));
        List<ObjectNode> acks = rt.call(() -> input().sent);
        assertEquals(1, acks.size());
        assertTrue(acks.get(0).get("payload").asText().contains("\"__msg_rowid__\":5"), acks.toString());
        assertTrue(acks.get(0).get("payload").asText().contains("\"result\":0"), acks.toString());
        assertTrue(acks.get(0).get("has_temp").asBoolean(), "the ack goes back on the same connection");
    }

    @Test
    void shouldNotAckWhatTheQueueRefuses() {
        start("C_QIOGATE");
        rt.run(() -> queue().refuse = true);
        receive("{\"id\": \"msg-2\", \"__md_trq__\": {\"__msg_rowid__\": 6, \"__msg_t__\": 9}}");
        assertTrue(rt.call(() -> input().sent.isEmpty()));
        assertEquals(1, rt.command("stats-yuno service=relay").get("data").get("refused").asInt());
    }

    @Test
    void shouldCountButNotForwardBadJsonToAQueue() {
        start("C_QIOGATE");
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
