// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;

/**
 * A kw made for one buffer ({@link Kw#withGbuffer}): the gbuffer is a field, not a dict entry, so the kw made
 * per message and per socket read costs two small objects and no map insert. It is never serialised, and a
 * {@link #deepCopy()} does not carry it (as every copy of a gbuffer kw takes a buffer view of its own, see
 * {@link Kw#copy}), nor its {@link Kw#RECORD_FIELDS}. Its dict rarely holds more than {@code __temp__}: a {@link SmallDict}, an array scanned, instead
 * of a hash map.
 */
final class GbufferKw extends ObjectNode {
    private static final long serialVersionUID = 1L;

    transient ByteBuf gbuffer;
    /**
     * {@link Kw#RECORD_FIELDS}, put by {@link Kw#putRef}: a field, not a dict entry, so a record's kw keeps its
     * two-key table (the record mark and the durable token) instead of growing it for the index.
     */
    transient int[] recordFields;

    GbufferKw(JsonNodeFactory f, ByteBuf gbuffer) {
        super(f, new SmallDict());
        this.gbuffer = gbuffer;
    }
}
