// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.support.Gbuffers;
import io.gatehouse.support.JsonScan;
import io.gatehouse.support.MdAckScan;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * The message a PUBLISH becomes: JSON, as every gate and queue above expects.
 *
 * <ul>
 *   <li>A payload that is one JSON object goes up as it is, with the topic added under the topic key
 *       ({@code mqtt_topic} by default) and, for QoS 1 and 2, the {@code __md_trq__} the ack will echo. The keys
 *       are added at the end of the object, so they win over keys of the same name in the payload (JSON readers
 *       keep the last of duplicate keys): a device cannot forge the topic nor the ack data.</li>
 *   <li>Any other payload (not JSON, a JSON array or scalar, empty, not UTF-8) is wrapped:
 *       {@code {"mqtt_topic": T, "mqtt_payload_base64": B}}, never dropped.</li>
 * </ul>
 *
 * The payload bytes are checked with a streaming parse (no tree is built) and copied once, spliced with the
 * added keys, into the buffer that goes up.
 */
final class IngestJson {
    /** Messages up to this size are built on the heap (see {@link #build}); larger ones in the allocator's buffers. */
    static final int HEAP_MAX = 64 * 1024;
    /** A connection keeps the payload walk's scratch array only up to this size (see {@link #build}). */
    static final int KEEP_SCRATCH = 4096;

    private static final JsonFactory JSON = Kw.MAPPER.getFactory();
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] MD_OPEN = ascii(",\"" + Kw.MD_TRQ + "\":{\"__msg_rowid__\":");
    private static final byte[] MD_T = ascii(",\"__msg_t__\":");
    private static final byte[] MD_CONN = ascii(",\"mqtt_conn\":");
    private static final byte[] MD_PACKET_ID = ascii(",\"mqtt_packet_id\":");
    private static final byte[] MD_QOS = ascii(",\"mqtt_qos\":");
    private static final byte[] WILL = ascii(",\"mqtt_will\":true");

    /** The payload's walk: one per gobj, on its core loop. */
    private PayloadScan scan = new PayloadScan();
    private final boolean[] empty = new boolean[1];

    /** The ack data of a QoS 1/2 message; null fields are what QoS 0 leaves out. */
    static final class Md {
        long seq;
        long t;
        long conn;
        int packetId;
        int qos;
    }

    /**
     * The end offset (exclusive) of the object's closing brace in {@code b[off, off+len)}, or -1 if not one object;
     * {@code empty[0]} says whether it has no field. Jackson's streaming parser decides.
     */
    static int objectEnd(byte[] b, int off, int len, boolean[] empty) {
        try (JsonParser p = JSON.createParser(b, off, len)) {
            if (p.nextToken() != JsonToken.START_OBJECT) return -1;
            JsonToken t = p.nextToken();
            empty[0] = t == JsonToken.END_OBJECT;
            while (t != JsonToken.END_OBJECT) {
                if (t != JsonToken.FIELD_NAME) return -1;
                p.nextToken();
                p.skipChildren();
                t = p.nextToken();
            }
            long end = p.getTokenLocation().getByteOffset();   // offset of '}' from off
            if (p.nextToken() != null) return -1;                 // something after the object
            return end < 0 ? -1 : (int) (off + end);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /**
     * {@link #objectEnd} of the bytes {@link #scan} holds, {@code a[0, n)}: the walk answers what it vouches for (a
     * JSON object and nothing after it but white space), Jackson the rest (deep nesting, long numbers, a byte
     * order mark, and every refusal, so that what is wrapped stays what Jackson refuses).
     */
    private int objectEnd(byte[] a, int n) {
        int i = scan.ws(0);
        if (i < n && a[i] == '{') {
            int end = scan.object(i, 0);
            if (end > 0 && scan.ws(end) == n) {
                empty[0] = scan.ws(i + 1) == end - 1;
                return end - 1;
            }
        }
        return objectEnd(a, 0, n, empty);
    }

    /**
     * Builds the message JSON into a new buffer. {@code topicKey}/{@code payloadKey} are written as JSON strings;
     * {@code md} null = no ack wanted (QoS 0, a Will); {@code will} adds {@code "mqtt_will": true}. A message of up
     * to {@value #HEAP_MAX} bytes is built in an unpooled heap buffer whose bytes start its array: it lives a moment
     * (the relay reads it in place and stores a record of its own), never reaches a pool arena nor the leak
     * detector's sampling, whose stack trace per sample showed in the profile.
     */
    ByteBuf build(ByteBufAllocator alloc, String topicKey, String payloadKey, String topic, ByteBuf payload, Md md,
                  boolean will) {
        int len = payload.readableBytes();
        byte[] a;
        int end;
        if (scan.load(payload)) {
            a = scan.bytes();
            end = len == 0 ? -1 : objectEnd(a, len);
        } else {
            a = new byte[len];   // over the walk's limit: Jackson alone
            payload.getBytes(payload.readerIndex(), a);
            end = objectEnd(a, 0, len, empty);
        }
        ByteBuf out;
        if (len > KEEP_SCRATCH) {
            // a large payload does not leave a large scratch array behind on each of thousands of connections (nor
            // a reference to the payload's own array): the next message starts a new walk (a is still read below)
            scan = new PayloadScan();
        }
        if (end >= 0) {
            out = buffer(alloc, len + topic.length() + 160);
            out.writeBytes(a, 0, end);   // everything before the closing brace
            if (!empty[0]) out.writeByte(',');
        } else {
            byte[] raw = new byte[len];
            payload.getBytes(payload.readerIndex(), raw);
            String b64 = Base64.getEncoder().encodeToString(raw);
            out = buffer(alloc, b64.length() + topic.length() + 200);
            out.writeByte('{');
            writeString(out, payloadKey);
            out.writeByte(':');
            out.writeByte('"');
            out.writeCharSequence(b64, StandardCharsets.US_ASCII);
            out.writeByte('"');
            out.writeByte(',');
        }
        out.writeBytes(topicKeyJson(topicKey));
        out.writeByte(':');
        writeString(out, topic);
        if (will) out.writeBytes(WILL);
        if (md != null) {
            out.writeBytes(MD_OPEN);
            Gbuffers.writeDecimal(out, md.seq);
            out.writeBytes(MD_T);
            Gbuffers.writeDecimal(out, md.t);
            out.writeBytes(MD_CONN);
            Gbuffers.writeDecimal(out, md.conn);
            out.writeBytes(MD_PACKET_ID);
            Gbuffers.writeDecimal(out, md.packetId);
            out.writeBytes(MD_QOS);
            Gbuffers.writeDecimal(out, md.qos);
            out.writeByte('}');
        }
        out.writeByte('}');
        return out;
    }

    /** The topic key as a JSON string: config, the same from one message to the next. */
    private String topicKey;
    private byte[] topicKeyJson;

    private byte[] topicKeyJson(String key) {
        if (!key.equals(topicKey)) {
            topicKeyJson = json(key);
            topicKey = key;
        }
        return topicKeyJson;
    }

    private static byte[] json(String s) {
        ByteBuf b = Unpooled.buffer(s.length() + 8);
        writeString(b, s);
        byte[] a = new byte[b.readableBytes()];
        b.readBytes(a);
        return a;
    }

    /** The walk, with the bytes it loaded. */
    private static final class PayloadScan extends JsonScan {
        PayloadScan() {
            super(512);
        }

        /** The bytes of the last load, from index 0 (the payload's own array when it could be read in place). */
        byte[] bytes() {
            return a;
        }
    }

    /** The bytes the payload walk holds on to between messages (its scratch, or the last payload read in place). */
    int retainedBytes() {
        return scan.bytes().length;
    }

    private static ByteBuf buffer(ByteBufAllocator alloc, int capacity) {
        return capacity <= HEAP_MAX ? Unpooled.buffer(capacity) : alloc.buffer(capacity);
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** What an ack from the relay says about one of our messages (see {@link #parseAck}). */
    static final class Ack {
        long seq = -1;
        long conn = -1;
        int packetId = -1;
        int result;
        boolean ours;
    }

    /**
     * The ack's fields from its bytes: {@code __msg_rowid__}, {@code mqtt_conn} and {@code mqtt_packet_id} of its
     * {@code __md_trq__}, and the result. One per gobj, on its core loop.
     */
    static final class AckScan extends MdAckScan {
        AckScan() {
            super(new String[] {"__msg_rowid__", "mqtt_conn", "mqtt_packet_id"}, new int[] {19, 19, 9});
        }

        /**
         * Reads an ack, {@code {"__md_trq__": {..., "result": R}}} (or {@code result} at the top): from its bytes
         * when the scan vouches for them, else from Jackson's tree (the same answer, the last of a key given twice
         * winning). {@link Ack#ours} is false when the metadata carries no integer {@code mqtt_packet_id} (not an ack
         * of ours) or the ack is not JSON.
         */
        Ack read(ByteBuf buf) {
            if (scan(buf) != FOUND) return parseAck(buf);
            Ack a = new Ack();
            a.seq = field(0, -1);
            a.conn = field(1, -1);
            long id = field(2, Long.MIN_VALUE);
            a.ours = id != Long.MIN_VALUE;
            a.packetId = (int) id;
            a.result = result();
            return a;
        }
    }

    /** {@link AckScan#read} through Jackson's tree. */
    static Ack parseAck(ByteBuf buf) {
        Ack a = new Ack();
        ObjectNode tree;
        try {
            tree = Kw.parse(buf);
        } catch (IOException | RuntimeException notJson) {
            return a;
        }
        JsonNode md = tree == null ? null : tree.get(Kw.MD_TRQ);
        JsonNode id = md == null ? null : md.get("mqtt_packet_id");
        if (id == null || !id.isNumber()) return a;
        a.ours = true;
        a.packetId = id.asInt();
        a.seq = md.path("__msg_rowid__").asLong(-1);
        a.conn = md.path("mqtt_conn").asLong(-1);
        JsonNode r = md.has(Kw.RESULT) ? md.get(Kw.RESULT) : tree.get(Kw.RESULT);
        a.result = r == null ? 0 : r.asInt();
        return a;
    }

    /** A JSON string: quotes, backslash and control characters escaped, the rest as UTF-8. */
    static void writeString(ByteBuf out, String s) {
        out.writeByte('"');
        int plainFrom = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c != '"' && c != '\\') continue;
            if (i > plainFrom) out.writeCharSequence(s.subSequence(plainFrom, i), StandardCharsets.UTF_8);
            out.writeByte('\\');
            switch (c) {
                case '"': out.writeByte('"'); break;
                case '\\': out.writeByte('\\'); break;
                case '\n': out.writeByte('n'); break;
                case '\r': out.writeByte('r'); break;
                case '\t': out.writeByte('t'); break;
                default:
                    out.writeByte('u').writeByte('0').writeByte('0');
                    out.writeByte(HEX[(c >> 4) & 0xf]).writeByte(HEX[c & 0xf]);
            }
            plainFrom = i + 1;
        }
        if (plainFrom < s.length()) out.writeCharSequence(s.subSequence(plainFrom, s.length()), StandardCharsets.UTF_8);
        out.writeByte('"');
    }
}
