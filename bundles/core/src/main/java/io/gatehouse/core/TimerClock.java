// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import io.gatehouse.api.Cancellable;
import io.gatehouse.api.GClock;
import io.netty.channel.EventLoop;

/**
 * A clock that also runs the yuno's timers. A yuno built with one ({@code YunoRuntime.builder().clock(c)})
 * schedules every gobj timer ({@code setTimeout}, {@code setPeriodic}) through it instead of the event loop's own
 * scheduler, so time is the clock's: the testkit's {@code ManualClock} runs due timers when a test advances it.
 * With any other clock (the system one) timers run on the event loop's scheduler in real milliseconds.
 */
public interface TimerClock extends GClock {
    /**
     * Runs {@code task} on {@code loop} once {@code delayMs} of this clock have passed. The returned handle cancels
     * it if it has not run yet.
     */
    Cancellable schedule(EventLoop loop, long delayMs, Runnable task);
}
