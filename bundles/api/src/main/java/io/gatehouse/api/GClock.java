package io.gatehouse.api;

/** Time as gclasses see it; tests inject a manual clock into the yuno. */
public interface GClock {
    /** Monotonic milliseconds, for intervals and rates. */
    long monotonicMillis();

    /** Wall-clock milliseconds since the epoch, for timestamps. */
    long epochMillis();

    GClock SYSTEM = new GClock() {
        @Override public long monotonicMillis() { return System.nanoTime() / 1_000_000L; }
        @Override public long epochMillis() { return System.currentTimeMillis(); }
    };
}
