// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.testkit.RecordFields;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The key a scan reads from a record's bytes is the node {@code Kw.get} answers for its dict, for every record. */
class RecordKeyTest {
    private final RecordKey scan = new RecordKey();

    private void same(String record, String path) throws Exception {
        JsonNode expected = Kw.get(Kw.parse(record), path);
        JsonNode got = scan.get(Unpooled.copiedBuffer(record, StandardCharsets.UTF_8), path);
        assertEquals(expected, got, record + " " + path);
        if (expected != null) assertEquals(expected.getClass(), got.getClass(), record + " " + path);
        // the same key found in the record's member index (Kw.RECORD_FIELDS), as C_RELAY gives it
        byte[] bytes = record.getBytes(StandardCharsets.UTF_8);
        scan.lastdigits(Unpooled.wrappedBuffer(bytes), RecordFields.of(bytes), path, 0, 0);
        assertEquals(expected, scan.key(), record + " " + path + " indexed");
        if (expected != null) assertEquals(expected.getClass(), scan.key().getClass(), record + " " + path);
    }

    @Test
    void readsTheKeyOfHandMadeRecords() throws Exception {
        String[] records = {
            "{}", "{\"id\":\"m-17\"}", "{\"a\":1,\"id\":\"x\\\"y\\u0001\"}", "{\"id\":17}", "{\"id\":-12345678901234567890}",
            "{\"id\":null}", "{\"id\":true}", "{\"id\":[1,\"2\"]}", "{\"id\":{\"sub\":\"s\"},\"b\":2}",
            "{\"x\":{\"id\":\"inner\"}}", "{\"x\":\"\\\"id\\\":\\\"fake\\\"\",\"id\":\"real\"}", "{\"id\":\"\u00e9t\u00e9\"}",
            "{\"id\":\"\"}", "{\"ids\":\"no\",\"i\":\"no\"}", "{\"\u00e9\":\"accent\"}",
        };
        for (String r : records) {
            for (String path : new String[] {"id", "x`id", "id`sub", "\u00e9", "b", "missing"}) same(r, path);
        }
    }

    @Test
    void readsTheKeyOfRandomRecords() throws Exception {
        Random rnd = new Random(3);
        String[] keys = {"id", "key", "k\"q", "\u00e9", "a"};
        for (int i = 0; i < 2000; i++) {
            ObjectNode o = Kw.create();
            for (int k = rnd.nextInt(4); k > 0; k--) {
                String key = keys[rnd.nextInt(keys.length)];
                switch (rnd.nextInt(5)) {
                    case 0: o.put(key, "v" + rnd.nextInt(1000) + (rnd.nextBoolean() ? "\n\"\u00e9" : "")); break;
                    case 1: o.put(key, rnd.nextLong()); break;
                    case 2: o.putObject(key).put("id", "n" + rnd.nextInt(9)); break;
                    case 3: o.putNull(key); break;
                    default: o.putArray(key).add(rnd.nextInt());
                }
            }
            String record = Kw.toJson(o);
            for (String path : keys) same(record, path);
            same(record, "key`id");
        }
    }

    @Test
    void routesByLastDigitsFromTheBytesAsFromTheKeysText() throws Exception {
        Random rnd = new Random(11);
        String[] shapes = {"m-%d", "%d", "dev\u00e9-%d", "x\"%d", "tail\\u0031", "%d-z", "", "ab\\n%d", "%dé"};
        int fromBytes = 0;
        for (int i = 0; i < 20_000; i++) {
            String shape = shapes[rnd.nextInt(shapes.length)];
            String id = String.format(java.util.Locale.ROOT, shape, Math.abs(rnd.nextLong()) % (rnd.nextBoolean() ? 1_000 : Long.MAX_VALUE));
            ObjectNode o = Kw.create();
            if (rnd.nextBoolean()) o.put("before", "b" + rnd.nextInt(99));
            if (rnd.nextInt(10) == 0) o.put("id", rnd.nextInt(1000));
            else o.put("id", id);
            o.put("tm", rnd.nextInt());
            String record = Kw.toJson(o);
            int digits = 1 + rnd.nextInt(20);
            int children = 1 + rnd.nextInt(7);
            int got = scan.lastdigits(Unpooled.copiedBuffer(record, StandardCharsets.UTF_8), null, "id", digits, children);
            byte[] bytes = record.getBytes(StandardCharsets.UTF_8);
            assertEquals(got, scan.lastdigits(Unpooled.wrappedBuffer(bytes), RecordFields.of(bytes), "id", digits,
                    children), record + " indexed");
            if (got < 0) continue;   // the caller routes from the node: KeyRoutingTest
            fromBytes++;
            JsonNode v = Kw.get(Kw.parse(record), "id");
            assertEquals(null, KeyRouting.lastdigitsFault(v), record);
            assertEquals(KeyRouting.lastdigits(v.asText(), digits, children), got, record + " digits " + digits);
        }
        org.junit.jupiter.api.Assertions.assertTrue(fromBytes > 3_000, "the usual key is routed from the bytes: " + fromBytes);
        // an escape whose last bytes are digits is a character, not digits: the node decides
        assertEquals(-1, scan.lastdigits(Unpooled.copiedBuffer("{\"id\":\"ab\\u0031\"}", StandardCharsets.UTF_8), null, "id", 3, 4));
        assertEquals(-1, scan.lastdigits(Unpooled.copiedBuffer("{\"id\":17}", StandardCharsets.UTF_8), null, "id", 3, 4));
        assertEquals(-1, scan.lastdigits(Unpooled.copiedBuffer("{\"x\":{\"id\":\"7\"}}", StandardCharsets.UTF_8), null, "x`id", 3, 4));
    }

    @Test
    void readsTheKeyFromTheIndexAndWalksWhenTheIndexDoesNotFit() {
        byte[] record = "{\"a\":\"x\",\"id\":\"m-17\",\"b\":[1]}".getBytes(StandardCharsets.UTF_8);
        int[] fields = RecordFields.of(record);
        assertEquals(KeyRouting.lastdigits("m-17", 2, 4), scan.lastdigits(Unpooled.wrappedBuffer(record), fields, "id", 2, 4));
        // the index is what is read: one that leaves the member out hides it (the sender vouches for the index)
        assertEquals(-1, scan.lastdigits(Unpooled.wrappedBuffer(record), java.util.Arrays.copyOf(fields, 1), "id", 2, 4));
        assertEquals(null, scan.key());
        // an index that does not fit the bytes (outside them, not on a key, not compact) is not used: the walk reads
        for (int[] bad : new int[][] {{}, {0}, {1, 999}, {2, 9, 25}, {1, 10, 25}, {-1, 9, 25}, {9, 1}}) {
            assertEquals(KeyRouting.lastdigits("m-17", 2, 4), scan.lastdigits(Unpooled.wrappedBuffer(record), bad, "id", 2, 4),
                    java.util.Arrays.toString(bad));
        }
    }
}
