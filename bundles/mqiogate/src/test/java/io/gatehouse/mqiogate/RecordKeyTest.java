// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
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
}
