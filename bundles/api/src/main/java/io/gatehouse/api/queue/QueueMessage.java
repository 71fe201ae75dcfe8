// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api.queue;

/**
 * A handle on one record of a queue (Yuneta's q_msg_t). Handles are cheap views: two handles on the same
 * (generation, rowid) are {@code equals}. Getters read the record's metadata from the store, so
 * {@link #userFlag()} is never stale.
 */
public interface QueueMessage {
    /** 1-based position of the record in its topic incarnation. */
    long rowid();

    /** Topic incarnation the rowid belongs to; a backup starts a new one. */
    long generation();

    /** Persistence time ({@code __t__}): seconds, or ms with {@code sf_t_ms}. */
    long t();

    /** Message time ({@code __tm__}) taken from the {@code tkey} field at append, or 0. */
    long tm();

    /** The record's hard flags as they are on disk ({@link TrQueue#MSG_PENDING} = pending). */
    int userFlag();

    /** The in-memory soft mark (never persisted). */
    long softMark();
}
