// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import io.gatehouse.api.Ev;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;

import java.util.List;

/**
 * Whether a producer may send a {@link Kw#BATCH}: every gobj its EV_ON_MESSAGE reaches takes batches
 * ({@link GClassSpec#takesBatches()}), following the ones that publish EV_ON_MESSAGE in turn (a channel, a gate)
 * up to the ones that do not (a relay). Asked per batch, so a live upgrade to a revision without batches is seen at
 * the next one.
 */
public final class Batches {
    /** Deeper than any stack here (channel, gate, relay): a loop of subscriptions is not followed forever. */
    private static final int MAX_DEPTH = 6;

    private Batches() {}

    /** True when {@code producer} has subscribers and every gobj its messages reach takes batches. */
    public static boolean takenAbove(GObj producer) {
        List<GObj> subscribers = producer.subscribers();
        return !subscribers.isEmpty() && takenBy(subscribers, MAX_DEPTH);
    }

    private static boolean takenBy(List<GObj> subscribers, int depth) {
        if (depth == 0) return false;
        for (GObj s : subscribers) {
            GClassSpec<?> spec = s.gclass();
            if (s.isDestroyed() || !spec.takesBatches()) return false;
            if (spec.fsm().outputEvents().contains(Ev.EV_ON_MESSAGE)) {
                List<GObj> next = s.subscribers();
                if (next.isEmpty() || !takenBy(next, depth - 1)) return false;
            }
        }
        return true;
    }
}
