// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Kw;

/**
 * The input threshold of seeds/001: messages and bytes handed up and not yet credited back by the consumer.
 * When either crosses its limit the input blocks; the message that crossed is the one marked
 * {@code is_blocked}; a credit ({@link Ev#EV_RESUME_INPUT}) below the limits unblocks it. A limit of 0 is
 * no limit. One per connection, on the core thread.
 */
public final class InputThreshold {
    private long pendingMsgs;
    private long pendingBytes;
    private boolean blocked;

    /**
     * Counts one message of {@code bytes} handed up. Answers true when this message crossed a limit (the input
     * is blocked from now on); nothing is counted when both limits are 0.
     */
    public boolean handedUp(long bytes, long maxMsgs, long maxBytes) {
        if (maxMsgs <= 0 && maxBytes <= 0) return false;
        pendingMsgs++;
        pendingBytes += bytes;
        if (!blocked && crossed(maxMsgs, maxBytes)) {
            blocked = true;
            return true;
        }
        return false;
    }

    /**
     * Credits back what the consumer processed: {@code msgs} and {@code bytes} of the kw, or everything when it
     * names neither; then unblocks if the pending amounts are under the limits again.
     */
    public void credit(ObjectNode kw, long maxMsgs, long maxBytes) {
        if (kw != null && (kw.has(Kw.CREDIT_MSGS) || kw.has(Kw.CREDIT_BYTES))) {
            pendingMsgs = Math.max(0, pendingMsgs - Kw.getLong(kw, Kw.CREDIT_MSGS, 0));
            pendingBytes = Math.max(0, pendingBytes - Kw.getLong(kw, Kw.CREDIT_BYTES, 0));
        } else {
            pendingMsgs = 0;
            pendingBytes = 0;
        }
        if (blocked && !crossed(maxMsgs, maxBytes)) blocked = false;
    }

    public boolean isBlocked() {
        return blocked;
    }

    /** Unblocks without forgetting what is pending (the link closed; a new one resets). */
    public void unblock() {
        blocked = false;
    }

    /** A new connection: nothing pending, not blocked. */
    public void reset() {
        pendingMsgs = 0;
        pendingBytes = 0;
        blocked = false;
    }

    private boolean crossed(long maxMsgs, long maxBytes) {
        return (maxMsgs > 0 && pendingMsgs >= maxMsgs) || (maxBytes > 0 && pendingBytes >= maxBytes);
    }
}
