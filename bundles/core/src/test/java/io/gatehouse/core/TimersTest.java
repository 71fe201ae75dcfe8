// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import io.gatehouse.api.Cancellable;
import io.gatehouse.api.Kw;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Recorder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Gobj timers run on the yuno's clock: a manual clock moves them, and nothing else does. */
@Timeout(30)
class TimersTest {
    private final ManualClock clock = new ManualClock();
    private YunoRuntime rt;
    private Recorder rec;

    @BeforeEach
    void setUp() {
        rt = YunoRuntime.builder().name("timers").clock(clock).build().start();
        rec = Recorder.create(rt, "rec");
    }

    @AfterEach
    void tearDown() {
        rt.close();
    }

    @Test
    void shouldFireATimeoutOnlyWhenTheClockReachesIt() {
        rt.run(() -> rec.gobj().setTimeout(60_000, "EV_TIMEOUT", null));
        clock.advance(59_999);
        assertEquals(0, rec.count("EV_TIMEOUT"), "a minute has not passed");
        clock.advance(1);
        assertEquals(1, rec.count("EV_TIMEOUT"), "advance() returns once the due timer has run");
    }

    @Test
    void shouldNotFireACancelledTimeoutAndReleaseItsKw() {
        ByteBuf b = Unpooled.buffer().writeByte(1);
        Cancellable c = rt.call(() -> rec.gobj().setTimeout(100, "EV_TIMEOUT", Kw.withGbuffer(b)));
        rt.run(c::cancel);
        clock.advance(1_000);
        assertEquals(0, rec.count("EV_TIMEOUT"));
        assertEquals(0, b.refCnt(), "the kw of a cancelled timer is released");
        assertEquals(0, clock.pendingTimers());
    }

    @Test
    void shouldRunPeriodicTimersAtAFixedRateUntilCancelled() {
        Cancellable c = rt.call(() -> rec.gobj().setPeriodic(1_000, "EV_TIMEOUT_PERIODIC"));
        clock.advance(3_500);
        assertEquals(3, rec.count("EV_TIMEOUT_PERIODIC"));
        rt.run(c::cancel);
        clock.advance(10_000);
        assertEquals(3, rec.count("EV_TIMEOUT_PERIODIC"));
    }

    @Test
    void shouldRunTimersInDueOrder() {
        rt.run(() -> {
            rec.gobj().setTimeout(300, "EV_TIMEOUT", Kw.create().put("n", 3));
            rec.gobj().setTimeout(100, "EV_TIMEOUT", Kw.create().put("n", 1));
            rec.gobj().setTimeout(200, "EV_TIMEOUT", Kw.create().put("n", 2));
        });
        clock.advance(300);
        assertEquals(java.util.List.of(1, 2, 3),
                rec.events().stream().map(e -> e.kw.get("n").asInt()).collect(java.util.stream.Collectors.toList()));
    }

    @Test
    void shouldStopTheTimersOfADestroyedGobj() {
        rt.run(() -> rec.gobj().setPeriodic(100, "EV_TIMEOUT_PERIODIC"));
        clock.advance(250);
        assertEquals(2, rec.count("EV_TIMEOUT_PERIODIC"));
        rt.run(() -> rec.gobj().destroy());
        clock.advance(1_000);
        assertEquals(2, rec.count("EV_TIMEOUT_PERIODIC"));
        assertEquals(0, clock.pendingTimers(), "destroy cancels what the gobj armed");
    }

    @Test
    void shouldMoveTheClockTheGclassesRead() {
        long t0 = rt.call(() -> rt.yuno().clock().monotonicMillis());
        clock.advance(1_500);
        assertEquals(t0 + 1_500, (long) rt.call(() -> rt.yuno().clock().monotonicMillis()));
        assertThrows(IllegalArgumentException.class, () -> clock.advance(-1));
    }
}
