// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import org.junit.jupiter.api.Test;

import java.util.Random;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.*;

class RowSetTest {
    @Test
    void shouldBehaveLikeASortedSetWhenOperatedAtRandom() {
        Random rnd = new Random(7);
        RowSet s = new RowSet();
        TreeSet<Long> ref = new TreeSet<>();
        long head = 1;
        for (int step = 0; step < 200_000; step++) {
            int op = rnd.nextInt(10);
            if (op < 5) {
                long r = head++;
                assertEquals(ref.add(r), s.add(r));
            } else if (op < 8 && !ref.isEmpty()) {
                Long r = rnd.nextBoolean() ? ref.first() : ref.ceiling(1 + (long) rnd.nextInt((int) head));
                if (r == null) continue;
                assertEquals(ref.remove(r), s.remove(r));
            } else if (op == 8) {
                long r = 1 + rnd.nextInt((int) head);
                assertEquals(ref.add(r), s.add(r), "re-add " + r);
            } else {
                long from = 1 + rnd.nextInt((int) head + 64);
                Long e = ref.ceiling(from);
                assertEquals(e == null ? -1 : e, s.next(from), "next " + from);
            }
            assertEquals(ref.size(), s.size());
        }
        long x = 1;
        for (Long r : ref) {
            assertEquals(r, s.next(x));
            x = r + 1;
        }
        assertEquals(-1, s.next(x));
    }

    @Test
    void shouldFindNothingPastTheNewestRowAfterTheArrayGrewAndAfterARoundTripThroughExport() {
        RowSet s = new RowSet();
        for (long r = 1; r <= 100_000; r++) s.add(r);
        for (long r = 1; r <= 99_000; r++) s.remove(r);
        assertEquals(-1, s.next(100_001));
        assertEquals(99_001, s.next(1));
        // the newest rows leave: the bound comes down with them, and a row added above it is found again
        for (long r = 100_000; r > 99_500; r--) s.remove(r);
        assertEquals(-1, s.next(99_501));
        assertEquals(99_500, s.next(99_500));
        s.add(200_000);
        assertEquals(200_000, s.next(99_501));
        RowSet copy = RowSet.of(s.export());
        assertEquals(s.size(), copy.size());
        for (long from : new long[] {1, 99_001, 99_500, 99_501, 150_000, 200_000, 200_001}) {
            assertEquals(s.next(from), copy.next(from), "next " + from);
        }
        copy.add(300_000);
        assertEquals(300_000, copy.next(200_001));
    }
}
