// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
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

/**
 * A transport stand-in under C_PROT_HTTP_SR (gclass C_FAKE_TCP): keeps what is written (EV_TX_DATA), counts drops
 * and pauses, and publishes connect / reads / disconnect when the test says so. A drop disconnects on the next loop
 * turn, as a socket close does, unless {@link #holdOnDrop}.
 */
final class FakeTcp implements GObjBehavior {
    static final String GCLASS = "C_FAKE_TCP";
    static final Attr<String> PEERNAME = Attr.string("peername", "127.0.0.1:40000", AttrFlag.RD | AttrFlag.STATS,
            "peer");

    static final GClassSpec<FakeTcp> SPEC = GClassSpec.builder(GCLASS, FakeTcp.class)
            .description("A transport stand-in: records writes, publishes what the test says")
            .attrs(PEERNAME)
            .fsm(Fsm.<FakeTcp>builder().state(St.ST_IDLE)
                    .on(Ev.EV_TX_DATA, FakeTcp::acTx)
                    .on(Ev.EV_DROP, FakeTcp::acDrop)
                    .on(Ev.EV_PAUSE_INPUT, FakeTcp::acPause)
                    .on(Ev.EV_RESUME_INPUT, FakeTcp::acResume)
                    .publishes(Ev.EV_CONNECTED, Ev.EV_RX_DATA, Ev.EV_DISCONNECTED)
                    .build())
            .factory(FakeTcp::new)
            .build();

    private final GObj gobj;
    private final StringBuilder out = new StringBuilder();
    int drops;
    int pauses;
    int resumes;
    boolean paused;
    boolean holdOnDrop;
    private boolean connected;

    private FakeTcp(GObj gobj) {
        this.gobj = gobj;
    }

    private int acTx(String ev, ObjectNode kw, GObj src) {
        ByteBuf b = Kw.takeGbuffer(kw);
        out.append(b.toString(StandardCharsets.ISO_8859_1));
        b.release();
        return 0;
    }

    private int acDrop(String ev, ObjectNode kw, GObj src) {
        Kw.release(kw);
        drops++;
        if (!holdOnDrop) gobj.yuno().execute(this::disconnect);
        return 0;
    }

    private int acPause(String ev, ObjectNode kw, GObj src) {
        Kw.release(kw);
        pauses++;
        paused = true;
        return 0;
    }

    private int acResume(String ev, ObjectNode kw, GObj src) {
        Kw.release(kw);
        resumes++;
        paused = false;
        return 0;
    }

    // --- Driven by tests (on the core thread) ---

    void connect() {
        connected = true;
        ObjectNode kw = Kw.create();
        kw.put(Kw.PEERNAME, gobj.read(PEERNAME));
        gobj.publish(Ev.EV_CONNECTED, kw);
    }

    void rx(String bytes) {
        gobj.publish(Ev.EV_RX_DATA, Kw.withGbuffer(Unpooled.copiedBuffer(bytes, StandardCharsets.ISO_8859_1)));
    }

    void disconnect() {
        if (!connected) return;
        connected = false;
        gobj.publish(Ev.EV_DISCONNECTED, Kw.create());
    }

    /** What was written since the last call. */
    String takeOut() {
        String s = out.toString();
        out.setLength(0);
        return s;
    }
}
