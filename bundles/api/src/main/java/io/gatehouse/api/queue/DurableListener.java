// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api.queue;

/**
 * Told that every record of the queue up to {@code rowid} (in topic incarnation {@code generation}) is durable
 * in the sense of the queue's {@link FsyncPolicy}. Calls are coalesced: one call may cover many appends, and it
 * always carries the latest durable rowid.
 */
@FunctionalInterface
public interface DurableListener {
    void durable(long generation, long rowid);
}
