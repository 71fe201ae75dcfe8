package io.gatehouse.api;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A command of a gclass. {@code kw} holds the parameters, already checked and converted to their types
 * (missing ones carry their defaults). Answers an {@link Envelope}.
 */
@FunctionalInterface
public interface CommandHandler<B> {
    ObjectNode run(B self, String command, ObjectNode kw, GObj src);
}
