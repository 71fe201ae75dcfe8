// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.TrQueue;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * Whatever the scan vouches for is what the gate read from Jackson's tree before the scan: the rowid, t,
 * generation and result of the ack, each present or not alike. Each case is checked against that reference,
 * computed as {@code QIoGate.processAck} and {@code TrQueue.matchAck} read the tree.
 */
class AckScanTest {
    private static final String NOISE = "{}[]\",:\\ 0e-.tx\u0080";
    private static final String UNSURE = "unsure";
    private final AckScan scan = new AckScan();

    /** What the gate reads from the tree: null when it refuses the ack (not a JSON object, or no positive rowid). */
    private static String reference(byte[] ack) {
        ObjectNode tree;
        try {
            tree = Kw.parse(Unpooled.wrappedBuffer(ack));
        } catch (IOException | RuntimeException notJson) {
            return null;
        }
        ObjectNode md = TrQueue.getMetadata(tree);
        JsonNode mdOrTop = md != null ? md : tree;
        long rowid = mdOrTop.path(TrQueue.MSG_ROWID).asLong(0);
        if (rowid <= 0) return null;
        JsonNode t = mdOrTop.get(TrQueue.MSG_T);
        JsonNode gen = mdOrTop.get(TrQueue.MSG_GEN);
        JsonNode res = md != null && md.has(Kw.RESULT) ? md.get(Kw.RESULT) : tree.get(Kw.RESULT);
        return answer(rowid, t != null, mdOrTop.path(TrQueue.MSG_T).asLong(0), gen != null,
                gen == null ? 0 : gen.asLong(), res != null, res == null ? 0 : res.asInt(0));
    }

    private static String answer(long rowid, boolean hasT, long t, boolean hasGen, long gen, boolean hasResult, int result) {
        return "rowid=" + rowid + " t=" + (hasT ? "" + t : "-") + "/" + t + " gen=" + (hasGen ? "" + gen : "-")
                + " result=" + (hasResult ? "" + result : "-") + "/" + result;
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
            return answer(scan.rowid(), scan.hasT(), scan.t(), scan.hasGen(), scan.gen(), scan.hasResult(), scan.result());
        } finally {
            in.release();
        }
    }

    /** The scan answers as the tree, or leaves the ack to it. */
    private String same(byte[] ack) {
        String mine = scanned(ack);
        if (mine != UNSURE) {
            String ref = reference(ack);
            assertNotNull(ref, () -> "the scan took what the tree refuses: " + new String(ack, StandardCharsets.UTF_8));
            assertEquals(ref, mine, () -> new String(ack, StandardCharsets.UTF_8));
        }
        return mine;
    }

    private String same(String ack) {
        return same(ack.getBytes(StandardCharsets.UTF_8));
    }

    private void found(String ack) {
        String got = same(ack);
        assertEquals(reference(ack.getBytes(StandardCharsets.UTF_8)), got, ack);
    }

    private void unsure(String ack) {
        assertEquals(UNSURE, same(ack), ack);
    }

    @Test
    void readsTheAcksSinksSend() {
        found("{\"__md_trq__\":{\"__msg_rowid__\":5,\"__msg_t__\":1764633600123,\"__msg_gen__\":3,\"result\":0}}");
        found("{\"__md_trq__\":{\"__msg_rowid__\":5,\"__msg_t__\":1,\"result\":-1}}");
        found("{\"__md_trq__\":{\"__msg_rowid__\":5,\"__msg_t__\":1}}");             // no result: taken as 0
        found("{\"__md_trq__\":{\"__msg_rowid__\":5},\"result\":-7}");                // the top's result
        found("{\"result\":3,\"__md_trq__\":{\"__msg_rowid__\":5,\"result\":4}}");   // the metadata's wins
        found(" { \"id\" : \"m1\" , \"__md_trq__\" : { \"k\" : [1, {\"__msg_rowid__\": 2}], \"__msg_rowid__\" : 9 } } x");
        found("{\"__md_trq__\":{\"__msg_rowid__\":1,\"__msg_rowid__\":2}}");         // a key twice: the last
        found("{\"__md_trq__\":{\"__msg_rowid__\":1},\"__md_trq__\":{\"__msg_rowid__\":2}}");
        found("{\"__md_trq__\":{\"__msg_rowid__\":999999999999999999,\"__msg_t__\":-4,\"__msg_gen__\":-0}}");
        found("{\"__md_trq__\":{\"__msg_rowid__\":5,\"result\":-999999999},\"x\":\"\u00e9t\u00e9 \\u20ac\\n\"}");
        found("{\"__md_trq__\":{\"__msg_rowid__\":5},\"result\":\"y\",\"result\":1}");
        // the compact form read in one pass, and its edges, which the walk then takes as before
        found("{\"__md_trq__\":{\"__msg_gen__\":-0,\"k_9\":" + "9".repeat(99) + ",\"__msg_rowid__\":3,\"__msg_rowid__\":4}}");
        found("{\"__md_trq__\":{\"__msg_rowid__\":5,\"result\":2}}}");
        found("{\"__md_trq__\":{\"__msg_rowid__\":5,\"result\":2}} ");
        found("{\"__md_trq__\":{\"__msg_rowid__\":5,\"é\":2}}");
        found("{\"__md_trq__\":{\"__msg_rowid__\":5},\"result\":2}");
        unsure("{\"__md_trq__\":{\"__msg_rowid__\":5,\"k\":" + "9".repeat(101) + "}}");
        unsure("{\"__md_trq__\":{\"__msg_rowid__\":5,\"k\":-}}");
        unsure("{\"__md_trq__\":{\"__msg_rowid__\":-05}}");
        unsure("{\"__md_trq__\":{\"__msg_rowid__\":5,}}");
        unsure("{\"__md_trq__\":{\"__msg_rowid__\":5\"result\":0}}");
        unsure("{\"__md_trq__\":{\"__msg_rowid__\":5}");
        unsure("{\"__md_trq__\":{}}");
    }

    @Test
    void leavesToJacksonWhatItCannotVouchFor() {
        String[] cases = {
            "", "   ", "not json", "[1,2]", "{}", "{\"id\":1}", "\uFEFF{\"__md_trq__\":{\"__msg_rowid__\":1}}",
            "{\"__md_trq__\":{\"__msg_rowid__\":1}",                          // truncated
            "{\"__msg_rowid__\":5,\"result\":0}",                              // at the top: the tree reads it
            "{\"__md_trq__\":{\"__msg_rowid__\":\"5\"}}",                      // a string: the tree parses it
            "{\"__md_trq__\":{\"__msg_rowid__\":5.5}}", "{\"__md_trq__\":{\"__msg_rowid__\":5e2}}",
            "{\"__md_trq__\":{\"__msg_rowid__\":true}}", "{\"__md_trq__\":{\"__msg_rowid__\":null}}",
            "{\"__md_trq__\":{\"__msg_rowid__\":0}}", "{\"__md_trq__\":{\"__msg_rowid__\":-3}}",
            "{\"__md_trq__\":{\"__msg_rowid__\":9999999999999999999}}",       // 19 digits
            "{\"__md_trq__\":{\"__msg_rowid__\":5,\"__msg_t__\":null}}", "{\"__md_trq__\":{\"__msg_rowid__\":5,\"__msg_gen__\":\"1\"}}",
            "{\"__md_trq__\":{\"__msg_rowid__\":5,\"result\":4294967296}}", "{\"__md_trq__\":{\"__msg_rowid__\":5,\"result\":1.5}}",
            "{\"__md_trq__\":{\"__msg_rowid__\":5},\"result\":\"0\"}",
            "{\"__md_trq__\":{\"__msg_rowid__\":5,\"result\":\"x\"},\"result\":1}",   // the metadata's counts
            "{\"__md_trq__\":{\"__msg_rowid__\":5},\"__md_trq__\":7}",         // the last is no object
            "{\"__md_trq__\":{\"\\u005f_msg_rowid__\":5}}",                  // a key spelt with escapes
            "{\"__md_trq__\":{\"__msg_rowid__\":5},\"\\u005f_md_trq__\":{\"__msg_rowid__\":6}}",
            "{\"__md_trq__\":{\"__msg_rowid__\":5},\"x\":tru}", "{\"__md_trq__\":{\"__msg_rowid__\":05}}",
            "{\"__md_trq__\":{\"__msg_rowid__\":5},}", "{\"__md_trq__\":{\"__msg_rowid__\":5},\"x\":\"\u0001\"}",
            "{\"__md_trq__\":{\"__msg_rowid__\":5},\"x\":\"\\q\"}", "{\"__md_trq__\":{\"__msg_rowid__\":5},\"x\":1.}",
            "{\"__md_trq__\":{\"__msg_rowid__\":5},\"x\":" + "[".repeat(100) + "]".repeat(100) + "}",
        };
        for (String c : cases) unsure(c);
        for (byte[] tail : new byte[][] {{(byte) 0x80}, {(byte) 0xc0, (byte) 0xaf}, {(byte) 0xed, (byte) 0xa0, (byte) 0x80},
                {(byte) 0xe2, (byte) 0x82}}) {
            byte[] head = "{\"__md_trq__\":{\"__msg_rowid__\":5},\"x\":\"".getBytes(StandardCharsets.US_ASCII);
            byte[] msg = Arrays.copyOf(head, head.length + tail.length + 2);
            System.arraycopy(tail, 0, msg, head.length, tail.length);
            msg[msg.length - 2] = '"';
            msg[msg.length - 1] = '}';
            assertEquals(UNSURE, same(msg), "invalid UTF-8");
        }
        byte[] big = new byte[AckScan.KEEP + 10];   // a large ack, then a small one: the scratch is not confused
        Arrays.fill(big, (byte) ' ');
        byte[] ack = "{\"__md_trq__\":{\"__msg_rowid__\":8}}".getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(ack, 0, big, 0, ack.length);
        same(big);
        found("{\"__md_trq__\":{\"__msg_rowid__\":9}}");
    }

    /** Random acks, and the same with bytes cut, dropped, doubled or changed: the scan never answers otherwise. */
    @Test
    void answersAsJacksonOnRandomAndBrokenAcks() {
        Random rnd = new Random(17);
        String[] atoms = {"1", "7", "-3", "0", "-0", "2.5", "1e9", "true", "false", "null", "\"s\"", "\"5\"", "\"\\n\"",
            "\"\u00e9\"", "[]", "{}", "[1,\"x\"]", "{\"q\":{\"r\":[null]}}", "4294967296", "-2147483649",
            "99999999999999999999", "123456789012345678", "1234567890", "\"\\u00e9\\t\"", "{\"k\":1,\"k\":[2]}", "-0.5E-7"};
        String[] keys = {"id", "__md_trq__", "result", "__msg_rowid__", "__msg_t__", "__msg_gen__", "k"};
        List<byte[]> cases = new ArrayList<>();
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
                        if (j > 0) b.append(rnd.nextBoolean() ? "," : ", ");
                        String mk = j == 0 && rnd.nextInt(3) > 0 ? "__msg_rowid__" : keys[rnd.nextInt(keys.length)];
                        b.append('"').append(mk).append("\":").append(atoms[rnd.nextInt(atoms.length)]);
                    }
                    b.append('}');
                } else {
                    b.append(atoms[rnd.nextInt(atoms.length)]);
                }
            }
            b.append('}');
            byte[] msg = b.toString().getBytes(StandardCharsets.UTF_8);
            cases.add(msg);
            byte[] broken = msg.clone();
            int at = rnd.nextInt(broken.length);
            switch (rnd.nextInt(4)) {
                case 0: broken = Arrays.copyOf(broken, at); break;
                case 1: broken[at] = (byte) NOISE.charAt(rnd.nextInt(NOISE.length())); break;
                case 2: broken[at] = (byte) rnd.nextInt(256); break;
                default:
                    byte[] d = new byte[broken.length + 1];
                    System.arraycopy(broken, 0, d, 0, at + 1);
                    System.arraycopy(broken, at, d, at + 1, broken.length - at);
                    broken = d;
            }
            cases.add(broken);
        }
        for (byte[] msg : cases) {
            if (same(msg) != UNSURE) found++;
        }
        int vouched = found;
        org.junit.jupiter.api.Assertions.assertTrue(vouched > 50, () -> "the scan vouched for " + vouched + " cases only");
    }
}
