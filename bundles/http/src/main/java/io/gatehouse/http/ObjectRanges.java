// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.http;

import io.gatehouse.support.RecordScan;

/**
 * The objects of a request body found by support's byte walk ({@link JsonScan}, as strict as Jackson's default
 * parser) instead of Jackson's parser: the walk was half the cost of checking a body of small objects. It vouches
 * for a body or gives up, never refuses one: a body it does not take whole (bad JSON, a value it leaves to Jackson,
 * nesting deeper than it reads) is scanned again by Jackson, which then finds the error and its line, so every body
 * gets the answer Jackson gives it. The same walk tells which objects are already records as they stand (compact,
 * as Jackson writes them) and indexes their members ({@link RecordScan}), so that C_RELAY takes them as they are.
 *
 * <p>One per gobj, used on the core loop only.
 */
final class ObjectRanges extends RecordScan {
    private static final byte[] NOTHING = new byte[0];

    ObjectRanges() {
        super(16 * 1024);
    }

    /**
     * The objects of {@code bytes[off, off + len)} as absolute ranges into {@code bytes}, or null when the walk does
     * not vouch for the body (then ask {@link Ndjson#scan}). At most {@code maxObjects}: one more makes
     * {@link Ndjson.Scan#tooMany}, as Jackson's scan answers it.
     */
    Ndjson.Scan scan(byte[] bytes, int off, int len, int maxObjects) {
        try {
            return walk(bytes, off, len, maxObjects);
        } finally {
            load(NOTHING, 0, 0);   // a body read in place is not kept referenced until the next request
        }
    }

    private Ndjson.Scan walk(byte[] bytes, int off, int len, int maxObjects) {
        if (!load(bytes, off, len)) return null;
        // load reads in place only when the body starts its array: the ranges are then already absolute
        int base = a == bytes ? 0 : off;
        Ndjson.Scan s = new Ndjson.Scan();
        for (int i = ws(0); i < n; i = ws(i)) {
            if (a[i] != '{') return null;
            if (s.count == maxObjects) {
                s.tooMany = true;
                s.error = "more than " + maxObjects + " objects";
                return s;
            }
            int end = recordObject(i);
            if (end < 0) return null;
            s.add(base + i, base + end, recordFields());
            i = end;
        }
        return s;
    }
}
