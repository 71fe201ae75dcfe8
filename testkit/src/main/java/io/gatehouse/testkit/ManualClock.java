// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import io.gatehouse.api.Cancellable;
import io.gatehouse.core.TimerClock;
import io.netty.channel.EventLoop;

import java.util.PriorityQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A clock that moves only when a test says so, and runs the yuno's timers as it moves. Build the yuno with it
 * ({@code YunoRuntime.builder().clock(clock)}) and every gobj timer (ack timeouts, backoff, reconnects, payload
 * timeouts, rate windows) is driven by {@link #advance}: a test of "resent after 60 s" takes no time at all.
 *
 * <p>{@link #advance} runs each due timer on its event loop in due order, moving the time to that timer's due
 * time first, and waits for it, so when it returns every action the elapsed time triggered has run, timers set by
 * those actions included. Call it from the test thread, not from the core loop. Wall-clock time
 * ({@link #epochMillis}) moves with it, from a fixed start.
 */
public final class ManualClock implements TimerClock {
    /** Longest a timer's action may take on its loop before advance() gives up (a stuck test fails, not hangs). */
    private static final long RUN_TIMEOUT_MS = 30_000;
    private static final long EPOCH_START_MS = 1_767_225_600_000L;   // 2026-01-01T00:00:00Z

    private final PriorityQueue<Timer> timers = new PriorityQueue<>();
    private long nowMs;
    private long seq;

    private final class Timer implements Comparable<Timer>, Cancellable {
        final long due;
        final long order;
        final EventLoop loop;
        final Runnable task;
        volatile boolean cancelled;

        Timer(long due, long order, EventLoop loop, Runnable task) {
            this.due = due;
            this.order = order;
            this.loop = loop;
            this.task = task;
        }

        @Override
        public int compareTo(Timer o) {
            int c = Long.compare(due, o.due);
            return c != 0 ? c : Long.compare(order, o.order);
        }

        @Override
        public void cancel() {
            cancelled = true;
            synchronized (ManualClock.this) {
                timers.remove(this);
            }
        }
    }

    @Override
    public synchronized long monotonicMillis() {
        return nowMs;
    }

    @Override
    public synchronized long epochMillis() {
        return EPOCH_START_MS + nowMs;
    }

    @Override
    public synchronized Cancellable schedule(EventLoop loop, long delayMs, Runnable task) {
        Timer t = new Timer(nowMs + Math.max(0, delayMs), seq++, loop, task);
        timers.add(t);
        return t;
    }

    /**
     * Moves time forward by {@code ms}, running every timer that falls due on the way (and the ones they set
     * that fall due before the end), each on its loop, in due order.
     */
    public void advance(long ms) {
        if (ms < 0) throw new IllegalArgumentException("time goes forward only: " + ms);
        long end;
        synchronized (this) {
            end = nowMs + ms;
        }
        while (true) {
            Timer next;
            synchronized (this) {
                next = timers.peek();
                if (next == null || next.due > end) {
                    nowMs = end;
                    return;
                }
                timers.poll();
                nowMs = Math.max(nowMs, next.due);
            }
            if (!next.cancelled) run(next);
        }
    }

    /** Timers waiting to fire (cancelled ones are gone). */
    public synchronized int pendingTimers() {
        return timers.size();
    }

    /** When the next timer falls due, in this clock's ms, or -1 with none. */
    public synchronized long nextDue() {
        Timer t = timers.peek();
        return t == null ? -1 : t.due;
    }

    private static void run(Timer t) {
        if (t.loop.inEventLoop()) {
            throw new IllegalStateException("ManualClock.advance() was called on the core loop: call it from the test");
        }
        try {
            t.loop.submit(() -> {
                if (!t.cancelled) t.task.run();
            }).get(RUN_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while a timer ran", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("a timer's action failed", e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("a timer's action did not end within " + RUN_TIMEOUT_MS + " ms", e);
        }
    }
}
