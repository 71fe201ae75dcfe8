// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api.queue;

/** A queue that cannot be opened (topic locked by another process, unreadable descriptor, bad options). */
public class TrQueueException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public TrQueueException(String message) {
        super(message);
    }

    public TrQueueException(String message, Throwable cause) {
        super(message, cause);
    }
}
