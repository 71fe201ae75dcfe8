// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.qiogate.InFlightWindow.InFlight;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The table answers what the {@code LinkedHashMap<Long, InFlight>} it replaced answered: the same message for a
 * rowid, the same send order, the same size, through runs of consecutive rowids, rowids that collide in the table,
 * rowids far apart, removals in and out of order, growth and clears.
 */
class InFlightTableTest {

    private static InFlight inFlight(long rowid) {
        return new InFlight(new QueueMessage() {
            @Override public long rowid() { return rowid; }
            @Override public long generation() { return 1; }
            @Override public long t() { return 0; }
            @Override public long tm() { return 0; }
            @Override public int userFlag() { return 0; }
            @Override public long softMark() { return 0; }
        });
    }

    private static void same(LinkedHashMap<Long, InFlight> reference, InFlightTable table, String when) {
        assertEquals(reference.size(), table.size(), when);
        assertEquals(reference.isEmpty(), table.isEmpty(), when);
        List<InFlight> order = new ArrayList<>();
        table.forEach(order::add);
        assertEquals(new ArrayList<>(reference.values()), order, when);
        for (InFlight f : reference.values()) assertSame(f, table.get(f.rowid()), when);
    }

    @Test
    void answersAsTheMapItReplacedOnRandomRuns() {
        Random rnd = new Random(41);
        long[][] shapes = {
            {1, 1},                  // consecutive rowids, as the window sends them
            {16, 1},                 // every 16th: all in one slot of a small table
            {1024, 1},               // every 1024th: collide at every size the table takes here
            {1L << 32, 1},           // the high half differs only
            {1, 1L << 40},           // far from zero
        };
        for (long[] shape : shapes) {
            LinkedHashMap<Long, InFlight> reference = new LinkedHashMap<>();
            InFlightTable table = new InFlightTable();
            long next = 0;
            for (int step = 0; step < 30_000; step++) {
                int op = rnd.nextInt(10);
                if (op < 5 || reference.isEmpty()) {
                    long rowid = shape[1] + next++ * shape[0];
                    InFlight f = inFlight(rowid);
                    reference.put(rowid, f);
                    table.add(f);
                } else if (op < 8) {
                    // mostly the oldest (acks in order), sometimes any
                    List<Long> keys = new ArrayList<>(reference.keySet());
                    long rowid = op < 7 ? keys.get(0) : keys.get(rnd.nextInt(keys.size()));
                    assertSame(reference.remove(rowid), table.remove(rowid));
                } else if (op < 9) {
                    long absent = shape[1] + (next + 1 + rnd.nextInt(100)) * shape[0];
                    assertNull(table.get(absent));
                    assertNull(table.remove(absent));
                    assertTrue(!table.contains(absent));
                } else if (rnd.nextInt(200) == 0) {
                    reference.clear();
                    table.clear();
                }
                if (step % 997 == 0) same(reference, table, "shape " + shape[0] + "/" + shape[1] + " step " + step);
            }
            same(reference, table, "shape " + shape[0] + "/" + shape[1] + " at the end");
            while (!reference.isEmpty()) {
                long rowid = reference.keySet().iterator().next();
                assertSame(reference.remove(rowid), table.remove(rowid));
            }
            same(reference, table, "emptied");
        }
    }

    /**
     * A window of consecutive rowids, acked oldest first while new ones are sent, has a ring slot each: nothing is
     * displaced. A straggler (one message in flight while the window moves on by many rings) displaces one rowid
     * at a time, which leaves when acked.
     */
    @Test
    void aSlidingWindowHasASlotPerRowidAndAStragglerDisplacesOneAtATime() {
        InFlightTable table = new InFlightTable();
        long next = 1;
        for (; next <= 10_000; next++) table.add(inFlight(next));
        assertEquals(0, table.displacedCount());
        for (long oldest = 1; oldest <= 50_000; oldest++) {
            table.remove(oldest);
            table.add(inFlight(next++));
            assertEquals(0, table.displacedCount());
        }
        assertEquals(10_000, table.size());
        InFlight straggler = table.get(50_001);
        for (long oldest = 50_002; oldest <= 200_000; oldest++) {
            table.remove(oldest);
            table.add(inFlight(next++));
            assertTrue(table.displacedCount() <= 1, "displaced " + table.displacedCount());
        }
        assertSame(straggler, table.get(50_001));
        assertSame(straggler, table.remove(50_001));
        assertEquals(9_999, table.size());
    }

    @Test
    void aRowidAddedAgainReplacesTheOneHeldAndGoesLast() {
        InFlightTable table = new InFlightTable();
        InFlight a = inFlight(7);
        InFlight b = inFlight(8);
        InFlight again = inFlight(7);
        table.add(a);
        table.add(b);
        table.add(again);
        assertEquals(2, table.size());
        assertSame(again, table.get(7));
        List<InFlight> order = new ArrayList<>();
        table.forEach(order::add);
        assertEquals(List.of(b, again), order);
    }
}
