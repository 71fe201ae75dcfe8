// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import java.util.Arrays;

/**
 * Flag stores (acks) of rows already in the file, held until the owner writes them with one {@code pwrite} per run
 * of nearby frames ({@link Topic#flushStage}). A store through the mapping took a page fault whenever the group
 * commit had written the page back since (and the acked rows are a window behind the newest, so every page of them
 * had been), which cost the core loop more than the store. Bounded: {@link #isFull} asks for a flush.
 *
 * <p>Keyed by rowid, unique within one topic incarnation. Owner thread only.
 */
final class PendingFlags {
    /** Flushed when this many stores wait: a turn of the core loop acks far fewer. */
    static final int CAPACITY = 8192;
    /** The arrays start this small and double up to {@link #CAPACITY}: a queue is opened in a live upgrade's pause. */
    static final int START = 256;

    private long[] rowids = new long[START];
    private Segment[] segments = new Segment[START];
    private int[] offsets = new int[START];
    private int[] flags = new int[START];
    /**
     * The slots are in rowid order: each store so far was of a row past every one held. Acks come about in rowid
     * order, so this is the usual case: a row is found by a binary search, and the flush takes the slots as they
     * are. The first store out of order builds {@link #index} and uses it until the next {@link #clear}: the
     * hashed probe of every store was 2.8 % of the durable forwarding loop, for rows that were nearly always new.
     */
    private boolean ordered = true;
    /** Open addressing over {@link #rowids} while not {@link #ordered}: slot + 1, 0 = empty. Four times the slots, a power of two. */
    private int[] index = new int[START * 4];
    /** The index positions in use, so that a clear touches only those. */
    private int[] used = new int[START];
    private int size;
    /**
     * The lowest and highest rowid held: a row outside is not held, without a search. Acks come about in rowid
     * order, so the row asked about (its old flag read before the store) is mostly past the highest, and the probe
     * of an absent rowid, a random line of the index, was 2.5 % of the Kafka edge's core loop.
     */
    private long lowest = Long.MAX_VALUE;
    private long highest = Long.MIN_VALUE;

    int size() {
        return size;
    }

    boolean isEmpty() {
        return size == 0;
    }

    boolean isFull() {
        return size == CAPACITY;
    }

    /** Doubles the arrays (up to {@link #CAPACITY}), and the index when it is in use. */
    private void grow() {
        int n = rowids.length * 2;
        rowids = Arrays.copyOf(rowids, n);
        segments = Arrays.copyOf(segments, n);
        offsets = Arrays.copyOf(offsets, n);
        flags = Arrays.copyOf(flags, n);
        used = new int[n];
        index = new int[n * 4];
        if (!ordered) indexAll();
    }

    /** Indexes every slot held ({@link #index} is empty). */
    private void indexAll() {
        for (int slot = 0; slot < size; slot++) {
            int at = -1 - probe(rowids[slot]);
            index[at] = slot + 1;
            used[slot] = at;
        }
    }

    private static int hash(long rowid) {
        long h = rowid * 0x9E3779B97F4A7C15L;
        return (int) (h >>> 40);
    }

    /** In the {@link #index}: the slot of {@code rowid}, or {@code -1 - position} of the empty entry it would take. */
    private int probe(long rowid) {
        int mask = index.length - 1;
        for (int i = hash(rowid) & mask; ; i = (i + 1) & mask) {
            int e = index[i];
            if (e == 0) return -1 - i;
            if (rowids[e - 1] == rowid) return e - 1;
        }
    }

    /** The slot of {@code rowid}, or -1. */
    private int slotOf(long rowid) {
        if (size == 0 || rowid > highest || rowid < lowest) return -1;
        if (!ordered) return Math.max(-1, probe(rowid));
        int found = Arrays.binarySearch(rowids, 0, size, rowid);
        return found >= 0 ? found : -1;
    }

    /** The flag waiting for {@code rowid}, or {@code orElse}. */
    int flag(long rowid, int orElse) {
        int e = slotOf(rowid);
        return e >= 0 ? flags[e] : orElse;
    }

    /** Holds the store of {@code flag} at frame offset {@code off} of {@code s}; the caller checked {@link #isFull}. */
    void put(long rowid, Segment s, int off, int flag) {
        if (rowid <= highest) {
            int e = slotOf(rowid);
            if (e >= 0) {
                flags[e] = flag;
                return;
            }
            if (ordered) {
                ordered = false;   // a row before the highest, new: the index from now on
                indexAll();
            }
        }
        if (size == rowids.length) grow();
        int slot = size++;
        if (rowid > highest) highest = rowid;
        if (rowid < lowest) lowest = rowid;
        rowids[slot] = rowid;
        segments[slot] = s;
        offsets[slot] = off;
        flags[slot] = flag;
        if (!ordered) {
            int at = -1 - probe(rowid);
            index[at] = slot + 1;
            used[slot] = at;
        }
    }

    /** The slots in rowid order: rows, and so frames, in file order. */
    int[] sortedSlots() {
        int[] out = new int[size];
        if (ordered) {
            for (int i = 0; i < size; i++) out[i] = i;
            return out;
        }
        long[] keyed = new long[size];
        // rowid in the high bits, slot in the low 13: one primitive sort, no boxing
        for (int i = 0; i < size; i++) keyed[i] = (rowids[i] << 13) | i;
        Arrays.sort(keyed);
        for (int i = 0; i < size; i++) out[i] = (int) (keyed[i] & (CAPACITY - 1));
        return out;
    }

    Segment segment(int slot) {
        return segments[slot];
    }

    int offset(int slot) {
        return offsets[slot];
    }

    int flagAt(int slot) {
        return flags[slot];
    }

    /** Keeps only the slots from {@code sorted[from]} on (the rest were written). */
    void keepFrom(int[] sorted, int from) {
        if (from == 0) return;
        int n = sorted.length - from;
        long[] r = new long[n];
        Segment[] s = new Segment[n];
        int[] o = new int[n];
        int[] f = new int[n];
        for (int i = 0; i < n; i++) {
            int slot = sorted[from + i];
            r[i] = rowids[slot];
            s[i] = segments[slot];
            o[i] = offsets[slot];
            f[i] = flags[slot];
        }
        clear();
        for (int i = 0; i < n; i++) put(r[i], s[i], o[i], f[i]);
    }

    void clear() {
        if (!ordered) {
            for (int i = 0; i < size; i++) index[used[i]] = 0;
            ordered = true;
        }
        Arrays.fill(segments, 0, size, null);
        size = 0;
        lowest = Long.MAX_VALUE;
        highest = Long.MIN_VALUE;
    }
}
