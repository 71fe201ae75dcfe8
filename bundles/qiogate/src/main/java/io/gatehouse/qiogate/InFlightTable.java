// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import io.gatehouse.qiogate.InFlightWindow.InFlight;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * The messages in flight by rowid, in the order they were added (send order). The rowids in flight are mostly one
 * run of consecutive numbers (the window), so each has its own slot of a ring, {@code rowid & mask}, with at least
 * twice the slots of the messages held: a lookup reads one slot, and the window's slots are neighbours in memory.
 * A rowid whose slot is taken (a message still in flight a whole ring of rowids after it was sent: a straggler
 * retried while the window moved on) goes to a map beside the ring, which holds those only. The table before
 * hashed every rowid over the slots (so that a run made no cluster for linear probing to walk), and those lookups,
 * each in a random line of memory, were 6 to 9 % of the Kafka edge's core loop.
 *
 * <p>The ring holds at most twice the largest number of messages that were ever in flight together (bounded by
 * the gate's credit window) and is not shrunk; the map holds no more than are in flight. Not thread safe: the
 * gate's core loop only.
 */
final class InFlightTable implements Iterable<InFlight> {
    /** A slot's rowid when it holds nothing: rowids are positive. */
    private static final long EMPTY = 0;

    /** The rowid of each slot's message, beside it: a lookup reads this array, not the messages. */
    private long[] keys = new long[16];
    private InFlight[] slots = new InFlight[16];
    /** The messages whose ring slot another one holds, by rowid; empty but for stragglers. */
    private final HashMap<Long, InFlight> displaced = new HashMap<>();
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
        int i = slot(rowid);
        if (keys[i] == rowid && rowid != EMPTY) return slots[i];
        return displaced.isEmpty() ? null : displaced.get(rowid);
    }

    boolean contains(long rowid) {
        return get(rowid) != null;
    }

    /** Adds {@code f} as the newest; one already held with its rowid is taken out first (as a map's put would replace it, but last in order). */
    void add(InFlight f) {
        long rowid = f.rowid();
        if (rowid <= EMPTY) throw new IllegalArgumentException("rowid " + rowid + " is not positive");
        remove(rowid);
        if ((size + 1) * 2 > slots.length) grow();
        place(f, rowid);
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
        int i = slot(rowid);
        InFlight f;
        if (keys[i] == rowid && rowid != EMPTY) {
            f = slots[i];
            keys[i] = EMPTY;
            slots[i] = null;
        } else {
            f = displaced.isEmpty() ? null : displaced.remove(rowid);
            if (f == null) return null;
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
        displaced.clear();
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

    /** How many messages are held beside the ring, their slot taken (for tests). */
    int displacedCount() {
        return displaced.size();
    }

    private int slot(long rowid) {
        return (int) rowid & (keys.length - 1);
    }

    private void place(InFlight f, long rowid) {
        int i = slot(rowid);
        if (keys[i] == EMPTY) {
            keys[i] = rowid;
            slots[i] = f;
        } else {
            displaced.put(rowid, f);
        }
    }

    /** Twice the slots; every message placed again in send order, so the older keeps a slot both want. */
    private void grow() {
        keys = new long[keys.length * 2];
        slots = new InFlight[slots.length * 2];
        displaced.clear();
        for (InFlight f = oldest; f != null; f = f.newer) place(f, f.rowid());
    }
}
