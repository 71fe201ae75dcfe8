// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Which objects the producer's walk takes as records as they stand, and their index. C_RELAY's MdTrqTest holds the
 * walk against the relay's own on random messages; these are the cases by name.
 */
class RecordScanTest {
    private final RecordScan scan = new RecordScan(16);

    /** The walk of {@code json}: its index when it is a record as it stands, else null; fails on bad JSON. */
    private int[] fields(String json) {
        byte[] b = json.getBytes(StandardCharsets.UTF_8);
        scan.load(b, 0, b.length);
        assertEquals(b.length, scan.recordObject(0), json);
        return scan.recordFields();
    }

    @Test
    void shouldIndexTheMembersOfARecord() {
        assertArrayEquals(new int[0], fields("{}"));
        assertArrayEquals(new int[] {1, 12}, fields("{\"id\":\"a-1\",\"tm\":5}"));
        // nested members are not indexed, only the top level's
        assertArrayEquals(new int[] {1, 23}, fields("{\"a\":{\"b\":[1,{\"c\":2}]},\"d\":[true]}"));
        assertArrayEquals(new int[] {1}, fields("{\"k\\\"\\n\":\"\u00e9\"}"));
        assertArrayEquals(new int[] {1}, fields("{\"s\":\"\\u001F\"}"));
    }

    @Test
    void shouldNotTakeAnObjectJacksonWritesOtherwise() {
        for (String other : new String[] {
            "{ }", "{\"a\":1 }", "{\"a\" :1}", "{\"a\": 1}", "{\"a\":1, \"b\":2}", "{\"a\":[1 ,2]}", "{\"a\":[ ]}",
            "{\"a\":1.5}", "{\"a\":1e3}", "{\"a\":-0}", "{\"a\":\"\\/\"}", "{\"a\":\"\\u0041\"}", "{\"a\":\"\\u001f\"}",
            "{\"a\":\"\\u0009\"}", "{\"a\":\"\uD83D\uDE00\"}", "{\"a\":1,\"a\":2}", "{\"a\":{\"b\":1,\"b\":1}}",
            "{\"__md_trq__\":{}}", "{\"a\":{\"__x\":1}}", "{\"a\":[{\"__temp__\":1}]}"}) {
            assertNull(fields(other), other);
        }
        // three underscores, or two alone, are not metadata; the same key in two objects is not a key twice
        assertArrayEquals(new int[] {1, 10}, fields("{\"___x\":1,\"__\":2}"));
        assertArrayEquals(new int[] {1, 13}, fields("{\"a\":{\"a\":1},\"b\":{\"a\":1}}"));
    }

    @Test
    void shouldRefuseBadJsonAsTheWalkDoes() {
        for (String bad : new String[] {"{\"a\":}", "{\"a\":1", "{\"a\":01}", "{\"a\":\"\u0001\"}", "{'a':1}"}) {
            byte[] b = bad.getBytes(StandardCharsets.UTF_8);
            scan.load(b, 0, b.length);
            assertEquals(-1, scan.recordObject(0), bad);
            assertNull(scan.recordFields(), bad);
        }
    }
}
