// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.List;

/**
 * The topics a publisher may use ({@code topics}): MQTT topic filters ({@code +} one level, {@code #} the rest,
 * levels split by {@code /}); no filter configured = any topic. As MQTT says, a wildcard in the first level does
 * not match a topic that starts with {@code $}.
 */
final class TopicFilters {
    private final List<String[]> filters;

    private TopicFilters(List<String[]> filters) {
        this.filters = filters;
    }

    /**
     * From the attribute: null, or a list of filter strings.
     *
     * @throws IllegalArgumentException naming the bad filter
     */
    static TopicFilters of(JsonNode list) {
        if (list == null || list.isNull()) return new TopicFilters(null);
        if (!list.isArray()) throw new IllegalArgumentException("topics must be a list of topic filters");
        List<String[]> out = new ArrayList<>();
        for (JsonNode f : list) {
            String s = f.asText("");
            if (!f.isTextual() || !valid(s)) throw new IllegalArgumentException("bad topic filter: " + f);
            out.add(s.split("/", -1));
        }
        return new TopicFilters(out);
    }

    private static boolean valid(String f) {
        if (f.isEmpty()) return false;
        String[] levels = f.split("/", -1);
        for (int i = 0; i < levels.length; i++) {
            String l = levels[i];
            if (l.contains("#") && (!l.equals("#") || i != levels.length - 1)) return false;
            if (l.contains("+") && !l.equals("+")) return false;
        }
        return true;
    }

    boolean any() {
        return filters == null;
    }

    boolean allows(String topic) {
        if (filters == null) return true;
        String[] t = topic.split("/", -1);
        for (String[] f : filters) {
            if (matches(f, t)) return true;
        }
        return false;
    }

    private static boolean matches(String[] f, String[] t) {
        if (t[0].startsWith("$") && (f[0].equals("+") || f[0].equals("#"))) return false;
        for (int i = 0; i < f.length; i++) {
            if (f[i].equals("#")) return true;          // the rest, the parent level included ("a/#" matches "a")
            if (i >= t.length) return false;
            if (!f[i].equals("+") && !f[i].equals(t[i])) return false;
        }
        return f.length == t.length;
    }
}
