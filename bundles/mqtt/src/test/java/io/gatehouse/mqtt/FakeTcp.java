// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.util.ArrayList;
import java.util.List;

/**
 * A transport stand-in under C_PROT_MQTT (gclass C_FAKE_TCP): what a C_TCP does seen from above. The test makes it
 * connect, deliver reads and disconnect; it keeps what was written (EV_TX_DATA), the drops and the pause state.
 */
final class FakeTcp implements GObjBehavior {
    static final String GCLASS = "C_FAKE_TCP";

    static final GClassSpec<FakeTcp> SPEC = GClassSpec.builder(GCLASS, FakeTcp.class)
            .description("A transport stand-in: the test drives its connection and reads")
            .fsm(Fsm.<FakeTcp>builder().state(St.ST_IDLE)
                    .on(Ev.EV_TX_DATA, FakeTcp::acTx)
                    .on(Ev.EV_DROP, FakeTcp::acDrop)
                    .on(Ev.EV_PAUSE_INPUT, FakeTcp::acPause)
                    .on(Ev.EV_RESUME_INPUT, FakeTcp::acResume)
                    .build())
            .manualStart()
            .factory(FakeTcp::new)
            .build();

    private final GObj gobj;
    /** Everything written, in order, as one stream (what the client would read). */
    final List<ByteBuf> written = new ArrayList<>();
    int drops;
    boolean paused;
    int pauses;
    boolean connected;

    private FakeTcp(GObj gobj) {
        this.gobj = gobj;
    }

    @Override
    public int onStart() {
        return 0;
    }

    @Override
    public void onDestroy() {
        for (ByteBuf b : written) b.release();   // what no test read
        written.clear();
    }

    private int acTx(String ev, ObjectNode kw, GObj src) {
        ByteBuf b = Kw.takeGbuffer(kw);
        if (b != null) written.add(b);
        return 0;
    }

    private int acDrop(String ev, ObjectNode kw, GObj src) {
        Kw.release(kw);
        drops++;
        disconnect();
        return 0;
    }

    private int acPause(String ev, ObjectNode kw, GObj src) {
        paused = true;
        pauses++;
        return 0;
    }

    private int acResume(String ev, ObjectNode kw, GObj src) {
        paused = false;
        return 0;
    }

    // --- Driven by tests (on the core thread) ---

    void connect() {
        connected = true;
        ObjectNode kw = Kw.create();
        kw.put(Kw.PEERNAME, "127.0.0.1:50000");
        kw.put(Kw.SOCKNAME, "127.0.0.1:1883");
        gobj.publish(Ev.EV_CONNECTED, kw);
    }

    void rx(byte[] bytes) {
        gobj.publish(Ev.EV_RX_DATA, Kw.withGbuffer(Unpooled.copiedBuffer(bytes)));
    }

    void disconnect() {
        if (!connected) return;
        connected = false;
        gobj.publish(Ev.EV_DISCONNECTED, Kw.create());
    }

    /** Takes what was written so far, as one buffer (the caller releases it). */
    ByteBuf takeWritten() {
        ByteBuf all = Unpooled.buffer();
        for (ByteBuf b : written) {
            all.writeBytes(b);
            b.release();
        }
        written.clear();
        return all;
    }
}
