// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.sink;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;

import java.util.BitSet;
import java.util.HashSet;
import java.util.Set;

/**
 * The ids a sink has seen, in bounded memory: an id made of a prefix and a number (what {@code ./gatehouse send}
 * makes) is a bit in a bit set, so a million ids cost 125 KB; any other id goes into a set of at most a given
 * size, past which new ids are no longer remembered (and their duplicates not told apart).
 */
final class SeenIds {
    /** What {@link #add} found. */
    enum Seen { NEW, AGAIN, UNTRACKED }

    private final BitSet numbered;
    private final Set<String> others;
    private long highest;

    SeenIds() {
        this(new BitSet(), new HashSet<>(), -1);
    }

    private SeenIds(BitSet numbered, Set<String> others, long highest) {
        this.numbered = numbered;
        this.others = others;
        this.highest = highest;
    }

    // --- Live upgrade ---

    /**
     * The ids for the next revision of the sink: the bit set and the set themselves (JDK types, which any revision
     * takes as they are: nothing is copied, however many ids there are) and the highest number seen.
     */
    ObjectNode exportState() {
        ObjectNode s = Kw.create();
        Kw.putRef(s, "numbered", numbered);
        Kw.putRef(s, "others", others);
        s.put("highest", highest);
        return s;
    }

    /**
     * The ids {@link #exportState} gave.
     *
     * @throws IllegalArgumentException when {@code state} is not such a state
     */
    @SuppressWarnings("unchecked")
    static SeenIds importState(JsonNode state) {
        BitSet numbered = state == null ? null : Kw.ref(state, "numbered", BitSet.class);
        Set<String> others = state == null ? null : Kw.ref(state, "others", Set.class);
        if (numbered == null || others == null) throw new IllegalArgumentException("not a state of seen ids");
        return new SeenIds(numbered, others, state.path("highest").asLong(-1));
    }

    /** Records {@code id}: numbered when it is {@code prefix} and a number, else in the set of at most {@code maxOthers}. */
    Seen add(String id, String prefix, long maxOthers) {
        long n = numberOf(id, prefix);
        if (n >= 0 && n < Integer.MAX_VALUE) {
            boolean seen = numbered.get((int) n);
            numbered.set((int) n);
            if (n > highest) highest = n;
            return seen ? Seen.AGAIN : Seen.NEW;
        }
        if (others.contains(id)) return Seen.AGAIN;
        if (others.size() >= maxOthers) return Seen.UNTRACKED;
        others.add(id);
        return Seen.NEW;
    }

    /** The highest number seen, -1 before the first numbered id. */
    long highest() {
        return highest;
    }

    /** How many numbers in [from, to] were never seen, and the first of them (-1: none). */
    long[] missing(long from, long to) {
        long count = 0;
        long first = -1;
        for (long i = from; i <= to; i++) {
            if (!numbered.get((int) i)) {
                count++;
                if (first < 0) first = i;
            }
        }
        return new long[] {count, first};
    }

    /** The number of an id made of {@code prefix} and up to 10 digits, else -1. */
    static long numberOf(String id, String prefix) {
        if (!id.startsWith(prefix) || id.length() == prefix.length() || id.length() - prefix.length() > 10) return -1;
        long v = 0;
        for (int i = prefix.length(); i < id.length(); i++) {
            char c = id.charAt(i);
            if (c < '0' || c > '9') return -1;
            v = v * 10 + (c - '0');
        }
        return v;
    }
}
