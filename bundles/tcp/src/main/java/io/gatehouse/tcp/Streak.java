// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A fault that repeats once per message or per connection while it lasts (data sent to a closed socket, a full tx
 * queue, a flood of connections beyond the channels): the caller says it when it starts, again at most once every
 * {@link #REMIND_MS} while it lasts, each time with the count so far, and once when it is over, with the total.
 * A flood then costs a few lines, not one per message.
 */
final class Streak {
    /** While a streak lasts, it is said again at most this often (ms), so a log that is tailed still shows it. */
    static final long REMIND_MS = 60_000;

    private long count;
    private long saidAtMs;

    /**
     * Counts one more. True when this one is to be said: the first of the streak, or the first {@link #REMIND_MS}
     * after the last one said.
     */
    boolean hit(long nowMs) {
        if (count++ == 0 || nowMs - saidAtMs >= REMIND_MS) {
            saidAtMs = nowMs;
            return true;
        }
        return false;
    }

    /** How many the running streak has counted; 0 when none runs. */
    long count() {
        return count;
    }

    /** Ends the streak: answers how many it counted (0 when none ran), which the caller says. */
    long end() {
        long n = count;
        count = 0;
        return n;
    }

    /** For a live upgrade: the running streak (its count, when it was last said), so the new revision goes on with it. */
    ObjectNode exportState() {
        return JsonNodeFactory.instance.objectNode().put("count", count).put("said_at_ms", saidAtMs);
    }

    /** Takes over a streak {@link #exportState} gave; a missing one is no streak. */
    void importState(JsonNode s) {
        count = s == null ? 0 : Math.max(0, s.path("count").asLong(0));
        saidAtMs = s == null ? 0 : s.path("said_at_ms").asLong(0);
    }
}
