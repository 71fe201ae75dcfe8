// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The table answers what the {@code HashMap<Long, Long>} it replaced answered (with a zero mask meaning "no mark"),
 * through a sliding window of consecutive rowids, rowids that would collide in a table indexed by their low bits,
 * rowids far apart, growth, shrinking and clears; and it hands over and takes the map a live upgrade carries.
 */
class SoftMarksTest {

    private static void same(Map<Long, Long> reference, SoftMarks marks, long from, long to, String when) {
        assertEquals(reference.size(), marks.size(), when);
        assertEquals(reference.isEmpty(), marks.isEmpty(), when);
        for (Map.Entry<Long, Long> e : reference.entrySet()) assertEquals((long) e.getValue(), marks.get(e.getKey()), when);
        for (long r = from; r < to; r++) assertEquals(reference.getOrDefault(r, 0L), marks.get(r), when + " rowid " + r);
        assertEquals(reference, marks.toMap(), when);
    }

    @Test
    void answersAsTheMapItReplacedOnRandomRuns() {
        Random rnd = new Random(43);
        long[][] shapes = {
            {1, 1},            // consecutive rowids, as a gate's window marks them
            {64, 1},           // every 64th: one slot of a table indexed by the low bits
            {1L << 32, 1},     // the high half differs only
            {1, 1L << 40},     // far from zero
        };
        for (long[] shape : shapes) {
            Map<Long, Long> reference = new HashMap<>();
            SoftMarks marks = new SoftMarks();
            long oldest = 0;
            long next = 0;
            for (int step = 0; step < 40_000; step++) {
                int op = rnd.nextInt(10);
                if (op < 4) {
                    // mark the next row (a send), with one of a few masks
                    long rowid = shape[1] + next++ * shape[0];
                    long v = 1L << rnd.nextInt(3);
                    reference.put(rowid, v);
                    marks.put(rowid, v);
                } else if (op < 7 && oldest < next) {
                    // the oldest row acked, mostly in order
                    long rowid = shape[1] + (rnd.nextInt(4) == 0 && next - oldest > 2
                            ? oldest + 1 + rnd.nextInt((int) Math.min(next - oldest - 1, 100)) : oldest++) * shape[0];
                    reference.remove(rowid);
                    marks.remove(rowid);
                } else if (op < 9 && next > 0) {
                    // a mask changed on a row seen before (or set to zero: no mark)
                    long rowid = shape[1] + rnd.nextInt((int) next) * shape[0];
                    long v = rnd.nextInt(4);
                    if (v == 0) reference.remove(rowid);
                    else reference.put(rowid, v);
                    marks.put(rowid, v);
                } else {
                    // a row never marked
                    long rowid = shape[1] + (next + 1 + rnd.nextInt(1000)) * shape[0];
                    assertEquals(0, marks.get(rowid));
                    marks.remove(rowid);
                }
                assertEquals(reference.size(), marks.size(), "step " + step);
                if (step % 5_000 == 0) same(reference, marks, shape[1], shape[1] + 50, "step " + step);
            }
            same(reference, marks, shape[1], shape[1] + 50, "end of shape " + shape[0]);
            assertEquals(reference, marks.toMap(), "end of shape " + shape[0]);
        }
    }

    @Test
    void aSlidingWindowHasASlotPerRowAndTheTableItsSize() {
        SoftMarks marks = new SoftMarks();
        int window = 10_000;
        for (long r = 1; r <= 200_000; r++) {
            marks.put(r, 1);
            if (r > window) marks.remove(r - window);
        }
        assertEquals(window, marks.size());
        assertTrue(marks.capacity() <= 4 * window, "capacity " + marks.capacity());
        assertEquals(0, marks.displacedCount(), "a window of consecutive rows has a slot each");
        for (long r = 200_001 - window; r <= 200_000; r++) marks.remove(r);
        assertEquals(0, marks.size());
        int drained = marks.capacity();
        assertTrue(drained > SoftMarks.MIN_CAPACITY, "a window that just drained keeps its ring: " + drained);
        // then a trickle, one row in flight at a time: the ring halves after each ring's worth of removals
        long r = 300_000;
        for (int i = 0; i < 4 * drained; i++, r++) {
            marks.put(r, 1);
            marks.remove(r);
        }
        assertEquals(SoftMarks.MIN_CAPACITY, marks.capacity(), "memory given back once the window stayed small");
    }

    @Test
    void aWindowThatDrainsAndRefillsKeepsItsRing() {
        SoftMarks marks = new SoftMarks();
        int window = 4_000;
        long next = 1;
        for (int i = 0; i < window; i++) marks.put(next++, 1);
        int capacity = marks.capacity();
        long oldest = 1;
        for (int swing = 0; swing < 50; swing++) {
            while (oldest < next) marks.remove(oldest++);   // every ack of the window comes back
            assertEquals(0, marks.size());
            for (int i = 0; i < window; i++) marks.put(next++, 1);   // and the next burst goes out
            assertEquals(capacity, marks.capacity(), "swing " + swing);
            assertEquals(0, marks.displacedCount());
        }
        for (long r = oldest; r < next; r++) assertEquals(1, marks.get(r));
    }

    @Test
    void handsOverAndTakesTheMapOfALiveUpgrade() {
        SoftMarks marks = new SoftMarks();
        for (long r = 1; r <= 1_000; r++) marks.put(r * 3, r % 4);
        Map<Long, Long> handed = marks.toMap();
        assertEquals(750, handed.size());   // the multiples of 4 had a zero mask: no mark

        SoftMarks taken = new SoftMarks();
        Map<Long, Long> fromAnOlderRevision = new HashMap<>(handed);
        fromAnOlderRevision.put(0L, 1L);       // not a rowid
        fromAnOlderRevision.put(5_000L, 0L);   // not a mark
        taken.putAll(fromAnOlderRevision);
        same(handed, taken, 1, 3_100, "taken over");

        taken.clear();
        assertEquals(0, taken.size());
        assertEquals(0, taken.get(3));
    }
}
