// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.sink;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/** The ids seen, without a yuno: numbered ids in a bit set, the others bounded. */
class SeenIdsTest {
    @Test
    void shouldTellNewFromAgainForNumberedAndOtherIds() {
        SeenIds ids = new SeenIds();
        assertEquals(SeenIds.Seen.NEW, ids.add("msg-7", "msg-", 10));
        assertEquals(SeenIds.Seen.AGAIN, ids.add("msg-7", "msg-", 10));
        assertEquals(SeenIds.Seen.NEW, ids.add("other", "msg-", 10));
        assertEquals(SeenIds.Seen.AGAIN, ids.add("other", "msg-", 10));
        assertEquals(7, ids.highest());
    }

    @Test
    void shouldStopRememberingOtherIdsPastTheirMaximum() {
        SeenIds ids = new SeenIds();
        assertEquals(SeenIds.Seen.NEW, ids.add("a", "msg-", 1));
        assertEquals(SeenIds.Seen.UNTRACKED, ids.add("b", "msg-", 1));
        assertEquals(SeenIds.Seen.UNTRACKED, ids.add("b", "msg-", 1), "not remembered, so not a duplicate");
        assertEquals(SeenIds.Seen.NEW, ids.add("msg-1", "msg-", 1), "numbered ids are not bounded by it");
    }

    @Test
    void shouldCountTheNumbersNeverSeenInARange() {
        SeenIds ids = new SeenIds();
        for (int i : new int[] {0, 1, 3, 6}) ids.add("msg-" + i, "msg-", 0);
        assertArrayEquals(new long[] {3, 2}, ids.missing(0, 6), "2, 4 and 5");
        assertArrayEquals(new long[] {0, -1}, ids.missing(0, 1));
    }

    @Test
    void shouldReadOnlyThePrefixAndUpToTenDigitsAsANumber() {
        assertEquals(42, SeenIds.numberOf("msg-42", "msg-"));
        assertEquals(-1, SeenIds.numberOf("msg-", "msg-"));
        assertEquals(-1, SeenIds.numberOf("msg-4x", "msg-"));
        assertEquals(-1, SeenIds.numberOf("id-42", "msg-"));
        assertEquals(-1, SeenIds.numberOf("msg-12345678901", "msg-"));
    }
}
