// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import java.util.Arrays;

/**
 * Open addressing over rowids (positive longs) in a {@code long[]} whose length is a power of two, with linear
 * probing: the key side of a table whose values sit in arrays of the caller's, at the same slots (C_QIOGATE's
 * messages in flight, trqueue's soft marks). No object per entry, no boxing.
 *
 * <p>Rowids are hashed (Fibonacci): the rowids a table holds are mostly one run of consecutive numbers (a window),
 * and in consecutive slots they made one cluster as long as the window, which every removal walked to its end
 * (linear probing moves back what follows a hole up to the next empty slot). Spread, clusters stay a few slots long.
 */
public final class RowidSlots {
    private RowidSlots() {}

    /** A slot's key when it holds nothing: rowids are positive. */
    public static final long EMPTY = Long.MIN_VALUE;

    /** Moves a caller's value between slots, as {@link #remove} moves the keys. */
    public interface Values {
        void move(int from, int to);
    }

    /** {@code n} empty slots. */
    public static long[] empty(int n) {
        long[] k = new long[n];
        Arrays.fill(k, EMPTY);
        return k;
    }

    /** Where the probe for {@code rowid} starts. */
    public static int home(long rowid, int mask) {
        long h = rowid * 0x9E3779B97F4A7C15L;
        return (int) (h ^ (h >>> 32)) & mask;
    }

    /** The slot holding {@code rowid}, or -1. */
    public static int find(long[] keys, long rowid) {
        int mask = keys.length - 1;
        for (int i = home(rowid, mask); ; i = (i + 1) & mask) {
            long k = keys[i];
            if (k == rowid) return i;
            if (k == EMPTY) return -1;
        }
    }

    /** The empty slot where {@code rowid}, not held, goes (the table must have one). */
    public static int freeSlot(long[] keys, long rowid) {
        int mask = keys.length - 1;
        int i = home(rowid, mask);
        while (keys[i] != EMPTY) i = (i + 1) & mask;
        return i;
    }

    /**
     * Empties slot {@code i}: the entries after it in its cluster that may not stay past the hole move back into it
     * (the keys here, the caller's values through {@code values}). Answers the slot left empty at the end, whose
     * value the caller clears.
     */
    public static int remove(long[] keys, int i, Values values) {
        int mask = keys.length - 1;
        int hole = i;
        for (int j = (i + 1) & mask; keys[j] != EMPTY; j = (j + 1) & mask) {
            int h = home(keys[j], mask);
            boolean stays = hole <= j ? (h > hole && h <= j) : (h > hole || h <= j);
            if (!stays) {
                keys[hole] = keys[j];
                values.move(j, hole);
                hole = j;
            }
        }
        keys[hole] = EMPTY;
        return hole;
    }

    /** The longest run of occupied slots: what a lookup of an absent rowid and a removal may walk (for tests). */
    public static int longestCluster(long[] keys) {
        int longest = 0;
        int run = 0;
        // twice round, so that a run across the end of the array is counted whole
        for (int k = 0; k < 2 * keys.length; k++) {
            run = keys[k & (keys.length - 1)] == EMPTY ? 0 : run + 1;
            longest = Math.max(longest, Math.min(run, keys.length));
        }
        return longest;
    }
}
