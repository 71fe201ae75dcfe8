// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The answer of every command and stats read: {@code {"result", "comment", "schema", "data"}}.
 * A negative result with an empty comment gets the comment {@code "(see log)"}, as in Yuneta.
 */
public final class Envelope {
    private Envelope() {}

    public static ObjectNode of(int result, String comment, JsonNode schema, JsonNode data) {
        ObjectNode e = JsonNodeFactory.instance.objectNode();
        e.put("result", result);
        if ((comment == null || comment.isEmpty()) && result < 0) comment = "(see log)";
        e.put("comment", comment == null ? "" : comment);
        e.set("schema", schema == null ? NullNode.instance : schema);
        e.set("data", data == null ? NullNode.instance : data);
        return e;
    }

    public static ObjectNode ok(JsonNode data) {
        return of(0, "", null, data);
    }

    public static ObjectNode ok(String comment, JsonNode data) {
        return of(0, comment, null, data);
    }

    public static ObjectNode error(String comment) {
        return of(-1, comment, null, null);
    }

    public static ObjectNode error(int result, String comment) {
        return of(result, comment, null, null);
    }

    public static int result(JsonNode envelope) {
        return envelope == null ? -1 : envelope.path("result").asInt(-1);
    }

    public static JsonNode data(JsonNode envelope) {
        return envelope == null ? null : envelope.get("data");
    }
}
