// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GClock;

import java.util.function.LongSupplier;

/**
 * Message rates computed when they are read (seeds/000, DESIGN decision 1), shared by the gclasses that report
 * {@code txMsgs rxMsgs txMsgsec rxMsgsec maxtxMsgsec maxrxMsgsec} (C_CHANNEL, C_IOGATE). The counts themselves are
 * the gclass's counter attributes ({@code txMsgs}, {@code rxMsgs}), read through the suppliers it gives: the window
 * keeps only what a rate needs (when it opened and the counts then, the last rates, the maxima).
 *
 * <p>The rules, exactly:
 * <ul>
 *   <li>The first read opens the window: it answers rates 0 (or the last ones after a reset) and remembers
 *       the time and the counters.</li>
 *   <li>A read at least one second after the window opened closes it: the rate is the messages since the
 *       window opened times 1000 divided by the elapsed <b>milliseconds</b> (integer division), so a read after
 *       1.9 s divides by 1.9, not by 1. The maxima move, and a new window opens at that read.</li>
 *   <li>A read less than a second after the window opened answers the last rates and does not move the
 *       window: no message is lost to a rate.</li>
 *   <li>Every reader shares the one window (each sees the rate since the previous reader's closing read).</li>
 * </ul>
 * There is no timer: a gobj nobody reads costs its counter increments per message.
 *
 * <p>Readers that poll on their own schedule (Prometheus scrapes, the live page's sampler) read the counter
 * attributes, never this window, and compute their own rates: they never turn the rate of a person's
 * {@code stats-yuno} into the average of the poll interval.
 *
 * <p>Not thread-safe: like every gobj state, it lives on the yuno's core thread.
 */
public final class RateWindow {
    /** The shortest window, in milliseconds. */
    public static final long MIN_WINDOW_MS = 1000;

    public static final String TX_MSGS = "txMsgs";
    public static final String RX_MSGS = "rxMsgs";
    public static final String TX_MSGSEC = "txMsgsec";
    public static final String RX_MSGSEC = "rxMsgsec";
    public static final String MAX_TX_MSGSEC = "maxtxMsgsec";
    public static final String MAX_RX_MSGSEC = "maxrxMsgsec";

    private final GClock clock;
    private final LongSupplier txMsgs;
    private final LongSupplier rxMsgs;
    private boolean open;
    private long windowStartMs;
    private long windowTx;
    private long windowRx;
    private long txMsgsec;
    private long rxMsgsec;
    private long maxTxMsgsec;
    private long maxRxMsgsec;

    /** A window over the counts {@code txMsgs} and {@code rxMsgs} answer (the gclass's counter attributes). */
    public RateWindow(GClock clock, LongSupplier txMsgs, LongSupplier rxMsgs) {
        this.clock = clock == null ? GClock.SYSTEM : clock;
        this.txMsgs = txMsgs;
        this.rxMsgs = rxMsgs;
    }

    /** The rates as last computed (no read: the window does not move). */
    public long txMsgsec() { return txMsgsec; }

    public long rxMsgsec() { return rxMsgsec; }

    public long maxTxMsgsec() { return maxTxMsgsec; }

    public long maxRxMsgsec() { return maxRxMsgsec; }

    /**
     * Zeroes rates and maxima and closes the window (the next read opens a new one). The counters are the
     * gclass's: it zeroes them itself, before.
     */
    public void reset() {
        open = false;
        windowStartMs = windowTx = windowRx = 0;
        txMsgsec = rxMsgsec = maxTxMsgsec = maxRxMsgsec = 0;
    }

    // --- Reading ---

    /** Applies the read rules at the clock's current time (see the class comment). */
    public void read() {
        long now = clock.monotonicMillis();
        long tx = txMsgs.getAsLong();
        long rx = rxMsgs.getAsLong();
        if (!open) {
            open = true;
            windowStartMs = now;
            windowTx = tx;
            windowRx = rx;
            return;
        }
        long elapsed = now - windowStartMs;
        if (elapsed < MIN_WINDOW_MS) return;
        txMsgsec = (tx - windowTx) * 1000 / elapsed;
        rxMsgsec = (rx - windowRx) * 1000 / elapsed;
        if (txMsgsec > maxTxMsgsec) maxTxMsgsec = txMsgsec;
        if (rxMsgsec > maxRxMsgsec) maxRxMsgsec = rxMsgsec;
        windowStartMs = now;
        windowTx = tx;
        windowRx = rx;
    }

    /**
     * A stats read: {@code "__reset__"} as filter resets first (the gclass has zeroed its counters); then
     * {@link #read()}; answers the bare dict {@code {txMsgs, rxMsgs, txMsgsec, rxMsgsec, maxtxMsgsec, maxrxMsgsec}}.
     */
    public ObjectNode readStats(String filter) {
        if ("__reset__".equals(filter)) reset();
        read();
        return putStats(JsonNodeFactory.instance.objectNode());
    }

    /** Writes the six keys into {@code out} without reading (the window does not move). */
    public ObjectNode putStats(ObjectNode out) {
        out.put(TX_MSGS, txMsgs.getAsLong());
        out.put(RX_MSGS, rxMsgs.getAsLong());
        out.put(TX_MSGSEC, txMsgsec);
        out.put(RX_MSGSEC, rxMsgsec);
        out.put(MAX_TX_MSGSEC, maxTxMsgsec);
        out.put(MAX_RX_MSGSEC, maxRxMsgsec);
        return out;
    }

    // --- Live upgrade ---

    /**
     * Everything the window holds, as JSON, for the behaviour of another revision of the gclass that owns it
     * ({@code GObjBehavior.onExport}): whether a window is open, when it opened (a time of the yuno's monotonic
     * clock) and the counters at that moment, the last rates and the maxima (the counters themselves are
     * attributes, which stay in the gobj). JSON rather than the object, so that a revision holding its own copy of
     * this class can take it.
     */
    public ObjectNode exportState() {
        ObjectNode s = putStats(JsonNodeFactory.instance.objectNode());
        s.put("open", open);
        s.put("window_start_ms", windowStartMs);
        s.put("window_tx", windowTx);
        s.put("window_rx", windowRx);
        return s;
    }

    /**
     * Takes what {@link #exportState} gave, on the same clock and over the same counters: the next read closes the
     * window the old behaviour opened, at the same time and with the same counts, so no message and no millisecond
     * is lost to a rate.
     *
     * @throws IllegalArgumentException when {@code s} is not such a state (the upgrade then falls back to a rebuild)
     */
    public void importState(JsonNode s) {
        if (s == null || !s.isObject() || !s.path(TX_MSGSEC).isIntegralNumber() || !s.path("open").isBoolean()) {
            throw new IllegalArgumentException("not a rate window state: " + s);
        }
        txMsgsec = s.path(TX_MSGSEC).asLong();
        rxMsgsec = s.path(RX_MSGSEC).asLong();
        maxTxMsgsec = s.path(MAX_TX_MSGSEC).asLong();
        maxRxMsgsec = s.path(MAX_RX_MSGSEC).asLong();
        open = s.path("open").asBoolean();
        windowStartMs = s.path("window_start_ms").asLong();
        windowTx = s.path("window_tx").asLong();
        windowRx = s.path("window_rx").asLong();
    }

    @Override
    public String toString() {
        return putStats(JsonNodeFactory.instance.objectNode()).toString();
    }
}
