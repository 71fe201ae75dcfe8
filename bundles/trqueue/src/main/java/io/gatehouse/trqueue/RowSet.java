// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import java.util.Arrays;

/**
 * The set of listed rowids: a bit per row over a window that slides as the oldest rows leave, so memory follows the
 * span between the oldest listed row and the newest one, not the size of the topic. Unlike java.util.BitSet,
 * clearing the highest bit does not rescan the whole array: every operation is O(1) amortised.
 */
final class RowSet {
    private long[] words = new long[64];
    /** Absolute word index of words[0]. */
    private long base;
    /** Lowest absolute word that may hold a bit. */
    private long low;
    /**
     * Highest absolute word that may hold a bit. A queue whose listed rows have all been sent asks for the next one
     * after the newest at every append: without this bound that walk crossed every empty word up to the end of the
     * array (a fifth of the core loop under sustained load), with it the walk stops at the newest row.
     */
    private long high;
    private int size;

    int size() {
        return size;
    }

    boolean get(long i) {
        long w = (i >>> 6) - base;
        return w >= 0 && w < words.length && (words[(int) w] & (1L << i)) != 0;
    }

    /** Adds i; answers false when it was there. */
    boolean add(long i) {
        long aw = i >>> 6;
        if (size == 0) {
            // every bit is already clear: the window just moves
            base = aw;
            low = aw;
            high = aw;
        } else if (aw < base) {
            long shift = base - aw;
            long need = words.length + shift;
            long[] n = new long[(int) Math.max(need, words.length * 2L)];
            System.arraycopy(words, 0, n, (int) shift, words.length);
            words = n;
            base = aw;
        }
        long w = aw - base;
        if (w >= words.length) {
            if (low - base > words.length / 2) compact();
            w = aw - base;
            if (w >= words.length) words = Arrays.copyOf(words, (int) Math.max(w + 1, words.length * 2L));
        }
        long bit = 1L << i;
        if ((words[(int) w] & bit) != 0) return false;
        words[(int) w] |= bit;
        if (aw < low) low = aw;
        if (aw > high) high = aw;
        size++;
        return true;
    }

    /** Removes i; answers false when it was not there. */
    boolean remove(long i) {
        long w = (i >>> 6) - base;
        if (w < 0 || w >= words.length) return false;
        long bit = 1L << i;
        if ((words[(int) w] & bit) == 0) return false;
        words[(int) w] &= ~bit;
        size--;
        return true;
    }

    /** The lowest member >= from, or -1. */
    long next(long from) {
        if (size == 0) return -1;
        long fw = from >>> 6;
        long start = Math.max(fw, low);
        long end = Math.min(high, base + words.length - 1);
        for (long abs = start; abs <= end; abs++) {
            long word = words[(int) (abs - base)];
            if (abs == fw) word &= -1L << from;
            if (word != 0) return (abs << 6) + Long.numberOfTrailingZeros(word);
            // an empty word at the low edge stays empty until an add lowers the edge again
            if (abs == low && words[(int) (abs - base)] == 0) low = abs + 1;
        }
        // no bit above start's word: the next walk past the end stops there
        if (high > start) high = start;
        return -1;
    }

    // --- Live upgrade: the set as JDK values, for another trqueue revision ---

    /** A copy of the set as {@code [words..., base, low, size]}: what {@link #of} takes. */
    long[] export() {
        long[] out = Arrays.copyOf(words, words.length + 3);
        out[words.length] = base;
        out[words.length + 1] = low;
        out[words.length + 2] = size;
        return out;
    }

    /**
     * The set {@link #export} gave (by this revision or another one of the same format).
     *
     * @throws IllegalArgumentException when {@code state} is not such a set
     */
    static RowSet of(long[] state) {
        if (state == null || state.length < 4) throw new IllegalArgumentException("not a row set");
        int n = state.length - 3;
        RowSet r = new RowSet();
        r.words = Arrays.copyOf(state, n);
        r.base = state[n];
        r.low = state[n + 1];
        r.size = (int) state[n + 2];
        if (r.size < 0 || r.low < r.base) throw new IllegalArgumentException("not a row set: size or window");
        // not in the exported form (an older revision's reads it): the last word holding a bit
        int last = n - 1;
        while (last > 0 && r.words[last] == 0) last--;
        r.high = r.base + last;
        return r;
    }

    /** Takes the content of {@code other} (a set just made by {@link #of}). */
    void replaceWith(RowSet other) {
        words = other.words;
        base = other.base;
        low = other.low;
        high = other.high;
        size = other.size;
    }

    void clear() {
        Arrays.fill(words, 0);
        size = 0;
    }

    private void compact() {
        int drop = (int) (low - base);
        System.arraycopy(words, drop, words, 0, words.length - drop);
        Arrays.fill(words, words.length - drop, words.length, 0);
        base += drop;
    }
}
