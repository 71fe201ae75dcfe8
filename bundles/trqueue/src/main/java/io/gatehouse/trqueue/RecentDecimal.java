// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;

/**
 * The decimal digits of the last number written, kept for the next: the messages a send pass reads back were
 * mostly stored in the same second (or millisecond), and writing their time's digits each time was a third of
 * {@link RecordJson#write}. Owner thread only, like the reads it serves.
 */
final class RecentDecimal {
    private long value;
    private byte[] digits;

    void write(ByteBuf out, long v) {
        byte[] d = digits;
        if (d == null || v != value) {
            d = Long.toString(v).getBytes(StandardCharsets.US_ASCII);
            digits = d;
            value = v;
        }
        out.writeBytes(d);
    }
}
