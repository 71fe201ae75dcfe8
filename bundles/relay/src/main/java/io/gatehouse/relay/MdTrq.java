// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.relay;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import io.gatehouse.api.Kw;
import io.gatehouse.support.Gbuffers;
import io.gatehouse.support.JsonScan;
import io.gatehouse.support.RecordScan;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Map;

/**
 * A message's queue metadata ({@code __md_trq__}) read from its bytes with no JSON tree, and the upstream ack
 * written as bytes. The relay forwards most messages as they came and needs one thing from them: the metadata
 * its ack echoes. Parsing the whole message into a tree for it cost more than the rest of the hop.
 *
 * <p>{@link #scan} walks the readable bytes once, as strictly as Jackson's default parser reads them (strings with
 * their escapes and UTF-8, numbers, literals, nesting), and finds the last top-level {@code __md_trq__} whose value
 * is an object, as {@code Kw.parse(buf).get("__md_trq__")} does. Whatever it cannot vouch for (not an object at the
 * top, a top-level key spelt with escapes, a BOM, nesting deeper than {@value JsonScan#MAX_DEPTH}, an invalid byte, a huge
 * message) is {@link #UNSURE}: the
 * caller asks Jackson, as before, so the answer is the same for every input.
 *
 * <p>The ack ({@code {"__md_trq__":{<md>,"result":R}}}) is the bytes Jackson writes for the parsed dict with
 * {@code result} put: the metadata is echoed with the whitespace between its tokens left out, which is
 * byte-identical when it is {@link #simple} (flat; strings without escapes, ASCII; integers; no {@code result} key
 * and no key twice). Other metadata is parsed alone ({@link #parsed}), a few bytes instead of the message.
 *
 * <p>{@link #tree} builds the dict of a message the scan checked (for an output that stores it), with the nodes
 * Jackson's tree has (the same classes and values, the last of a key given twice in the first one's place), without
 * Jackson's parser and contexts per message.
 *
 * <p>One per relay, used on the core loop only; the bytes of the last scan are kept in a scratch array until the
 * next scan (arrays above {@value JsonScan#KEEP} bytes are not kept).
 */
final class MdTrq extends RecordScan {
    /** The message is a JSON object with a top-level {@code __md_trq__} object. */
    static final int FOUND = 0;
    /** The message is a JSON object without a top-level {@code __md_trq__} object: there is nothing to ack. */
    static final int NONE = -1;
    /** Not JSON this scan vouches for: parse it to know. */
    static final int UNSURE = -2;

    private static final int MAX_MD_KEYS = 16;
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private static final byte[] MD_KEY = ascii("\"" + Kw.MD_TRQ + "\"");
    private static final byte[] RESULT_KEY = ascii("\"" + Kw.RESULT + "\"");
    private static final byte[] ACK_HEAD = ascii("{\"" + Kw.MD_TRQ + "\":{");
    private static final byte[] RESULT_FIELD = ascii("\"" + Kw.RESULT + "\":");

    private int mdFrom = -1;
    private int mdTo = -1;
    private boolean simple;
    /** The metadata has no whitespace between its tokens: the ack echoes its bytes with one copy. */
    private boolean mdCompact;
    private final int[] keyFrom = new int[MAX_MD_KEYS];
    private final int[] keyTo = new int[MAX_MD_KEYS];
    private int keys;

    MdTrq() {
        super(512);
    }

    /** Scans the readable bytes of {@code buf} (not consumed): {@link #FOUND}, {@link #NONE} or {@link #UNSURE}. */
    int scan(ByteBuf buf) {
        return walk(buf, false);
    }

    /** After {@link #FOUND}: the ack can be echoed from the bytes ({@link #startAck}) and be what Jackson writes. */
    boolean simple() {
        return simple;
    }

    /** After {@link #FOUND}: the metadata as a dict (for metadata that is not {@link #simple}). */
    ObjectNode parsed() throws IOException {
        JsonNode md = Kw.MAPPER.readTree(a, mdFrom, mdTo - mdFrom);
        if (!(md instanceof ObjectNode)) throw new IOException("not a JSON object");
        return (ObjectNode) md;
    }

    /** After {@link #FOUND}: the metadata's bytes as text (for a trace). */
    String text() {
        return new String(a, mdFrom, mdTo - mdFrom, StandardCharsets.UTF_8);
    }

    /**
     * After {@link #FOUND} of {@link #simple} metadata: a buffer holding the ack up to its result
     * ({@code {"__md_trq__":{<md>,"result":}); {@link #endAck} writes the rest. Taken before the message is
     * passed on, so the ack does not depend on what the output does with it.
     */
    ByteBuf startAck() {
        ByteBuf out = Gbuffers.allocateHeap((mdTo - mdFrom) + ACK_HEAD.length + 20);
        int at = out.arrayOffset() + out.writerIndex();
        out.writerIndex(out.writerIndex() + putAckStart(out.array(), at) - at);
        return out;
    }

    /**
     * After {@link #FOUND} of {@link #simple} metadata: the bytes {@link #startAck} writes, in an array of their own,
     * for an ack that goes up later (a durable output's EV_ON_DURABLE): kept with the message's durability dict, it
     * makes that ack a copy of bytes instead of writing the parsed metadata again ({@link #writeAckStart}).
     */
    byte[] ackStart() {
        return ackStart(0, 0);
    }

    /**
     * {@link #ackStart()} with {@link Gbuffers#HEADROOM} bytes of room in front (for the protocol's frame header,
     * written in place below) and {@value #ACK_ROOM} at the end, for {@link #endAckInPlace}: the ack is then ended
     * in the array itself and goes down to the socket's batch without another copy.
     */
    byte[] ackStartWithRoom() {
        return ackStart(Gbuffers.HEADROOM, ACK_ROOM);
    }

    /** The room {@link #ackStartWithRoom} leaves at the end: a result from -9 to 9 and the two braces. */
    static final int ACK_ROOM = 4;

    private byte[] ackStart(int front, int room) {
        // the md's braces are not copied, a comma may be added: exact unless whitespace is left out
        byte[] out = new byte[front + ACK_HEAD.length + (mdTo - mdFrom - 2) + 1 + RESULT_FIELD.length + room];
        int o = putAckStart(out, front);
        return o + room == out.length ? out : java.util.Arrays.copyOf(out, o + room);
    }

    /**
     * Writes the ack up to its result at {@code out[o]} (room for {@code mdTo - mdFrom + ACK_HEAD.length + 8}
     * bytes): the head, the md's bytes between its braces with whitespace outside strings left out (no escapes:
     * quotes toggle), the comma and the result's name. Answers the index after it.
     */
    private int putAckStart(byte[] out, int o) {
        System.arraycopy(ACK_HEAD, 0, out, o, ACK_HEAD.length);
        o += ACK_HEAD.length;
        int last = mdTo - 1;
        int run = mdFrom + 1;
        boolean inString = false;
        for (int k = mdCompact ? last : run; k < last; k++) {   // compact: one run, no byte to look at
            byte c = a[k];
            if (c == '"') {
                inString = !inString;
            } else if (!inString && isWs(c)) {
                if (k > run) {
                    System.arraycopy(a, run, out, o, k - run);
                    o += k - run;
                }
                run = k + 1;
            }
        }
        if (last > run) {
            System.arraycopy(a, run, out, o, last - run);
            o += last - run;
        }
        if (keys > 0) out[o++] = ',';
        System.arraycopy(RESULT_FIELD, 0, out, o, RESULT_FIELD.length);
        return o + RESULT_FIELD.length;
    }

    /**
     * Ends the ack in {@code withRoom} with {@code result} as {@link #endAckInPlace} does, without a buffer: the end
     * of its bytes (they start at {@link Gbuffers#HEADROOM}), or -1 for a result of more than one digit (then
     * {@link #endAckInPlace}).
     */
    static int closeAckInPlace(byte[] withRoom, int result) {
        if (result < -9 || result > 9) return -1;
        int o = withRoom.length - ACK_ROOM;
        if (result < 0) {
            withRoom[o++] = '-';
            withRoom[o++] = (byte) ('0' - result);
        } else {
            withRoom[o++] = (byte) ('0' + result);
        }
        withRoom[o++] = '}';
        withRoom[o++] = '}';
        return o;
    }

    /**
     * Ends, in the array itself, an ack that {@link #ackStartWithRoom} began, and wraps it (no copy): the array is
     * the ack's from then on, so this is done once per array.
     */
    static ByteBuf endAckInPlace(byte[] withRoom, int result) {
        int end = closeAckInPlace(withRoom, result);
        if (end < 0) {
            return endAck(startAck(java.util.Arrays.copyOfRange(withRoom, Gbuffers.HEADROOM, withRoom.length - ACK_ROOM)),
                    result);
        }
        return Unpooled.wrappedBuffer(withRoom).setIndex(Gbuffers.HEADROOM, end);
    }

    /** A buffer holding {@code start} ({@link #ackStart}), with room for the result and the braces after it. */
    static ByteBuf startAck(byte[] start) {
        ByteBuf out = Gbuffers.allocateHeap(start.length + 16);
        out.writeBytes(start);
        return out;
    }

    /** Ends an ack that {@link #startAck} or {@link #writeAckStart} began: the result and the two braces. */
    static ByteBuf endAck(ByteBuf out, int result) {
        if (result >= 0 && result <= 9) {
            out.writeByte('0' + result);
        } else {
            out.writeCharSequence(Integer.toString(result), StandardCharsets.US_ASCII);
        }
        out.writeByte('}');
        out.writeByte('}');
        return out;
    }

    /**
     * The ack of a parsed metadata dict, up to its result, in a new buffer, when the dict is flat with ASCII
     * strings that need no escape, integers, booleans and nulls, and no {@code result} key: the bytes Jackson
     * writes, without a generator per ack. Null for any other dict (write it with Jackson).
     */
    static ByteBuf writeAckStart(ObjectNode md) {
        int size = ACK_HEAD.length + 16;
        for (Iterator<Map.Entry<String, JsonNode>> it = md.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String k = e.getKey();
            JsonNode v = e.getValue();
            if (!plainAscii(k) || k.equals(Kw.RESULT)) return null;
            if (v.isTextual()) {
                if (!plainAscii(v.textValue())) return null;
                size += v.textValue().length() + 2;
            } else if (!(v.isIntegralNumber() || v.isBoolean() || v.isNull())) {
                return null;
            } else {
                size += 20;
            }
            size += k.length() + 4;
        }
        ByteBuf out = Gbuffers.allocateHeap(size);
        out.writeBytes(ACK_HEAD);
        for (Iterator<Map.Entry<String, JsonNode>> it = md.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode v = e.getValue();
            out.writeByte('"');
            out.writeCharSequence(e.getKey(), StandardCharsets.US_ASCII);
            out.writeByte('"');
            out.writeByte(':');
            if (v.isTextual()) {
                out.writeByte('"');
                out.writeCharSequence(v.textValue(), StandardCharsets.US_ASCII);
                out.writeByte('"');
            } else {
                out.writeCharSequence(v.asText(), StandardCharsets.US_ASCII);
            }
            out.writeByte(',');
        }
        out.writeBytes(RESULT_FIELD);
        return out;
    }

    /**
     * {@link #writeAckStart} of a parsed dict (a batch's md) in an array with the room {@link #ackStartWithRoom()}
     * leaves, for {@link #endAckInPlace}; null for a dict {@link #writeAckStart} does not write.
     */
    static byte[] ackStartWithRoom(ObjectNode md) {
        ByteBuf b = writeAckStart(md);
        if (b == null) return null;
        try {
            byte[] out = new byte[Gbuffers.HEADROOM + b.readableBytes() + ACK_ROOM];
            b.getBytes(b.readerIndex(), out, Gbuffers.HEADROOM, b.readableBytes());
            return out;
        } finally {
            b.release();
        }
    }

    /** Printable ASCII without a quote or a backslash: written by Jackson as it is. */
    private static boolean plainAscii(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
        }
        return true;
    }

    /**
     * After {@link #FOUND} or {@link #NONE}: the message as a dict, built from the bytes the scan checked (so it
     * reads them without checking them again).
     */
    ObjectNode tree() {
        pos = ws(0);
        return (ObjectNode) node();
    }

    /** After {@link #FOUND}: the metadata as a dict, built from the checked bytes as {@link #tree} builds it. */
    ObjectNode mdTree() {
        pos = mdFrom;
        return (ObjectNode) node();
    }

    // --- The record: the message's bytes as a queue stores its dict, taken in the same walk as the scan ---

    private byte[] rec = new byte[512];
    private int ro;
    /** While the walk of {@link #scanRecord} has seen only what Jackson writes as it is: the record is being copied. */
    private boolean recOk;

    /**
     * {@link #scan} that also takes the record a queue stores for the message's dict, in the same walk: the answer
     * is the scan's for every input, and after {@link #FOUND} or {@link #NONE} {@link #record} gives the record or
     * null. The walk checks the bytes as strictly as {@link #scan} and copies them as it goes; it stops copying,
     * not checking, at the first thing Jackson would write otherwise. One pass instead of a scan and then a second
     * walk for the record: the two walks were an eighth of the durable path's core loop.
     */
    int scanRecord(ByteBuf buf) {
        return walk(buf, true);
    }

    /** The walk of {@link #scan} and {@link #scanRecord}: the record is copied only when {@code copy}. */
    private int walk(ByteBuf buf, boolean copy) {
        mdFrom = -1;
        recOk = false;
        if (!load(buf)) return UNSURE;
        int i = ws(0);
        if (i >= n || a[i] != '{') return UNSURE;
        if (copy) {
            if (rec.length < n) rec = new byte[Math.max(n, rec.length * 2)];
            ro = 0;
            resetRecord();
            recOk = true;
        }
        if (recObject(i, 1, true) < 0) {
            mdFrom = -1;
            recOk = false;
            return UNSURE;
        }
        return mdFrom < 0 ? NONE : FOUND;
    }

    /**
     * After {@link #scanRecord} answered {@link #FOUND} or {@link #NONE}: the record a queue stores for the message's
     * dict (the tree without its top-level {@code __md_trq__}, written compact by Jackson), taken from the bytes:
     * whitespace outside strings left out, every top-level {@code __md_trq__} member cut out, everything else
     * copied. Null when the bytes are not already in the form Jackson writes, so that a copy would differ from what
     * it writes for the dict: a string with an escape Jackson does not write ({@code \/}, {@code \u0041} written as a
     * letter, lowercase hex) or a 4-byte UTF-8 character, a number with a fraction or an exponent or {@code -0}, a
     * key given twice in an object, an {@code __x} metadata key (a queue may strip it) other than the top-level
     * {@code __md_trq__}, more keys than this check holds. A null answer sends the message the old way (its dict).
     */
    byte[] record() {
        if (!recOk) return null;
        byte[] out = java.util.Arrays.copyOf(rec, ro);
        if (rec.length > KEEP) rec = new byte[512];
        return out;
    }

    /**
     * After {@link #record} gave a record: its top-level members indexed as {@code Kw.RECORD_FIELDS} has them (where
     * each key starts, counted from the record's first byte), taken in the same walk.
     */
    int[] copiedFields() {
        return takeFields();
    }

    /**
     * An object at {@code i} that is {@code depth} deep, checked as {@link #object} checks it (the top one also
     * finds its metadata, the last {@code __md_trq__} object, and does not vouch for a key spelt with escapes) and
     * copied while {@link #recOk}.
     */
    private int recObject(int i, int depth, boolean top) {
        if (depth > MAX_DEPTH) return -1;
        emit('{');
        int base = recKeys;
        boolean firstOut = true;
        i = first(i, '}');
        if (i <= 0) {
            emit('}');
            return ~i;
        }
        while (true) {
            int ks = i;
            i = key(i);
            if (i < 0) return -1;
            int ke = i;
            boolean md = false;
            if (top) {
                if (escaped(ks, ke)) return -1;   // a key spelt with escapes may be __md_trq__: Jackson knows
                md = equalsAt(ks, ke, MD_KEY);
            }
            if (recOk && (!jacksonForm || !newKey(base, ks, ke) || (!md && metadataKey(ks, ke)))) recOk = false;
            i = colon(i);
            if (i < 0) return -1;
            if (md) {
                // cut out of the record: the queue never stores it
                if (i < n && a[i] == '{') {
                    int vs = i;
                    i = mdObject(i);
                    if (i < 0) return -1;
                    mdFrom = vs;
                    mdTo = i;
                } else {
                    mdFrom = -1;   // a later __md_trq__ that is no object hides an earlier one (the last wins)
                    i = value(i, 1);
                    if (i < 0) return -1;
                }
            } else {
                int keyAt = ro;
                if (recOk) {
                    if (!firstOut) rec[ro++] = ',';
                    firstOut = false;
                    keyAt = ro;
                    copy(ks, ke);
                    rec[ro++] = ':';
                }
                i = recValue(i, depth);
                if (i < 0) return -1;
                if (top && recOk) indexField(keyAt);
            }
            i = next(i, '}');
            if (i <= 0) {
                if (i == 0) return -1;
                emit('}');
                recKeys = base;
                return ~i;
            }
        }
    }

    /** An array at {@code i} that is {@code depth} deep, checked as {@link #array} checks it, copied while {@link #recOk}. */
    private int recArray(int i, int depth) {
        if (depth > MAX_DEPTH) return -1;
        emit('[');
        i = first(i, ']');
        if (i <= 0) {
            emit(']');
            return ~i;
        }
        while (true) {
            i = recValue(i, depth);
            if (i < 0) return -1;
            i = next(i, ']');
            if (i <= 0) {
                if (i == 0) return -1;
                emit(']');
                return ~i;
            }
            emit(',');
        }
    }

    /** A value at {@code i} in a container {@code depth} deep, checked as {@link #value} checks it, copied while {@link #recOk}. */
    private int recValue(int i, int depth) {
        if (i < 0 || i >= n) return -1;
        byte c = a[i];
        switch (c) {
            case '{': return recObject(i, depth + 1, false);
            case '[': return recArray(i, depth + 1);
            case '"': {
                int end = string(i);
                if (end < 0) return -1;
                if (recOk) {
                    if (jacksonForm) {
                        copy(i, end);
                    } else {
                        recOk = false;
                    }
                }
                return end;
            }
            default: {
                int end = value(i, depth);   // a number or a literal
                if (end < 0) return -1;
                if (recOk) {
                    if (writtenAsIs(i, end)) {
                        copy(i, end);
                    } else {
                        recOk = false;   // a double or -0: Jackson writes it its way
                    }
                }
                return end;
            }
        }
    }

    private void emit(char c) {
        if (recOk) rec[ro++] = (byte) c;
    }

    private void copy(int from, int to) {
        System.arraycopy(a, from, rec, ro, to - from);
        ro += to - from;
    }

    private int pos;

    private JsonNode node() {
        byte c = a[pos];
        switch (c) {
            case '{': {
                ObjectNode o = F.objectNode();
                pos = ws(pos + 1);
                if (a[pos] == '}') {
                    pos++;
                    return o;
                }
                while (true) {
                    String k = text(pos);
                    pos = ws(ws(pos) + 1);   // the colon
                    o.set(k, node());        // a key given twice: the last value, in the first one's place
                    pos = ws(pos);
                    if (a[pos++] == '}') return o;
                    pos = ws(pos);           // after the comma
                }
            }
            case '[': {
                ArrayNode arr = F.arrayNode();
                pos = ws(pos + 1);
                if (a[pos] == ']') {
                    pos++;
                    return arr;
                }
                while (true) {
                    arr.add(node());
                    pos = ws(pos);
                    if (a[pos++] == ']') return arr;
                    pos = ws(pos);
                }
            }
            case '"': return TextNode.valueOf(text(pos));
            case 't': pos += 4; return BooleanNode.TRUE;
            case 'f': pos += 5; return BooleanNode.FALSE;
            case 'n': pos += 4; return NullNode.instance;
            default: return numberNode();
        }
    }

    /** The string token at {@code i}, decoded; {@link #pos} moves after it. */
    private String text(int i) {
        int from = i + 1;
        int k = from;
        while (a[k] != '"' && a[k] != '\\') k++;
        if (a[k] == '"') {
            pos = k + 1;
            return new String(a, from, k - from, StandardCharsets.UTF_8);
        }
        StringBuilder sb = new StringBuilder(k - from + 16);
        sb.append(new String(a, from, k - from, StandardCharsets.UTF_8));
        while (true) {
            int run = k;
            while (a[k] != '"' && a[k] != '\\') k++;
            if (k > run) sb.append(new String(a, run, k - run, StandardCharsets.UTF_8));
            if (a[k] == '"') {
                pos = k + 1;
                return sb.toString();
            }
            byte e = a[k + 1];
            switch (e) {
                case 'b': sb.append('\b'); break;
                case 'f': sb.append('\f'); break;
                case 'n': sb.append('\n'); break;
                case 'r': sb.append('\r'); break;
                case 't': sb.append('\t'); break;
                case 'u': sb.append((char) Integer.parseInt(new String(a, k + 2, 4, StandardCharsets.US_ASCII), 16)); k += 4; break;
                default: sb.append((char) e);   // " \\ /
            }
            k += 2;
        }
    }

    /** A number node as Jackson makes it: int, long, BigInteger for an integer by its size; double otherwise. */
    private JsonNode numberNode() {
        int from = pos;
        int k = from;
        boolean integral = true;
        while (k < n) {
            byte c = a[k];
            if (c == '.' || c == 'e' || c == 'E') {
                integral = false;
            } else if (!(c == '-' || c == '+' || isDigit(c))) {
                break;
            }
            k++;
        }
        pos = k;
        String t = new String(a, from, k - from, StandardCharsets.US_ASCII);
        if (!integral) return F.numberNode(Double.parseDouble(t));
        int digits = k - from - (a[from] == '-' ? 1 : 0);
        if (digits <= 18) {
            long v = Long.parseLong(t);
            return v == (int) v ? F.numberNode((int) v) : F.numberNode(v);
        }
        BigInteger b = new BigInteger(t);
        return b.bitLength() <= 63 ? F.numberNode(b.longValue()) : F.numberNode(b);
    }

    // --- Its own part of the walk (the rest is JsonScan's): each method takes the index of a token's first byte, answers the index after it, or -1 ---

    /** The metadata object: also says whether it is {@link #simple}. */
    private int mdObject(int i) {
        simple = true;
        keys = 0;
        int open = i;
        i = first(i, '}');
        if (i <= 0) {
            mdCompact = ~i == open + 2;
            return ~i;
        }
        boolean compact = i == open + 1;   // each token where the one before ends, with its comma or colon
        while (true) {
            int ks = i;
            i = key(i);
            if (i < 0) return -1;
            if (simple) simple = simpleKey(ks, i);
            int ke = i;
            i = colon(i);
            if (i != ke + 1) compact = false;
            int vs = i;
            i = value(i, 2);
            if (i < 0) return -1;
            if (simple) simple = simpleValue(vs, i);
            int ve = i;
            i = next(i, '}');
            if (i <= 0) {
                mdCompact = compact && ~i == ve + 1;
                return ~i;
            }
            if (i != ve + 1) compact = false;
        }
    }

    /** The key just walked, in [from, to): ASCII with no escape, not {@code result}, not given before. */
    private boolean simpleKey(int from, int to) {
        if (keys == MAX_MD_KEYS || !asciiPlain || equalsAt(from, to, RESULT_KEY)) return false;
        for (int k = 0; k < keys; k++) {
            if (java.util.Arrays.equals(a, keyFrom[k], keyTo[k], a, from, to)) return false;
        }
        keyFrom[keys] = from;
        keyTo[keys] = to;
        keys++;
        return true;
    }

    /** The value just walked, in [from, to): one Jackson writes back as these bytes. */
    private boolean simpleValue(int from, int to) {
        byte c = a[from];
        if (c == '"') return asciiPlain;
        if (c == 't' || c == 'f' || c == 'n') return true;
        if (c == '{' || c == '[') return false;
        // a number: an integer as Jackson writes it back (not -0, no fraction nor exponent)
        if (c == '-' && to - from == 2 && a[from + 1] == '0') return false;
        for (int k = from; k < to; k++) {
            byte d = a[k];
            if (d == '.' || d == 'e' || d == 'E') return false;
        }
        return true;
    }
}
