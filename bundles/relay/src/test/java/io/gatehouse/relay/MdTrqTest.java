// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.relay;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.support.Gbuffers;
import io.gatehouse.support.JsonScan;
import io.gatehouse.support.RecordScan;
import io.gatehouse.testkit.RecordFields;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The scan answers what parsing the whole message answered, for every input: the same ack bytes (or none). Each
 * case is checked against the reference, Jackson's tree: {@code Kw.parse(buf).get("__md_trq__")}, {@code result}
 * put, written by {@code Kw.writeJson}.
 */
class MdTrqTest {
    private static final String NOISE = "{}[]\",:\\ 0e-.tx\u0080";
    private final MdTrq scan = new MdTrq();

    /** The ack the relay wrote before the scan: null when the message had no metadata to ack. */
    private static String reference(byte[] msg, int result) {
        ObjectNode md;
        try {
            JsonNode m = Kw.parse(Unpooled.wrappedBuffer(msg)).get(Kw.MD_TRQ);
            if (!(m instanceof ObjectNode)) return null;
            md = (ObjectNode) m;
        } catch (IOException | RuntimeException notJson) {
            return null;
        }
        ObjectNode ack = Kw.create();
        ack.set(Kw.MD_TRQ, md.put(Kw.RESULT, result));
        ByteBuf out = Unpooled.buffer();
        Kw.writeJson(ack, out);
        return out.toString(StandardCharsets.UTF_8);
    }

    /** The ack the relay writes now, by the scan's answer, as Relay.forwardRaw takes it. */
    private String scanned(byte[] msg, int result) {
        ByteBuf in = PooledByteBufAllocator.DEFAULT.directBuffer(msg.length + 3);
        in.writeBytes(new byte[] {9, 9, 9});
        in.readerIndex(3);
        in.writeBytes(msg);
        try {
            int found = scan.scan(in);
            ObjectNode md;
            if (found == MdTrq.FOUND && scan.simple()) {
                // The durable path takes the ack's start as an array, after building the message's dict: the
                // same bytes as the ack of a plain output.
                scan.tree();
                ByteBuf later = MdTrq.endAck(MdTrq.startAck(scan.ackStart()), result);
                // by token: the array with room in front and behind, ended in place
                ByteBuf inPlace = MdTrq.endAckInPlace(scan.ackStartWithRoom(), result);
                ByteBuf ack = MdTrq.endAck(scan.startAck(), result);
                try {
                    String now = ack.toString(StandardCharsets.UTF_8);
                    assertEquals(now, later.toString(StandardCharsets.UTF_8), "the ack kept for EV_ON_DURABLE");
                    assertEquals(now, inPlace.toString(StandardCharsets.UTF_8), "the ack kept by token");
                    assertTrue(Gbuffers.canPrepend(inPlace, 4), "room for the frame header in front");
                    return now;
                } finally {
                    ack.release();
                    later.release();
                    inPlace.release();
                }
            } else if (found == MdTrq.FOUND) {
                try {
                    md = scan.parsed();
                } catch (IOException e) {
                    return null;
                }
            } else if (found == MdTrq.NONE) {
                return null;
            } else {
                return reference(msg, result);   // UNSURE: the relay parses the message, as before
            }
            ByteBuf fast = MdTrq.writeAckStart(md);
            if (fast != null) {
                try {
                    return MdTrq.endAck(fast, result).toString(StandardCharsets.UTF_8);
                } finally {
                    fast.release();
                }
            }
            ObjectNode ack = Kw.create();
            ack.set(Kw.MD_TRQ, md.put(Kw.RESULT, result));
            ByteBuf out = Unpooled.buffer();
            Kw.writeJson(ack, out);
            return out.toString(StandardCharsets.UTF_8);
        } finally {
            in.release();
        }
    }

    private void same(String msg) {
        same(msg.getBytes(StandardCharsets.UTF_8));
    }

    private void same(byte[] msg) {
        for (int result : new int[] {0, -1}) {
            assertEquals(reference(msg, result), scanned(msg, result), () -> new String(msg, StandardCharsets.UTF_8));
        }
        sameScanWithRecord(msg);
        sameTree(msg);
    }

    /**
     * The scan that takes the record in its walk ({@link MdTrq#scanRecord}) answers what the scan alone answers and
     * finds the same metadata, for every input, broken ones included.
     */
    private void sameScanWithRecord(byte[] msg) {
        String text = new String(msg, StandardCharsets.UTF_8);
        int alone = scan.scan(Unpooled.wrappedBuffer(msg));
        String md = alone == MdTrq.FOUND ? scan.text() : null;
        boolean simple = alone == MdTrq.FOUND && scan.simple();
        int withRecord = scan.scanRecord(Unpooled.wrappedBuffer(msg));
        assertEquals(alone, withRecord, text);
        if (withRecord == MdTrq.FOUND) {
            assertEquals(md, scan.text(), text);
            assertEquals(simple, scan.simple(), text);
        }
        if (withRecord == MdTrq.UNSURE) assertNull(scan.record(), text);
    }

    /** What the scan vouches for, Jackson takes, and the scan's dict is Jackson's, node class by node class. */
    private void sameTree(byte[] msg) {
        if (scan.scan(Unpooled.wrappedBuffer(msg)) == MdTrq.UNSURE) return;
        ObjectNode mine = scan.tree();
        ObjectNode jackson;
        try {
            jackson = Kw.parse(Unpooled.wrappedBuffer(msg));
        } catch (IOException e) {
            throw new AssertionError("the scan took what Jackson refuses: " + new String(msg, StandardCharsets.UTF_8), e);
        }
        assertEquals(jackson, mine, () -> new String(msg, StandardCharsets.UTF_8));
        assertEquals(classes(jackson), classes(mine), () -> new String(msg, StandardCharsets.UTF_8));
        sameRecord(msg);
    }

    /**
     * When the scan gives the record ({@link MdTrq#record}), it is byte for byte what C_QIOGATE stores for the dict
     * the relay built before (the tree without {@code __temp__} and {@code __md_trq__}, with_metadata false or true,
     * written compact by Jackson, which RecordJsonEncodeTest shows is trqueue's record), an older gate parsing it
     * gets that dict, and the metadata dict kept for the ack is the tree's. True when it gave one.
     */
    private boolean sameRecord(byte[] msg) {
        int found = scan.scanRecord(Unpooled.wrappedBuffer(msg));
        if (found == MdTrq.UNSURE) return false;
        byte[] rec = scan.record();
        if (rec == null) return false;
        String text = new String(msg, StandardCharsets.UTF_8);
        try {
            ObjectNode dict = Kw.parse(Unpooled.wrappedBuffer(msg));
            JsonNode md = dict.remove(Kw.MD_TRQ);
            dict.remove(Kw.TEMP);
            assertArrayEquals(Kw.MAPPER.writeValueAsBytes(Kw.withoutMetadata(dict)), rec, text);
            assertArrayEquals(Kw.MAPPER.writeValueAsBytes(dict), rec, text);
            assertEquals(dict, Kw.parse(Unpooled.wrappedBuffer(rec)), text);
            assertArrayEquals(RecordFields.of(rec), scan.copiedFields(), text);
            if (found == MdTrq.FOUND) {
                assertEquals(md, scan.mdTree(), text);
                assertEquals(classes(md), classes(scan.mdTree()), text);
            } else {
                assertTrue(md == null || !md.isObject(), text);
            }
        } catch (IOException e) {
            throw new AssertionError(text, e);
        }
        return true;
    }

    /** The record of a message the scan vouches for, or null ({@link MdTrq#record}). */
    private String record(String msg) {
        if (scan.scanRecord(Unpooled.copiedBuffer(msg, StandardCharsets.UTF_8)) == MdTrq.UNSURE) return "UNSURE";
        byte[] rec = scan.record();
        return rec == null ? null : new String(rec, StandardCharsets.UTF_8);
    }

    @Test
    void givesTheProducersBytesAsTheRecordWhenTheyAreWhatJacksonWrites() {
        assertEquals("{\"id\":\"m1\",\"n\":5}",
                record("{\"id\":\"m1\",\"__md_trq__\":{\"__msg_rowid__\":5,\"__msg_t__\":1},\"n\":5}"));
        assertEquals("{\"id\":\"m1\"}", record(" {\"__md_trq__\" : {\"a\":1} ,\r\n \"id\" : \"m1\" } "));
        assertEquals("{}", record("{\"__md_trq__\":{\"a\":1}}"));
        assertEquals("{}", record("{ }"));
        assertEquals("{\"x\":\"__md_trq__\"}", record("{\"x\":\"__md_trq__\",\"__md_trq__\":7}"));
        assertEquals("{\"a\":[1,{\"b\":[]},{},\"q\\\"\\\\\\b\\t\\n\\f\\r\\u0001\\u001F\"],\"___x\":null,\"__\":true}",
                record("{\"a\": [1, {\"b\": [ ]}, { }, \"q\\\"\\\\\\b\\t\\n\\f\\r\\u0001\\u001F\"], \"___x\": null, \"__\": true}"));
        assertEquals("{\"u\":\"\u00e9t\u00e9 \u20ac\u007f\",\"big\":-123456789012345678901234567890}",
                record("{\"u\":\"\u00e9t\u00e9 \u20ac\u007f\",\"big\":-123456789012345678901234567890}"));
        // not what Jackson writes for the dict: the old way (the dict)
        String[] old = {
            "{\"s\":\"a\\/b\"}", "{\"s\":\"\\u0041\"}", "{\"s\":\"\\u001f\"}", "{\"s\":\"\\u000A\"}",
            "{\"s\":\"\\u00e9\"}", "{\"s\":\"\uD83D\uDE00\"}", "{\"f\":1.5}", "{\"f\":1e3}", "{\"z\":-0}",
            "{\"k\":1,\"k\":2}", "{\"o\":{\"k\":1,\"k\":2}}", "{\"__md_trq__\":{\"a\":1},\"__md_trq__\":{\"a\":2}}",
            "{\"__temp__\":{}}", "{\"__x\":1}", "{\"o\":{\"__md_trq__\":{}}}", "{\"a\":[{\"__y\":1}]}",
            "{\"o\":{\"\\u0069d\":1}}",
        };
        for (String c : old) {
            assertNull(record(c), c);
            same(c);
        }
        StringBuilder wide = new StringBuilder("{");
        for (int i = 0; i < 65; i++) wide.append(i == 0 ? "" : ",").append("\"k").append(i).append("\":").append(i);
        assertNull(record(wide.append('}').toString()), "more keys than the duplicate check holds");
        StringBuilder ok = new StringBuilder("{");
        for (int i = 0; i < 64; i++) ok.append(i == 0 ? "" : ",").append("\"k").append(i).append("\":").append(i);
        assertEquals(ok.append('}').toString(), record(ok.toString()));
    }

    /**
     * Broken messages larger than the record's scratch array: the walk that copies them stops at the break with
     * nothing written past what it read (the scratch is the message's size, not more), and answers as the scan
     * alone; nesting past the scan's depth is not vouched for by either.
     */
    @Test
    void aBrokenOrTooDeepMessageIsNotVouchedForByTheWalkThatCopies() {
        for (int size : new int[] {1100, 1500, 4000}) {
            StringBuilder b = new StringBuilder("{\"k\":[");
            for (int i = 0; b.length() < size; i++) b.append(i == 0 ? "" : ",").append(i % 10);
            byte[] open = b.toString().getBytes(StandardCharsets.UTF_8);
            assertEquals(MdTrq.UNSURE, scan.scanRecord(Unpooled.wrappedBuffer(open)), "unterminated, " + size);
            assertNull(scan.record());
            byte[] closed = b.append("]}").toString().getBytes(StandardCharsets.UTF_8);
            assertEquals(MdTrq.NONE, scan.scanRecord(Unpooled.wrappedBuffer(closed)));
            assertArrayEquals(closed, scan.record());
            same(open);
            same(closed);
        }
        String deep = "{\"a\":" + "[".repeat(JsonScan.MAX_DEPTH) + "]".repeat(JsonScan.MAX_DEPTH) + "}";
        assertEquals(MdTrq.UNSURE, scan.scanRecord(Unpooled.copiedBuffer(deep, StandardCharsets.UTF_8)));
        String justDeepEnough = "{\"a\":" + "[".repeat(JsonScan.MAX_DEPTH - 1) + "]".repeat(JsonScan.MAX_DEPTH - 1) + "}";
        assertEquals(MdTrq.NONE, scan.scanRecord(Unpooled.copiedBuffer(justDeepEnough, StandardCharsets.UTF_8)));
        assertEquals(justDeepEnough, new String(scan.record(), StandardCharsets.UTF_8));
        same(deep);
        same(justDeepEnough);
    }

    /**
     * Random messages in and out of Jackson's form (whitespace, escapes of every kind, numbers, UTF-8 of every
     * length, keys twice, metadata keys, nesting), and the same with bytes cut, changed or doubled: every record the
     * scan gives is the old path's, byte for byte, and many messages get one.
     */
    @Test
    void givesTheOldPathsRecordOnRandomAndBrokenMessages() {
        Random rnd = new Random(23);
        String[] atoms = {"1", "-3", "0", "-0", "2.5", "1e9", "true", "false", "null", "\"s\"", "\"a b\"",
            "\"\\n\\t\\\"\\\\\"", "\"\\/\"", "\"\\u0041\"", "\"\\u001F\\u0000\"", "\"\\u001f\"",
            "\"\u00e9\u20ac\"", "\"\uD83D\uDE00\"", "[]", "{}", "[1,\"x\",[{}]]", "4294967296", "-2147483649",
            "99999999999999999999", "-99999999999999999999999"};
        String[] keys = {"id", "pad", "__md_trq__", "result", "__x", "___y", "__", "k", "\u00e9", "a\\\"b"};
        String[] ws = {"", "", "", " ", "\n", " \t\r\n "};
        int records = 0;
        int vouched = 0;
        for (int c = 0; c < 4000; c++) {
            String m = randomObject(rnd, atoms, keys, ws, 0);
            byte[] msg = m.getBytes(StandardCharsets.UTF_8);
            same(msg);
            if (sameRecord(msg)) records++;
            if (sameVouch(msg)) vouched++;
            byte[] broken = msg.clone();
            int at = rnd.nextInt(broken.length);
            switch (rnd.nextInt(4)) {
                case 0: broken = java.util.Arrays.copyOf(broken, at); break;
                case 1: broken[at] = (byte) NOISE.charAt(rnd.nextInt(NOISE.length())); break;
                case 2: broken[at] = (byte) rnd.nextInt(256); break;
                default:
                    byte[] d = new byte[broken.length + 1];
                    System.arraycopy(broken, 0, d, 0, at + 1);
                    System.arraycopy(broken, at, d, at + 1, broken.length - at);
                    broken = d;
            }
            same(broken);
        }
        assertTrue(records > 800, "records given: " + records);
        assertTrue(vouched > 150, "records vouched for as they stand: " + vouched);
    }

    private final RecordScan producersCheck = new RecordScan(64);

    /**
     * A producer's check of its input ({@link RecordScan}, C_PROT_HTTP_SR's) vouches for bytes as a record exactly
     * when they are what Jackson writes and hold no metadata key, with the members' index C_RELAY's own walk takes;
     * and it vouches for every message whose record, by C_RELAY's walk, is its bytes as they stand. True when it
     * vouched.
     */
    private boolean sameVouch(byte[] msg) {
        String text = new String(msg, StandardCharsets.UTF_8);
        producersCheck.load(msg, 0, msg.length);
        int start = producersCheck.ws(0);
        int end = start < msg.length && msg[start] == '{' ? producersCheck.recordObject(start) : -1;
        int[] fields = end < 0 ? null : producersCheck.recordFields();
        byte[] asTheyStand = end < 0 ? null : java.util.Arrays.copyOfRange(msg, start, end);
        int found = scan.scanRecord(Unpooled.wrappedBuffer(msg));
        byte[] relays = found == MdTrq.UNSURE ? null : scan.record();
        if (relays != null && found == MdTrq.NONE && java.util.Arrays.equals(relays, msg)) {
            assertNotNull(fields, "C_RELAY stores these bytes as they stand: " + text);
        }
        if (fields == null) return false;
        try {
            assertArrayEquals(Kw.MAPPER.writeValueAsBytes(Kw.parse(Unpooled.wrappedBuffer(asTheyStand))), asTheyStand, text);
        } catch (IOException e) {
            throw new AssertionError("vouched for what Jackson refuses: " + text, e);
        }
        assertEquals(null, metadataKeyIn(asTheyStand), text);
        assertArrayEquals(RecordFields.of(asTheyStand), fields, text);
        return true;
    }

    /** The first {@code __x} key at any depth of the object in {@code json}, or null. */
    private static String metadataKeyIn(byte[] json) {
        try {
            return metadataKeyIn(Kw.MAPPER.readTree(json));
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    private static String metadataKeyIn(JsonNode n) {
        if (n.isObject()) {
            for (java.util.Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
                String k = it.next();
                if (Kw.isMetadataKey(k)) return k;
                String inner = metadataKeyIn(n.get(k));
                if (inner != null) return inner;
            }
        } else if (n.isArray()) {
            for (JsonNode e : n) {
                String inner = metadataKeyIn(e);
                if (inner != null) return inner;
            }
        }
        return null;
    }

    private static String randomObject(Random rnd, String[] atoms, String[] keys, String[] ws, int depth) {
        StringBuilder b = new StringBuilder("{").append(ws[rnd.nextInt(ws.length)]);
        int fields = rnd.nextInt(5);
        for (int f = 0; f < fields; f++) {
            if (f > 0) b.append(ws[rnd.nextInt(ws.length)]).append(',').append(ws[rnd.nextInt(ws.length)]);
            String k = depth == 0 && rnd.nextInt(3) == 0 ? "__md_trq__" : keys[rnd.nextInt(keys.length)];
            if (rnd.nextInt(3) > 0 && !k.equals("__md_trq__")) k = k + f;   // mostly distinct
            b.append('"').append(k).append('"').append(ws[rnd.nextInt(ws.length)]).append(':')
                    .append(ws[rnd.nextInt(ws.length)]);
            if (k.equals("__md_trq__")) {
                // spaced or compact, one key or two
                b.append('{').append(ws[rnd.nextInt(ws.length)]).append("\"__msg_rowid__\"")
                        .append(ws[rnd.nextInt(ws.length)]).append(':').append(ws[rnd.nextInt(ws.length)])
                        .append(rnd.nextInt(1000));
                if (rnd.nextBoolean()) {
                    b.append(ws[rnd.nextInt(ws.length)]).append(',').append(ws[rnd.nextInt(ws.length)])
                            .append("\"t\":\"a b\"");
                }
                b.append(ws[rnd.nextInt(ws.length)]).append('}');
            } else if (depth < 3 && rnd.nextInt(5) == 0) {
                b.append(randomObject(rnd, atoms, keys, ws, depth + 1));
            } else if (depth < 3 && rnd.nextInt(8) == 0) {
                b.append('[').append(randomObject(rnd, atoms, keys, ws, depth + 1)).append(',')
                        .append(atoms[rnd.nextInt(atoms.length)]).append(']');
            } else {
                b.append(atoms[rnd.nextInt(atoms.length)]);
            }
        }
        return b.append(ws[rnd.nextInt(ws.length)]).append('}').toString();
    }

    private static String classes(JsonNode n) {
        StringBuilder b = new StringBuilder(n.getClass().getSimpleName());
        if (n.isContainerNode()) {
            b.append('(');
            n.fields().forEachRemaining(e -> b.append(e.getKey()).append('=').append(classes(e.getValue())).append(' '));
            if (n.isArray()) n.elements().forEachRemaining(e -> b.append(classes(e)).append(' '));
            b.append(')');
        }
        return b.toString();
    }

    @Test
    void buildsTheDictJacksonBuilds() {
        String[] cases = {
            "{\"id\":\"m1-5\",\"n\":[1,-2,2147483647,2147483648,-2147483648,-2147483649,9223372036854775807,"
                + "9223372036854775808,-9223372036854775808,-9223372036854775809,123456789012345678901234567890,-0,0]}",
            "{\"f\":[1.5,-0.0,1e3,1E-3,2.5e+10,1e400,0.1,123456789.123456789]}",
            "{\"s\":[\"\",\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\",\"\\u00e9\\u20AC\\ud83d\\ude00\\ud800\",\"\u00e9t\u00e9 \uD83D\uDE00\"]}",
            "{\"a\":1,\"b\":{\"a\":[],\"c\":{}},\"a\":{\"x\":null,\"y\":true,\"z\":false}}",
            " {\"o\":{\"\\u0041\" : [ [ ] , { } , \"x\" ] } } ",   // (an escaped key at the top goes to Jackson)
            "{\"__md_trq__\":{\"__msg_rowid__\":5},\"id\":\"x\"}",
        };
        for (String c : cases) {
            byte[] m = c.getBytes(StandardCharsets.UTF_8);
            assertTrue(scan.scan(Unpooled.wrappedBuffer(m)) != MdTrq.UNSURE, c);
            sameTree(m);
        }
    }

    private int status(String msg) {
        return scan.scan(Unpooled.copiedBuffer(msg, StandardCharsets.UTF_8));
    }

    @Test
    void endsAnAckKeptByTokenInPlaceForAnyResult() {
        String m = "{\"id\": \"a\", \"__md_trq__\" : { \"__msg_rowid__\" : 7 , \"k\" : \"v w\" } }";
        for (int result : new int[] {0, 9, -1, -9, 10, -12, 1234, Integer.MIN_VALUE}) {
            assertEquals(MdTrq.FOUND, status(m));
            ByteBuf ack = MdTrq.endAckInPlace(scan.ackStartWithRoom(), result);
            try {
                assertEquals("{\"__md_trq__\":{\"__msg_rowid__\":7,\"k\":\"v w\",\"result\":" + result + "}}",
                        ack.toString(StandardCharsets.UTF_8));
            } finally {
                ack.release();
            }
        }
    }

    @Test
    void echoesTheMetadataOfAProducersMessageAsJacksonWritesIt() {
        String m = "{\"id\":\"m1-5\",\"pad\":\"xx\",\"__md_trq__\":{\"__msg_rowid__\":5,\"__msg_t__\":1}}";
        assertEquals(MdTrq.FOUND, status(m));
        assertTrue(scan.simple());
        assertEquals("{\"__md_trq__\":{\"__msg_rowid__\":5,\"__msg_t__\":1,\"result\":0}}", scanned(m.getBytes(), 0));
        same(m);
        same("{\"id\": \"a\", \"__md_trq__\" : { \"__msg_rowid__\" : 7 , \"k\" : \"v w\" , \"b\": true, \"z\": null } }");
        same("{\"__md_trq__\":{}}");
        same("{\"__md_trq__\":{ }, \"x\": [1, 2, {\"__md_trq__\": 3}]}");
        same("\r\n {\"__md_trq__\":{\"a\":-12,\"big\":123456789012345678901234567890}}  trailing bytes ignored");
        // DEL is ASCII that Jackson writes as it is: echoed; an escape or a byte past ASCII is not
        String del = "{\"__md_trq__\":{\"k\u007f\":\"v\u007f\"}}";
        assertEquals(MdTrq.FOUND, status(del));
        assertTrue(scan.simple());
        same(del);
        for (String notSimple : new String[] {"{\"__md_trq__\":{\"k\":\"\u00e9\"}}", "{\"__md_trq__\":{\"\u00e9\":1}}",
            "{\"__md_trq__\":{\"k\":\"a\\\"b\"}}", "{\"__md_trq__\":{\"k\":\"\\u0041\"}}"}) {
            assertEquals(MdTrq.FOUND, status(notSimple), notSimple);
            assertFalse(scan.simple(), notSimple);
            same(notSimple);
        }
    }

    @Test
    void takesWhatJacksonTakesWhenTheMetadataIsNotSimple() {
        String[] cases = {
            "{\"__md_trq__\":{\"result\":5,\"a\":1}}",              // result already there: Jackson puts in place
            "{\"__md_trq__\":{\"a\":1,\"a\":2}}",                   // a key twice: the last value, first place
            "{\"__md_trq__\":{\"a\":1.50,\"b\":1e3,\"c\":-0}}",      // numbers Jackson writes its own way
            "{\"__md_trq__\":{\"s\":\"tab\\there\\u00e9\\/\"}}",     // escapes
            "{\"__md_trq__\":{\"s\":\"\u00e9t\u00e9 \u20ac \uD83D\uDE00\"}}",   // non-ASCII
            "{\"__md_trq__\":{\"n\":{\"x\":[1,{\"y\":2}]}}}",        // nested
            "{\"__md_trq__\":{\"a\":1},\"__md_trq__\":{\"a\":2}}",   // twice at the top: the last
            "{\"__md_trq__\":{\"a\":1},\"__md_trq__\":7}",           // the last is no object: no ack
            "{\"__md_trq__\":[1]}",
            "{\"__md_trq__\":\"str\"}",
            "{\"id\":1}",
            "{}",
        };
        for (String c : cases) same(c);
        assertEquals(MdTrq.NONE, status("{\"id\":1,\"x\":{\"__md_trq__\":{\"a\":1}}}"), "only a top-level key counts");
        assertEquals(MdTrq.NONE, status("{\"__md_trq__\":{\"a\":1},\"__md_trq__\":7}"));
    }

    @Test
    void leavesToJacksonWhatItCannotVouchFor() {
        String[] bad = {
            "", "   ", "not json", "[1,2]", "\uFEFF{\"__md_trq__\":{\"a\":1}}", "{\"__md_trq__\":{\"a\":1}",
            "{\"__md_trq__\":{\"a\":tru}}", "{\"__md_trq__\":{\"a\":01}}", "{\"a\":1,}", "{\"a\" 1}", "{a:1}",
            "{\"__md_trq__\":{\"a\":1},\"x\":\"\u0001\"}", "{\"__md_trq__\":{\"a\":1},\"x\":\"\\q\"}",
            "{\"__md_trq__\":{\"a\":1},\"x\":1.}", "{\"__md_trq__\":{\"a\":1},\"x\":-}", "{\"x\":\"\\u12\"}",
            "{\"__md_trq__\":{\"a\":1},\"x\":" + "[".repeat(100) + "]".repeat(100) + "}",
        };
        for (String c : bad) {
            same(c);
        }
        assertEquals(MdTrq.UNSURE, status("{\"__md_trq__\":{\"a\":tru}}"));
        // a top-level key spelt with escapes is __md_trq__ to Jackson (the last one wins): left to it
        String escaped = "{\"__md_trq__\":{\"a\":1},\"\\u005f_md_trq__\":{\"a\":2}}";
        assertEquals(MdTrq.UNSURE, status(escaped));
        same(escaped);
        same("{\"\\u005f_md_trq__\":{\"a\":2}}");
        assertEquals(MdTrq.UNSURE, status("{\"x\":" + "[".repeat(100) + "]".repeat(100) + "}"), "deeper than it goes");
        // invalid UTF-8: a lone continuation byte, an overlong form, a surrogate, a truncated sequence
        for (byte[] tail : new byte[][] {{(byte) 0x80}, {(byte) 0xc0, (byte) 0xaf}, {(byte) 0xed, (byte) 0xa0, (byte) 0x80},
                {(byte) 0xe2, (byte) 0x82}}) {
            byte[] head = "{\"__md_trq__\":{\"a\":1},\"x\":\"".getBytes(StandardCharsets.US_ASCII);
            byte[] msg = new byte[head.length + tail.length + 2];
            System.arraycopy(head, 0, msg, 0, head.length);
            System.arraycopy(tail, 0, msg, head.length, tail.length);
            msg[msg.length - 2] = '"';
            msg[msg.length - 1] = '}';
            assertEquals(MdTrq.UNSURE, scan.scan(Unpooled.wrappedBuffer(msg)));
            same(msg);
        }
    }

    @Test
    void aParsedDictIsWrittenAsJacksonWritesIt() throws IOException {
        String[] mds = {"{\"__msg_rowid__\":5,\"__msg_t__\":1}", "{}", "{\"k\":\"v\",\"b\":false,\"n\":null,\"l\":-9}",
            "{\"big\":123456789012345678901234567890}"};
        for (String md : mds) {
            ObjectNode d = Kw.parse(md);
            ByteBuf fast = MdTrq.writeAckStart(d);
            String got = MdTrq.endAck(fast, -1).toString(StandardCharsets.UTF_8);
            fast.release();
            ObjectNode ack = Kw.create();
            ack.set(Kw.MD_TRQ, d.deepCopy().put(Kw.RESULT, -1));
            assertEquals(Kw.toJson(ack), got);
        }
        for (String md : new String[] {"{\"result\":1}", "{\"f\":1.5}", "{\"s\":\"a\\\"b\"}", "{\"s\":\"\u00e9\"}",
                "{\"o\":{}}", "{\"a\":[]}"}) {
            assertNull(MdTrq.writeAckStart(Kw.parse(md)), md);
        }
    }

    /** Random messages, and the same with bytes cut, dropped, doubled or changed: the scan never answers otherwise. */
    @Test
    void answersAsJacksonOnRandomAndBrokenMessages() {
        Random rnd = new Random(17);
        String[] atoms = {"1", "-3", "0", "2.5", "1e9", "true", "false", "null", "\"s\"", "\"a b\"", "\"\\n\"",
            "\"\u00e9\"", "[]", "{}", "[1,\"x\"]", "{\"q\":{\"r\":[null]}}", "4294967296", "-2147483649",
            "99999999999999999999", "\"\\u00e9\\t\"", "{\"k\":1,\"k\":[2]}", "-0.5E-7"};
        String[] keys = {"id", "pad", "__md_trq__", "result", "__msg_rowid__", "__msg_t__", "k"};
        List<byte[]> cases = new ArrayList<>();
        for (int c = 0; c < 2000; c++) {
            StringBuilder b = new StringBuilder("{");
            int fields = rnd.nextInt(5);
            for (int f = 0; f < fields; f++) {
                if (f > 0) b.append(rnd.nextBoolean() ? "," : " , ");
                String k = keys[rnd.nextInt(keys.length)];
                b.append('"').append(k).append("\":");
                if (k.equals("__md_trq__") && rnd.nextInt(4) > 0) {
                    b.append('{');
                    int m = rnd.nextInt(4);
                    for (int j = 0; j < m; j++) {
                        if (j > 0) b.append(rnd.nextBoolean() ? "," : ", ");
                        b.append('"').append(keys[rnd.nextInt(keys.length)]).append("\":")
                                .append(atoms[rnd.nextInt(atoms.length)]);
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
                case 0: broken = java.util.Arrays.copyOf(broken, at); break;
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
        for (byte[] msg : cases) same(msg);
    }
}
