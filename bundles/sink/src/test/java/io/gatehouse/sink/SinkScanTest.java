// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.sink;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.support.InputGates;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Whatever the scan vouches for is what C_SINK reads from Jackson's tree: the id's text ({@code asText} of the
 * node, none for null or absent), whether there is a metadata object, and the ack's bytes (as
 * {@code Kw.writeJson(InputGates.ack(md, 0))} writes them) whenever it says it can write them.
 */
class SinkScanTest {
    private static final String UNSURE = "unsure";
    private final SinkScan scan = new SinkScan();

    /** The tree's answer: null when C_SINK takes the message for bad JSON. */
    private static String reference(byte[] msg, boolean withAck) {
        ObjectNode tree;
        try {
            tree = Kw.parse(Unpooled.wrappedBuffer(msg));
        } catch (IOException | RuntimeException notJson) {
            return null;
        }
        JsonNode id = Kw.get(tree, "id");
        JsonNode md = tree.get(Kw.MD_TRQ);
        String ack = "no ack";
        if (md != null && md.isObject()) {
            ByteBuf out = Unpooled.buffer();
            Kw.writeJson(InputGates.ack((ObjectNode) md, 0), out);
            ack = withAck ? out.toString(StandardCharsets.UTF_8) : "an ack";
        }
        return "id=" + (id == null || id.isNull() ? "none" : id.asText()) + " " + ack;
    }

    /** The scan's answer, from a direct buffer whose readable bytes start past others (as a frame arrives). */
    private String scanned(byte[] msg) {
        ByteBuf in = PooledByteBufAllocator.DEFAULT.directBuffer(msg.length + 3);
        try {
            in.writeBytes(new byte[] {9, 9, 9}).readerIndex(3);
            in.writeBytes(msg);
            if (scan.scan(in, "id") != SinkScan.FOUND) return UNSURE;
            assertEquals(3, in.readerIndex(), "the scan does not consume");
            String id = scan.id();
            String ack = "no ack";
            if (scan.hasMd()) {
                if (scan.ackable()) {
                    ByteBuf out = Unpooled.buffer();
                    scan.writeAck(out);
                    ack = out.toString(StandardCharsets.UTF_8);
                } else {
                    ack = "an ack";
                }
            }
            return "id=" + (id == null ? "none" : id) + " " + ack;
        } finally {
            in.release();
        }
    }

    /** The scan's answer when it gave one, checked against the tree's. */
    private String same(byte[] msg) {
        String mine = scanned(msg);
        if (!mine.equals(UNSURE)) {
            String ref = reference(msg, !mine.endsWith("an ack"));
            assertTrue(ref != null, () -> "the scan took what the tree refuses: " + new String(msg, StandardCharsets.UTF_8));
            assertEquals(ref, mine, () -> new String(msg, StandardCharsets.UTF_8));
        }
        return mine;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void shouldReadTheIdAndWriteTheAckAsTheTreeDoes() {
        String record = "{\"id\":\"msg-17\",\"n\":17,\"__md_trq__\":{\"__msg_rowid__\":42,\"__msg_t__\":1764950000,"
                + "\"__msg_gen__\":3}}";
        assertEquals("id=msg-17 {\"__md_trq__\":{\"__msg_rowid__\":42,\"__msg_t__\":1764950000,\"__msg_gen__\":3,"
                + "\"result\":0}}", same(bytes(record)), "a queue's record is read and acked from its bytes");
        assertEquals("id=none no ack", same(bytes("{\"n\":1}")));
        assertEquals("id=none no ack", same(bytes("{\"id\":null}")));
        assertEquals("id=\u00e9t\u00e9 {\"__md_trq__\":{\"result\":0}}", same(bytes("{\"id\":\"\u00e9t\u00e9\",\"__md_trq__\":{}}")));
        List<String> notAckable = List.of(
                "{\"__md_trq__\":{ \"a\":1}}", "{\"__md_trq__\":{\"a\" :1}}", "{\"__md_trq__\":{\"a\":1 ,\"b\":2}}",
                "{\"__md_trq__\":{\"a\":1.5}}", "{\"__md_trq__\":{\"a\":1e3}}", "{\"__md_trq__\":{\"a\":-0}}",
                "{\"__md_trq__\":{\"a\":[1]}}", "{\"__md_trq__\":{\"a\":{\"b\":1}}}", "{\"__md_trq__\":{\"a\":1,\"a\":2}}",
                "{\"__md_trq__\":{\"result\":5}}", "{\"__md_trq__\":{\"a\":\"x\\/y\"}}", "{\"__md_trq__\":{ }}",
                "{\"__md_trq__\":{\"a\":12345678901234567890}}");
        for (String m : notAckable) assertTrue(same(bytes(m)).endsWith("an ack"), m);
        List<String> unsure = List.of("[1]", "{\"id\":1}", "{\"id\":\"a\\nb\"}", "{\"\\u0069d\":\"x\"}", "{\"a\":1} x",
                "{\"a\":", "not json", "", "{\"id\":{\"x\":1}}");
        for (String m : unsure) assertEquals(UNSURE, same(bytes(m)), m);
        assertEquals("id=b {\"__md_trq__\":{\"r\":2,\"result\":0}}",
                same(bytes("{\"id\":\"a\",\"__md_trq__\":{\"r\":1},\"id\":\"b\",\"__md_trq__\":{\"r\":2}}")),
                "the last of a key given twice wins, as in the tree");
        assertEquals("id=a no ack", same(bytes("{\"id\":\"a\",\"__md_trq__\":{\"r\":1},\"__md_trq__\":7}")));
    }

    @Test
    void shouldAgreeWithTheTreeOnRandomMessages() {
        Random r = new Random(11);
        String[] values = {"1", "-7", "0", "123456789012345678", "1234567890123456789", "1.5", "-0", "true", "false",
            "null", "\"s\"", "\"caf\u00e9\"", "\"a\\\"b\"", "\"\\u0001\"", "\"\\u00e9\"", "[1,2]", "{\"x\":1}", "{}"};
        String[] keys = {"id", "n", "__md_trq__", "__msg_rowid__", "result", "caf\u00e9", "a b"};
        int found = 0;
        int ackedFromBytes = 0;
        for (int i = 0; i < 4000; i++) {
            StringBuilder sb = new StringBuilder("{");
            int fields = r.nextInt(5);
            for (int f = 0; f < fields; f++) {
                if (f > 0) sb.append(r.nextInt(8) == 0 ? " , " : ",");
                String k = keys[r.nextInt(keys.length)];
                sb.append('"').append(k).append("\":");
                if (k.equals("__md_trq__") && r.nextInt(4) > 0) {
                    sb.append('{');
                    int mf = r.nextInt(4);
                    for (int m = 0; m < mf; m++) {
                        if (m > 0) sb.append(r.nextInt(10) == 0 ? ", " : ",");
                        sb.append('"').append(keys[3 + r.nextInt(4)]).append("\":").append(values[r.nextInt(values.length)]);
                    }
                    sb.append('}');
                } else if (k.equals("id") && r.nextBoolean()) {
                    sb.append("\"msg-").append(r.nextInt(1000)).append('"');
                } else {
                    sb.append(values[r.nextInt(values.length)]);
                }
            }
            byte[] b = bytes(sb.append('}').toString());
            if (r.nextInt(10) == 0) b[r.nextInt(b.length)] = (byte) (32 + r.nextInt(95));   // one byte spoilt
            String mine = same(b);
            if (!mine.equals(UNSURE)) found++;
            if (mine.contains("\"result\":0}}")) ackedFromBytes++;
        }
        assertTrue(found > 1000 && ackedFromBytes > 200, "the scan answers most: " + found + ", acks " + ackedFromBytes);
    }
}
