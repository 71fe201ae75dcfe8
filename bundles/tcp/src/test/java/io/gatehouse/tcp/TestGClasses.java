// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.support.Gbuffers;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

/**
 * Minimal stand-ins for the gclasses above the transport (the real ones live in other bundles, which this
 * bundle must not depend on): C_TEST_FRAMER, a protocol that cuts the byte stream into length-prefixed messages,
 * and C_TEST_GATE, which republishes what its channels (the testkit's {@code StubChannel}) publish, tagged with
 * {@code __temp__.channel}, and sends to the channel named in {@code __temp__.channel} (or the first one).
 */
final class TestGClasses {
    private TestGClasses() {}

    /**
     * A protocol over C_TCP (gclass C_TEST_FRAMER) with TCP4H's wire, a 4-byte big-endian length (payload + 4) then
     * the payload, so raw peers written with {@code Tcp4hFrames} can talk to it. It only frames and deframes: the
     * real C_PROT_TCP4H, with its limits, timers and flow control, is tested over C_TCP in bundles/tcp4h.
     */
    static final class Framer implements GObjBehavior {
        final GObj gobj;
        /** Bytes read and not yet a whole frame. */
        private ByteBuf pending;

        Framer(GObj g) {
            this.gobj = g;
        }

        /** C_TCP starts only when told: a client's (one with a url) is started here, a server side's by C_TCP_S. */
        @Override
        public int onStart() {
            GObj bottom = gobj.bottom();
            if (bottom != null && !bottom.isRunning() && !bottom.readAttr(Kw.URL).asText("").isEmpty()) bottom.start();
            return 0;
        }

        @Override
        public int onStop() {
            GObj bottom = gobj.bottom();
            if (bottom != null && bottom.isRunning()) bottom.stop();
            return 0;
        }

        @Override
        public void onDestroy() {
            releasePending();
        }

        private int acConnected(String ev, ObjectNode kw, GObj src) {
            releasePending();
            return gobj.publish(Ev.EV_ON_OPEN, kw);
        }

        private int acDisconnected(String ev, ObjectNode kw, GObj src) {
            releasePending();
            return gobj.publish(Ev.EV_ON_CLOSE, kw);
        }

        private int acRxData(String ev, ObjectNode kw, GObj src) {
            ByteBuf in = Kw.takeGbuffer(kw);
            if (pending == null) pending = Unpooled.buffer(in.readableBytes());
            pending.writeBytes(in);
            in.release();
            while (pending != null && pending.readableBytes() >= 4
                    && pending.readableBytes() >= pending.getInt(pending.readerIndex())) {
                int n = pending.readInt() - 4;
                ByteBuf frame = Unpooled.buffer(n);
                pending.readBytes(frame, n);
                gobj.publish(Ev.EV_ON_MESSAGE, Kw.withGbuffer(frame));
            }
            if (pending != null) pending.discardReadBytes();
            return 0;
        }

        /** Without a copy, so that a producer in a test goes as fast as the transport lets it. */
        private int acSend(String ev, ObjectNode kw, GObj src) {
            ByteBuf payload = Kw.takeGbuffer(kw);
            int n = payload.readableBytes();
            ByteBuf out;
            if (Gbuffers.canPrepend(payload, 4)) {
                Gbuffers.prependInt(payload, n + 4);
                out = payload;
            } else {
                out = Unpooled.wrappedBuffer(Unpooled.buffer(4).writeInt(n + 4), payload);
            }
            return down(Ev.EV_TX_DATA, Kw.setGbuffer(kw, out), src);
        }

        private int down(String ev, ObjectNode kw, GObj src) {
            if (gobj.bottom() == null) {
                Kw.release(kw);
                return -1;
            }
            return gobj.bottom().send(ev, kw, gobj);
        }

        private void releasePending() {
            if (pending != null) pending.release();
            pending = null;
        }

        static final GClassSpec<Framer> SPEC = GClassSpec.builder("C_TEST_FRAMER", Framer.class)
            .description("test stand-in for a protocol over C_TCP: length-prefixed messages (Framer)")
                .fsm(Fsm.<Framer>builder()
                        .state(St.ST_IDLE)
                        .on(Ev.EV_CONNECTED, Framer::acConnected)
                        .on(Ev.EV_DISCONNECTED, Framer::acDisconnected)
                        .on(Ev.EV_RX_DATA, Framer::acRxData)
                        .on(Ev.EV_SEND_MESSAGE, Framer::acSend)
                        .on(Ev.EV_DROP, Framer::down)
                        .on(Ev.EV_PAUSE_INPUT, Framer::down)
                        .on(Ev.EV_RESUME_INPUT, Framer::down)
                        .ignore(Ev.EV_TX_READY)
                        .ignore(Ev.EV_STOPPED)
                        .publishes(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE)
                        .build())
                .factory(Framer::new)
                .build();
    }

    static final class Gate implements GObjBehavior {
        final GObj gobj;

        Gate(GObj g) {
            this.gobj = g;
        }

        private int up(String ev, ObjectNode kw, GObj src) {
            ObjectNode temp = kw.putObject(Kw.TEMP);
            temp.put("channel", src.name());
            return gobj.publish(ev, kw);
        }

        private int down(String ev, ObjectNode kw, GObj src) {
            String ch = Kw.getString(kw, Kw.TEMP + "`channel", "");
            for (GObj c : gobj.children()) {
                if (!"C_CHANNEL".equals(c.gclassName())) continue;
                if (ch.isEmpty() || ch.equals(c.name())) {
                    kw.remove(Kw.TEMP);
                    return c.send(ev, kw, gobj);
                }
            }
            Kw.release(kw);
            return -1;
        }

        static final GClassSpec<Gate> SPEC = GClassSpec.builder("C_TEST_GATE", Gate.class)
            .description("test stand-in C_TEST_GATE (Gate)")
                .fsm(Fsm.<Gate>builder()
                        .state(St.ST_IDLE)
                        .on(Ev.EV_ON_OPEN, Gate::up)
                        .on(Ev.EV_ON_CLOSE, Gate::up)
                        .on(Ev.EV_ON_MESSAGE, Gate::up)
                        .on(Ev.EV_SEND_MESSAGE, Gate::down)
                        .on(Ev.EV_DROP, Gate::down)
                        .on(Ev.EV_RESUME_INPUT, Gate::down)
                        .publishes(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE)
                        .build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(Gate::new)
                .build();
    }
}
