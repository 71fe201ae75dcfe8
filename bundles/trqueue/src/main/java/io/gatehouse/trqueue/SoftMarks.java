// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;


import io.gatehouse.support.SparseSpell;

import java.util.HashMap;
import java.util.Map;

/**
 * The soft marks of a queue's rows (rowid to a non-zero mask), in primitive longs. A gate marks every message it
 * sends and clears the mark when the message is acked, so the table holds about the gate's window; a
 * {@code HashMap<Long, Long>} boxed two longs per message and its lookups and removals were 5 to 6 % of the durable
 * path's core loop.
 *
 * <p>The marked rows are mostly one run of consecutive rowids (the window), so each has its own slot of a ring,
 * {@code rowid & mask}, with at least twice the slots of the marks held: a lookup reads one slot, and the window's
 * slots are neighbours in memory (hashed over the table, each lookup was a random line of memory). A row whose slot
 * is taken (a mark a whole ring of rowids older, such as an unreadable row the window moved past) goes to a map
 * beside the ring, which holds those only. Memory follows the marks held: the ring doubles at half full and halves
 * once it has stayed under an eighth full for as many removals as it has slots ({@link SparseSpell}: a window that
 * dips and refills keeps its ring), never below {@link #MIN_CAPACITY}. Not thread safe: the queue's owner thread.
 */
final class SoftMarks {
    static final int MIN_CAPACITY = 64;
    /** A slot's rowid when it holds nothing: rowids are positive. */
    private static final long EMPTY = 0;
    private long[] rowids = new long[MIN_CAPACITY];
    private long[] masks = new long[MIN_CAPACITY];
    /** The marks whose ring slot another row holds; empty but for those. */
    private final HashMap<Long, Long> displaced = new HashMap<>();
    private final SparseSpell sparse = new SparseSpell();
    private int size;

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    int capacity() {
        return rowids.length;
    }

    /** The row's mask; 0 when it has none. */
    long get(long rowid) {
        if (size == 0) return 0;
        int i = slot(rowid);
        if (rowids[i] == rowid && rowid != EMPTY) return masks[i];
        if (displaced.isEmpty()) return 0;
        Long v = displaced.get(rowid);
        return v == null ? 0 : v;
    }

    /** Sets the row's mask; 0 takes the row out. */
    void put(long rowid, long value) {
        if (value == 0) {
            remove(rowid);
            return;
        }
        if (rowid <= EMPTY) throw new IllegalArgumentException("rowid " + rowid + " is not positive");
        int i = slot(rowid);
        if (rowids[i] == rowid) {
            masks[i] = value;
            return;
        }
        if (!displaced.isEmpty() && displaced.replace(rowid, value) != null) return;
        if ((size + 1) * 2 > rowids.length) resize(rowids.length * 2);
        place(rowid, value);
        size++;
    }

    /** Takes the row's mark out, if it has one. */
    void remove(long rowid) {
        if (size == 0) return;
        int i = slot(rowid);
        if (rowids[i] == rowid && rowid != EMPTY) {
            rowids[i] = EMPTY;
            masks[i] = 0;
        } else if (displaced.isEmpty() || displaced.remove(rowid) == null) {
            return;
        }
        size--;
        if (sparse.shrinkNow(size, rowids.length, MIN_CAPACITY, rowids.length)) resize(rowids.length / 2);
    }

    void clear() {
        rowids = new long[MIN_CAPACITY];
        masks = new long[MIN_CAPACITY];
        displaced.clear();
        size = 0;
        sparse.reset();
    }

    /**
     * The marks as the map a live upgrade hands over ({@code "soft_marks"} of the open state): every revision so far
     * gives and takes a {@code Map<Long, Long>}, so this table's form stays private to this revision.
     */
    Map<Long, Long> toMap() {
        Map<Long, Long> m = new HashMap<>(Math.max(16, size * 2));
        for (int i = 0; i < rowids.length; i++) {
            if (rowids[i] != EMPTY) m.put(rowids[i], masks[i]);
        }
        m.putAll(displaced);
        return m;
    }

    /** Adds the marks of a handed-over map (zero masks and non-positive rowids are not marks). */
    void putAll(Map<Long, Long> marks) {
        for (Map.Entry<Long, Long> e : marks.entrySet()) {
            Long rowid = e.getKey();
            Long value = e.getValue();
            if (rowid != null && rowid > 0 && value != null) put(rowid, value);
        }
    }

    /** How many marks are held beside the ring, their slot taken (for tests). */
    int displacedCount() {
        return displaced.size();
    }

    private int slot(long rowid) {
        return (int) rowid & (rowids.length - 1);
    }

    private void place(long rowid, long value) {
        int i = slot(rowid);
        if (rowids[i] == EMPTY) {
            rowids[i] = rowid;
            masks[i] = value;
        } else {
            displaced.put(rowid, value);
        }
    }

    /** The ring at {@code capacity} slots: the marks of the ring placed first, then those that were displaced. */
    private void resize(int capacity) {
        long[] oldRowids = rowids;
        long[] oldMasks = masks;
        Map<Long, Long> oldDisplaced = displaced.isEmpty() ? Map.of() : new HashMap<>(displaced);
        rowids = new long[capacity];
        masks = new long[capacity];
        displaced.clear();
        for (int j = 0; j < oldRowids.length; j++) {
            if (oldRowids[j] != EMPTY) place(oldRowids[j], oldMasks[j]);
        }
        oldDisplaced.forEach(this::place);
    }
}
