// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.kafka;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * C_KAFKA's records in flight answer as the {@code LinkedHashMap} they replace did, on the shapes a queue makes:
 * rowids sent in order and acked nearly so, resends, a new generation whose rowids start again at 1 while the old
 * one's are still in flight; and the table follows what is in flight, not the traffic.
 */
@Timeout(60)
class InFlightRecordsTest {

    private static List<Long> key(long generation, long rowid) {
        return List.of(generation, rowid);
    }

    @Test
    void shouldAnswerAsALinkedHashMapOnTheShapesAQueueMakes() {
        Random rnd = new Random(11);
        InFlightRecords t = new InFlightRecords();
        Map<List<Long>, Long> ref = new LinkedHashMap<>();
        long generation = 1_796_000_000_000L;
        long next = 1;
        long now = 0;
        List<List<Long>> sent = new ArrayList<>();
        for (int step = 0; step < 200_000; step++) {
            now++;
            int op = rnd.nextInt(100);
            if (op < 50) {
                // a send: mostly the next row, sometimes a resend of one in flight
                long g = generation;
                long r = op < 45 || sent.isEmpty() ? next++ : sent.get(rnd.nextInt(sent.size())).get(1);
                if (op >= 45 && !sent.isEmpty()) g = sent.get(rnd.nextInt(sent.size())).get(0);
                assertEquals(ref.containsKey(key(g, r)), t.contains(g, r));
                ref.remove(key(g, r));
                ref.put(key(g, r), now);
                t.put(g, r, now);
                sent.add(key(g, r));
            } else if (op < 97) {
                // an ack: nearly in order (the front of what was sent, or a little after it)
                if (sent.isEmpty()) continue;
                List<Long> k = sent.remove(Math.min(sent.size() - 1, rnd.nextInt(4)));
                assertEquals(ref.remove(k) != null, t.remove(k.get(0), k.get(1)));
            } else if (op < 99) {
                // a backup: a new generation, its rowids from 1 again, the old one's still in flight
                generation += 1 + rnd.nextInt(5_000);
                next = 1;
            } else {
                long g = rnd.nextBoolean() ? generation : generation - 1;
                long r = 1 + rnd.nextInt(200);
                assertEquals(ref.containsKey(key(g, r)), t.contains(g, r), "a lookup of any key");
            }
            assertEquals(ref.size(), t.size());
            if (step % 5_000 == 0) check(ref, t);
        }
        check(ref, t);
        assertFalse(t.contains(generation, 0));
        assertFalse(t.remove(generation, -3));
        long lastGeneration = generation;
        assertThrows(IllegalArgumentException.class, () -> t.put(lastGeneration, 0, 1));
    }

    private static void check(Map<List<Long>, Long> ref, InFlightRecords t) {
        long[][] got = t.inSendOrder();
        assertEquals(ref.size(), got.length);
        int i = 0;
        for (Map.Entry<List<Long>, Long> e : ref.entrySet()) {
            assertArrayEquals(new long[] {e.getKey().get(0), e.getKey().get(1), e.getValue()}, got[i++],
                    "the send order, as the linked map kept it");
        }
        assertEquals(ref.isEmpty() ? -1 : ref.values().iterator().next(), t.oldestSentAtMs());
    }

    @Test
    void shouldFollowWhatIsInFlightNotTheTraffic() {
        InFlightRecords t = new InFlightRecords();
        // a window of 10,000 sliding over 2,000,000 rows: the table stays at twice the window at most
        for (long r = 1; r <= 2_000_000; r++) {
            t.put(7, r, r);
            if (r > 10_000) assertTrue(t.remove(7, r - 10_000));
            assertTrue(t.capacity() <= 32_768, "capacity " + t.capacity());
        }
        assertEquals(0, t.displacedCount(), "a window of consecutive rowids has a slot each");
        assertEquals(10_000, t.size());
        assertEquals(1_990_001, t.oldestSentAtMs());
        for (long r = 1_990_001; r <= 2_000_000; r++) assertTrue(t.remove(7, r));
        assertEquals(0, t.size());
        int drained = t.capacity();
        assertTrue(drained > 4 * InFlightRecords.MIN_CAPACITY, "a window that just drained keeps its ring: " + drained);
        // then one record in flight at a time: the ring halves after each ring's worth of removals
        for (long r = 3_000_000; r < 3_000_000 + 4L * drained; r++) {
            t.put(7, r, r);
            assertTrue(t.remove(7, r));
        }
        assertTrue(t.capacity() <= 4 * InFlightRecords.MIN_CAPACITY, "given back once it stayed small: " + t.capacity());
        t.put(7, 5, 1);
        t.clear();
        assertEquals(0, t.size());
        assertFalse(t.contains(7, 5));
        assertEquals(-1, t.oldestSentAtMs());
    }
}
