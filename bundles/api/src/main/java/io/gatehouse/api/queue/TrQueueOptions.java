// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api.queue;

import java.util.Objects;

/** Per-queue store options. Immutable; the {@code with...} methods answer a changed copy. */
public final class TrQueueOptions {
    public static final int DEFAULT_SEGMENT_SIZE = 64 << 20;
    public static final int DEFAULT_MAX_MESSAGE_SIZE = 1 << 20;
    public static final long DEFAULT_FSYNC_INTERVAL_MS = 5;
    /** 0: a group commit waits for its period whatever the number of records written. */
    public static final int DEFAULT_FSYNC_MAX_RECORDS = 0;

    private final FsyncPolicy fsyncPolicy;
    private final long fsyncIntervalMs;
    private final int segmentSize;
    private final int maxMessageSize;
    private final int fsyncMaxRecords;

    private TrQueueOptions(FsyncPolicy p, long intervalMs, int segmentSize, int maxMessageSize, int fsyncMaxRecords) {
        this.fsyncPolicy = Objects.requireNonNull(p);
        if (intervalMs < 1) throw new IllegalArgumentException("fsyncIntervalMs must be >= 1");
        if (maxMessageSize < 16) throw new IllegalArgumentException("maxMessageSize too small");
        if (fsyncMaxRecords < 0) throw new IllegalArgumentException("fsyncMaxRecords must be >= 0");
        this.fsyncIntervalMs = intervalMs;
        this.segmentSize = segmentSize;
        this.maxMessageSize = maxMessageSize;
        this.fsyncMaxRecords = fsyncMaxRecords;
    }

    public static TrQueueOptions defaults() {
        return new TrQueueOptions(FsyncPolicy.INTERVAL, DEFAULT_FSYNC_INTERVAL_MS, DEFAULT_SEGMENT_SIZE,
                DEFAULT_MAX_MESSAGE_SIZE, DEFAULT_FSYNC_MAX_RECORDS);
    }

    public FsyncPolicy fsyncPolicy() { return fsyncPolicy; }

    /** Group-commit period of {@link FsyncPolicy#INTERVAL}, in ms. */
    public long fsyncIntervalMs() { return fsyncIntervalMs; }

    /**
     * With {@link FsyncPolicy#INTERVAL}: once this many records are written and not yet forced, the group commit
     * starts at once instead of at the end of its period (0 = never early). The period still bounds the wait of a
     * record when fewer come; the count bounds it under a burst, whose producers then wait for one force rather
     * than for the timer. Since 1.4.0; a trqueue built against 1.3 commits on the period only.
     */
    public int fsyncMaxRecords() { return fsyncMaxRecords; }

    /** Bytes per segment file before a new one is started. */
    public int segmentSize() { return segmentSize; }

    /** Largest accepted message (its compact JSON), in bytes; a larger append is refused. */
    public int maxMessageSize() { return maxMessageSize; }

    public TrQueueOptions withFsyncPolicy(FsyncPolicy p) {
        return new TrQueueOptions(p, fsyncIntervalMs, segmentSize, maxMessageSize, fsyncMaxRecords);
    }

    public TrQueueOptions withFsyncIntervalMs(long ms) {
        return new TrQueueOptions(fsyncPolicy, ms, segmentSize, maxMessageSize, fsyncMaxRecords);
    }

    public TrQueueOptions withFsyncMaxRecords(int records) {
        return new TrQueueOptions(fsyncPolicy, fsyncIntervalMs, segmentSize, maxMessageSize, records);
    }

    public TrQueueOptions withSegmentSize(int bytes) {
        return new TrQueueOptions(fsyncPolicy, fsyncIntervalMs, bytes, maxMessageSize, fsyncMaxRecords);
    }

    public TrQueueOptions withMaxMessageSize(int bytes) {
        return new TrQueueOptions(fsyncPolicy, fsyncIntervalMs, segmentSize, bytes, fsyncMaxRecords);
    }

    /**
     * Checks the options as a whole (the withers accept any order of calls).
     *
     * @throws IllegalArgumentException when a segment cannot hold a message of the maximum size and its framing
     */
    public TrQueueOptions validate() {
        if ((long) segmentSize < (long) maxMessageSize + 256) {
            throw new IllegalArgumentException("segmentSize must exceed maxMessageSize + 256");
        }
        return this;
    }

    @Override
    public String toString() {
        return "TrQueueOptions{fsync=" + fsyncPolicy + ", intervalMs=" + fsyncIntervalMs + ", maxRecords="
                + fsyncMaxRecords + ", segmentSize=" + segmentSize + ", maxMessageSize=" + maxMessageSize + '}';
    }
}
