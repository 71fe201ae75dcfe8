package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.Iterator;
import java.util.Map;

/**
 * Yuneta's {@code (^^name^^)} substitution, in every key and string value of a tree. Only string-valued
 * variables substitute; an unknown name stays as written.
 */
final class Variables {
    private Variables() {}

    static JsonNode substitute(JsonNode node, Map<String, String> vars) {
        if (node == null) return null;
        if (node.isTextual()) {
            String s = node.asText();
            return s.contains("(^^") ? JsonNodeFactory.instance.textNode(replace(s, vars)) : node;
        }
        if (node.isObject()) {
            ObjectNode out = JsonNodeFactory.instance.objectNode();
            Iterator<Map.Entry<String, JsonNode>> it = node.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                out.set(replace(e.getKey(), vars), substitute(e.getValue(), vars));
            }
            return out;
        }
        if (node.isArray()) {
            ArrayNode out = JsonNodeFactory.instance.arrayNode();
            for (JsonNode n : node) out.add(substitute(n, vars));
            return out;
        }
        return node;
    }

    static String replace(String s, Map<String, String> vars) {
        if (!s.contains("(^^")) return s;
        StringBuilder sb = new StringBuilder(s.length());
        int i = 0;
        while (i < s.length()) {
            int a = s.indexOf("(^^", i);
            if (a < 0) {
                sb.append(s, i, s.length());
                break;
            }
            int b = s.indexOf("^^)", a + 3);
            if (b < 0) {
                sb.append(s, i, s.length());
                break;
            }
            String name = s.substring(a + 3, b);
            String v = vars.get(name);
            sb.append(s, i, a);
            sb.append(v != null ? v : s.substring(a, b + 3));
            i = b + 3;
        }
        return sb.toString();
    }
}
