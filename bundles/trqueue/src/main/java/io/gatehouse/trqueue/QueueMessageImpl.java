// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import io.gatehouse.api.queue.QueueMessage;

/** A view on one row: identity (generation, rowid) and the times read once when the handle was made. */
final class QueueMessageImpl implements QueueMessage {
    final TrQueueImpl queue;
    final long generation;
    final long rowid;
    final long t;
    final long tm;

    QueueMessageImpl(TrQueueImpl queue, long generation, long rowid, long t, long tm) {
        this.queue = queue;
        this.generation = generation;
        this.rowid = rowid;
        this.t = t;
        this.tm = tm;
    }

    @Override public long rowid() { return rowid; }

    @Override public long generation() { return generation; }

    @Override public long t() { return t; }

    @Override public long tm() { return tm; }

    @Override public int userFlag() { return queue.readFlag(this); }

    @Override public long softMark() { return queue.softMark(this); }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof QueueMessageImpl)) return false;
        QueueMessageImpl m = (QueueMessageImpl) o;
        return m.queue == queue && m.generation == generation && m.rowid == rowid;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(rowid) * 31 + Long.hashCode(generation);
    }

    @Override
    public String toString() {
        return "QueueMessage{" + queue.topicName() + " gen=" + generation + " rowid=" + rowid + " t=" + t + '}';
    }
}
