// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import java.util.function.BooleanSupplier;

/**
 * Bounded waiting for what only real I/O makes true (bytes through a socket, a thread that ends): the condition is
 * checked every few milliseconds until it holds or the time is up. Never a way to wait for a gobj timer: a test
 * moves those with {@link ManualClock}.
 */
public final class Poll {
    private static final long STEP_MS = 5;

    private Poll() {}

    /** True as soon as {@code condition} holds, false when it still does not after {@code timeoutMs}. */
    public static boolean until(BooleanSupplier condition, long timeoutMs) {
        long end = System.nanoTime() + timeoutMs * 1_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end >= 0) return condition.getAsBoolean();
            try {
                Thread.sleep(STEP_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }
}
