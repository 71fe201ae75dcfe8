// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

/** A topic that cannot be opened; {@link #getMessage()} is the log text, the cause says why. */
final class TopicException extends Exception {
    private static final long serialVersionUID = 1L;

    TopicException(String msg, Throwable cause) {
        super(msg, cause);
    }

    String causeText() {
        Throwable c = getCause();
        return c == null ? "" : c.getClass().getSimpleName() + ": " + c.getMessage();
    }
}
