// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The soft marks of a queue's rows (rowid to a non-zero mask), in an open-addressing table of primitive longs. A
 * gate marks every message it sends and clears the mark when the message is acked, so the table holds about the
 * gate's window; a {@code HashMap<Long, Long>} boxed two longs per message and its lookups and removals were 5 to
 * 6 % of the durable path's core loop.
 *
 * <p>Memory follows the marks held: the table doubles at half full and halves when under an eighth full, never
 * below {@link #MIN_CAPACITY}. Not thread safe: the queue's owner thread.
 */
final class SoftMarks {
    static final int MIN_CAPACITY = 64;
    /** A slot's rowid when it holds nothing: rowids are positive. */
    private static final long EMPTY = Long.MIN_VALUE;
    private long[] rowids = emptyRowids(MIN_CAPACITY);
    private long[] masks = new long[MIN_CAPACITY];
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
        int mask = rowids.length - 1;
        for (int i = home(rowid, mask); ; i = (i + 1) & mask) {
            long k = rowids[i];
            if (k == rowid) return masks[i];
            if (k == EMPTY) return 0;
        }
    }

    /** Sets the row's mask; 0 takes the row out. */
    void put(long rowid, long value) {
        if (value == 0) {
            remove(rowid);
            return;
        }
        int mask = rowids.length - 1;
        int i = home(rowid, mask);
        for (long k; (k = rowids[i]) != EMPTY; i = (i + 1) & mask) {
            if (k == rowid) {
                masks[i] = value;
                return;
            }
        }
        if ((size + 1) * 2 > rowids.length) {
            resize(rowids.length * 2);
            put(rowid, value);
            return;
        }
        rowids[i] = rowid;
        masks[i] = value;
        size++;
    }

    /** Takes the row's mark out, if it has one. */
    void remove(long rowid) {
        if (size == 0) return;
        int mask = rowids.length - 1;
        int i = home(rowid, mask);
        while (rowids[i] != rowid) {
            if (rowids[i] == EMPTY) return;
            i = (i + 1) & mask;
        }
        // linear probing: the entries after the hole that may not stay past it move back into it
        int hole = i;
        for (int j = (i + 1) & mask; rowids[j] != EMPTY; j = (j + 1) & mask) {
            int h = home(rowids[j], mask);
            boolean stays = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
            if (!stays) {
                rowids[hole] = rowids[j];
                masks[hole] = masks[j];
                hole = j;
            }
        }
        rowids[hole] = EMPTY;
        masks[hole] = 0;
        size--;
        if (rowids.length > MIN_CAPACITY && size * 8 < rowids.length) resize(rowids.length / 2);
    }

    void clear() {
        rowids = emptyRowids(MIN_CAPACITY);
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
            if (rowids[i] != EMPTY) m.put(rowids[i], masks[i]);
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
        int longest = 0;
        int run = 0;
        // twice round, so that a run across the end of the array is counted whole
        for (int k = 0; k < 2 * rowids.length; k++) {
            run = rowids[k & (rowids.length - 1)] == EMPTY ? 0 : run + 1;
            longest = Math.max(longest, Math.min(run, rowids.length));
        }
        return longest;
    }

    private void resize(int capacity) {
        long[] oldRowids = rowids;
        long[] oldMasks = masks;
        rowids = emptyRowids(capacity);
        masks = new long[capacity];
        int mask = capacity - 1;
        for (int j = 0; j < oldRowids.length; j++) {
            long k = oldRowids[j];
            if (k == EMPTY) continue;
            int i = home(k, mask);
            while (rowids[i] != EMPTY) i = (i + 1) & mask;
            rowids[i] = k;
            masks[i] = oldMasks[j];
        }
    }

    private static long[] emptyRowids(int n) {
        long[] k = new long[n];
        Arrays.fill(k, EMPTY);
        return k;
    }

    /**
     * Fibonacci hashing: the marked rowids are mostly one run of consecutive numbers (the window), which in
     * consecutive slots would make one cluster as long as the window for every removal to walk.
     */
    private static int home(long rowid, int mask) {
        long h = rowid * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }
}
