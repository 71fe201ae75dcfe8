// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.POJONode;

import java.util.ArrayList;
import java.util.List;

/**
 * Reading the state another revision handed over in a live upgrade, checked: a reference or a list of them of
 * another type than expected is an IllegalArgumentException (core then rebuilds the service), so an import reads
 * everything before it takes anything.
 */
final class HandedState {
    private HandedState() {}

    /** The reference at {@code key}, null when absent. */
    static <T> T ref(JsonNode state, String key, Class<T> type) {
        JsonNode n = state == null ? null : state.get(key);
        if (n == null || n.isNull()) return null;
        return refOf(n, type, key);
    }

    /** The references of the list at {@code key}, in order; empty when absent. */
    static <T> List<T> refs(JsonNode state, String key, Class<T> type) {
        List<T> out = new ArrayList<>();
        for (JsonNode n : list(state, key)) out.add(refOf(n, type, key));
        return out;
    }

    /** The list at {@code key}; empty when absent. */
    static JsonNode list(JsonNode state, String key) {
        JsonNode l = state == null ? null : state.get(key);
        if (l == null) return JsonNodeFactory.instance.arrayNode();
        if (!l.isArray()) throw new IllegalArgumentException(key + " is not a list");
        return l;
    }

    /** The dict at {@code key}; null when absent. */
    static ObjectNode dict(JsonNode state, String key) {
        JsonNode d = state == null ? null : state.get(key);
        if (d == null || d.isNull()) return null;
        if (!(d instanceof ObjectNode)) throw new IllegalArgumentException(key + " is not a dict");
        return (ObjectNode) d;
    }

    private static <T> T refOf(JsonNode n, Class<T> type, String key) {
        Object o = n instanceof POJONode ? ((POJONode) n).getPojo() : null;
        if (!type.isInstance(o)) throw new IllegalArgumentException(key + " holds something other than a " + type.getSimpleName());
        return type.cast(o);
    }
}
