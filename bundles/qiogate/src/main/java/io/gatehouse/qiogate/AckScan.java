// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.support.JsonScan;
import io.netty.buffer.ByteBuf;


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
 * {@value JsonScan#MAX_DEPTH}, an invalid byte, a huge ack) is {@link #UNSURE}: the gate parses the ack with Jackson as
 * before, so it takes every ack as it did.
 *
 * <p>One per gate, used on the core loop only; the bytes of the last scan are kept in a scratch array until the
 * next scan (arrays above {@value JsonScan#KEEP} bytes are not kept).
 */
final class AckScan extends JsonScan {
    /** The ack names a rowid the scan vouches for; read the fields. */
    static final int FOUND = 0;
    /** Not an ack this scan vouches for: parse it to know. */
    static final int UNSURE = -2;

    private static final byte[] MD_KEY = ascii("\"" + Kw.MD_TRQ + "\"");
    private static final byte[] RESULT_KEY = ascii("\"" + Kw.RESULT + "\"");
    private static final byte[] ROWID_KEY = ascii("\"" + TrQueue.MSG_ROWID + "\"");
    private static final byte[] T_KEY = ascii("\"" + TrQueue.MSG_T + "\"");
    private static final byte[] GEN_KEY = ascii("\"" + TrQueue.MSG_GEN + "\"");
    /** How {@link #compact} acks begin. */
    private static final byte[] COMPACT_HEAD = ascii("{\"" + Kw.MD_TRQ + "\":{");

    /** A field's state after the scan: absent, an integer the scan read, or a value it cannot read as the tree does. */
    private static final int ABSENT = 0;
    private static final int READ = 1;
    private static final int OTHER = 2;

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

    AckScan() {
        super(256);
    }

    /** Scans the readable bytes of {@code buf} (not consumed): {@link #FOUND} or {@link #UNSURE}. */
    int scan(ByteBuf buf) {
        md = false;
        topResultState = ABSENT;
        if (!load(buf)) return UNSURE;
        if (!compact()) {
            int i = ws(0);
            if (i >= n || a[i] != '{') return UNSURE;
            if (topObject(i) < 0) return UNSURE;
        }
        if (!md) return UNSURE;
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

    /**
     * The ack as sinks and C_QIOGATE peers write it, {@code {"__md_trq__":{"k":integer,...}}} and nothing after it:
     * no whitespace, keys of letters, digits and underscores, integers written as JSON has them (at most 100
     * bytes, as the walk takes them). Read in one pass with no string or UTF-8 checks, since no byte of it can be
     * either; true when the ack has that form (its fields then read as the walk reads them), false to walk it.
     */
    private boolean compact() {
        int h = COMPACT_HEAD.length;
        if (n < h + 2 || !java.util.Arrays.equals(a, 0, h, COMPACT_HEAD, 0, h)) return false;
        rowidState = ABSENT;
        tState = ABSENT;
        genState = ABSENT;
        mdResultState = ABSENT;
        int i = h;
        while (true) {
            if (i >= n || a[i] != '"') return false;
            int ks = i++;
            while (i < n && keyByte(a[i])) i++;
            if (i + 1 >= n || a[i] != '"' || a[i + 1] != ':') return false;
            int ke = ++i;
            int vs = ++i;
            boolean negative = i < n && a[i] == '-';
            if (negative) i++;
            if (i >= n || !isDigit(a[i])) return false;
            if (a[i] == '0' && i + 1 < n && isDigit(a[i + 1])) return false;   // a leading zero: not JSON
            // the value read in the same pass (it is kept only when it has few enough digits not to overflow)
            int ds = i;
            long v = 0;
            while (i < n && isDigit(a[i])) v = v * 10 + (a[i++] - '0');
            if (i - vs > 100 || i >= n) return false;
            mdField(ks, ke, i - ds, negative ? -v : v);
            if (a[i] == ',') {
                i++;
            } else if (a[i] == '}' && i + 2 == n && a[i + 1] == '}') {
                md = true;
                return true;
            } else {
                return false;
            }
        }
    }

    private static boolean keyByte(byte c) {
        return (c >= 'a' && c <= 'z') || c == '_' || (c >= 'A' && c <= 'Z') || isDigit(c);
    }

    // --- Its own part of the walk (the rest is JsonScan's): each method takes the index of a token's first byte, answers the index after it, or -1 ---

    private int topObject(int i) {
        i = first(i, '}');
        if (i <= 0) return ~i;
        while (true) {
            int ks = i;
            i = key(i);
            if (i < 0) return -1;
            if (escaped(ks, i)) return -1;   // a key spelt with escapes may be one of ours: the tree knows
            boolean isMd = equalsAt(ks, i, MD_KEY);
            boolean isResult = !isMd && equalsAt(ks, i, RESULT_KEY);
            i = colon(i);
            if (i < 0) return -1;
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
            i = next(i, '}');
            if (i <= 0) return ~i;
        }
    }

    /** The metadata object: its fields of the ack, the last of each (as the tree keeps it). */
    private int mdObject(int i) {
        rowidState = ABSENT;
        tState = ABSENT;
        genState = ABSENT;
        mdResultState = ABSENT;
        i = first(i, '}');
        if (i <= 0) return ~i;
        while (true) {
            int ks = i;
            i = key(i);
            if (i < 0) return -1;
            int ke = i;
            if (escaped(ks, ke)) return -1;
            i = colon(i);
            int vs = i;
            i = value(i, 2);
            if (i < 0) return -1;
            mdField(ks, ke, vs, i);
            i = next(i, '}');
            if (i <= 0) return ~i;
        }
    }

    /**
     * A field of {@link #compact} metadata, name in [ks, ke), an integer of {@code digits} digits whose value is
     * {@code v} (meaningless past 18 digits): kept when it is one of the ack's, as {@link #mdField} keeps it.
     */
    private void mdField(int ks, int ke, int digits, long v) {
        int upTo18 = digits <= 18 ? READ : OTHER;
        if (equalsAt(ks, ke, ROWID_KEY)) {
            rowidState = upTo18;
            rowidValue = v;
        } else if (equalsAt(ks, ke, T_KEY)) {
            tState = upTo18;
            tValue = v;
        } else if (equalsAt(ks, ke, GEN_KEY)) {
            genState = upTo18;
            genValue = v;
        } else if (equalsAt(ks, ke, RESULT_KEY)) {
            mdResultState = digits <= 9 ? READ : OTHER;
            mdResultValue = v;
        }
    }

    /** A field of the metadata, name in [ks, ke), checked value in [vs, ve): kept when it is one of the ack's. */
    private void mdField(int ks, int ke, int vs, int ve) {
        if (equalsAt(ks, ke, ROWID_KEY)) {
            rowidState = integer(vs, ve, 18);
            rowidValue = lastInteger;
        } else if (equalsAt(ks, ke, T_KEY)) {
            tState = integer(vs, ve, 18);
            tValue = lastInteger;
        } else if (equalsAt(ks, ke, GEN_KEY)) {
            genState = integer(vs, ve, 18);
            genValue = lastInteger;
        } else if (equalsAt(ks, ke, RESULT_KEY)) {
            mdResultState = integer(vs, ve, 9);
            mdResultValue = lastInteger;
        }
    }

    private long lastInteger;

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
}
