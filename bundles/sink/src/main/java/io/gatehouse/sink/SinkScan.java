// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.sink;

import io.gatehouse.api.Kw;
import io.gatehouse.support.JsonScan;
import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;

/**
 * What C_SINK needs from a message, read from its bytes with no tree: the message id (a top-level field) and the
 * ack of its {@code __md_trq__}. Parsing every message into a tree and writing every ack from one were a third of
 * the demo gateway's core loop under the HTTP bench (its sinks run on that loop).
 *
 * <p>The walk is JsonScan's (as strict as Jackson's default parser; the last of a key given twice wins, as in the
 * tree). {@link #scan} answers {@link #FOUND} only when its answers are the tree's for sure: the message is one JSON
 * object (white space after it only); the id, when present, a string without escapes or {@code null}; the last
 * top-level {@code __md_trq__}, when present, an object. {@link #ackable()} says whether the ack can be written from
 * the metadata's bytes: an object in the compact form Jackson writes (no white space, no key twice, no
 * {@code result} key, keys and strings as Jackson escapes them) whose values are integers, strings, booleans or
 * null, so that copying it is what writing the tree would give. Anything else is {@link #UNSURE} or not ackable:
 * the sink parses the message, as before.
 *
 * <p>One per gobj, on its core loop.
 */
final class SinkScan extends JsonScan {
    static final int FOUND = 0;
    static final int UNSURE = -2;

    private static final byte[] MD_KEY = quoted(Kw.MD_TRQ);
    private static final byte[] RESULT_KEY = quoted(Kw.RESULT);
    private static final byte[] ACK_OPEN = ascii("{" + new String(MD_KEY, StandardCharsets.US_ASCII) + ":");
    private static final byte[] ACK_RESULT = ascii("\"" + Kw.RESULT + "\":0}}");
    /** Keys of the metadata compared for doubles; more than this and the ack is written from the tree. */
    private static final int MAX_MD_KEYS = 8;

    private String idKey;
    private byte[] idKeyBytes;
    private boolean idKeyIsPath;
    private int idFrom;
    private int idTo;
    private int mdFrom;
    private int mdTo;
    private boolean mdSimple;
    private final int[] keyFrom = new int[MAX_MD_KEYS];
    private final int[] keyTo = new int[MAX_MD_KEYS];
    private int end;

    SinkScan() {
        super(512);
    }

    /**
     * Scans the readable bytes of {@code buf} (not consumed) for the id at top-level key {@code key}:
     * {@link #FOUND} or {@link #UNSURE}. A key that is a path (with a backquote) is left to the tree.
     */
    int scan(ByteBuf buf, String key) {
        if (!key.equals(idKey)) {
            // looked at once per key, not per message: the key is config
            idKeyIsPath = key.indexOf('`') >= 0 || key.isEmpty();
            idKeyBytes = quoted(key);
            idKey = key;
        }
        if (idKeyIsPath) return UNSURE;
        idFrom = -1;
        mdFrom = -1;
        mdSimple = false;
        if (!load(buf)) return UNSURE;
        int i = ws(0);
        if (i >= n || a[i] != '{') return UNSURE;
        if (topObject(i) < 0) return UNSURE;
        if (ws(end) != n) return UNSURE;   // bytes after the object: the tree's reading is Jackson's to say
        if (idFrom >= 0 && a[idFrom] == '"' && escaped(idFrom, idTo)) return UNSURE;
        if (idFrom >= 0 && a[idFrom] != '"' && a[idFrom] != 'n') return UNSURE;   // a number, object...: asText's
        return FOUND;
    }

    /** After {@link #FOUND}: the id's text, null when there is none (absent or JSON null). */
    String id() {
        if (idFrom < 0 || a[idFrom] == 'n') return null;
        return new String(a, idFrom + 1, idTo - idFrom - 2, StandardCharsets.UTF_8);
    }

    /** After {@link #FOUND}: whether the message has a {@code __md_trq__} object. */
    boolean hasMd() {
        return mdFrom >= 0;
    }

    /** After {@link #FOUND}: whether {@link #writeAck} writes the ack (else the tree must). */
    boolean ackable() {
        return mdFrom >= 0 && mdSimple;
    }

    /** After {@link #FOUND}: the length of the metadata's bytes. */
    int mdLength() {
        return mdFrom < 0 ? 0 : mdTo - mdFrom;
    }

    /** After {@link #ackable()}: {@code {"__md_trq__":{...its fields...,"result":0}}}, as Jackson writes it. */
    void writeAck(ByteBuf out) {
        out.writeBytes(ACK_OPEN);
        out.writeBytes(a, mdFrom, mdTo - 1 - mdFrom);   // the object without its closing brace
        if (mdTo - mdFrom > 2) out.writeByte(',');
        out.writeBytes(ACK_RESULT);
    }

    // --- the walk (the rest is JsonScan's): each method answers the index after, or -1 ---

    private int topObject(int i) {
        i = first(i, '}');
        if (i <= 0) return end = ~i;
        while (true) {
            int ks = i;
            i = key(i);
            if (i < 0) return -1;
            if (escaped(ks, i)) return -1;   // a key spelt with escapes may be one of ours: the tree knows
            boolean isId = equalsAt(ks, i, idKeyBytes);
            boolean isMd = !isId && equalsAt(ks, i, MD_KEY);
            i = colon(i);
            if (i < 0) return -1;
            int vs = i;
            if (isMd && i < n && a[i] == '{') {
                i = mdObject(i);
                if (i < 0) return -1;
                mdFrom = vs;
                mdTo = i;
            } else {
                i = value(i, 1);
                if (i < 0) return -1;
                if (isMd) mdFrom = -1;   // a later __md_trq__ that is no object hides an earlier one (the last wins)
                if (isId) {
                    idFrom = vs;
                    idTo = i;
                }
            }
            i = next(i, '}');
            if (i <= 0) return end = ~i;
        }
    }

    /** The metadata object at {@code i}; sets {@link #mdSimple}. */
    private int mdObject(int i) {
        int open = i;
        mdSimple = true;
        int keys = 0;
        i = first(i, '}');
        if (i <= 0) {
            i = ~i;
            if (i != open + 2) mdSimple = false;   // "{ }": Jackson writes "{}"
            return i;
        }
        if (i != open + 1) mdSimple = false;
        while (true) {
            int ks = i;
            i = key(i);
            if (i < 0) return -1;
            int ke = i;
            if (!jacksonForm || equalsAt(ks, ke, RESULT_KEY) || keys == MAX_MD_KEYS) {
                mdSimple = false;
            } else {
                for (int k = 0; k < keys && mdSimple; k++) {
                    if (equalsAt(ks, ke, keyFrom[k], keyTo[k])) mdSimple = false;   // a key twice: the tree has one
                }
                keyFrom[keys] = ks;
                keyTo[keys] = ke;
                keys++;
            }
            if (ke >= n || a[ke] != ':') mdSimple = false;
            i = colon(i);
            if (i < 0) return -1;
            if (i != ke + 1) mdSimple = false;
            int vs = i;
            i = value(i, 2);
            if (i < 0) return -1;
            if (!copiedAsWritten(vs, i)) mdSimple = false;
            int after = i;
            i = next(i, '}');
            if (i <= 0) {
                if (~i != after + 1) mdSimple = false;
                return ~i;
            }
            if (i != after + 1) mdSimple = false;   // white space around the comma
        }
    }

    /** Whether the value token in [from, to) is what Jackson writes for the node it reads from it. */
    private boolean copiedAsWritten(int from, int to) {
        byte c = a[from];
        if (c == '"') {
            string(from);   // sets jacksonForm for this token
            return jacksonForm;
        }
        if (c == 't' || c == 'f' || c == 'n') return true;
        if (c == '-' || isDigit(c)) {
            int k = c == '-' ? from + 1 : from;
            if (to - k > 18) return false;                     // a BigInteger, or beyond: the tree's own form
            if (c == '-' && to - k == 1 && a[k] == '0') return false;   // -0 is written 0
            for (int j = k; j < to; j++) {
                if (!isDigit(a[j])) return false;              // a fraction or an exponent
            }
            return true;
        }
        return false;   // an object or an array: not copied
    }

    private boolean equalsAt(int from, int to, int otherFrom, int otherTo) {
        if (to - from != otherTo - otherFrom) return false;
        for (int k = 0; k < to - from; k++) {
            if (a[from + k] != a[otherFrom + k]) return false;
        }
        return true;
    }
}
