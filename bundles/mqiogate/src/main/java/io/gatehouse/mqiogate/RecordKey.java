// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import io.gatehouse.api.Kw;
import io.gatehouse.support.JsonScan;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

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
    private String keyName;
    private byte[] keyBytes;

    RecordKey() {
        super(512);
    }

    /** The value of {@code path} in the record held by {@code buf} (not consumed); null when it has none. */
    JsonNode get(ByteBuf buf, String path) {
        if (path.indexOf('`') < 0 && load(buf)) {
            int r = find(path);
            if (r == -1) return null;
            if (r >= 0) return valueAt(r);
        }
        return fromTree(buf, path);
    }

    /** The index of the top-level value of {@code key}; -1 when there is none; -2 when the scan cannot tell. */
    private int find(String key) {
        if (!key.equals(keyName)) {
            keyBytes = jsonString(key);
            keyName = key;
        }
        int i = ws(0);
        if (i >= n || a[i] != '{') return -2;
        i = first(i, '}');
        if (i <= 0) return -1;   // {}
        while (true) {
            int ks = i;
            i = key(i);
            if (i < 0) return -2;
            boolean hit = equalsAt(ks, i, keyBytes);
            i = colon(i);
            if (i < 0) return -2;
            if (hit) return i;
            i = value(i, 1);
            if (i < 0) return -2;
            i = next(i, '}');
            if (i <= 0) return i == 0 ? -2 : -1;   // 0: broken; else the object ended without the key
        }
    }

    /** The value at {@code i}: a string decoded here when it has no escape; anything else by Jackson. */
    private JsonNode valueAt(int i) {
        int end = value(i, 1);
        if (end < 0) return null;
        if (a[i] == '"' && !escaped(i, end)) return TextNode.valueOf(new String(a, i + 1, end - i - 2, StandardCharsets.UTF_8));
        try {
            return Kw.MAPPER.readTree(a, i, end - i);
        } catch (IOException e) {
            return null;
        }
    }

    private static JsonNode fromTree(ByteBuf buf, String path) {
        try {
            ObjectNode tree = Kw.parse(buf.duplicate());
            return Kw.get(tree, path);
        } catch (IOException e) {
            return null;
        }
    }

    /** The name as Jackson writes it, quotes included: what a record holds for it. */
    private static byte[] jsonString(String s) {
        try {
            return Kw.MAPPER.writeValueAsBytes(s);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }
}
