// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

/**
 * The gates a service listens to, named in its config ({@code "input": "__input_side__"} or a list), and the
 * way back to a message's sender. Subscribing again is cheap and idempotent, so a service calls
 * {@link #subscribe()} on a timer and rejoins a gate that was rebuilt (hot swap) without any notification.
 */
public final class InputGates {
    /** Where {@link #exportState} puts the gates in a live upgrade's state. */
    public static final String HANDOVER_KEY = "input_gates";

    private final GObj owner;
    private final List<String> names;
    private final List<GObj> subscribed = new ArrayList<>();

    public InputGates(GObj owner, List<String> names) {
        this.owner = owner;
        this.names = List.copyOf(names);
    }

    /**
     * Service names from an {@code input} attribute: a string or a list of strings; null or "" = none.
     *
     * @throws IllegalArgumentException for anything else (a config error)
     */
    public static List<String> namesFrom(JsonNode input) {
        if (input == null || input.isNull() || (input.isTextual() && input.asText().isEmpty())) return List.of();
        if (input.isTextual()) return List.of(input.asText());
        if (input.isArray()) {
            List<String> out = new ArrayList<>();
            for (JsonNode n : input) {
                if (!n.isTextual() || n.asText().isEmpty()) {
                    throw new IllegalArgumentException("'input' must list service names");
                }
                out.add(n.asText());
            }
            return out;
        }
        throw new IllegalArgumentException("'input' must be a service name or a list of them");
    }

    public List<String> names() {
        return Collections.unmodifiableList(names);
    }

    /** Subscribes the owner to every named gate that exists and is not subscribed yet. */
    public void subscribe() {
        subscribed.removeIf(GObj::isDestroyed);
        for (String name : names) {
            GObj g = owner.yuno().service(name);
            if (g == null || subscribed.contains(g)) continue;
            g.subscribe(null, owner);
            subscribed.add(g);
        }
    }

    public void unsubscribeAll() {
        for (GObj g : subscribed) {
            if (!g.isDestroyed()) g.unsubscribe(null, owner);
        }
        subscribed.clear();
    }

    // --- Live upgrade ---

    /**
     * The gates the owner is subscribed to through this object, for the next revision's InputGates
     * ({@link #adopt}): api gobjs in a JDK list, since that revision has its own copy of this class.
     */
    public List<GObj> subscribedGates() {
        return List.copyOf(subscribed);
    }

    /** Puts {@link #subscribedGates} in the state a live upgrade hands over ({@code GObjBehavior.onExport}). */
    public void exportState(ObjectNode state) {
        Kw.putRef(state, HANDOVER_KEY, subscribedGates());
    }

    /**
     * Adopts the gates {@link #exportState} put in {@code state} ({@code GObjBehavior.onImport}); false when it
     * holds none (the caller then subscribes as it would at start).
     */
    public boolean importState(JsonNode state) {
        List<?> gates = Kw.ref(state, HANDOVER_KEY, List.class);
        if (gates == null) return false;
        adopt(gates);
        return true;
    }

    /**
     * Takes over the subscriptions a previous revision made ({@link #subscribedGates} of its InputGates): core kept
     * them, so nothing is subscribed again, and a gate that was not subscribed stays so until the next
     * {@link #subscribe()}, as it would have without the upgrade. Anything in {@code gates} that is no gobj is skipped.
     */
    public void adopt(Collection<?> gates) {
        for (Object o : gates) {
            if (o instanceof GObj && !subscribed.contains(o)) subscribed.add((GObj) o);
        }
    }

    /**
     * Sends {@code json} (as compact JSON in a gbuffer) back through {@code gate} on the connection a message
     * came from, named by that message's {@code __temp__}. Answers the gate's result, -1 without a gate.
     */
    public static int reply(GObj from, GObj gate, ObjectNode json, JsonNode temp) {
        if (!canReply(gate, temp)) return -1;
        ByteBuf out = Gbuffers.allocate(PooledByteBufAllocator.DEFAULT, 64);
        Kw.writeJson(json, out);
        return send(from, gate, out, temp);
    }

    /**
     * {@link #reply} of JSON already written: {@code out} (owned: sent, or released when the reply goes nowhere).
     * Write it in a buffer of {@link Gbuffers#allocate} or {@link Gbuffers#allocateHeap}, so that a framing header
     * fits in front.
     */
    public static int reply(GObj from, GObj gate, ByteBuf out, JsonNode temp) {
        if (!canReply(gate, temp)) {
            out.release();
            return -1;
        }
        return send(from, gate, out, temp);
    }

    private static boolean canReply(GObj gate, JsonNode temp) {
        if (gate == null || gate.isDestroyed()) return false;
        // The connection may have closed since the message came (an ack waits for the fsync): a reply for a
        // closed channel goes nowhere, and the peer gets it again after its resend, so say nothing.
        GObj channel = Kw.ref(temp, Kw.TEMP_CHANNEL_GOBJ, GObj.class);
        return channel == null || (!channel.isDestroyed() && channel.acceptsEvent(Ev.EV_SEND_MESSAGE));
    }

    private static int send(GObj from, GObj gate, ByteBuf out, JsonNode temp) {
        ObjectNode kw = Kw.withGbuffer(out);
        if (temp != null) kw.set(Kw.TEMP, temp);
        return gate.send(Ev.EV_SEND_MESSAGE, kw, from);
    }

    /** The queue-protocol ack of a message's {@code __md_trq__}: the same dict with {@code result} added. */
    public static ObjectNode ack(ObjectNode mdTrq, int result) {
        ObjectNode answer = Kw.create();
        ObjectNode md = mdTrq.deepCopy();
        md.put(Kw.RESULT, result);
        answer.set(Kw.MD_TRQ, md);
        return answer;
    }
}
