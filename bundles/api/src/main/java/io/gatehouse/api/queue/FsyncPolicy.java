// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api.queue;

/**
 * When the queue forces its records to the device.
 *
 * <ul>
 *   <li>{@link #NONE}: records reach the page cache before {@code append} returns; they survive a process crash,
 *       not a power loss. Nothing forces them but {@code close}.</li>
 *   <li>{@link #INTERVAL} (default): records reach the page cache before {@code append} returns; a flusher thread
 *       forces them every {@link TrQueueOptions#fsyncIntervalMs()} ms (group commit) and then tells the
 *       {@link DurableListener}s. The caller never waits for the disk.</li>
 *   <li>{@link #ALWAYS}: {@code append} returns after the force that covers its record. The slow mode: the caller
 *       waits for the device on every append.</li>
 * </ul>
 * Acks (clearing the pending flag) are never forced on their own: a lost ack only makes a duplicate delivery.
 * They are forced with the next forced append, and at close.
 */
public enum FsyncPolicy {
    NONE, INTERVAL, ALWAYS;

    /** Parses "none", "interval", "always" (any case); null or empty gives INTERVAL. */
    public static FsyncPolicy parse(String s) {
        if (s == null || s.isBlank()) return INTERVAL;
        return valueOf(s.trim().toUpperCase(java.util.Locale.ROOT));
    }
}
