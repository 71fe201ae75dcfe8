// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A command of a gclass: a method of its behaviour, {@code ObjectNode cmdX(ObjectNode kw, GObj src)}. {@code kw}
 * holds the parameters, already checked and converted to their types (missing ones carry their defaults);
 * {@code src} is who asks (null from outside the yuno). Answers an {@link Envelope}; null answers an empty
 * success.
 */
@FunctionalInterface
public interface CommandHandler<B> {
    ObjectNode run(B self, ObjectNode kw, GObj src);
}
