// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class StreakTest {

    @Test
    void shouldSayTheFirstOccurrenceOnlyAndCountThemAll() {
        Streak s = new Streak();
        assertFalse(s.active());
        assertTrue(s.hit());
        assertFalse(s.hit());
        assertFalse(s.hit());
        assertTrue(s.active());
        assertEquals(3, s.count());
        assertEquals(3, s.end());
        assertFalse(s.active());
        assertEquals(0, s.end(), "no streak runs: nothing to say");
        assertTrue(s.hit(), "a new streak is said again");
    }

    @Test
    void shouldRemindAtMostOnceAMinuteWhileAStreakLasts() {
        Streak s = new Streak();
        assertTrue(s.hit(1_000));
        assertFalse(s.hit(2_000));
        assertFalse(s.hit(1_000 + Streak.REMIND_MS - 1));
        assertTrue(s.hit(1_000 + Streak.REMIND_MS), "a minute after the last one said");
        assertFalse(s.hit(1_000 + Streak.REMIND_MS + 10));
        assertEquals(5, s.count());
        assertEquals(5, s.end());
        assertTrue(s.hit(1_000 + Streak.REMIND_MS + 20), "the first of a new streak, however soon");
    }

    @Test
    void shouldGoOnWithAStreakAPreviousRevisionHadUnderWay() {
        Streak s = new Streak();
        s.resume(4);
        assertTrue(s.active());
        assertFalse(s.hit(), "under way: not said again");
        assertEquals(5, s.end());

        Streak t = new Streak();
        t.resume(2, 10_000);
        assertFalse(t.hit(10_000 + Streak.REMIND_MS - 1), "the old revision said it at 10 s");
        assertTrue(t.hit(10_000 + Streak.REMIND_MS));
        assertEquals(4, t.end());

        Streak none = new Streak();
        none.resume(-3);
        assertFalse(none.active());
        assertTrue(none.hit());
    }
}
