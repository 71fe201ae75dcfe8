// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

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
import io.netty.buffer.ByteBufAllocator;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A transport stand-in under a protocol gobj, where a C_TCP would be (gclass C_FAKE_SOCKET): it records what the
 * protocol sends down (EV_TX_DATA with its bytes read out, EV_DROP, EV_PAUSE_INPUT, EV_RESUME_INPUT) and publishes
 * what the test tells it to (EV_CONNECTED, EV_RX_DATA, EV_DISCONNECTED, EV_TX_READY, EV_STOPPED). An EV_DROP closes
 * it as a socket would: EV_DISCONNECTED follows on the core loop after the dropping action, not inside it, unless
 * {@code answer_drops} is false (a transport that never reports the close). Call its methods on the core thread
 * ({@code rt.run}); {@code rt.run(() -> {})} afterwards lets a close caused by a drop arrive.
 */
public final class FakeSocket implements GObjBehavior {
    public static final String GCLASS = "C_FAKE_SOCKET";

    static final Attr<String> PEERNAME = Attr.string("peername", "127.0.0.1:40000", AttrFlag.RD | AttrFlag.STATS,
            "The peer it pretends to be connected to");
    static final Attr<String> SOCKNAME = Attr.string("sockname", "127.0.0.1:2000", AttrFlag.RD | AttrFlag.STATS,
            "The local address it pretends to have");
    static final Attr<Boolean> ANSWER_DROPS = Attr.bool("answer_drops", true, AttrFlag.WR,
            "An EV_DROP closes it (EV_DISCONNECTED follows); false: drops are only recorded");
    static final Attr<Boolean> CONNECTED = Attr.bool("connected", false, AttrFlag.STATS, "Between connect() and the close");

    /** One event sent down. */
    public static final class Sent {
        public final String event;
        /** The gbuffer's readable bytes, or null when it had none. */
        public final byte[] bytes;
        /** The kw, without its references. */
        public final ObjectNode kw;
        /** The messages the kw held ({@link Kw#messages}: the frames of a protocol's send batch, else 1). */
        public final int messages;

        Sent(String event, byte[] bytes, ObjectNode kw, int messages) {
            this.event = event;
            this.bytes = bytes;
            this.kw = kw;
            this.messages = messages;
        }

        /** The bytes as UTF-8 text (null when none). */
        public String text() {
            return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
        }

        @Override
        public String toString() {
            return event + " " + kw + (bytes == null ? "" : " " + bytes.length + " bytes");
        }
    }

    public static final GClassSpec<FakeSocket> SPEC = GClassSpec.builder(GCLASS, FakeSocket.class)
            .description("A transport stand-in: records what a protocol sends down, publishes what a test tells it to")
            .attrs(PEERNAME, SOCKNAME, ANSWER_DROPS, CONNECTED)
            .fsm(Fsm.<FakeSocket>builder().state(St.ST_IDLE)
                    .on(Ev.EV_TX_DATA, FakeSocket::acRecord)
                    .on(Ev.EV_DROP, FakeSocket::acDrop)
                    .on(Ev.EV_PAUSE_INPUT, FakeSocket::acRecord)
                    .on(Ev.EV_RESUME_INPUT, FakeSocket::acRecord)
                    .publishes(Ev.EV_CONNECTED, Ev.EV_RX_DATA, Ev.EV_DISCONNECTED, Ev.EV_TX_READY, Ev.EV_STOPPED)
                    .build())
            .factory(FakeSocket::new)
            .build();

    private final GObj gobj;
    private final List<Sent> sent = new ArrayList<>();

    private FakeSocket(GObj gobj) {
        this.gobj = gobj;
    }

    public GObj gobj() {
        return gobj;
    }

    private int acRecord(String event, ObjectNode kw, GObj src) {
        ByteBuf b = kw == null ? null : Kw.takeGbuffer(kw);
        byte[] bytes = null;
        if (b != null) {
            bytes = new byte[b.readableBytes()];
            b.readBytes(bytes);   // read out, as a socket would
            b.release();
        }
        synchronized (sent) {
            sent.add(new Sent(event, bytes, kw == null ? Kw.create() : Kw.withoutRefs(kw), kw == null ? 1 : Kw.messages(kw)));
        }
        return 0;
    }

    private int acDrop(String event, ObjectNode kw, GObj src) {
        acRecord(event, kw, src);
        if (gobj.readBool(ANSWER_DROPS)) gobj.yuno().execute(this::disconnect);
        return 0;
    }

    // --- Driven by tests (on the core thread) ---

    /** The connection is up: EV_CONNECTED {url, peername, sockname}. */
    public int connect() {
        gobj.setBool(CONNECTED, true);
        ObjectNode kw = Kw.create();
        kw.put(Kw.URL, "");
        kw.put(Kw.PEERNAME, gobj.read(PEERNAME));
        kw.put(Kw.SOCKNAME, gobj.read(SOCKNAME));
        return gobj.publish(Ev.EV_CONNECTED, kw);
    }

    /**
     * One socket read: EV_RX_DATA holding {@code bytes}, in a pooled buffer as a socket's reads are, so Netty's leak
     * detector sees one the protocol forgets to release.
     */
    public int receive(byte[] bytes) {
        return gobj.publish(Ev.EV_RX_DATA, Kw.withGbuffer(ByteBufAllocator.DEFAULT.buffer(bytes.length).writeBytes(bytes)));
    }

    /** The connection closed: EV_DISCONNECTED, once, if it was up. */
    public int disconnect() {
        if (!gobj.readBool(CONNECTED)) return 0;
        gobj.setBool(CONNECTED, false);
        return gobj.publish(Ev.EV_DISCONNECTED, Kw.create());
    }

    public int txReady() {
        return gobj.publish(Ev.EV_TX_READY, Kw.create());
    }

    public int stopped() {
        return gobj.publish(Ev.EV_STOPPED, Kw.create());
    }

    /** What was sent down so far, in order (any thread). */
    public List<Sent> sent() {
        synchronized (sent) {
            return new ArrayList<>(sent);
        }
    }

    /** What was sent down as {@code event}, in order (any thread). */
    public List<Sent> sent(String event) {
        List<Sent> out = new ArrayList<>();
        for (Sent s : sent()) {
            if (s.event.equals(event)) out.add(s);
        }
        return out;
    }
}
