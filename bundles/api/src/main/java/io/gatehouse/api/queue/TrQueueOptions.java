// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api.queue;

import java.util.Objects;

/** Per-queue store options. Immutable; the {@code with...} methods answer a changed copy. */
public final class TrQueueOptions {
    public static final int DEFAULT_SEGMENT_SIZE = 64 << 20;
    public static final int DEFAULT_MAX_MESSAGE_SIZE = 1 << 20;
    public static final long DEFAULT_FSYNC_INTERVAL_MS = 5;

    private final FsyncPolicy fsyncPolicy;
    private final long fsyncIntervalMs;
    private final int segmentSize;
    private final int maxMessageSize;

    private TrQueueOptions(FsyncPolicy p, long intervalMs, int segmentSize, int maxMessageSize) {
        this.fsyncPolicy = Objects.requireNonNull(p);
        if (intervalMs < 1) throw new IllegalArgumentException("fsyncIntervalMs must be >= 1");
        if (maxMessageSize < 16) throw new IllegalArgumentException("maxMessageSize too small");
        this.fsyncIntervalMs = intervalMs;
        this.segmentSize = segmentSize;
        this.maxMessageSize = maxMessageSize;
    }

    public static TrQueueOptions defaults() {
        return new TrQueueOptions(FsyncPolicy.INTERVAL, DEFAULT_FSYNC_INTERVAL_MS, DEFAULT_SEGMENT_SIZE,
                DEFAULT_MAX_MESSAGE_SIZE);
    }

    public FsyncPolicy fsyncPolicy() { return fsyncPolicy; }

    /** Group-commit period of {@link FsyncPolicy#INTERVAL}, in ms. */
    public long fsyncIntervalMs() { return fsyncIntervalMs; }

    /** Bytes per segment file before a new one is started. */
    public int segmentSize() { return segmentSize; }

    /** Largest accepted message (its compact JSON), in bytes; a larger append is refused. */
    public int maxMessageSize() { return maxMessageSize; }

    public TrQueueOptions withFsyncPolicy(FsyncPolicy p) {
        return new TrQueueOptions(p, fsyncIntervalMs, segmentSize, maxMessageSize);
    }

    public TrQueueOptions withFsyncIntervalMs(long ms) {
        return new TrQueueOptions(fsyncPolicy, ms, segmentSize, maxMessageSize);
    }

    public TrQueueOptions withSegmentSize(int bytes) {
        return new TrQueueOptions(fsyncPolicy, fsyncIntervalMs, bytes, maxMessageSize);
    }

    public TrQueueOptions withMaxMessageSize(int bytes) {
        return new TrQueueOptions(fsyncPolicy, fsyncIntervalMs, segmentSize, bytes);
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
        return "TrQueueOptions{fsync=" + fsyncPolicy + ", intervalMs=" + fsyncIntervalMs + ", segmentSize="
                + segmentSize + ", maxMessageSize=" + maxMessageSize + '}';
    }
}
