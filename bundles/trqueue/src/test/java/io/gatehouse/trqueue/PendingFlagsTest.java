// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.*;

class PendingFlagsTest {
    @Test
    void shouldAnswerLikeAMapWhileItGrowsToItsCapacityAndSortByRowid() {
        Segment seg = new Segment(Path.of("x.seg"), 1);
        Random rnd = new Random(3);
        PendingFlags p = new PendingFlags();
        for (int round = 0; round < 3; round++) {
            Map<Long, Integer> ref = new HashMap<>();
            while (!p.isFull()) {
                long rowid = 1 + rnd.nextInt(1_000_000);
                int flag = rnd.nextInt(0x10000);
                p.put(rowid, seg, (int) rowid * 8, flag);
                ref.put(rowid, flag);
                assertEquals(ref.size(), p.size());
                long probe = 1 + rnd.nextInt(1_000_000);
                assertEquals(ref.getOrDefault(probe, -7), p.flag(probe, -7), "flag of " + probe);
            }
            assertEquals(PendingFlags.CAPACITY, p.size());
            int[] sorted = p.sortedSlots();
            for (int i = 1; i < sorted.length; i++) {
                assertTrue(p.offset(sorted[i - 1]) < p.offset(sorted[i]), "in rowid (file) order");
            }
            // the first half written: the rest kept, still found
            p.keepFrom(sorted, sorted.length / 2);
            assertEquals(PendingFlags.CAPACITY - sorted.length / 2, p.size());
            for (Map.Entry<Long, Integer> e : ref.entrySet()) {
                int got = p.flag(e.getKey(), -1);
                assertTrue(got == -1 || got == e.getValue());
            }
            p.clear();
            assertTrue(p.isEmpty());
            assertEquals(-1, p.flag(ref.keySet().iterator().next(), -1));
        }
    }

    /**
     * Stores mostly in rowid order (as acks come), now and then a row again or an earlier one: every answer is a
     * map's, and the slots come out in rowid order, across flushes that keep part and clears.
     */
    @Test
    void shouldAnswerLikeAMapForStoresMostlyInRowidOrder() {
        Segment seg = new Segment(Path.of("x.seg"), 1);
        Random rnd = new Random(5);
        PendingFlags p = new PendingFlags();
        java.util.TreeMap<Long, Integer> ref = new java.util.TreeMap<>();
        long next = 1;
        for (int step = 0; step < 60_000; step++) {
            if (p.isFull()) {
                int[] sorted = p.sortedSlots();
                int from = rnd.nextInt(sorted.length + 1);
                for (int i = 0; i < from; i++) ref.remove(ref.firstKey());
                p.keepFrom(sorted, from);
            }
            if (rnd.nextInt(2000) == 0) {
                p.clear();
                ref.clear();
            }
            long rowid;
            int kind = rnd.nextInt(100);
            if (kind < 90 || ref.isEmpty()) {
                rowid = next;   // the next row, or a little past it
                next += 1 + (rnd.nextInt(8) == 0 ? rnd.nextInt(5) : 0);
            } else if (kind < 95) {
                rowid = ref.lastKey() - rnd.nextInt((int) Math.min(50, ref.lastKey()));   // held, or a gap before the highest
            } else {
                rowid = Math.max(1, next - 1 - rnd.nextInt(30_000));   // far back
            }
            int flag = rnd.nextInt(0x10000);
            p.put(rowid, seg, (int) rowid * 8, flag);
            ref.put(rowid, flag);
            assertEquals(ref.size(), p.size());
            long probe = Math.max(1, next - rnd.nextInt(100));
            assertEquals(ref.getOrDefault(probe, -7), p.flag(probe, -7), "flag of " + probe);
            if (step % 997 == 0) {
                int[] sorted = p.sortedSlots();
                assertEquals(ref.size(), sorted.length);
                int i = 0;
                for (Map.Entry<Long, Integer> e : ref.entrySet()) {
                    assertEquals((int) (long) e.getKey() * 8, p.offset(sorted[i]), "slot " + i + " in rowid order");
                    assertEquals((int) e.getValue(), p.flagAt(sorted[i]));
                    i++;
                }
            }
        }
    }

    @Test
    void shouldFindTheLowestAndHighestRowidsHeldAndNothingPastThemAfterAClear() {
        Segment seg = new Segment(Path.of("x.seg"), 1);
        PendingFlags p = new PendingFlags();
        for (long r = 100; r <= 110; r += 5) p.put(r, seg, (int) r * 8, (int) r);
        assertEquals(100, p.flag(100, -1));
        assertEquals(110, p.flag(110, -1));
        assertEquals(105, p.flag(105, -1));
        assertEquals(-1, p.flag(99, -1));
        assertEquals(-1, p.flag(111, -1));
        assertEquals(-1, p.flag(104, -1));
        p.keepFrom(p.sortedSlots(), 1);   // 100 written
        assertEquals(-1, p.flag(100, -1));
        assertEquals(105, p.flag(105, -1));
        p.clear();
        p.put(7, seg, 56, 1);
        assertEquals(-1, p.flag(105, -1), "the range of the stores before the clear is gone");
        assertEquals(1, p.flag(7, -1));
    }
}
