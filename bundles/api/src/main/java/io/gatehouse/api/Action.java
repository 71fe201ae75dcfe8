// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * An FSM action. It runs on the yuno's core thread, owns {@code kw} (release its gbuffer or pass it on) and
 * answers 0 when it went well, a negative number otherwise; {@link GObj#send} returns that to the sender.
 *
 * @param <B> the gobj behaviour type of the gclass
 */
@FunctionalInterface
public interface Action<B> {
    int run(B self, String event, ObjectNode kw, GObj src);
}
