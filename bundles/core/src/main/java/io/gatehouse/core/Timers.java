// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import io.gatehouse.api.Cancellable;
import io.gatehouse.api.GClock;
import io.netty.channel.EventLoop;

import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The yuno's timers: on the event loop's scheduler, or on a {@link TimerClock} when the yuno's clock is one.
 * Tasks always run on the core loop.
 */
final class Timers {
    private final EventLoop loop;
    private final TimerClock clock;

    Timers(EventLoop loop, GClock clock) {
        this.loop = loop;
        this.clock = clock instanceof TimerClock ? (TimerClock) clock : null;
    }

    Cancellable schedule(long delayMs, Runnable task) {
        if (clock != null) return clock.schedule(loop, delayMs, task);
        ScheduledFuture<?> f = loop.schedule(task, delayMs, TimeUnit.MILLISECONDS);
        return () -> f.cancel(false);
    }

    /**
     * At a fixed rate: the n-th run is due {@code n * periodMs} after now, whatever the runs cost, as
     * {@code scheduleAtFixedRate}; a run late by more than a period is not repeated to catch up.
     */
    Cancellable schedulePeriodic(long periodMs, Runnable task) {
        if (clock == null) {
            ScheduledFuture<?> f = loop.scheduleAtFixedRate(task, periodMs, periodMs, TimeUnit.MILLISECONDS);
            return () -> f.cancel(false);
        }
        Periodic p = new Periodic(periodMs, task);
        p.arm(periodMs);
        return p;
    }

    /** A periodic timer on a {@link TimerClock}: each run arms the next one. */
    private final class Periodic implements Cancellable, Runnable {
        private final long periodMs;
        private final Runnable task;
        private long nextDue;
        private volatile Cancellable armed = Cancellable.NONE;
        private volatile boolean cancelled;

        Periodic(long periodMs, Runnable task) {
            this.periodMs = periodMs;
            this.task = task;
            this.nextDue = clock.monotonicMillis();
        }

        void arm(long delay) {
            nextDue += delay;
            armed = clock.schedule(loop, Math.max(0, nextDue - clock.monotonicMillis()), this);
        }

        @Override
        public void run() {
            if (cancelled) return;
            long now = clock.monotonicMillis();
            try {
                task.run();
            } finally {
                if (!cancelled) {
                    if (nextDue + periodMs <= now) nextDue = now;   // late by a whole period: no burst of catch-up runs
                    arm(periodMs);
                }
            }
        }

        @Override
        public void cancel() {
            cancelled = true;
            armed.cancel();
        }
    }
}
