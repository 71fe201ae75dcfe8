// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.support.Glog;

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
     * covered, oldest first, in one pass (one group commit: one call, however many records it covers; a sender's
     * action that fails is its own, core says it, and the waits after it are told). Waits of an older generation
     * cannot be told any more (the topic they were written to was backed up): they are dropped, and said once with
     * their count. Waits of a newer generation (generations only grow) are not covered by this mark: they wait.
     */
    void drain(long generation, long durableRowid) {
        int stale = 0;
        while (!waits.isEmpty()) {
            Wait w = waits.peek();
            if (w.generation > generation || (w.generation == generation && w.rowid > durableRowid)) break;
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

    /**
     * The waits, oldest first, for the next revision of the gate: generation and rowid, and references to the
     * sender and to the dict it sent (which may hold references of its own, e.g. the relay's input gate).
     */
    ArrayNode exportState() {
        ArrayNode out = JsonNodeFactory.instance.arrayNode();
        for (Wait w : waits) {
            ObjectNode o = out.addObject();
            o.put("generation", w.generation);
            o.put("rowid", w.rowid);
            Kw.putRef(o, "sender", w.sender);
            Kw.putRef(o, "durable", w.durable);
        }
        return out;
    }

    /**
     * Adds the waits {@link #exportState} gave, after those already here (none, for a behaviour just made).
     *
     * @throws IllegalArgumentException when {@code state} is not such a list
     */
    void importState(JsonNode state) {
        if (state == null || state.isNull()) return;
        if (!state.isArray()) throw new IllegalArgumentException("not a list of durability waits");
        for (JsonNode o : state) {
            GObj sender = Kw.ref(o, "sender", GObj.class);
            ObjectNode durable = Kw.ref(o, "durable", ObjectNode.class);
            if (sender == null || durable == null) throw new IllegalArgumentException("a durability wait without sender or dict");
            add(o.path("generation").asLong(), o.path("rowid").asLong(), sender, durable);
        }
    }

    /** The highest rowid a list of {@link #exportState} waits for; 0 for none. */
    static long highestRowid(JsonNode state) {
        long h = 0;
        if (state != null) for (JsonNode o : state) h = Math.max(h, o.path("rowid").asLong());
        return h;
    }

    /** Forgets every wait (the queue closed before they were known durable); answers how many there were. */
    int clear() {
        int n = waits.size();
        waits.clear();
        return n;
    }
}
