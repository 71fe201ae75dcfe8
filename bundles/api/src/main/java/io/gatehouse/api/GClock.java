// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

/**
 * Time as gclasses see it: the yuno's clock ({@link Yuno#clock()}). Core runs the gobj timers on it too, so a test
 * that builds its yuno with a manual clock (the testkit's {@code ManualClock}) moves timers, ack timeouts, backoff
 * and rate windows by advancing it, without sleeping. A gclass never reads {@code System.nanoTime()} for its own
 * intervals.
 */
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
