// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.http;

import io.gatehouse.api.Kw;
import io.gatehouse.support.JsonScan;
import io.netty.buffer.ByteBuf;

/**
 * What C_PROT_HTTP_SR needs from the relay's ack of one of its messages, read from the ack's bytes with no JSON
 * tree: the {@code conn}, {@code req} and {@code msg} of its top-level {@code __md_trq__} object, and the result
 * (the metadata's {@code result}, else the top level's, else 0). Every line of a request comes back as one ack, and
 * parsing each into a tree to read four numbers was a fifth of the core thread's time per line.
 *
 * <p>The same walk as C_QIOGATE's {@code AckScan} (JsonScan: as strict as Jackson's default parser, the last of a
 * key given twice wins, as in the tree). It answers {@link #FOUND} only when its answer is the tree's for sure: the
 * ack is a JSON object whose last top-level {@code __md_trq__} is an object; {@code conn}, {@code req} and
 * {@code msg}, when present, are integers that fit a long ({@code msg}: at most 9 digits); the result that counts,
 * when present, an integer of at most 9 digits. Anything else (a string number, a fraction, a key spelt with
 * escapes, no metadata, a huge ack) is {@link #UNSURE}: the ack is parsed with Jackson as before.
 *
 * <p>One per gobj, used on the core loop only.
 */
final class AckScan extends JsonScan {
    /** The fields were read; take them. */
    static final int FOUND = 0;
    /** Not an ack this scan vouches for: parse it to know. */
    static final int UNSURE = -2;

    private static final byte[] MD_KEY = ascii("\"" + Kw.MD_TRQ + "\"");
    private static final byte[] RESULT_KEY = ascii("\"" + Kw.RESULT + "\"");
    private static final byte[] CONN_KEY = ascii("\"" + ProtHttpSr.MD_CONN + "\"");
    private static final byte[] REQ_KEY = ascii("\"" + ProtHttpSr.MD_REQ + "\"");
    private static final byte[] MSG_KEY = ascii("\"" + ProtHttpSr.MD_MSG + "\"");
    private static final byte[] LONG_MAX = ascii(Long.toString(Long.MAX_VALUE));

    private static final int ABSENT = 0;
    private static final int READ = 1;
    private static final int OTHER = 2;

    private boolean md;
    private int connState;
    private int reqState;
    private int msgState;
    private int mdResultState;
    private int topResultState;
    private long connValue;
    private long reqValue;
    private long msgValue;
    private long mdResultValue;
    private long topResultValue;
    private long lastInteger;

    AckScan() {
        super(256);
    }

    /** Scans the readable bytes of {@code buf} (not consumed): {@link #FOUND} or {@link #UNSURE}. */
    int scan(ByteBuf buf) {
        md = false;
        topResultState = ABSENT;
        if (!load(buf)) return UNSURE;
        int i = ws(0);
        if (i >= n || a[i] != '{') return UNSURE;
        if (topObject(i) < 0 || !md) return UNSURE;
        if (ws(end) != n) return UNSURE;   // bytes after the object: Jackson's tree reads only the first value
        if (connState == OTHER || reqState == OTHER || msgState == OTHER) return UNSURE;
        int res = mdResultState != ABSENT ? mdResultState : topResultState;
        return res == OTHER ? UNSURE : FOUND;
    }

    /** After {@link #FOUND}: the metadata's {@code conn}, -1 when absent (as the tree's {@code asLong(-1)}). */
    long conn() {
        return connState == READ ? connValue : -1;
    }

    /** After {@link #FOUND}: the metadata's {@code req}, -1 when absent. */
    long req() {
        return reqState == READ ? reqValue : -1;
    }

    /** After {@link #FOUND}: the metadata's {@code msg}, -1 when absent. */
    int msg() {
        return msgState == READ ? (int) msgValue : -1;
    }

    /** After {@link #FOUND}: the result (the metadata's, else the top level's), 0 when there is none. */
    int result() {
        if (mdResultState == READ) return (int) mdResultValue;
        return topResultState == READ ? (int) topResultValue : 0;
    }

    // --- the walk of the ack's own part (the rest is JsonScan's): each method answers the index after, or -1 ---

    /** Index after the top-level object, set by {@link #topObject}. */
    private int end;

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
        connState = ABSENT;
        reqState = ABSENT;
        msgState = ABSENT;
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
            if (equalsAt(ks, ke, CONN_KEY)) {
                connState = integer(vs, i, 19);
                connValue = lastInteger;
            } else if (equalsAt(ks, ke, REQ_KEY)) {
                reqState = integer(vs, i, 19);
                reqValue = lastInteger;
            } else if (equalsAt(ks, ke, MSG_KEY)) {
                msgState = integer(vs, i, 9);
                msgValue = lastInteger;
            } else if (equalsAt(ks, ke, RESULT_KEY)) {
                mdResultState = integer(vs, i, 9);
                mdResultValue = lastInteger;
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
