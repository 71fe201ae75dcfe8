// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import io.gatehouse.qiogate.InFlightWindow.InFlight;
import io.gatehouse.support.RowidSlots;

import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * The messages in flight by rowid, in the order they were added (send order): an open-addressing table over the
 * rowids themselves, with the order kept as a list through the entries. A {@code LinkedHashMap<Long, InFlight>}
 * did the same with a boxed key and a node per message, and its lookups were 3 to 5 % of the durable path's core
 * loop. The keys are support's {@link RowidSlots} (trqueue's soft marks use them too).
 *
 * <p>The table holds at most twice the largest number of messages that were ever in flight together (bounded by
 * the gate's credit window) and is not shrunk. Not thread safe: the gate's core loop only.
 */
final class InFlightTable implements Iterable<InFlight> {
    /** The rowid of each slot's message, beside it: probes read this array only, not the messages. */
    private long[] keys = RowidSlots.empty(16);
    private InFlight[] slots = new InFlight[16];
    private int size;
    private InFlight oldest;
    private InFlight newest;
    /** Moves a message with its rowid when a removal closes the hole (a field: no object per removal). */
    private final RowidSlots.Values moveSlot = (from, to) -> slots[to] = slots[from];

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    /** The message in flight with that rowid, or null. */
    InFlight get(long rowid) {
        int i = RowidSlots.find(keys, rowid);
        return i < 0 ? null : slots[i];
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
        int i = RowidSlots.find(keys, rowid);
        if (i < 0) return null;
        InFlight f = slots[i];
        slots[RowidSlots.remove(keys, i, moveSlot)] = null;
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
        Arrays.fill(keys, RowidSlots.EMPTY);
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
        return RowidSlots.longestCluster(keys);
    }

    private void place(InFlight f) {
        long rowid = f.rowid();
        int i = RowidSlots.freeSlot(keys, rowid);
        keys[i] = rowid;
        slots[i] = f;
    }

    private void grow() {
        InFlight[] old = slots;
        keys = RowidSlots.empty(old.length * 2);
        slots = new InFlight[old.length * 2];
        for (InFlight f : old) {
            if (f != null) place(f);
        }
    }
}
