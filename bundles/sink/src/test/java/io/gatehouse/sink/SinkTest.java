// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.sink;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** C_SINK listening to a stand-in gate, on a manual clock. */
class SinkTest {
    /** Stands for the gate the sink listens to: records what the sink sends back. */
    static final class FakeGate implements GObjBehavior {
        final List<String> sent = new ArrayList<>();

        FakeGate(GObj g) {}

        int acSend(String ev, ObjectNode kw, GObj src) {
            ByteBuf b = Kw.takeGbuffer(kw);
            sent.add(b.toString(StandardCharsets.UTF_8));
            b.release();
            return 0;
        }
    }

    static final GClassSpec<FakeGate> GATE = GClassSpec.builder("C_IOGATE", FakeGate.class)
            .description("test stand-in C_IOGATE (FakeGate)")
            .fsm(Fsm.<FakeGate>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, FakeGate::acSend)
                    .publishes(Ev.EV_ON_MESSAGE).build())
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(FakeGate::new).build();

    private final ManualClock clock = new ManualClock();
    private final List<String> logs = Collections.synchronizedList(new ArrayList<>());
    private final Consumer<LogCapture.Rec> sink = r -> logs.add(r.level + " " + r.gobj + " " + r.msg + " " + r.fields);
    private LogCapture capture;
    private YunoRuntime rt;

    @BeforeEach
    void setUp() {
        capture = new LogCapture(sink);
        rt = YunoRuntime.builder().name("sink").clock(clock).gclass(Sink.SPEC, GATE)
                .config("{\"services\": [{\"name\": \"in\", \"gclass\": \"C_IOGATE\"},"
                        + "{\"name\": \"sink\", \"gclass\": \"C_SINK\", \"kw\": {\"input\": \"in\", \"echo\": true}}]}")
                .build().start();
    }

    @AfterEach
    void tearDown() {
        rt.close();
        if (capture != null) capture.close();
    }

    private void receive(String json) {
        rt.run(() -> rt.service("in").publish(Ev.EV_ON_MESSAGE,
                Kw.withGbuffer(Unpooled.copiedBuffer(json, StandardCharsets.UTF_8))));
    }

    private List<String> sentBack() {
        return rt.call(() -> new ArrayList<>(((FakeGate) rt.service("in").behavior()).sent));
    }

    private ObjectNode stats() {
        return (ObjectNode) rt.command("stats-yuno service=sink").get("data");
    }

    @Test
    void shouldAckEchoAndCountIds() {
        receive("{\"id\": \"msg-0\", \"__md_trq__\": {\"__msg_rowid__\": 1, \"__msg_t__\": 2}}");
        receive("{\"id\": \"msg-2\"}");
        receive("{\"id\": \"msg-2\"}");
        receive("{\"id\": \"other\"}");
        receive("garbage");
        List<String> sent = sentBack();
        assertEquals("{\"__md_trq__\":{\"__msg_rowid__\":1,\"__msg_t__\":2,\"result\":0}}", sent.get(0));
        assertTrue(sent.get(1).startsWith("{\"id\": \"msg-0\""), "then the echo");
        ObjectNode st = stats();
        assertEquals(5, st.get("rxMsgs").asInt());
        assertEquals(3, st.get("distinct_ids").asInt());
        assertEquals(1, st.get("duplicates").asInt());
        assertEquals(1, st.get("bad_json").asInt());
        assertEquals(1, st.get("acks_sent").asInt());
        ObjectNode check = rt.command("command-yuno service=sink command=check-ids from=0 to=2");
        assertEquals(1, check.get("data").get("missing").asInt());
        assertEquals(1, check.get("data").get("first_missing").asInt());
    }

    @Test
    void shouldTakeTheMessagesOfOneReadOneByOne() {
        String[] texts = {"{\"id\": \"msg-0\", \"__md_trq__\": {\"__msg_rowid__\": 1, \"__msg_t__\": 2}}",
                "garbage", "{\"id\": \"msg-1\"}", "{\"id\": \"msg-1\"}"};
        rt.run(() -> {
            io.netty.buffer.ByteBuf all = Unpooled.buffer().writeZero(5).skipBytes(5);
            int[] ranges = new int[2 * texts.length];
            for (int i = 0; i < texts.length; i++) {
                all.writeInt(texts[i].length() + 4);
                ranges[2 * i] = all.readableBytes();
                all.writeCharSequence(texts[i], StandardCharsets.UTF_8);
                ranges[2 * i + 1] = all.readableBytes();
            }
            ObjectNode kw = Kw.withGbuffer(all);
            Kw.putRef(kw, Kw.MESSAGES, ranges);
            rt.service("in").publish(Ev.EV_ON_MESSAGE, kw);
        });
        List<String> sent = sentBack();
        assertEquals(List.of("{\"__md_trq__\":{\"__msg_rowid__\":1,\"__msg_t__\":2,\"result\":0}}", texts[0], texts[1],
                texts[2], texts[3]), sent, "the ack, then each message echoed, in order");
        ObjectNode st = stats();
        assertEquals(4, st.get("rxMsgs").asInt());
        assertEquals(2, st.get("distinct_ids").asInt());
        assertEquals(1, st.get("duplicates").asInt());
        assertEquals(1, st.get("bad_json").asInt());
        assertEquals(1, st.get("acks_sent").asInt());
    }

    @Test
    void shouldForgetIdsAndZeroCountersOnResetIds() {
        receive("{\"id\": \"msg-1\"}");
        receive("{\"id\": \"msg-1\"}");
        rt.command("command-yuno service=sink command=reset-ids");
        ObjectNode st = stats();
        assertEquals(0, st.get("rxMsgs").asInt());
        assertEquals(0, st.get("duplicates").asInt());
        receive("{\"id\": \"msg-1\"}");
        assertEquals(1, stats().get("distinct_ids").asInt(), "seen again as new");
    }

    @Test
    void shouldSubscribeAgainToAnInputGateThatWasRebuilt() {
        rt.gclassesGone(List.of("C_IOGATE"));
        rt.gclassArrived(GATE);   // it hands over no state: the gate's service is rebuilt
        receive("{\"id\": \"msg-1\"}");
        assertEquals(0, stats().get("rxMsgs").asInt(), "the rebuilt gate has no subscriber yet");
        clock.advance(499);
        receive("{\"id\": \"msg-2\"}");
        assertEquals(0, stats().get("rxMsgs").asInt(), "not before timeout_check_gates");
        clock.advance(1);
        receive("{\"id\": \"msg-3\"}");
        assertEquals(1, stats().get("rxMsgs").asInt(), "subscribed again");
        assertTrue(sentBack().get(0).startsWith("{\"id\": \"msg-3\""), "and echoes through the new gate");
    }

    @Test
    void shouldTraceMessagesAcksAndEchoes() {
        rt.command("trace-on service=sink level=messages");
        receive("{\"id\": \"msg-7\", \"__md_trq__\": {\"__msg_rowid__\": 1, \"__msg_t__\": 2}}");
        for (String text : List.of("message received {id=msg-7", "ack sent", "message echoed")) {
            assertEquals(1, logs.stream().filter(l -> l.contains(text)).count(), text + " in " + logs);
        }
    }
}
