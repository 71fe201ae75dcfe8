// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.POJONode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;

import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.ToIntFunction;

/**
 * Whether a producer may send a {@link Kw#BATCH} (or {@link Kw#MESSAGES}): every gobj its EV_ON_MESSAGE reaches takes
 * batches ({@link GClassSpec#takesBatches()}, {@link GClassSpec#takesMessageBatches()}), following the ones that
 * publish EV_ON_MESSAGE in turn (a channel, a gate) up to the ones that do not (a relay). Asked per batch, so a live upgrade to a revision without batches is seen at
 * the next one. And, going down, a send batch taken apart for a bottom that does not take send batches.
 */
public final class Batches {
    /** Deeper than any stack here (channel, gate, relay): a loop of subscriptions is not followed forever. */
    private static final int MAX_DEPTH = 6;

    private Batches() {}

    /** True when {@code producer} has subscribers and every gobj its messages reach takes batches. */
    public static boolean takenAbove(GObj producer) {
        List<GObj> subscribers = producer.subscribers();
        return !subscribers.isEmpty() && takenBy(subscribers, MAX_DEPTH, false);
    }

    /**
     * True when {@code producer} has subscribers and every gobj its messages reach takes message batches
     * ({@link Kw#MESSAGES}, {@link GClassSpec#takesMessageBatches()}).
     */
    public static boolean messageBatchesTakenAbove(GObj producer) {
        List<GObj> subscribers = producer.subscribers();
        return !subscribers.isEmpty() && takenBy(subscribers, MAX_DEPTH, true);
    }

    /**
     * The ranges of the kw's {@link Kw#BATCH}, or null: {@code Kw.ref(kw, Kw.BATCH, int[].class)} without the path
     * walk, and nothing looked up in a kw with no keys (most messages). Every level a message passes asks it, so it
     * costs what a field read costs.
     */
    public static int[] rangesOf(ObjectNode kw) {
        return kw == null || kw.isEmpty() ? null : ints(kw.get(Kw.BATCH));
    }

    /** The ranges of the kw's {@link Kw#MESSAGES}, or null, as cheaply as {@link #rangesOf}. */
    public static int[] messageRangesOf(ObjectNode kw) {
        return kw == null || kw.isEmpty() ? null : ints(kw.get(Kw.MESSAGES));
    }

    /**
     * The messages a kw holds: its {@link #rangesOf batch's} or {@link #messageRangesOf message batch's} ranges, else
     * 1 (as {@link Kw#messages}).
     */
    public static int messagesOf(ObjectNode kw) {
        if (kw == null || kw.isEmpty()) return 1;
        int[] ranges = ints(kw.get(Kw.BATCH));
        if (ranges == null) ranges = ints(kw.get(Kw.MESSAGES));
        return ranges == null ? 1 : ranges.length / 2;
    }

    private static int[] ints(JsonNode n) {
        if (n instanceof POJONode) {
            Object ranges = ((POJONode) n).getPojo();
            if (ranges instanceof int[]) return (int[]) ranges;
        }
        return null;
    }

    /**
     * The messages of a send batch ({@link Kw#BATCH} on an EV_SEND_MESSAGE), each in a kw of its own to {@code send},
     * in order: for a level whose bottom does not take send batches. Each message is copied into a buffer with
     * {@link Gbuffers#HEADROOM} (a protocol prepends its header there, as for a message that came alone) and its kw
     * has the batch kw's other keys; the batch's buffer is released. Answers 0 when {@code send} took every one, else
     * the first refusal's answer (the rest are still sent: each is in flight on its own).
     */
    public static int sendApart(ObjectNode batchKw, ToIntFunction<ObjectNode> send) {
        int[] ranges = rangesOf(batchKw);
        ByteBuf all = Kw.takeGbuffer(batchKw);
        if (ranges == null || all == null) {
            if (all != null) all.release();
            return -1;
        }
        int answer = 0;
        try {
            int base = all.readerIndex();
            for (int i = 0; i + 1 < ranges.length; i += 2) {
                int from = base + ranges[i];
                int len = ranges[i + 1] - ranges[i];
                ByteBuf one = Gbuffers.allocateHeap(len);
                one.writeBytes(all, from, len);
                ObjectNode kw = Kw.withGbuffer(one);
                for (Iterator<Map.Entry<String, JsonNode>> it = batchKw.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> e = it.next();
                    if (!e.getKey().equals(Kw.BATCH) && !e.getKey().equals(Kw.GBUFFER)) kw.set(e.getKey(), e.getValue());
                }
                int r = send.applyAsInt(kw);
                if (r < 0 && answer == 0) answer = r;
            }
        } finally {
            all.release();
        }
        return answer;
    }

    private static boolean takenBy(List<GObj> subscribers, int depth, boolean messageBatches) {
        if (depth == 0) return false;
        for (GObj s : subscribers) {
            GClassSpec<?> spec = s.gclass();
            if (s.isDestroyed() || !(messageBatches ? spec.takesMessageBatches() : spec.takesBatches())) return false;
            if (spec.fsm().outputEvents().contains(Ev.EV_ON_MESSAGE)) {
                List<GObj> next = s.subscribers();
                if (next.isEmpty() || !takenBy(next, depth - 1, messageBatches)) return false;
            }
        }
        return true;
    }
}
