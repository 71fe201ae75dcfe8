// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.kafka;

import java.util.Arrays;

/**
 * The queued records C_KAFKA has handed to the producer, by queue generation and rowid, with the time each was
 * sent: open addressing over the two numbers in primitive arrays. A {@code LinkedHashMap<RecordKey, InFlight>} made a
 * key, an entry and a value per record, and its lookups were about 4 % of the Kafka edge's core loop.
 *
 * <p>Lookups by key are what a record costs (a send asks whether it is a resend, an ack takes it out); what needs
 * the send order (the oldest age for the gauge, the lists of the state and of a command) scans the table, at most
 * once a gauge period. The table holds at most twice the records in flight at their peak (bounded by
 * {@code max_in_flight}) and halves when under an eighth full. Core loop only.
 */
final class InFlightRecords {
    static final int MIN_CAPACITY = 64;

    /** A slot's rowid when it holds nothing: the queue's rowids are positive. */
    private long[] rowids = new long[MIN_CAPACITY];
    private long[] generations = new long[MIN_CAPACITY];
    private long[] sentAtMs = new long[MIN_CAPACITY];
    /** The put's number: the send order. */
    private long[] order = new long[MIN_CAPACITY];
    private long puts;
    private int size;

    int size() {
        return size;
    }

    boolean contains(long generation, long rowid) {
        return find(generation, rowid) >= 0;
    }

    /** The record went to the producer at {@code nowMs}; one already held is put again, as the newest. */
    void put(long generation, long rowid, long nowMs) {
        if (rowid <= 0) throw new IllegalArgumentException("rowid " + rowid + " is not positive");
        int i = find(generation, rowid);
        if (i < 0) {
            if ((size + 1) * 2 > rowids.length) resize(rowids.length * 2);
            int mask = rowids.length - 1;
            i = home(generation, rowid, mask);
            while (rowids[i] != 0) i = (i + 1) & mask;
            rowids[i] = rowid;
            generations[i] = generation;
            size++;
        }
        sentAtMs[i] = nowMs;
        order[i] = ++puts;
    }

    /** Takes the record out; false when it was not in flight. */
    boolean remove(long generation, long rowid) {
        int i = find(generation, rowid);
        if (i < 0) return false;
        int mask = rowids.length - 1;
        // backward shift: the entries after it in its cluster that may move closer to their home do
        for (int j = (i + 1) & mask; rowids[j] != 0; j = (j + 1) & mask) {
            int h = home(generations[j], rowids[j], mask);
            boolean between = i <= j ? (h > i && h <= j) : (h > i || h <= j);
            if (between) continue;
            rowids[i] = rowids[j];
            generations[i] = generations[j];
            sentAtMs[i] = sentAtMs[j];
            order[i] = order[j];
            i = j;
        }
        rowids[i] = 0;
        size--;
        if (rowids.length > MIN_CAPACITY && size < rowids.length / 8) resize(rowids.length / 2);
        return true;
    }

    void clear() {
        Arrays.fill(rowids, 0);
        size = 0;
        if (rowids.length > MIN_CAPACITY) resize(MIN_CAPACITY);
    }

    /** When the first sent of the records in flight was sent; -1 when none is (a scan: for a gauge, not per record). */
    long oldestSentAtMs() {
        long first = Long.MAX_VALUE;
        long at = -1;
        for (int i = 0; i < rowids.length; i++) {
            if (rowids[i] != 0 && order[i] < first) {
                first = order[i];
                at = sentAtMs[i];
            }
        }
        return at;
    }

    /** The records in flight, the first sent first: {generation, rowid, sent at ms} each (a state, a command). */
    long[][] inSendOrder() {
        long[][] all = new long[size][];
        int n = 0;
        for (int i = 0; i < rowids.length; i++) {
            if (rowids[i] != 0) all[n++] = new long[] {generations[i], rowids[i], sentAtMs[i], order[i]};
        }
        Arrays.sort(all, (a, b) -> Long.compare(a[3], b[3]));
        for (int i = 0; i < n; i++) all[i] = Arrays.copyOf(all[i], 3);
        return all;
    }

    /** The table's length (for the tests of its bound). */
    int capacity() {
        return rowids.length;
    }

    private int find(long generation, long rowid) {
        if (rowid <= 0) return -1;
        int mask = rowids.length - 1;
        for (int i = home(generation, rowid, mask); ; i = (i + 1) & mask) {
            long r = rowids[i];
            if (r == 0) return -1;
            if (r == rowid && generations[i] == generation) return i;
        }
    }

    /** Fibonacci hashing of both numbers: consecutive rowids land far apart, so a window is no single cluster. */
    private static int home(long generation, long rowid, int mask) {
        long h = (rowid + generation * 0x632BE59BD9B4E019L) * 0x9E3779B97F4A7C15L;
        return (int) (h >>> 40) & mask;
    }

    private void resize(int capacity) {
        long[] r = rowids;
        long[] g = generations;
        long[] t = sentAtMs;
        long[] o = order;
        rowids = new long[capacity];
        generations = new long[capacity];
        sentAtMs = new long[capacity];
        order = new long[capacity];
        int mask = capacity - 1;
        for (int k = 0; k < r.length; k++) {
            if (r[k] == 0) continue;
            int i = home(g[k], r[k], mask);
            while (rowids[i] != 0) i = (i + 1) & mask;
            rowids[i] = r[k];
            generations[i] = g[k];
            sentAtMs[i] = t[k];
            order[i] = o[k];
        }
    }
}
