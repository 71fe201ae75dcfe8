// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.kafka;

import io.gatehouse.support.SparseSpell;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * The queued records C_KAFKA has handed to the producer, by queue generation and rowid, with the time each was
 * sent, in primitive arrays. A {@code LinkedHashMap<RecordKey, InFlight>} made a key, an entry and a value per
 * record, and its lookups were about 4 % of the Kafka edge's core loop.
 *
 * <p>The records in flight are mostly one run of consecutive rowids of one generation (the queue's window), so each
 * has its own slot of a ring, {@code rowid & mask}, with at least twice the slots of the records held: a lookup
 * reads one slot, and the run's slots are neighbours in memory (hashed over the table, each lookup was a random line
 * of memory). A record whose slot is taken (another generation's same rowid after a queue backup, or a straggler a
 * whole ring of rowids older) goes to a map beside the ring, which holds those only.
 *
 * <p>Lookups by key are what a record costs (a send asks whether it is a resend, an ack takes it out); what needs
 * the send order (the oldest age for the gauge, the lists of the state and of a command) scans the table, at most
 * once a gauge period. The ring holds at most four times the records in flight at their peak (bounded by
 * {@code max_in_flight}) and halves once it has stayed under an eighth full for as many removals as it has slots
 * ({@link SparseSpell}: a window that drains and refills at every burst keeps its ring). Core loop only.
 */
final class InFlightRecords {
    static final int MIN_CAPACITY = 64;

    /** A slot's rowid when it holds nothing: the queue's rowids are positive. */
    private long[] rowids = new long[MIN_CAPACITY];
    private long[] generations = new long[MIN_CAPACITY];
    private long[] sentAtMs = new long[MIN_CAPACITY];
    /** The put's number: the send order. */
    private long[] order = new long[MIN_CAPACITY];
    /** The records whose ring slot another one holds: key to {sent at ms, order}. Empty but for those. */
    private final HashMap<KafkaOut.RecordKey, long[]> displaced = new HashMap<>();
    private long puts;
    private int size;
    private final SparseSpell sparse = new SparseSpell();

    int size() {
        return size;
    }

    boolean contains(long generation, long rowid) {
        int i = slot(rowid);
        if (rowids[i] == rowid && generations[i] == generation && rowid > 0) return true;
        return !displaced.isEmpty() && displaced.containsKey(new KafkaOut.RecordKey(generation, rowid));
    }

    /** The record went to the producer at {@code nowMs}; one already held is put again, as the newest. */
    void put(long generation, long rowid, long nowMs) {
        if (rowid <= 0) throw new IllegalArgumentException("rowid " + rowid + " is not positive");
        int i = slot(rowid);
        if (rowids[i] == rowid && generations[i] == generation) {
            sentAtMs[i] = nowMs;
            order[i] = ++puts;
            return;
        }
        if (!displaced.isEmpty()) {
            long[] d = displaced.get(new KafkaOut.RecordKey(generation, rowid));
            if (d != null) {
                d[0] = nowMs;
                d[1] = ++puts;
                return;
            }
        }
        if ((size + 1) * 2 > rowids.length) resize(rowids.length * 2);
        place(generation, rowid, nowMs, ++puts);
        size++;
    }

    /** Takes the record out; false when it was not in flight. */
    boolean remove(long generation, long rowid) {
        int i = slot(rowid);
        if (rowids[i] == rowid && generations[i] == generation && rowid > 0) {
            rowids[i] = 0;
        } else if (displaced.isEmpty() || displaced.remove(new KafkaOut.RecordKey(generation, rowid)) == null) {
            return false;
        }
        size--;
        if (sparse.shrinkNow(size, rowids.length, MIN_CAPACITY, rowids.length)) resize(rowids.length / 2);
        return true;
    }

    void clear() {
        Arrays.fill(rowids, 0);
        displaced.clear();
        size = 0;
        sparse.reset();
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
        for (long[] d : displaced.values()) {
            if (d[1] < first) {
                first = d[1];
                at = d[0];
            }
        }
        return at;
    }

    /** The records in flight, the first sent first: {generation, rowid, sent at ms} each (a state, a command). */
    long[][] inSendOrder() {
        long[][] all = inSendOrderWithNumbers();
        for (int i = 0; i < all.length; i++) all[i] = Arrays.copyOf(all[i], 3);
        return all;
    }

    /** The ring's length (for the tests of its bound). */
    int capacity() {
        return rowids.length;
    }

    /** How many records are held beside the ring, their slot taken (for tests). */
    int displacedCount() {
        return displaced.size();
    }

    private int slot(long rowid) {
        return (int) rowid & (rowids.length - 1);
    }

    private void place(long generation, long rowid, long sentAt, long putNumber) {
        int i = slot(rowid);
        if (rowids[i] == 0) {
            rowids[i] = rowid;
            generations[i] = generation;
            sentAtMs[i] = sentAt;
            order[i] = putNumber;
        } else {
            displaced.put(new KafkaOut.RecordKey(generation, rowid), new long[] {sentAt, putNumber});
        }
    }

    /** The ring at {@code capacity} slots; every record placed again oldest first, so the older keeps a slot both want. */
    private void resize(int capacity) {
        long[][] all = inSendOrderWithNumbers();
        rowids = new long[capacity];
        generations = new long[capacity];
        sentAtMs = new long[capacity];
        order = new long[capacity];
        displaced.clear();
        for (long[] r : all) place(r[0], r[1], r[2], r[3]);
    }

    /** The records in flight, the first sent first: {generation, rowid, sent at ms, put number} each. */
    private long[][] inSendOrderWithNumbers() {
        long[][] all = new long[size][];
        int n = 0;
        for (int i = 0; i < rowids.length; i++) {
            if (rowids[i] != 0) all[n++] = new long[] {generations[i], rowids[i], sentAtMs[i], order[i]};
        }
        for (Map.Entry<KafkaOut.RecordKey, long[]> e : displaced.entrySet()) {
            all[n++] = new long[] {e.getKey().generation(), e.getKey().rowid(), e.getValue()[0], e.getValue()[1]};
        }
        Arrays.sort(all, 0, n, (a, b) -> Long.compare(a[3], b[3]));
        return n == all.length ? all : Arrays.copyOf(all, n);
    }
}
