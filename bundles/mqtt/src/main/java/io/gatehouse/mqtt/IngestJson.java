// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

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
    private IngestJson() {}

    private static final JsonFactory JSON = Kw.MAPPER.getFactory();
    private static final byte[] HEX = "0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    /** The ack data of a QoS 1/2 message; null fields are what QoS 0 leaves out. */
    static final class Md {
        long seq;
        long t;
        long conn;
        int packetId;
        int qos;
    }

    /** The end offset (exclusive) of the object's closing brace in {@code b[off, off+len)}, or -1 if not one object. */
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
     * Builds the message JSON into a new buffer. {@code topicKey}/{@code payloadKey} are written as JSON strings;
     * {@code md} null = no ack wanted (QoS 0, a Will); {@code will} adds {@code "mqtt_will": true}.
     */
    static ByteBuf build(ByteBufAllocator alloc, String topicKey, String payloadKey, String topic, ByteBuf payload,
                         Md md, boolean will) {
        int len = payload.readableBytes();
        byte[] bytes;
        int off;
        if (payload.hasArray()) {
            bytes = payload.array();
            off = payload.arrayOffset() + payload.readerIndex();
        } else {
            bytes = new byte[len];
            payload.getBytes(payload.readerIndex(), bytes);
            off = 0;
        }
        boolean[] empty = new boolean[1];
        int end = len == 0 ? -1 : objectEnd(bytes, off, len, empty);
        ByteBuf out;
        if (end >= 0) {
            out = alloc.buffer(len + topic.length() + 160);
            out.writeBytes(bytes, off, end - off);   // everything before the closing brace
            if (!empty[0]) out.writeByte(',');
        } else {
            String b64 = Base64.getEncoder().encodeToString(len == bytes.length && off == 0 ? bytes
                    : java.util.Arrays.copyOfRange(bytes, off, off + len));
            out = alloc.buffer(b64.length() + topic.length() + 200);
            out.writeByte('{');
            writeString(out, payloadKey);
            out.writeByte(':');
            writeAscii(out, '"' + b64 + '"');
            out.writeByte(',');
        }
        writeString(out, topicKey);
        out.writeByte(':');
        writeString(out, topic);
        if (will) writeAscii(out, ",\"mqtt_will\":true");
        if (md != null) {
            writeAscii(out, ",\"" + Kw.MD_TRQ + "\":{\"__msg_rowid__\":");
            writeAscii(out, Long.toString(md.seq));
            writeAscii(out, ",\"__msg_t__\":");
            writeAscii(out, Long.toString(md.t));
            writeAscii(out, ",\"mqtt_conn\":");
            writeAscii(out, Long.toString(md.conn));
            writeAscii(out, ",\"mqtt_packet_id\":");
            writeAscii(out, Integer.toString(md.packetId));
            writeAscii(out, ",\"mqtt_qos\":");
            writeAscii(out, Integer.toString(md.qos));
            out.writeByte('}');
        }
        out.writeByte('}');
        return out;
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
     * Reads an ack, {@code {"__md_trq__": {..., "result": R}}} (or {@code result} at the top), with a streaming
     * parse: no tree per ack. {@link Ack#ours} is false when it carries no {@code mqtt_packet_id} (not an ack of
     * ours) or is not JSON.
     */
    static Ack parseAck(ByteBuf buf) {
        Ack a = new Ack();
        byte[] bytes;
        int off;
        int len = buf.readableBytes();
        if (buf.hasArray()) {
            bytes = buf.array();
            off = buf.arrayOffset() + buf.readerIndex();
        } else {
            bytes = new byte[len];
            buf.getBytes(buf.readerIndex(), bytes);
            off = 0;
        }
        try (JsonParser p = JSON.createParser(bytes, off, len)) {
            if (p.nextToken() != JsonToken.START_OBJECT) return a;
            for (JsonToken t = p.nextToken(); t == JsonToken.FIELD_NAME; t = p.nextToken()) {
                String name = p.getCurrentName();
                JsonToken v = p.nextToken();
                if (Kw.MD_TRQ.equals(name) && v == JsonToken.START_OBJECT) {
                    for (JsonToken f = p.nextToken(); f == JsonToken.FIELD_NAME; f = p.nextToken()) {
                        String k = p.getCurrentName();
                        JsonToken fv = p.nextToken();
                        if (fv.isNumeric()) {
                            switch (k) {
                                case "__msg_rowid__": a.seq = p.getLongValue(); break;
                                case "mqtt_conn": a.conn = p.getLongValue(); break;
                                case "mqtt_packet_id": a.packetId = p.getIntValue(); a.ours = true; break;
                                case Kw.RESULT: a.result = p.getIntValue(); break;
                                default: break;
                            }
                        } else {
                            p.skipChildren();
                        }
                    }
                } else if (Kw.RESULT.equals(name) && v.isNumeric()) {
                    if (a.result == 0) a.result = p.getIntValue();
                } else {
                    p.skipChildren();
                }
            }
        } catch (IOException | RuntimeException e) {
            a.ours = false;
        }
        return a;
    }

    private static void writeAscii(ByteBuf out, String s) {
        out.writeCharSequence(s, StandardCharsets.US_ASCII);
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
