// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

/** A scheduled timer. Cancelling twice, or after it fired, does nothing. */
@FunctionalInterface
public interface Cancellable {
    Cancellable NONE = () -> {};

    void cancel();
}
