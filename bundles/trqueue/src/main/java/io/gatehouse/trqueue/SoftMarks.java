// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import io.gatehouse.support.RowidSlots;

import java.util.HashMap;
import java.util.Map;

/**
 * The soft marks of a queue's rows (rowid to a non-zero mask), in an open-addressing table of primitive longs. A
 * gate marks every message it sends and clears the mark when the message is acked, so the table holds about the
 * gate's window; a {@code HashMap<Long, Long>} boxed two longs per message and its lookups and removals were 5 to
 * 6 % of the durable path's core loop.
 *
 * <p>The keys are support's {@link RowidSlots} (C_QIOGATE's messages in flight use them too). Memory follows the marks held: the table doubles at half full and halves when under an eighth full, never
 * below {@link #MIN_CAPACITY}. Not thread safe: the queue's owner thread.
 */
final class SoftMarks {
    static final int MIN_CAPACITY = 64;
    private long[] rowids = RowidSlots.empty(MIN_CAPACITY);
    private long[] masks = new long[MIN_CAPACITY];
    private int size;
    /** Moves a mask with its rowid when a removal closes the hole (a field: no object per removal). */
    private final RowidSlots.Values moveMask = (from, to) -> masks[to] = masks[from];

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
        int i = RowidSlots.find(rowids, rowid);
        return i < 0 ? 0 : masks[i];
    }

    /** Sets the row's mask; 0 takes the row out. */
    void put(long rowid, long value) {
        if (value == 0) {
            remove(rowid);
            return;
        }
        int i = RowidSlots.find(rowids, rowid);
        if (i >= 0) {
            masks[i] = value;
            return;
        }
        if ((size + 1) * 2 > rowids.length) resize(rowids.length * 2);
        i = RowidSlots.freeSlot(rowids, rowid);
        rowids[i] = rowid;
        masks[i] = value;
        size++;
    }

    /** Takes the row's mark out, if it has one. */
    void remove(long rowid) {
        if (size == 0) return;
        int i = RowidSlots.find(rowids, rowid);
        if (i < 0) return;
        masks[RowidSlots.remove(rowids, i, moveMask)] = 0;
        size--;
        if (rowids.length > MIN_CAPACITY && size * 8 < rowids.length) resize(rowids.length / 2);
    }

    void clear() {
        rowids = RowidSlots.empty(MIN_CAPACITY);
        masks = new long[MIN_CAPACITY];
        size = 0;
    }

    /**
     * The marks as the map a live upgrade hands over ({@code "soft_marks"} of the open state): every revision so far
     * gives and takes a {@code Map<Long, Long>}, so this table's form stays private to this revision.
     */
    Map<Long, Long> toMap() {
        Map<Long, Long> m = new HashMap<>(Math.max(16, size * 2));
        for (int i = 0; i < rowids.length; i++) {
            if (rowids[i] != RowidSlots.EMPTY) m.put(rowids[i], masks[i]);
        }
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

    /** The longest run of occupied slots: what a lookup of an absent rowid and a removal may walk (for tests). */
    int longestCluster() {
        return RowidSlots.longestCluster(rowids);
    }

    private void resize(int capacity) {
        long[] oldRowids = rowids;
        long[] oldMasks = masks;
        rowids = RowidSlots.empty(capacity);
        masks = new long[capacity];
        for (int j = 0; j < oldRowids.length; j++) {
            if (oldRowids[j] == RowidSlots.EMPTY) continue;
            int i = RowidSlots.freeSlot(rowids, oldRowids[j]);
            rowids[i] = oldRowids[j];
            masks[i] = oldMasks[j];
        }
    }
}
