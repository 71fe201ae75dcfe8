// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.JsonNode;
import io.gatehouse.support.JsonScan;

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
    RecordTm() {
        super(512);
    }

    /**
     * The tm of the record {@code rec[off, off + len)} for {@code tkey} (not empty) and the topic's system flag;
     * {@code Long.MIN_VALUE} when the bytes are not an object this scan reads (the caller parses them). The field is
     * looked up in {@code fields}, the record's member index ({@code Kw.RECORD_FIELDS}), when given, else walked to.
     */
    long tm(byte[] rec, int off, int len, int[] fields, String tkey, int sf) {
        if (!load(rec, off, len)) return Long.MIN_VALUE;
        int i = fieldValue(tkey, fields);
        if (i == UNSURE) return Long.MIN_VALUE;
        if (i == ABSENT) return 0;   // no such field
        return valueEnd < 0 ? Long.MIN_VALUE : tmOf(i, valueEnd, sf);
    }

    /** {@link RecordJson#tmOf} of the value in [from, to). */
    private long tmOf(int from, int to, int sf) {
        byte c = a[from];
        if (c == '-' || isDigit(c)) {
            for (int k = from; k < to; k++) {
                if (a[k] == '.' || a[k] == 'e' || a[k] == 'E') return 0;   // a double: not integral
            }
            if (to - from <= 18) {
                // a JSON integer the scan checked, at most 18 digits: it fits, and no String per record is made
                boolean negative = c == '-';
                long v = 0;
                for (int k = negative ? from + 1 : from; k < to; k++) v = v * 10 + (a[k] - '0');
                return negative ? -v : v;
            }
            return new BigInteger(new String(a, from, to - from, StandardCharsets.US_ASCII)).longValue();
        }
        if (c != '"') return 0;
        JsonNode text = node(from, to);
        if (text == null) return Long.MIN_VALUE;
        return RecordJson.tmOfNode(text, sf);
    }
}
