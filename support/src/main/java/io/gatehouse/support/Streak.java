// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

/**
 * A condition that repeats (per message, per ack, per connection) said when it starts and once when it is over,
 * with how many times it happened, so a flood costs a few log lines, not one per message:
 *
 * <pre>{@code
 * if (refused.hit()) Glog.warn(gobj, "Bottom refused the message");              // where it occurs
 * if (refused.active()) Glog.info(gobj, "Bottom takes messages again", "refused", refused.end());   // back to normal
 * }</pre>
 *
 * {@link #hit()} says a streak once. {@link #hit(long)} (a time of the yuno's clock) also says it again at most once
 * every {@link #REMIND_MS} while it lasts, for faults that can go on for hours (data sent to a closed socket, a
 * flood of connections beyond the channels), so a log that is tailed still shows them; the caller then logs
 * {@link #count()} so far. Use one of the two per streak. One per condition, on the core thread.
 */
public final class Streak {
    /** While a streak lasts, {@link #hit(long)} says it again at most this often (ms). */
    public static final long REMIND_MS = 60_000;

    private long count;
    private long saidAtMs;

    /** Counts one occurrence; true for the first of a streak, the one to say. */
    public boolean hit() {
        return count++ == 0;
    }

    /**
     * Counts one occurrence at {@code nowMs}. True when this one is to be said: the first of the streak, or the
     * first {@link #REMIND_MS} or more after the last one said.
     */
    public boolean hit(long nowMs) {
        if (count++ == 0 || nowMs - saidAtMs >= REMIND_MS) {
            saidAtMs = nowMs;
            return true;
        }
        return false;
    }

    /** True between the first occurrence and {@link #end()}. */
    public boolean active() {
        return count > 0;
    }

    /** How many occurrences the running streak has had so far; 0 when none runs. */
    public long count() {
        return count;
    }

    /**
     * Goes on with a streak a previous revision of the gclass had under way (a live upgrade hands over the count, a
     * number, since the new revision has its own copy of this class). The next {@link #hit(long)} says it again
     * only once {@link #REMIND_MS} has passed since {@code nowMs}.
     */
    public void resume(long occurrences, long nowMs) {
        count = Math.max(0, occurrences);
        saidAtMs = nowMs;
    }

    /** {@link #resume(long, long)} for a streak said with {@link #hit()}. */
    public void resume(long occurrences) {
        resume(occurrences, 0);
    }

    /** Ends the streak and answers how many occurrences it had (0 when none ran), which the caller says. */
    public long end() {
        long n = count;
        count = 0;
        return n;
    }
}
