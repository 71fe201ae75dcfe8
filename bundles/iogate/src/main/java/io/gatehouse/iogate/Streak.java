// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.iogate;

/**
 * A condition that repeats (per message, per ack) said once when it starts and once when it ends, with how many
 * times it happened: {@code if (s.hit()) Glog.warn(...)} where it occurs, {@code if (s.active()) Glog.info(...,
 * "count", s.end())} where things are back to normal. Gclass bundles share no code but the api, so each bundle that
 * needs one has this copy.
 */
final class Streak {
    private long count;

    /** Counts one occurrence; true for the first of a streak, the one to say. */
    boolean hit() {
        return count++ == 0;
    }

    /** True between the first occurrence and {@link #end()}. */
    boolean active() {
        return count > 0;
    }

    /** How many occurrences the streak has had so far (0: none under way). */
    long count() {
        return count;
    }

    /** Goes on with a streak a previous revision of the gclass had under way (a live upgrade). */
    void resume(long occurrences) {
        count = Math.max(0, occurrences);
    }

    /** Ends the streak and answers how many occurrences it had. */
    long end() {
        long n = count;
        count = 0;
        return n;
    }
}
