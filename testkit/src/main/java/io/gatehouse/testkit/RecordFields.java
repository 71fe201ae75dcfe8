// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.gatehouse.api.Kw;

import java.io.IOException;
import java.util.Arrays;

/**
 * The member index of a record ({@code Kw.RECORD_FIELDS}) as Jackson's parser locates the tokens, independent of the
 * walks that make and read it: where each top-level key starts (its opening quote).
 */
public final class RecordFields {
    private RecordFields() {
    }

    /** The index of the compact record {@code json}. */
    public static int[] of(byte[] json) {
        int[] out = new int[16];
        int k = 0;
        try (JsonParser p = Kw.MAPPER.getFactory().createParser(json)) {
            if (p.nextToken() != JsonToken.START_OBJECT) throw new IllegalArgumentException("not an object");
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                if (k == out.length) out = Arrays.copyOf(out, out.length * 2);
                out[k++] = (int) p.getTokenLocation().getByteOffset();
                p.nextToken();
                p.skipChildren();
            }
        } catch (IOException e) {
            throw new IllegalArgumentException(e);
        }
        return Arrays.copyOf(out, k);
    }
}
