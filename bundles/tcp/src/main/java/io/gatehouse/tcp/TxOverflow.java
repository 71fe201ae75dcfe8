// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

/** What C_TCP does when its tx queue is full ({@code max_tx_queue}, {@code max_tx_bytes}): attribute {@code tx_overflow}. */
enum TxOverflow {
    /** Error "tcp tx queue overflow, closing": the queue is discarded and the connection dropped (Yuneta's way). */
    CLOSE("close"),
    /** Error "throw away tcp tx message": the oldest queued messages make room for the new one. */
    DROP_OLDEST("drop_oldest");

    /** The values the attribute takes, for the messages that refuse another one. */
    static final String KNOWN = "close, drop_oldest";

    private final String value;

    TxOverflow(String value) {
        this.value = value;
    }

    /** The attribute value. */
    String value() {
        return value;
    }

    /** The policy an attribute value names, or null when it names none. */
    static TxOverflow of(String value) {
        for (TxOverflow p : values()) {
            if (p.value.equals(value)) return p;
        }
        return null;
    }
}
