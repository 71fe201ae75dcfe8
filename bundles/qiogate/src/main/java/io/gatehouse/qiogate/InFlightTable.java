// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import io.gatehouse.qiogate.InFlightWindow.InFlight;

import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * The messages in flight by rowid, in the order they were added (send order): an open-addressing table over the
 * rowids themselves, with the order kept as a list through the entries. A {@code LinkedHashMap<Long, InFlight>}
 * did the same with a boxed key and a node per message, and its lookups were 3 to 5 % of the durable path's core
 * loop.
 *
 * <p>The table holds at most twice the largest number of messages that were ever in flight together (bounded by
 * the gate's credit window) and is not shrunk. Not thread safe: the gate's core loop only.
 */
final class InFlightTable implements Iterable<InFlight> {
    /** A slot's rowid when it holds nothing: rowids are positive. */
    private static final long EMPTY = Long.MIN_VALUE;
    /** The rowid of each slot's message, beside it: probes read this array only, not the messages. */
    private long[] keys = emptyKeys(16);
    private InFlight[] slots = new InFlight[16];
    private int size;
    private InFlight oldest;
    private InFlight newest;

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    /** The message in flight with that rowid, or null. */
    InFlight get(long rowid) {
        int mask = keys.length - 1;
        for (int i = home(rowid, mask); ; i = (i + 1) & mask) {
            long k = keys[i];
            if (k == rowid) return slots[i];
            if (k == EMPTY) return null;
        }
    }

    boolean contains(long rowid) {
        return get(rowid) != null;
    }

    /** Adds {@code f} as the newest; one already held with its rowid is taken out first (as a map's put would replace it, but last in order). */
    void add(InFlight f) {
        remove(f.rowid());
        if ((size + 1) * 2 > slots.length) grow();
        place(f);
        f.older = newest;
        f.newer = null;
        if (newest == null) {
            oldest = f;
        } else {
            newest.newer = f;
        }
        newest = f;
        size++;
    }

    /** Takes the message with that rowid out; it is answered, or null when none is held. */
    InFlight remove(long rowid) {
        int mask = keys.length - 1;
        int i = home(rowid, mask);
        while (keys[i] != rowid) {
            if (keys[i] == EMPTY) return null;
            i = (i + 1) & mask;
        }
        InFlight f = slots[i];
        // linear probing: the entries after the hole that may not stay past it move back into it
        keys[i] = EMPTY;
        slots[i] = null;
        int hole = i;
        for (int j = (i + 1) & mask; keys[j] != EMPTY; j = (j + 1) & mask) {
            int h = home(keys[j], mask);
            boolean stays = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
            if (!stays) {
                keys[hole] = keys[j];
                slots[hole] = slots[j];
                keys[j] = EMPTY;
                slots[j] = null;
                hole = j;
            }
        }
        if (f.older == null) {
            oldest = f.newer;
        } else {
            f.older.newer = f.newer;
        }
        if (f.newer == null) {
            newest = f.older;
        } else {
            f.newer.older = f.older;
        }
        f.older = null;
        f.newer = null;
        size--;
        return f;
    }

    void clear() {
        Arrays.fill(keys, EMPTY);
        Arrays.fill(slots, null);
        for (InFlight f = oldest; f != null; ) {
            InFlight next = f.newer;
            f.older = null;
            f.newer = null;
            f = next;
        }
        oldest = null;
        newest = null;
        size = 0;
    }

    /** The messages from the oldest added to the newest; the table must not change while it is walked. */
    @Override
    public Iterator<InFlight> iterator() {
        return new Iterator<>() {
            private InFlight next = oldest;

            @Override
            public boolean hasNext() {
                return next != null;
            }

            @Override
            public InFlight next() {
                if (next == null) throw new NoSuchElementException();
                InFlight f = next;
                next = f.newer;
                return f;
            }
        };
    }

    /** The longest run of occupied slots: what a lookup of an absent rowid and a removal may walk (for tests). */
    int longestCluster() {
        int longest = 0;
        int run = 0;
        // twice round, so that a run across the end of the array is counted whole
        for (int k = 0; k < 2 * slots.length; k++) {
            run = keys[k & (keys.length - 1)] == EMPTY ? 0 : run + 1;
            longest = Math.max(longest, Math.min(run, slots.length));
        }
        return longest;
    }

    private void place(InFlight f) {
        long rowid = f.rowid();
        int mask = keys.length - 1;
        int i = home(rowid, mask);
        while (keys[i] != EMPTY) i = (i + 1) & mask;
        keys[i] = rowid;
        slots[i] = f;
    }

    private void grow() {
        InFlight[] old = slots;
        keys = emptyKeys(old.length * 2);
        slots = new InFlight[old.length * 2];
        for (InFlight f : old) {
            if (f != null) place(f);
        }
    }

    private static long[] emptyKeys(int n) {
        long[] k = new long[n];
        Arrays.fill(k, EMPTY);
        return k;
    }

    /**
     * Fibonacci hashing: the rowids in flight are mostly one run of consecutive numbers, and put in consecutive
     * slots they made one cluster as long as the window, which every removal walked to its end (linear probing
     * moves back what follows a hole up to the next empty slot). Spread, clusters stay a few slots long.
     */
    private static int home(long rowid, int mask) {
        long h = rowid * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }
}
