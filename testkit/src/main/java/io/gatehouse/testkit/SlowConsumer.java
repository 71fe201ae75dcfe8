// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.netty.buffer.ByteBuf;

import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A consumer slower than its producer, for flow-control tests: it keeps every buffer it is handed and, every
 * {@code periodMs} of the yuno's clock, releases up to {@code perTick} of them and credits them back to their sender
 * (EV_RESUME_INPUT {msgs, bytes}), as a consumer under an input threshold does. What it saw goes to a {@link Stats}
 * the test holds, so it can be read after the gobj is gone (a dynamic listener's per-connection gobj).
 */
public final class SlowConsumer implements GObjBehavior {

    /** What the consumers of one spec saw, readable from any thread. */
    public static final class Stats {
        /** The most buffers held at once. */
        public final AtomicLong maxHeld = new AtomicLong();
        /** Buffers that came with {@code is_blocked: true}. */
        public final AtomicLong blockedMarks = new AtomicLong();
        public final AtomicLong consumed = new AtomicLong();
        public final AtomicLong consumedBytes = new AtomicLong();
    }

    private static final List<String> LINK_EVENTS = List.of(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE,
            Ev.EV_CONNECTED, Ev.EV_DISCONNECTED, Ev.EV_RX_DATA, Ev.EV_TX_READY, Ev.EV_STOPPED);

    /**
     * A gclass {@code name} that consumes {@code event} (EV_ON_MESSAGE above a protocol, EV_RX_DATA right on a C_TCP)
     * and takes the other link events without doing anything.
     */
    public static GClassSpec<SlowConsumer> spec(String name, String event, int perTick, long periodMs, Stats stats) {
        Fsm.StateBuilder<SlowConsumer> st = Fsm.<SlowConsumer>builder().state(St.ST_IDLE)
                .on(event, SlowConsumer::acTake)
                .on(Ev.EV_TIMEOUT_PERIODIC, SlowConsumer::acTick);
        for (String e : LINK_EVENTS) {
            if (!e.equals(event)) st.ignore(e);
        }
        return GClassSpec.builder(name, SlowConsumer.class)
                .description("A consumer slower than its producer: takes " + perTick + " buffers every " + periodMs
                        + " ms (tests)")
                .fsm(st.build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(g -> new SlowConsumer(g, perTick, periodMs, stats))
                .build();
    }

    private final GObj gobj;
    private final int perTick;
    private final long periodMs;
    private final Stats stats;
    private final ArrayDeque<ByteBuf> held = new ArrayDeque<>();
    private GObj from;

    private SlowConsumer(GObj gobj, int perTick, long periodMs, Stats stats) {
        this.gobj = gobj;
        this.perTick = perTick;
        this.periodMs = periodMs;
        this.stats = stats;
    }

    @Override
    public int onStart() {
        gobj.setPeriodic(periodMs, Ev.EV_TIMEOUT_PERIODIC);
        return 0;
    }

    @Override
    public void onDestroy() {
        for (ByteBuf b; (b = held.poll()) != null; ) b.release();
    }

    private int acTake(String event, ObjectNode kw, GObj src) {
        from = src;
        if (Kw.getBool(kw, Kw.IS_BLOCKED, false)) stats.blockedMarks.incrementAndGet();
        held.add(Kw.takeGbuffer(kw));
        stats.maxHeld.accumulateAndGet(held.size(), Math::max);
        return 0;
    }

    private int acTick(String event, ObjectNode kw, GObj src) {
        int n = 0;
        long bytes = 0;
        for (ByteBuf b; n < perTick && (b = held.poll()) != null; n++) {
            bytes += b.readableBytes();
            b.release();
        }
        stats.consumed.addAndGet(n);
        stats.consumedBytes.addAndGet(bytes);
        if (n > 0 && from != null && !from.isDestroyed()) {
            from.send(Ev.EV_RESUME_INPUT, Kw.create().put(Kw.CREDIT_MSGS, n).put(Kw.CREDIT_BYTES, bytes), gobj);
        }
        return 0;
    }
}
