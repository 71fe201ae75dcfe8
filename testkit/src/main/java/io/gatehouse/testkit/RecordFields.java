// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.gatehouse.api.Kw;

import java.io.IOException;
import java.util.Arrays;

/**
 * The member index of a record ({@code Kw.RECORD_FIELDS}) as Jackson's parser locates the tokens, independent of the
 * walks that make and read it: each top-level key's opening quote, its value's first byte, and the value's end,
 * which in a compact record is the comma before the next key or the closing brace.
 */
public final class RecordFields {
    private RecordFields() {
    }

    /** The index of the compact record {@code json}. */
    public static int[] of(byte[] json) {
        int[] out = new int[48];
        int k = 0;
        try (JsonParser p = Kw.MAPPER.getFactory().createParser(json)) {
            if (p.nextToken() != JsonToken.START_OBJECT) throw new IllegalArgumentException("not an object");
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                if (k + 3 > out.length) out = Arrays.copyOf(out, out.length * 2);
                if (k > 0) out[k - 1] = (int) p.getTokenLocation().getByteOffset() - 1;
                out[k] = (int) p.getTokenLocation().getByteOffset();
                p.nextToken();
                out[k + 1] = (int) p.getTokenLocation().getByteOffset();
                p.skipChildren();
                k += 3;
            }
            if (k > 0) out[k - 1] = json.length - 1;
        } catch (IOException e) {
            throw new IllegalArgumentException(e);
        }
        return Arrays.copyOf(out, k);
    }
}
