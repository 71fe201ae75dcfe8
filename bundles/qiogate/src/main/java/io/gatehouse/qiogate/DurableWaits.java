// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Glog;

import java.util.ArrayDeque;

/**
 * The senders waiting to hear that their message is durable, in append order. When the queue says a rowid is
 * durable, every sender waiting for that rowid or an older one gets {@link Ev#EV_ON_DURABLE} with the dict it
 * sent, from the gate. A sender that went away in the meantime is skipped.
 */
final class DurableWaits {
    private record Wait(long generation, long rowid, GObj sender, ObjectNode durable) {}

    private final GObj gate;
    private final ArrayDeque<Wait> waits = new ArrayDeque<>();

    DurableWaits(GObj gate) {
        this.gate = gate;
    }

    /** {@code sender} waits for the record {@code rowid} of {@code generation}. */
    void add(long generation, long rowid, GObj sender, ObjectNode durable) {
        waits.add(new Wait(generation, rowid, sender, durable));
    }

    boolean isEmpty() {
        return waits.isEmpty();
    }

    int size() {
        return waits.size();
    }

    /**
     * The queue of {@code generation} is durable up to {@code durableRowid}: tells every sender whose record is
     * covered, oldest first. Waits of an older generation cannot be told any more (the topic they were written to
     * was backed up): they are dropped, and said once with their count.
     */
    void drain(long generation, long durableRowid) {
        int stale = 0;
        while (!waits.isEmpty()) {
            Wait w = waits.peek();
            if (w.generation == generation && w.rowid > durableRowid) break;
            waits.poll();
            if (w.generation != generation) {
                stale++;
            } else if (!w.sender.isDestroyed()) {
                w.sender.send(Ev.EV_ON_DURABLE, w.durable, gate);
            }
        }
        if (stale > 0) {
            Glog.warn(gate, "Durability waits of another queue generation dropped: their senders are not told",
                    "count", stale, "generation", generation);
        }
    }

    /** Forgets every wait (the queue closed before they were known durable); answers how many there were. */
    int clear() {
        int n = waits.size();
        waits.clear();
        return n;
    }
}
