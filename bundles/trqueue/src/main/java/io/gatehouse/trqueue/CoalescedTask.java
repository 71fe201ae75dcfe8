// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A task that waits on its executor once at most: asking for it again while it waits does nothing, so one run
 * covers every request made before it started (a group commit's listeners, the owner's write of its stage).
 */
final class CoalescedTask implements Runnable {
    private final AtomicBoolean waiting = new AtomicBoolean();
    private final Runnable body;

    CoalescedTask(Runnable body) {
        this.body = body;
    }

    /** Puts it on {@code executor} unless it waits there already. Any thread. */
    void schedule(Executor executor) {
        if (waiting.get() || !waiting.compareAndSet(false, true)) return;
        try {
            executor.execute(this);
        } catch (RejectedExecutionException e) {
            // the executor is going away: whoever closes the queue does the work
            waiting.set(false);
        }
    }

    @Override
    public void run() {
        waiting.set(false);
        body.run();
    }
}
