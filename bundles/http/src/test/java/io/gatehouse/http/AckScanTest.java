// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Whatever the scan vouches for is what C_PROT_HTTP_SR read from Jackson's tree before the scan: the conn, req and
 * msg of the ack's {@code __md_trq__} (-1 when absent) and its result. Each case is checked against that reference,
 * computed as {@code ProtHttpSr.acAck} reads the tree.
 */
class AckScanTest {
    private static final String UNSURE = "unsure";
    private final AckScan scan = new AckScan();

    /** What the gobj reads from the tree: null when it drops the ack (not JSON, no metadata object). */
    private static String reference(byte[] ack) {
        ObjectNode tree;
        try {
            tree = Kw.parse(Unpooled.wrappedBuffer(ack));
        } catch (IOException | RuntimeException notJson) {
            return null;
        }
        JsonNode md = tree == null ? null : tree.get(Kw.MD_TRQ);
        if (md == null || !md.isObject()) return null;
        int result = md.has(Kw.RESULT) ? md.get(Kw.RESULT).asInt() : (int) Kw.getLong(tree, Kw.RESULT, 0);
        return answer(md.path(ProtHttpSr.MD_CONN).asLong(-1), md.path(ProtHttpSr.MD_REQ).asLong(-1),
                md.path(ProtHttpSr.MD_MSG).asInt(-1), result);
    }

    private static String answer(long conn, long req, int msg, int result) {
        return "conn=" + conn + " req=" + req + " msg=" + msg + " result=" + result;
    }

    /** The scan's answer, on a direct buffer whose readable bytes start past others (as a frame arrives). */
    private String scanned(byte[] ack) {
        ByteBuf in = PooledByteBufAllocator.DEFAULT.directBuffer(ack.length + 3);
        try {
            in.writeBytes(new byte[] {9, 9, 9});
            in.readerIndex(3);
            in.writeBytes(ack);
            int before = in.readerIndex();
            if (scan.scan(in) != AckScan.FOUND) return UNSURE;
            assertEquals(before, in.readerIndex(), "the scan does not consume");
            return answer(scan.conn(), scan.req(), scan.msg(), scan.result());
        } finally {
            in.release();
        }
    }

    private String same(byte[] ack) {
        String mine = scanned(ack);
        if (!mine.equals(UNSURE)) {
            String ref = reference(ack);
            assertNotNull(ref, () -> "the scan took what the tree drops: " + new String(ack, StandardCharsets.UTF_8));
            assertEquals(ref, mine, () -> new String(ack, StandardCharsets.UTF_8));
        }
        return mine;
    }

    private void found(String ack) {
        byte[] b = ack.getBytes(StandardCharsets.UTF_8);
        assertEquals(reference(b), same(b), ack);
    }

    private void unsure(String ack) {
        assertEquals(UNSURE, same(ack.getBytes(StandardCharsets.UTF_8)), ack);
    }

    @Test
    void readsTheAcksTheRelaySends() {
        // what MdTrq.writeAckStart writes for our metadata: conn up to Long.MAX_VALUE (19 digits)
        found("{\"__md_trq__\":{\"conn\":9223372036854775807,\"req\":17,\"msg\":99,\"result\":0}}");
        found("{\"__md_trq__\":{\"conn\":1,\"req\":1,\"msg\":0,\"result\":-1}}");
        found("{\"__md_trq__\":{\"conn\":5,\"req\":2,\"msg\":3}}");                     // no result: 0
        found("{\"__md_trq__\":{\"conn\":5,\"req\":2},\"result\":-7}");                  // no msg: -1; the top's result
        found("{\"result\":3,\"__md_trq__\":{\"conn\":5,\"result\":4}}");               // the metadata's result wins
        found("{\"__md_trq__\":{\"conn\":1,\"conn\":2,\"msg\":1,\"msg\":2}}");          // a key twice: the last
        found("{\"__md_trq__\":{\"conn\":1},\"__md_trq__\":{\"conn\":2}}");
        found(" { \"id\" : \"x\" , \"__md_trq__\" : { \"k\" : [1, {\"conn\": 2}], \"conn\" : 9, \"msg\": 999999999 } } ");
        found("{\"__md_trq__\":{\"conn\":-4,\"req\":-0,\"msg\":-1},\"x\":\"\u00e9t\u00e9 \\u20ac\\n\"}");
        found("{\"__md_trq__\":{}}");
    }

    @Test
    void leavesToJacksonWhatItCannotVouchFor() {
        String[] cases = {
            "", "   ", "not json", "[1,2]", "{}", "{\"conn\":1}", "\uFEFF{\"__md_trq__\":{\"conn\":1}}",
            "{\"__md_trq__\":{\"conn\":1}",                                     // truncated
            "{\"__md_trq__\":{\"conn\":1}} {\"x\":1}",                          // more after the object
            "{\"__md_trq__\":{\"conn\":\"5\"}}", "{\"__md_trq__\":{\"req\":5.5}}", "{\"__md_trq__\":{\"msg\":5e2}}",
            "{\"__md_trq__\":{\"conn\":true}}", "{\"__md_trq__\":{\"req\":null}}",
            "{\"__md_trq__\":{\"conn\":9223372036854775808}}",                  // above Long.MAX_VALUE
            "{\"__md_trq__\":{\"conn\":-9223372036854775807}}",                 // 19 digits, negative
            "{\"__md_trq__\":{\"conn\":99999999999999999999}}",                 // 20 digits
            "{\"__md_trq__\":{\"msg\":4294967296}}", "{\"__md_trq__\":{\"msg\":1234567890}}",
            "{\"__md_trq__\":{\"conn\":5,\"result\":4294967296}}", "{\"__md_trq__\":{\"conn\":5,\"result\":1.5}}",
            "{\"__md_trq__\":{\"conn\":5},\"result\":\"0\"}",
            "{\"__md_trq__\":{\"conn\":5},\"__md_trq__\":7}",                  // the last is no object
            "{\"__md_trq__\":{\"\\u0063onn\":5}}",                            // a key spelt with escapes
            "{\"__md_trq__\":{\"conn\":5},\"\\u005f_md_trq__\":{\"conn\":6}}",
            "{\"__md_trq__\":{\"conn\":5},\"x\":tru}", "{\"__md_trq__\":{\"conn\":05}}",
            "{\"__md_trq__\":{\"conn\":5},}", "{\"__md_trq__\":{\"conn\":5},\"x\":\"\u0001\"}",
            "{\"__md_trq__\":{\"conn\":5},\"x\":" + "[".repeat(100) + "]".repeat(100) + "}",
        };
        for (String c : cases) unsure(c);
        byte[] head = "{\"__md_trq__\":{\"conn\":5},\"x\":\"".getBytes(StandardCharsets.US_ASCII);
        byte[] msg = Arrays.copyOf(head, head.length + 3);
        msg[head.length] = (byte) 0x80;   // invalid UTF-8
        msg[head.length + 1] = '"';
        msg[head.length + 2] = '}';
        assertEquals(UNSURE, same(msg), "invalid UTF-8");
    }

    /** Random acks, and the same with bytes cut, dropped, doubled or changed: the scan never answers otherwise. */
    @Test
    void answersAsJacksonOnRandomAndBrokenAcks() {
        Random rnd = new Random(15);
        String[] atoms = {"1", "7", "-3", "0", "-0", "2.5", "1e9", "true", "false", "null", "\"s\"", "\"5\"", "[]", "{}",
            "[1,\"x\"]", "{\"q\":{\"r\":[null]}}", "4294967296", "-2147483649", "99999999999999999999",
            "9223372036854775807", "9223372036854775808", "123456789", "1234567890", "\"\\u00e9\\t\""};
        String[] keys = {"id", "__md_trq__", "result", "conn", "req", "msg", "k"};
        int found = 0;
        for (int c = 0; c < 4000; c++) {
            StringBuilder b = new StringBuilder("{");
            int fields = rnd.nextInt(4);
            for (int f = 0; f < fields; f++) {
                if (f > 0) b.append(rnd.nextBoolean() ? "," : " , ");
                String k = f == 0 && rnd.nextBoolean() ? "__md_trq__" : keys[rnd.nextInt(keys.length)];
                b.append('"').append(k).append("\":");
                if (k.equals("__md_trq__") && rnd.nextInt(5) > 0) {
                    b.append('{');
                    int m = rnd.nextInt(5);
                    for (int j = 0; j < m; j++) {
                        if (j > 0) b.append(", ");
                        b.append('"').append(keys[rnd.nextInt(keys.length)]).append("\":")
                                .append(atoms[rnd.nextInt(atoms.length)]);
                    }
                    b.append('}');
                } else {
                    b.append(atoms[rnd.nextInt(atoms.length)]);
                }
            }
            b.append('}');
            byte[] ack = b.toString().getBytes(StandardCharsets.UTF_8);
            if (!same(ack).equals(UNSURE)) found++;
            byte[] broken = ack.clone();
            int at = rnd.nextInt(broken.length);
            if (rnd.nextBoolean()) broken = Arrays.copyOf(broken, at);
            else broken[at] = (byte) rnd.nextInt(256);
            same(broken);
        }
        assertTrue(found > 500, "the scan reads most of the well-formed acks: " + found);
    }
}
