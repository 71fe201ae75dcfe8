// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;

/**
 * What an input gclass needs from the relay's ack of one of its messages, read from the ack's bytes with no JSON
 * tree: the integers it put in the message's {@code __md_trq__} (named at construction) and the result (the
 * metadata's {@code result}, else the top level's, else 0). Every message comes back as one ack, and parsing each
 * into a tree, or with a streaming parser, to read four numbers was up to a fifth of the core loop's time per
 * message (C_PROT_HTTP_SR, C_PROT_MQTT).
 *
 * <p>The walk is JsonScan's (as strict as Jackson's default parser; the last of a key given twice wins, as in the
 * tree). It answers {@link #FOUND} only when its answer is the tree's for sure: the ack is a JSON object whose last
 * top-level {@code __md_trq__} is an object; each named field, when present, an integer of at most its digits that
 * fits a long; the result that counts, when present, an integer of at most 9 digits. Anything else (a string number, a fraction, a key spelt with escapes, no metadata, a huge ack) is
 * {@link #UNSURE}: the caller reads the ack with Jackson as before.
 *
 * <p>One per gobj, used on the core loop only.
 */
public class MdAckScan extends JsonScan {
    /** The fields were read; take them. */
    public static final int FOUND = 0;
    /** Not an ack this scan vouches for: parse it to know. */
    public static final int UNSURE = -2;

    private static final byte[] MD_KEY = ascii("\"" + Kw.MD_TRQ + "\"");
    private static final byte[] RESULT_KEY = ascii("\"" + Kw.RESULT + "\"");
    private static final byte[] LONG_MAX = ascii(Long.toString(Long.MAX_VALUE));

    private static final int ABSENT = 0;
    private static final int READ = 1;
    private static final int OTHER = 2;

    private final byte[][] keys;
    private final int[] maxDigits;
    private final int[] states;
    private final long[] values;
    private boolean md;
    private int mdResultState;
    private int topResultState;
    private long mdResultValue;
    private long topResultValue;
    private long lastInteger;
    /** Index after the top-level object, set by {@link #topObject}. */
    private int end;

    /**
     * A scan of the fields {@code names} of the metadata, field {@code k} an integer of at most {@code digits[k]}
     * digits (19: any long).
     */
    protected MdAckScan(String[] names, int[] digits) {
        super(256);
        if (names.length != digits.length) throw new IllegalArgumentException("one digit count per name");
        keys = new byte[names.length][];
        for (int k = 0; k < names.length; k++) keys[k] = quoted(names[k]);
        maxDigits = digits.clone();
        states = new int[names.length];
        values = new long[names.length];
    }

    /** Scans the readable bytes of {@code buf} (not consumed): {@link #FOUND} or {@link #UNSURE}. */
    public final int scan(ByteBuf buf) {
        md = false;
        topResultState = ABSENT;
        if (!load(buf)) return UNSURE;
        int i = ws(0);
        if (i >= n || a[i] != '{') return UNSURE;
        if (topObject(i) < 0 || !md) return UNSURE;
        if (ws(end) != n) return UNSURE;   // bytes after the object: Jackson's tree reads only the first value
        for (int state : states) {
            if (state == OTHER) return UNSURE;
        }
        int res = mdResultState != ABSENT ? mdResultState : topResultState;
        return res == OTHER ? UNSURE : FOUND;
    }

    /** After {@link #FOUND}: field {@code k} of the metadata, {@code absent} when it has none. */
    protected final long field(int k, long absent) {
        return states[k] == READ ? values[k] : absent;
    }

    /** After {@link #FOUND}: the result (the metadata's, else the top level's), 0 when there is none. */
    public final int result() {
        if (mdResultState == READ) return (int) mdResultValue;
        return topResultState == READ ? (int) topResultValue : 0;
    }

    // --- the walk of the ack's own part (the rest is JsonScan's): each method answers the index after, or -1 ---

    private int topObject(int i) {
        i = first(i, '}');
        if (i <= 0) return end = ~i;
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
            if (i <= 0) return end = ~i;
        }
    }

    private int mdObject(int i) {
        java.util.Arrays.fill(states, ABSENT);
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
            if (equalsAt(ks, ke, RESULT_KEY)) {
                mdResultState = integer(vs, i, 9);
                mdResultValue = lastInteger;
            } else {
                for (int k = 0; k < keys.length; k++) {
                    if (equalsAt(ks, ke, keys[k])) {
                        states[k] = integer(vs, i, maxDigits[k]);
                        values[k] = lastInteger;
                        break;
                    }
                }
            }
            i = next(i, '}');
            if (i <= 0) return ~i;
        }
    }

    /**
     * The checked value token in [from, to): {@link #READ} (into {@link #lastInteger}) when it is an integer of at
     * most {@code maxDigits} digits that fits a long (19 digits: not above {@link Long#MAX_VALUE}, and not negative),
     * which every reading of the tree answers alike; {@link #OTHER} otherwise.
     */
    private int integer(int from, int to, int maxDigits) {
        int k = from;
        if (a[k] == '-') k++;
        int digits = to - k;
        if (digits < 1 || digits > maxDigits) return OTHER;
        if (digits == 19) {
            if (k > from) return OTHER;
            for (int j = 0; j < 19; j++) {
                if (a[k + j] != LONG_MAX[j]) {
                    if (a[k + j] > LONG_MAX[j]) return OTHER;
                    break;
                }
            }
        }
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
