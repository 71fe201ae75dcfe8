// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.TrQueue;
import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;

/**
 * What C_QIOGATE needs from a sink's ack, read from its bytes with no JSON tree: the {@code __msg_rowid__},
 * {@code __msg_t__} and {@code __msg_gen__} of its top-level {@code __md_trq__} object, and the result (the
 * metadata's {@code result}, else the top level's). Parsing every ack into a tree to read three numbers cost more
 * than matching it.
 *
 * <p>{@link #scan} walks the readable bytes once, as strictly as Jackson's default parser reads them (strings with
 * their escapes and UTF-8, numbers, literals, nesting; the same walk as the relay's scan of {@code __md_trq__}),
 * and takes, as Jackson's tree does, the last of a key given twice (a key of the top or the metadata spelt with
 * escapes is left to Jackson). It answers {@link #FOUND} only when the
 * answer is the tree's for sure: the message is a JSON object; its last top-level {@code __md_trq__} is an
 * object; the rowid there is a positive integer of at most 18 digits; {@code __msg_t__} and {@code __msg_gen__},
 * when present, are such integers too (negative allowed); the result that counts, when present, an integer of at
 * most 9 digits. Everything else (a string rowid, a fraction, no metadata, a BOM, nesting deeper than
 * {@value #MAX_DEPTH}, an invalid byte, a huge ack) is {@link #UNSURE}: the gate parses the ack with Jackson as
 * before, so it takes every ack as it did.
 *
 * <p>One per gate, used on the core loop only; the bytes of the last scan are kept in a scratch array until the
 * next scan (arrays above {@value #KEEP} bytes are not kept).
 */
final class AckScan {
    /** The ack names a rowid the scan vouches for; read the fields. */
    static final int FOUND = 0;
    /** Not an ack this scan vouches for: parse it to know. */
    static final int UNSURE = -2;

    static final int MAX_DEPTH = 64;
    static final int KEEP = 64 * 1024;
    /** Larger acks go to Jackson (whose own limits then apply). */
    static final int MAX_BYTES = 16 * 1024 * 1024;
    private static final int MAX_NUMBER = 100;
    /** Jackson's default limit of a field name's length (longer ones are left to it, and it refuses them). */
    private static final int MAX_NAME = 50_000;

    private static final byte[] MD_KEY = ascii("\"" + Kw.MD_TRQ + "\"");
    private static final byte[] RESULT_KEY = ascii("\"" + Kw.RESULT + "\"");
    private static final byte[] ROWID_KEY = ascii("\"" + TrQueue.MSG_ROWID + "\"");
    private static final byte[] T_KEY = ascii("\"" + TrQueue.MSG_T + "\"");
    private static final byte[] GEN_KEY = ascii("\"" + TrQueue.MSG_GEN + "\"");
    private static final byte[] TRUE = ascii("true");
    private static final byte[] FALSE = ascii("false");
    private static final byte[] NULL = ascii("null");

    /** A field's state after the scan: absent, an integer the scan read, or a value it cannot read as the tree does. */
    private static final int ABSENT = 0;
    private static final int READ = 1;
    private static final int OTHER = 2;

    private byte[] scratch = new byte[256];
    private byte[] a = scratch;
    private int n;

    private boolean md;
    private int rowidState;
    private int tState;
    private int genState;
    private int mdResultState;
    private int topResultState;
    private long rowidValue;
    private long tValue;
    private long genValue;
    private long mdResultValue;
    private long topResultValue;

    /** Scans the readable bytes of {@code buf} (not consumed): {@link #FOUND} or {@link #UNSURE}. */
    int scan(ByteBuf buf) {
        md = false;
        topResultState = ABSENT;
        n = buf.readableBytes();
        if (n > MAX_BYTES) return UNSURE;
        if (n <= scratch.length) {
            a = scratch;
        } else if (n <= KEEP) {
            scratch = new byte[Math.min(KEEP, Integer.highestOneBit(n - 1) << 1)];
            a = scratch;
        } else {
            a = new byte[n];
        }
        buf.getBytes(buf.readerIndex(), a, 0, n);
        int i = ws(0);
        if (i >= n || a[i] != '{') return UNSURE;
        if (topObject(i) < 0 || !md) return UNSURE;
        if (rowidState != READ || rowidValue <= 0) return UNSURE;
        if (tState == OTHER || genState == OTHER) return UNSURE;
        // the metadata's result counts when it has one, else the top's (at most 9 digits: an int as it is)
        int res = mdResultState != ABSENT ? mdResultState : topResultState;
        return res == OTHER ? UNSURE : FOUND;
    }

    /** After {@link #FOUND}: the metadata's {@code __msg_rowid__} (positive). */
    long rowid() {
        return rowidValue;
    }

    /** After {@link #FOUND}: whether the metadata has a {@code __msg_t__}. */
    boolean hasT() {
        return tState == READ;
    }

    /** After {@link #FOUND}: the metadata's {@code __msg_t__}, 0 when it has none (as the tree's {@code asLong(0)}). */
    long t() {
        return tState == READ ? tValue : 0;
    }

    /** After {@link #FOUND}: whether the metadata has a {@code __msg_gen__}. */
    boolean hasGen() {
        return genState == READ;
    }

    /** After {@link #FOUND}: the metadata's {@code __msg_gen__} (when {@link #hasGen}). */
    long gen() {
        return genValue;
    }

    /** After {@link #FOUND}: whether the ack has a result (in its metadata, else at its top). */
    boolean hasResult() {
        return mdResultState == READ || topResultState == READ;
    }

    /** After {@link #FOUND}: the result, 0 when it has none. */
    int result() {
        if (mdResultState == READ) return (int) mdResultValue;
        return topResultState == READ ? (int) topResultValue : 0;
    }

    // --- The walk: each method takes the index of a token's first byte, answers the index after it, or -1 ---

    private int topObject(int i) {
        i = ws(i + 1);
        if (i < n && a[i] == '}') return i + 1;
        while (true) {
            if (i >= n || a[i] != '"') return -1;
            int ks = i;
            i = key(i);
            if (i < 0) return -1;
            if (escaped(ks, i)) return -1;   // a key spelt with escapes may be one of ours: the tree knows
            boolean isMd = equalsAt(ks, i, MD_KEY);
            boolean isResult = !isMd && equalsAt(ks, i, RESULT_KEY);
            i = ws(i);
            if (i >= n || a[i] != ':') return -1;
            i = ws(i + 1);
            if (isMd && i < n && a[i] == '{') {
                i = mdObject(i);
                if (i < 0) return -1;
                md = true;
            } else {
                if (isMd) md = false;   // a later __md_trq__ that is no object hides an earlier one (the last wins)
                int vs = i;
                i = value(i, 1);
                if (i < 0) return -1;
                if (isResult) {
                    topResultState = integer(vs, i, 9);
                    topResultValue = lastInteger;
                }
            }
            i = ws(i);
            if (i >= n) return -1;
            if (a[i] == ',') {
                i = ws(i + 1);
            } else {
                return a[i] == '}' ? i + 1 : -1;
            }
        }
    }

    /** The metadata object: its fields of the ack, the last of each (as the tree keeps it). */
    private int mdObject(int i) {
        rowidState = ABSENT;
        tState = ABSENT;
        genState = ABSENT;
        mdResultState = ABSENT;
        i = ws(i + 1);
        if (i < n && a[i] == '}') return i + 1;
        while (true) {
            if (i >= n || a[i] != '"') return -1;
            int ks = i;
            i = key(i);
            if (i < 0) return -1;
            int ke = i;
            if (escaped(ks, ke)) return -1;
            i = ws(i);
            if (i >= n || a[i] != ':') return -1;
            i = ws(i + 1);
            int vs = i;
            i = value(i, 2);
            if (i < 0) return -1;
            if (equalsAt(ks, ke, ROWID_KEY)) {
                rowidState = integer(vs, i, 18);
                rowidValue = lastInteger;
            } else if (equalsAt(ks, ke, T_KEY)) {
                tState = integer(vs, i, 18);
                tValue = lastInteger;
            } else if (equalsAt(ks, ke, GEN_KEY)) {
                genState = integer(vs, i, 18);
                genValue = lastInteger;
            } else if (equalsAt(ks, ke, RESULT_KEY)) {
                mdResultState = integer(vs, i, 9);
                mdResultValue = lastInteger;
            }
            i = ws(i);
            if (i >= n) return -1;
            if (a[i] == ',') {
                i = ws(i + 1);
            } else {
                return a[i] == '}' ? i + 1 : -1;
            }
        }
    }

    private long lastInteger;

    private boolean escaped(int from, int to) {
        for (int k = from + 1; k < to - 1; k++) {
            if (a[k] == '\\') return true;
        }
        return false;
    }

    /**
     * The checked value token in [from, to): {@link #READ} (into {@link #lastInteger}) when it is an integer of at
     * most {@code maxDigits} digits, which every reading of the tree answers alike; {@link #OTHER} otherwise.
     */
    private int integer(int from, int to, int maxDigits) {
        int k = from;
        if (a[k] == '-') k++;
        int digits = to - k;
        if (digits < 1 || digits > maxDigits) return OTHER;
        long v = 0;
        for (int j = k; j < to; j++) {
            byte c = a[j];
            if (!isDigit(c)) return OTHER;
            v = v * 10 + (c - '0');
        }
        lastInteger = k > from ? -v : v;
        return READ;
    }

    private int value(int i, int depth) {
        if (i >= n) return -1;
        byte c = a[i];
        switch (c) {
            case '"': return string(i);
            case '{': return object(i, depth + 1);
            case '[': return array(i, depth + 1);
            case 't': return literal(i, TRUE);
            case 'f': return literal(i, FALSE);
            case 'n': return literal(i, NULL);
            default: return c == '-' || (c >= '0' && c <= '9') ? number(i) : -1;
        }
    }

    private int object(int i, int depth) {
        if (depth > MAX_DEPTH) return -1;
        i = ws(i + 1);
        if (i < n && a[i] == '}') return i + 1;
        while (true) {
            if (i >= n || a[i] != '"') return -1;
            i = key(i);
            if (i < 0) return -1;
            i = ws(i);
            if (i >= n || a[i] != ':') return -1;
            i = value(ws(i + 1), depth);
            if (i < 0) return -1;
            i = ws(i);
            if (i >= n) return -1;
            if (a[i] == ',') {
                i = ws(i + 1);
            } else {
                return a[i] == '}' ? i + 1 : -1;
            }
        }
    }

    private int array(int i, int depth) {
        if (depth > MAX_DEPTH) return -1;
        i = ws(i + 1);
        if (i < n && a[i] == ']') return i + 1;
        while (true) {
            i = value(i, depth);
            if (i < 0) return -1;
            i = ws(i);
            if (i >= n) return -1;
            if (a[i] == ',') {
                i = ws(i + 1);
            } else {
                return a[i] == ']' ? i + 1 : -1;
            }
        }
    }

    /** A field name: a string, not longer than Jackson takes. */
    private int key(int i) {
        int end = string(i);
        return end - i > MAX_NAME ? -1 : end;
    }

    /** A string token: escapes as JSON has them, no control character, valid UTF-8. */
    private int string(int i) {
        int k = i + 1;
        while (k < n) {
            int c = a[k];
            if (c == '"') return k + 1;
            if (c == '\\') {
                if (++k >= n) return -1;
                int e = a[k];
                if (e == 'u') {
                    if (k + 4 >= n) return -1;
                    for (int h = 1; h <= 4; h++) {
                        if (!isHex(a[k + h])) return -1;
                    }
                    k += 5;
                } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                    k++;
                } else {
                    return -1;
                }
            } else if (c >= 0x20) {
                k++;
            } else if (c >= 0) {
                return -1;   // a control character
            } else {
                k = utf8(k);
                if (k < 0) return -1;
            }
        }
        return -1;
    }

    /** A multi-byte UTF-8 sequence at {@code k} (well formed: no overlong form, no surrogate, at most U+10FFFF). */
    private int utf8(int k) {
        int b0 = a[k] & 0xff;
        int len;
        int min2;
        int max2;
        if (b0 >= 0xc2 && b0 <= 0xdf) {
            len = 2; min2 = 0x80; max2 = 0xbf;
        } else if (b0 >= 0xe0 && b0 <= 0xef) {
            len = 3;
            min2 = b0 == 0xe0 ? 0xa0 : 0x80;
            max2 = b0 == 0xed ? 0x9f : 0xbf;
        } else if (b0 >= 0xf0 && b0 <= 0xf4) {
            len = 4;
            min2 = b0 == 0xf0 ? 0x90 : 0x80;
            max2 = b0 == 0xf4 ? 0x8f : 0xbf;
        } else {
            return -1;
        }
        if (k + len > n) return -1;
        int b1 = a[k + 1] & 0xff;
        if (b1 < min2 || b1 > max2) return -1;
        for (int j = 2; j < len; j++) {
            if ((a[k + j] & 0xc0) != 0x80) return -1;
        }
        return k + len;
    }

    /** A number as JSON has it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
    private int number(int i) {
        int k = i;
        if (a[k] == '-') k++;
        if (k >= n) return -1;
        if (a[k] == '0') {
            k++;
        } else if (isDigit(a[k])) {
            while (k < n && isDigit(a[k])) k++;
        } else {
            return -1;
        }
        if (k < n && a[k] == '.') {
            k++;
            if (k >= n || !isDigit(a[k])) return -1;
            while (k < n && isDigit(a[k])) k++;
        }
        if (k < n && (a[k] == 'e' || a[k] == 'E')) {
            k++;
            if (k < n && (a[k] == '+' || a[k] == '-')) k++;
            if (k >= n || !isDigit(a[k])) return -1;
            while (k < n && isDigit(a[k])) k++;
        }
        return k - i > MAX_NUMBER ? -1 : k;
    }

    private int literal(int i, byte[] word) {
        if (i + word.length > n) return -1;
        for (int j = 1; j < word.length; j++) {
            if (a[i + j] != word[j]) return -1;
        }
        return i + word.length;
    }

    private int ws(int i) {
        while (i < n && isWs(a[i])) i++;
        return i;
    }

    private boolean equalsAt(int from, int to, byte[] word) {
        return to - from == word.length && java.util.Arrays.equals(a, from, to, word, 0, word.length);
    }

    private static boolean isWs(byte c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
    }

    private static boolean isDigit(byte c) {
        return c >= '0' && c <= '9';
    }

    private static boolean isHex(byte c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
