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
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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

    private YunoRuntime rt;

    @BeforeEach
    void setUp() {
        rt = YunoRuntime.builder().name("sink").gclass(Sink.SPEC, GATE)
                .config("{\"services\": [{\"name\": \"in\", \"gclass\": \"C_IOGATE\"},"
                        + "{\"name\": \"sink\", \"gclass\": \"C_SINK\", \"kw\": {\"input\": \"in\", \"echo\": true}}]}")
                .build().start();
    }

    @AfterEach
    void tearDown() {
        rt.close();
    }

    private void receive(String json) {
        rt.run(() -> rt.service("in").publish(Ev.EV_ON_MESSAGE,
                Kw.withGbuffer(Unpooled.copiedBuffer(json, StandardCharsets.UTF_8))));
    }

    @Test
    void shouldAckEchoAndCountIds() {
        receive("{\"id\": \"msg-0\", \"__md_trq__\": {\"__msg_rowid__\": 1, \"__msg_t__\": 2}}");
        receive("{\"id\": \"msg-2\"}");
        receive("{\"id\": \"msg-2\"}");
        receive("{\"id\": \"other\"}");
        receive("garbage");
        List<String> sent = rt.call(() -> ((FakeGate) rt.service("in").behavior()).sent);
        assertEquals("{\"__md_trq__\":{\"__msg_rowid__\":1,\"__msg_t__\":2,\"result\":0}}", sent.get(0));
        assertTrue(sent.get(1).startsWith("{\"id\": \"msg-0\""), "then the echo");
        ObjectNode st = rt.command("stats-yuno service=sink");
        assertEquals(5, st.get("data").get("rxMsgs").asInt());
        assertEquals(3, st.get("data").get("distinct_ids").asInt());
        assertEquals(1, st.get("data").get("duplicates").asInt());
        assertEquals(1, st.get("data").get("bad_json").asInt());
        ObjectNode check = rt.command("command-yuno service=sink command=check-ids from=0 to=2");
        assertEquals(1, check.get("data").get("missing").asInt());
        assertEquals(1, check.get("data").get("first_missing").asInt());
    }
}
