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
        if (path.indexOf('`') < 0 && load(buf)) {
            int r = field(path);
            if (r == ABSENT) return null;
            if (r >= 0) {
                int end = value(r, 1);
                return end < 0 ? null : node(r, end);
            }
        }
        return fromTree(buf, path);
    }

    /**
     * The {@code lastdigits} child of the record held by {@code buf} read from its bytes, or -1 for the caller to read
     * the key's node ({@link #get}) and route from it. Read here when the key is a top-level string with no escape
     * whose last {@code digits} characters are 1 to 18 decimal digits (an id or a counter: the usual key), which
     * are then its last bytes; the answer is {@link KeyRouting#lastdigits}'s, with no String and no node per message.
     */
    int lastdigits(ByteBuf buf, String path, int digits, int children) {
        if (path.indexOf('`') >= 0 || !load(buf)) return -1;
        int r = field(path);
        if (r < 0 || a[r] != '"') return -1;
        int end = string(r);
        if (end < 0 || escaped(r, end)) return -1;
        int textEnd = end - 1;
        int tailFrom = Math.max(r + 1, textEnd - digits);
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
