// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A protocol stand-in under a channel (gclass C_FAKE_TUBE): records what is sent down, reading each gbuffer
 * out as C_PROT_TCP4H does, and publishes open/close/message on demand.
 */
public final class FakeTube implements GObjBehavior {
    public static final String GCLASS = "C_FAKE_TUBE";
    public static final String GCLASS_TX_ONLY = "C_FAKE_TRANSPORT";

    static final Attr<Long> TX_BYTES = Attr.counter("txBytes", AttrFlag.RSTATS, "bytes sent");
    static final Attr<String> PEERNAME = Attr.string("peername", "", AttrFlag.RD | AttrFlag.STATS, "peer");
    static final Attr<String> SOCKNAME = Attr.string("sockname", "", AttrFlag.RD | AttrFlag.STATS, "sock");

    /** One event sent down. */
    public static final class Sent {
        public final String event;
        public final String payload;
        public final ObjectNode kw;

        Sent(String event, String payload, ObjectNode kw) {
            this.event = event;
            this.payload = payload;
            this.kw = kw;
        }
    }

    public static final GClassSpec<FakeTube> SPEC = GClassSpec.builder(GCLASS, FakeTube.class)
            .description("A protocol stand-in: records what is sent down, publishes what a test tells it to")
            .attrs(TX_BYTES, PEERNAME, SOCKNAME)
            .fsm(Fsm.<FakeTube>builder().state(St.ST_IDLE)
                    .on(Ev.EV_SEND_MESSAGE, FakeTube::acSend)
                    .on(Ev.EV_DROP, FakeTube::acDrop)
                    .on("EV_MY_IEV", FakeTube::acSend)
                    .on(Ev.EV_RESUME_INPUT, FakeTube::acSend)
                    .build())
            .command("ping", "answers pong", FakeTube::cmdPing)
            .factory(FakeTube::new)
            .build();

    public static final GClassSpec<FakeTube> SPEC_TX_ONLY = GClassSpec.builder(GCLASS_TX_ONLY, FakeTube.class)
            .description("A bare transport stand-in: takes EV_TX_DATA only")
            .attrs(TX_BYTES, PEERNAME, SOCKNAME)
            .fsm(Fsm.<FakeTube>builder().state(St.ST_IDLE)
                    .on(Ev.EV_TX_DATA, FakeTube::acSend)
                    .on(Ev.EV_DROP, FakeTube::acDrop)
                    .build())
            .factory(FakeTube::new)
            .build();

    final GObj gobj;
    public final List<Sent> sent = new ArrayList<>();
    public int drops;

    private FakeTube(GObj gobj) {
        this.gobj = gobj;
    }

    private int acSend(String event, ObjectNode kw, GObj src) {
        ByteBuf b = Kw.takeGbuffer(kw);
        String payload = null;
        if (b != null) {
            payload = b.readCharSequence(b.readableBytes(), StandardCharsets.UTF_8).toString();   // read out
            gobj.add(TX_BYTES, payload.length());
            b.release();
        }
        sent.add(new Sent(event, payload, Kw.withoutRefs(kw)));
        return 0;
    }

    private ObjectNode cmdPing(ObjectNode kw, GObj src) {
        return Envelope.ok("pong " + gobj.name(), null);
    }

    private int acDrop(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        drops++;
        close();
        return 0;
    }

    // --- Driven by tests (on the core thread) ---

    public int open() {
        ObjectNode kw = Kw.create();
        kw.put(Kw.PEERNAME, gobj.read(PEERNAME));
        kw.put(Kw.SOCKNAME, gobj.read(SOCKNAME));
        return gobj.publish(Ev.EV_ON_OPEN, kw);
    }

    public int close() {
        return gobj.publish(Ev.EV_ON_CLOSE, Kw.create());
    }

    public int receive(String text) {
        return gobj.publish(Ev.EV_ON_MESSAGE, Kw.withGbuffer(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8)));
    }

    public List<String> payloads() {
        List<String> out = new ArrayList<>();
        for (Sent s : sent) out.add(s.payload);
        return out;
    }
}
