// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.http;

import io.gatehouse.support.MdAckScan;

/**
 * What C_PROT_HTTP_SR needs from the relay's ack of one of its messages, read from the ack's bytes with no JSON
 * tree (see {@link MdAckScan}): the {@code conn}, {@code req} and {@code msg} of its {@code __md_trq__} ({@code msg}
 * of at most 9 digits) and the result. Every line of a request comes back as one ack, and parsing each into a tree
 * to read four numbers was a fifth of the core thread's time per line.
 *
 * <p>One per gobj, used on the core loop only.
 */
final class AckScan extends MdAckScan {
    private static final int CONN = 0;
    private static final int REQ = 1;
    private static final int MSG = 2;

    AckScan() {
        super(new String[] {ProtHttpSr.MD_CONN, ProtHttpSr.MD_REQ, ProtHttpSr.MD_MSG}, new int[] {19, 19, 9});
    }

    /** After {@link #FOUND}: the metadata's {@code conn}, -1 when absent (as the tree's {@code asLong(-1)}). */
    long conn() {
        return field(CONN, -1);
    }

    /** After {@link #FOUND}: the metadata's {@code req}, -1 when absent. */
    long req() {
        return field(REQ, -1);
    }

    /** After {@link #FOUND}: the metadata's {@code msg}, -1 when absent. */
    int msg() {
        return (int) field(MSG, -1);
    }
}
