// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

/**
 * When a table that grows with what is in flight (a window, the waits of a commit, the acks owed) should give
 * memory back: only once it has stayed under an eighth full for a spell, not the moment it dips there. A window
 * swings from full to nearly empty many times a second under load; a table that halved at every dip grew back
 * through every size at the next burst, and those copies were a tenth of the bytes the durable path's core loop
 * allocated per message. Memory still follows the traffic: a table that stays sparse shrinks, and its bound is the
 * largest in-flight count the configuration allows, not the traffic.
 *
 * <p>The owner calls {@link #shrinkNow} after each operation that took entries out (a removal, a drain); it answers
 * true on the {@code patience}-th call in a row that found the table sparse, and a call that finds it fuller starts
 * the count again. One per table, on its owner's thread.
 */
public final class SparseSpell {
    private int sparseCalls;

    /**
     * Whether a table of {@code capacity} slots holding {@code size} entries should halve now: it is above
     * {@code minCapacity}, under an eighth full, and was so at each of the last {@code patience} calls.
     */
    public boolean shrinkNow(int size, int capacity, int minCapacity, int patience) {
        if (capacity <= minCapacity || (long) size * 8 >= capacity) {
            sparseCalls = 0;
            return false;
        }
        if (++sparseCalls < patience) return false;
        sparseCalls = 0;
        return true;
    }

    /** Starts the count again (the table was cleared or rebuilt). */
    public void reset() {
        sparseCalls = 0;
    }
}
