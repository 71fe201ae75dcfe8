// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.BigIntegerNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.POJONode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.support.Gbuffers;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.Iterator;
import java.util.Map;
import java.util.function.LongFunction;

import static io.gatehouse.api.queue.TrQueue.MD_TRQ;
import static io.gatehouse.api.queue.TrQueue.MSG_GEN;
import static io.gatehouse.api.queue.TrQueue.MSG_ROWID;
import static io.gatehouse.api.queue.TrQueue.MSG_T;

/**
 * A record's JSON, both ways. An append stores the compact JSON of its kw, encoded into a reused byte array so the
 * append path allocates nothing per message, and its {@code tm} read from the kw. A read gives back the stored
 * object plus {@code __md_trq__}; an ack names a message through that same {@code __md_trq__}.
 */
final class RecordJson {
    private final Bytes out = new Bytes();

    /** The growing array the generator writes into. */
    private static final class Bytes extends OutputStream {
        byte[] buf = new byte[4096];
        int len;

        @Override
        public void write(int b) {
            if (len == buf.length) buf = Arrays.copyOf(buf, len * 2);
            buf[len++] = (byte) b;
        }

        @Override
        public void write(byte[] b, int off, int n) {
            if (len + n > buf.length) buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
            System.arraycopy(b, off, buf, len, n);
            len += n;
        }
    }

    // --- Append ---

    /**
     * Encodes {@code kw} as compact JSON into {@link #bytes()}; answers its length. A dict of the usual nodes
     * (objects, arrays, strings, integers, booleans, nulls) is written here, byte for byte as Jackson writes it,
     * without a generator and a serializer provider per record; any other (a double, a decimal, a binary or a
     * reference) is written by Jackson.
     */
    int encode(ObjectNode kw) throws IOException {
        out.len = 0;
        if (Compact.write(kw, out)) return out.len;
        out.len = 0;
        JsonNode n = hasRefs(kw) ? Kw.withoutRefs(kw) : kw;
        try (JsonGenerator g = Kw.MAPPER.getFactory().createGenerator(out)) {
            Kw.MAPPER.writeTree(g, n);
        }
        return out.len;
    }

    /** Jackson's compact output of the common nodes, and its string escapes (UTF8JsonGenerator's defaults). */
    static final class Compact {
        private static final byte[] HEX = "0123456789ABCDEF".getBytes(StandardCharsets.US_ASCII);
        private static final int MAX_DEPTH = 200;

        private Compact() {}

        /** Writes {@code n}; false (with part of it written) when a node is one Jackson must write. */
        static boolean write(JsonNode n, Bytes out) {
            return node(n, out, 0);
        }

        private static boolean node(JsonNode n, Bytes o, int depth) {
            if (depth > MAX_DEPTH) return false;
            switch (n.getNodeType()) {
                case OBJECT: {
                    o.write('{');
                    boolean first = true;
                    for (Iterator<Map.Entry<String, JsonNode>> it = n.fields(); it.hasNext(); ) {
                        Map.Entry<String, JsonNode> e = it.next();
                        if (!first) o.write(',');
                        first = false;
                        if (!string(e.getKey(), o)) return false;
                        o.write(':');
                        if (!node(e.getValue(), o, depth + 1)) return false;
                    }
                    o.write('}');
                    return true;
                }
                case ARRAY: {
                    o.write('[');
                    for (int i = 0; i < n.size(); i++) {
                        if (i > 0) o.write(',');
                        if (!node(n.get(i), o, depth + 1)) return false;
                    }
                    o.write(']');
                    return true;
                }
                case STRING:
                    return string(n.textValue(), o);
                case NUMBER:
                    if (n instanceof IntNode || n instanceof LongNode || n instanceof BigIntegerNode) {
                        ascii(n.asText(), o);
                        return true;
                    }
                    return false;
                case BOOLEAN:
                    ascii(n.booleanValue() ? "true" : "false", o);
                    return true;
                case NULL:
                    ascii("null", o);
                    return true;
                default:
                    return false;   // binary, POJO (a reference: left out by Jackson's path), missing
            }
        }

        private static void ascii(String s, Bytes o) {
            for (int i = 0; i < s.length(); i++) o.write(s.charAt(i));
        }

        /** A string as Jackson writes it; false for one with a surrogate (Jackson's own rules then). */
        private static boolean string(String s, Bytes o) {
            o.write('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c < 0x80) {
                    if (c >= 0x20 && c != '"' && c != '\\') {
                        o.write(c);
                        continue;
                    }
                    o.write('\\');
                    switch (c) {
                        case '"': o.write('"'); break;
                        case '\\': o.write('\\'); break;
                        case '\b': o.write('b'); break;
                        case '\t': o.write('t'); break;
                        case '\n': o.write('n'); break;
                        case '\f': o.write('f'); break;
                        case '\r': o.write('r'); break;
                        default:
                            o.write('u');
                            o.write('0');
                            o.write('0');
                            o.write(HEX[c >> 4]);
                            o.write(HEX[c & 0xf]);
                    }
                } else if (c < 0x800) {
                    o.write(0xc0 | (c >> 6));
                    o.write(0x80 | (c & 0x3f));
                } else if (Character.isSurrogate(c)) {
                    return false;   // Jackson's UTF-8 output escapes them (\\uD83D\\uDE00), and refuses a lone one
                } else {
                    o.write(0xe0 | (c >> 12));
                    o.write(0x80 | ((c >> 6) & 0x3f));
                    o.write(0x80 | (c & 0x3f));
                }
            }
            o.write('"');
            return true;
        }
    }

    /** The bytes of the last {@link #encode}; the array is reused by the next one. */
    byte[] bytes() {
        return out.buf;
    }

    private static boolean hasRefs(JsonNode n) {
        if (n instanceof POJONode) return true;
        if (n.isContainerNode()) {
            Iterator<JsonNode> it = n.elements();
            while (it.hasNext()) if (hasRefs(it.next())) return true;
        }
        return false;
    }

    /** The message time of {@code kw}: its {@code tkey} field, a number or a date; 0 when there is none. */
    static long tmOf(ObjectNode kw, String tkey, int sf) {
        if (tkey == null || tkey.isEmpty()) return 0;
        return tmOfNode(kw.get(tkey), sf);
    }

    /** The message time of a {@code tkey} field's node (null: none): a number, or a date; else 0. */
    static long tmOfNode(JsonNode n, int sf) {
        if (n == null) return 0;
        if (n.isIntegralNumber()) return n.asLong();
        if (!n.isTextual()) return 0;
        String s = n.asText().trim();
        long sec;
        try {
            sec = Instant.parse(s).getEpochSecond();
        } catch (RuntimeException e1) {
            try {
                sec = OffsetDateTime.parse(s).toEpochSecond();
            } catch (RuntimeException e2) {
                try {
                    sec = LocalDateTime.parse(s).toEpochSecond(ZoneOffset.UTC);
                } catch (RuntimeException e3) {
                    try {
                        sec = LocalDate.parse(s).atStartOfDay().toEpochSecond(ZoneOffset.UTC);
                    } catch (RuntimeException e4) {
                        return 0;
                    }
                }
            }
        }
        return (sf & TrQueue.SF_TM_MS) != 0 ? sec * 1000 : sec;
    }

    // --- Read ---

    /** The stored object of {@code m} plus its {@code __md_trq__}; null when {@code stored} is not a JSON object. */
    static ObjectNode parse(byte[] stored, QueueMessageImpl m) {
        ObjectNode kw = null;
        if (stored != null) {
            try {
                JsonNode n = Kw.MAPPER.readTree(stored);
                if (n instanceof ObjectNode) kw = (ObjectNode) n;
            } catch (IOException e) {
                kw = null;
            }
        }
        if (kw == null) return null;
        ObjectNode md = kw.putObject(MD_TRQ);
        md.put(MSG_ROWID, m.rowid);
        md.put(MSG_T, m.t);
        md.put(MSG_GEN, m.generation);
        return kw;
    }

    /** The top-level key {@link #parse} adds; a record that already holds it (anywhere) takes the parsing path. */
    private static final byte[] MD_KEY = ("\"" + MD_TRQ + "\"").getBytes(StandardCharsets.US_ASCII);

    /**
     * Writes what serialising {@link #parse} would write, without the two passes per message: the stored record
     * {@code a[from, to)} is the compact JSON of an object, written by {@link #encode} and checked by its CRC, so its
     * bytes are copied as they are, with {@code __md_trq__} appended inside the closing brace. False, with nothing
     * written, when the bytes cannot be copied so (not an object, or holding the key already).
     */
    static boolean write(byte[] a, int from, int to, QueueMessageImpl m, ByteBuf out) {
        return write(a, from, to, m, out, null);
    }

    /** {@link #write}, the time's digits through {@code recentT} (null: written each time). */
    static boolean write(byte[] a, int from, int to, QueueMessageImpl m, ByteBuf out, RecentDecimal recentT) {
        if (!copiesAsStored(a, from, to)) return false;
        out.writeBytes(a, from, to - from - 1);
        if (to - from > 2) out.writeByte(',');
        // Bytes and digits written straight: a string built per message cost more than the rest of this method.
        out.writeBytes(MD_ROWID_OPEN);
        Gbuffers.writeDecimal(out, m.rowid);
        out.writeBytes(MD_T_FIELD);
        if (recentT != null) recentT.write(out, m.t);
        else Gbuffers.writeDecimal(out, m.t);
        out.writeBytes(MD_GEN_FIELD);
        Gbuffers.writeDecimal(out, m.generation);
        out.writeByte('}');
        out.writeByte('}');
        return true;
    }

    private static final byte[] MD_ROWID_OPEN =
            ("\"" + MD_TRQ + "\":{\"" + MSG_ROWID + "\":").getBytes(StandardCharsets.US_ASCII);
    private static final byte[] MD_T_FIELD = (",\"" + MSG_T + "\":").getBytes(StandardCharsets.US_ASCII);
    private static final byte[] MD_GEN_FIELD = (",\"" + MSG_GEN + "\":").getBytes(StandardCharsets.US_ASCII);


    /**
     * Whether the stored record {@code p} is the message as {@link #parse} reads it less {@code __md_trq__}: an
     * object (written by {@link #encode}, checked by its CRC) that does not hold the key anywhere.
     */
    static boolean copiesAsStored(byte[] p) {
        return p != null && copiesAsStored(p, 0, p.length);
    }

    /** {@link #copiesAsStored} of the record {@code a[from, to)}. */
    static boolean copiesAsStored(byte[] a, int from, int to) {
        return to - from >= 2 && a[from] == '{' && a[to - 1] == '}' && indexOfMdKey(a, from, to) < 0;
    }

    /**
     * Where {@link #MD_KEY} starts in {@code a}, or -1. Horspool's skip over the record: every message sent is
     * searched once, and the byte-by-byte search was a fortieth of a Kafka edge's core loop.
     */
    static int indexOfMdKey(byte[] a) {
        return indexOfMdKey(a, 0, a.length);
    }

    /** {@link #indexOfMdKey} in {@code a[from, to)}: an index into {@code a}, or -1. */
    static int indexOfMdKey(byte[] a, int from, int to) {
        byte[] key = MD_KEY;
        int last = key.length - 1;
        for (int i = from; i <= to - key.length; i += MD_KEY_SKIP[a[i + last] & 0xff]) {
            int j = last;
            while (j >= 0 && a[i + j] == key[j]) j--;
            if (j < 0) return i;
        }
        return -1;
    }

    /** How far {@link #indexOfMdKey} moves when the byte under the key's last one is {@code b}. */
    private static final int[] MD_KEY_SKIP = new int[256];

    static {
        java.util.Arrays.fill(MD_KEY_SKIP, MD_KEY.length);
        for (int j = 0; j < MD_KEY.length - 1; j++) MD_KEY_SKIP[MD_KEY[j] & 0xff] = MD_KEY.length - 1 - j;
    }

    /** {@link TrQueue#msgMetadata}: the message's fields, and the record's from its segment {@code s} when known. */
    static ObjectNode metadata(QueueMessageImpl m, Topic tp, Segment s) {
        ObjectNode md = Kw.create();
        md.put("rowid", m.rowid);
        md.put("generation", m.generation);
        md.put("t", m.t);
        md.put("tm", m.tm);
        if (s != null) {
            int off = s.offset(m.rowid);
            md.put("user_flag", tp.flag(s, m.rowid, off));
            md.put("system_flag", s.sysFlag(off));
            md.put("segment", s.path.getFileName().toString());
            md.put("offset", off);
            md.put("size", s.frameLen(off) - Segment.REC_HEADER);
        }
        return md;
    }

    // --- Ack ---

    /**
     * {@link TrQueue#matchAck}: the listed message ({@code listed} answers it by rowid) that {@code ack} names in
     * {@code generation}, or null.
     */
    static QueueMessage matchAck(ObjectNode ack, long generation, LongFunction<QueueMessage> listed) {
        if (ack == null) return null;
        ObjectNode md = TrQueue.getMetadata(ack);
        JsonNode src = md != null ? md : ack;
        long rowid = src.path(MSG_ROWID).asLong(0);
        if (rowid <= 0) return null;
        JsonNode g = src.get(MSG_GEN);
        if (g != null && g.asLong() != generation) return null;
        QueueMessage m = listed.apply(rowid);
        if (m == null) return null;
        JsonNode t = src.get(MSG_T);
        if (t != null && t.asLong() != m.t()) return null;
        return m;
    }
}
