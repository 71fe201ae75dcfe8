// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.TextNode;
import io.gatehouse.api.Kw;
import io.gatehouse.support.JsonScan;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;

/**
 * The message time of a record appended as its bytes ({@link TrQueueImpl#appendJson}): the top-level {@code tkey}
 * field read by a scan of the bytes, with no tree, then taken as {@link RecordJson#tmOf} takes the dict's node
 * (an integer, or a date string; anything else 0). A record is the compact JSON Jackson writes for a dict (no key
 * twice, keys escaped as Jackson escapes them), so the field is found by its name's bytes.
 *
 * <p>One per queue, used by its owner thread only.
 */
final class RecordTm extends JsonScan {
    private String keyName;
    private byte[] keyBytes;

    RecordTm() {
        super(512);
    }

    /**
     * The tm of the record {@code rec[off, off + len)} for {@code tkey} (not empty) and the topic's system flag;
     * {@code Long.MIN_VALUE} when the bytes are not an object this scan reads (the caller parses them).
     */
    long tm(byte[] rec, int off, int len, String tkey, int sf) {
        if (!load(Unpooled.wrappedBuffer(rec, off, len))) return Long.MIN_VALUE;
        if (!tkey.equals(keyName)) {
            try {
                keyBytes = Kw.MAPPER.writeValueAsBytes(tkey);
            } catch (IOException e) {
                return Long.MIN_VALUE;
            }
            keyName = tkey;
        }
        int i = ws(0);
        if (i >= n || a[i] != '{') return Long.MIN_VALUE;
        i = first(i, '}');
        if (i <= 0) return 0;   // {}
        while (true) {
            int ks = i;
            i = key(i);
            if (i < 0) return Long.MIN_VALUE;
            boolean hit = equalsAt(ks, i, keyBytes);
            i = colon(i);
            if (i < 0) return Long.MIN_VALUE;
            int vs = i;
            i = value(i, 1);
            if (i < 0) return Long.MIN_VALUE;
            if (hit) return tmOf(vs, i, sf);
            i = next(i, '}');
            if (i == 0) return Long.MIN_VALUE;
            if (i < 0) return 0;   // no such field
        }
    }

    /** {@link RecordJson#tmOf} of the value in [from, to). */
    private long tmOf(int from, int to, int sf) {
        byte c = a[from];
        if (c == '-' || isDigit(c)) {
            for (int k = from; k < to; k++) {
                if (a[k] == '.' || a[k] == 'e' || a[k] == 'E') return 0;   // a double: not integral
            }
            String digits = new String(a, from, to - from, StandardCharsets.US_ASCII);
            return to - from <= 18 ? Long.parseLong(digits) : new BigInteger(digits).longValue();
        }
        if (c != '"') return 0;
        JsonNode text;
        if (!escaped(from, to)) {
            text = TextNode.valueOf(new String(a, from + 1, to - from - 2, StandardCharsets.UTF_8));
        } else {
            try {
                text = Kw.MAPPER.readTree(a, from, to - from);
            } catch (IOException e) {
                return Long.MIN_VALUE;
            }
        }
        return RecordJson.tmOfNode(text, sf);
    }
}
