// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.support.JsonScan;
import io.netty.buffer.ByteBuf;

import java.io.IOException;

/**
 * The routing key of a message handed as its record's bytes ({@link Kw#JSON_RECORD}): the value of a top-level
 * field, read by a scan of the bytes with no tree, the same node {@code Kw.get(dict, key)} answers for the dict.
 * A record is the compact JSON Jackson writes for a dict (no key twice, strings escaped as Jackson escapes them),
 * so the field is found by its name's bytes. A nested key path (with a backquote), or bytes the scan does not take,
 * are answered from Jackson's tree of the record, as for a dict.
 *
 * <p>One per gate, used on the core loop only.
 */
final class RecordKey extends JsonScan {
    RecordKey() {
        super(512);
    }

    /** The value of {@code path} in the record held by {@code buf} (not consumed); null when it has none. */
    JsonNode get(ByteBuf buf, String path) {
        lastdigits(buf, null, path, 0, 0);
        return key;
    }

    /**
     * The {@code lastdigits} child among {@code children} of the record held by {@code buf} (not consumed), or -1
     * when the caller routes from the key's node, which {@link #key} then holds (null when the record has none). The
     * child is read from the bytes when the key is a top-level string with no escape whose last {@code digits}
     * characters are 1 to 18 decimal digits (an id or a counter: the usual key), which are then its last bytes: the
     * answer is {@link KeyRouting#lastdigits}'s, with no String and no node per message. {@code children} 0: only
     * the node is read. {@code fields}, the record's member index ({@link Kw#RECORD_FIELDS}) or null, finds the
     * field without walking the record.
     */
    int lastdigits(ByteBuf buf, int[] fields, String path, int digits, int children) {
        key = null;
        if (path.indexOf('`') < 0 && load(buf)) {
            int r = fieldValue(path, fields);
            if (r == ABSENT) return -1;
            if (r >= 0) {
                if (valueEnd < 0) return -1;
                int child = children > 0 ? fromDigits(r, valueEnd, digits, children) : -1;
                if (child < 0) key = node(r, valueEnd);
                return child;
            }
        }
        key = fromTree(buf, path);
        return -1;
    }

    /** After {@link #lastdigits} answered -1: the key's node, null when the record has none. */
    JsonNode key() {
        return key;
    }

    private JsonNode key;

    /** The child of the value in [from, to) when it is a string whose last {@code digits} bytes say it; else -1. */
    private int fromDigits(int from, int to, int digits, int children) {
        if (a[from] != '"' || escaped(from, to)) return -1;
        int textEnd = to - 1;
        int tailFrom = Math.max(from + 1, textEnd - digits);
        if (tailFrom == textEnd || textEnd - tailFrom > 18) return -1;
        long v = 0;
        for (int k = tailFrom; k < textEnd; k++) {
            byte c = a[k];
            if (!isDigit(c)) return -1;
            v = v * 10 + (c - '0');
        }
        return (int) (v % children);
    }

    private static JsonNode fromTree(ByteBuf buf, String path) {
        try {
            ObjectNode tree = Kw.parse(buf.duplicate());
            return Kw.get(tree, path);
        } catch (IOException e) {
            return null;
        }
    }
}
