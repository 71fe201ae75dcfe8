// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.testkit.RecordFields;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The byte walk that finds a body's objects gives what Jackson's scan gives for every body it vouches for, vouches
 * for the bodies clients send, and leaves every bad one to Jackson (which names the line).
 */
@Timeout(60)
class ObjectRangesTest {
    private final ObjectRanges ranges = new ObjectRanges();

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** The walk's answer, checked against Jackson's when it gives one; null when it leaves the body to Jackson. */
    private Ndjson.Scan both(byte[] body, int off, int len, int max) {
        Ndjson.Scan fast = ranges.scan(body, off, len, max);
        Ndjson.Scan slow = Ndjson.scan(body, off, len, max);
        if (fast != null) {
            String what = new String(body, off, len, StandardCharsets.UTF_8);
            assertEquals(slow.tooMany, fast.tooMany, what);
            if (!slow.tooMany) {
                assertNull(slow.error, "the walk took a body Jackson refuses: " + what);
                assertEquals(slow.count, fast.count, what);
                assertArrayEquals(Arrays.copyOf(slow.starts, slow.count), Arrays.copyOf(fast.starts, fast.count), what);
                assertArrayEquals(Arrays.copyOf(slow.ends, slow.count), Arrays.copyOf(fast.ends, fast.count), what);
                for (int i = 0; i < fast.count; i++) {
                    if (fast.records[i] != null) sameRecord(Arrays.copyOfRange(body, fast.starts[i], fast.ends[i]), fast.records[i]);
                }
            }
        }
        return fast;
    }

    /** How many objects the walk vouched for as records. */
    private int recordsVouched;

    /**
     * An object the walk vouched for as a record ({@code Kw.BATCH_RECORDS}) is what Jackson writes for its dict, has
     * no metadata key, and its index is where Jackson's parser finds its members.
     */
    private void sameRecord(byte[] object, int[] fields) {
        String what = new String(object, StandardCharsets.UTF_8);
        try {
            assertArrayEquals(Kw.MAPPER.writeValueAsBytes(Kw.MAPPER.readTree(object)), object, what);
        } catch (java.io.IOException e) {
            throw new AssertionError(what, e);
        }
        assertTrue(!what.contains("\"__"), what);
        assertArrayEquals(RecordFields.of(object), fields, what);
        recordsVouched++;
    }

    @Test
    void shouldFindTheObjectsOfTheBodiesClientsSend() {
        for (String body : List.of("{\"id\":\"a\"}", "{\"id\":\"a\"}\n{\"id\":\"b\"}\r\n\n  {\"id\":\"c\",\"n\":{\"deep\":[1,2]}}\n",
                "{}", "{ }\n{}", "{\"f\":1.5e3,\"g\":-0.25,\"s\":\"caf\u00e9 \\u00e9 \\n\",\"t\":true,\"z\":null}",
                "  {\n  \"pretty\": [\n    1,\n    2\n  ]\n}\n", "{}{}", "", " \n ")) {
            byte[] b = utf8(body);
            assertNotNull(both(b, 0, b.length, 100), body);
            // the same body inside a larger array, not at its start (a pooled buffer's)
            byte[] framed = utf8("xx" + body + "yy");
            assertNotNull(both(framed, 2, b.length, 100), body);
        }
    }

    @Test
    void shouldLeaveBadBodiesToJacksonAndCountAsItDoes() {
        for (String body : List.of("{\"id\":1}\n{\"id\":}", "[1]", "{\"a\":1} x", "{\"a\":01}", "{\"a\":\"\u0001\"}",
                "{\"a\":1", "{'a':1}", "{\"a\":NaN}", "\uFEFF{\"a\":1}", "{\"a\":1}\n\"s\"")) {
            byte[] b = utf8(body);
            assertNull(both(b, 0, b.length, 100), body);
        }
        byte[] three = utf8("{}\n{}\n{}\n{\"bad\":");
        Ndjson.Scan s = both(three, 0, three.length, 2);
        assertTrue(s.tooMany, "the third object is one too many, whatever follows it");
    }

    @Test
    void shouldAgreeWithJacksonOnRandomBodiesAndTheirCorruptions() {
        Random rnd = new Random(4);
        int vouched = 0;
        for (int round = 0; round < 3_000; round++) {
            StringBuilder sb = new StringBuilder();
            int objects = 1 + rnd.nextInt(5);
            for (int k = 0; k < objects; k++) {
                sb.append(randomObject(rnd, 0).toString());
                sb.append(rnd.nextBoolean() ? "\n" : rnd.nextBoolean() ? "\r\n" : " \t");
            }
            byte[] good = utf8(sb.toString());
            if (both(good, 0, good.length, 10) != null) vouched++;
            byte[] bad = good.clone();
            for (int m = 1 + rnd.nextInt(3); m > 0; m--) {
                bad[rnd.nextInt(bad.length)] = (byte) CORRUPTIONS.charAt(rnd.nextInt(CORRUPTIONS.length()));
            }
            both(bad, 0, bad.length, 10);
            both(good, 0, Math.max(0, good.length - 1 - rnd.nextInt(5)), 10);   // truncated
        }
        assertTrue(vouched > 2_900, "the walk vouches for what Jackson writes: " + vouched);
        assertTrue(recordsVouched > 3_000, "objects taken as records as they stand: " + recordsVouched);
    }

    private static final String CORRUPTIONS = " {}[]\":,\\0a-.e\u00ff\u0001";

    private static ObjectNode randomObject(Random rnd, int depth) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        for (int i = rnd.nextInt(5); i > 0; i--) {
            String key = "k" + rnd.nextInt(1000) + (rnd.nextInt(10) == 0 ? "\u00e9\"\\" : "");
            switch (depth > 3 ? rnd.nextInt(4) : rnd.nextInt(6)) {
                case 0: o.put(key, rnd.nextLong()); break;
                case 1: o.put(key, rnd.nextDouble() * 1e6); break;
                case 2: o.put(key, randomString(rnd)); break;
                case 3: o.put(key, rnd.nextBoolean()); break;
                case 4: o.set(key, randomObject(rnd, depth + 1)); break;
                default:
                    ArrayNode arr = o.putArray(key);
                    for (int j = rnd.nextInt(4); j > 0; j--) arr.add(randomObject(rnd, depth + 1));
            }
        }
        return o;
    }

    private static String randomString(Random rnd) {
        StringBuilder sb = new StringBuilder();
        for (int i = rnd.nextInt(12); i > 0; i--) {
            int c = rnd.nextInt(10);
            sb.append(c < 6 ? (char) ('a' + rnd.nextInt(26)) : c == 6 ? '\u20ac' : c == 7 ? (char) rnd.nextInt(32)
                    : c == 8 ? "\uD83D\uDE00" : "\"\\/");
        }
        return sb.toString();
    }
}
