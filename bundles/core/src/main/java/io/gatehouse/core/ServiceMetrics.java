package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The numbers of a service, for the metrics endpoint and JMX: its stats data (as {@code stats-yuno} answers it)
 * flattened to numeric samples, plus {@code connections}: the links that are up in its subtree (gobjs of a gclass
 * that declares {@link io.gatehouse.api.GClassSpec#linkUp()}, whatever the gclass). Booleans count as
 * 0/1; strings and lists are left out. Nested dicts become labels: entries of {@code channels} get
 * {@code channel=NAME}, other dicts (the children of a C_MQIOGATE) {@code gobj=NAME}. Core thread only.
 */
final class ServiceMetrics {
    /** One number: its stat name, its labels beyond yuno/service, its JMX attribute name. */
    static final class Sample {
        final String stat;
        final Map<String, String> labels;
        final String path;
        final double value;

        Sample(String stat, Map<String, String> labels, String path, double value) {
            this.stat = stat;
            this.labels = labels;
            this.path = path;
            this.value = value;
        }
    }

    /** Bound on the samples of one service (a gate with thousands of channels stays readable). */
    static final int MAX_SAMPLES_PER_SERVICE = 20_000;

    private ServiceMetrics() {}

    static List<Sample> of(GObj service) {
        List<Sample> out = new ArrayList<>();
        ObjectNode st = service.stats("", Kw.create(), null);
        JsonNode data = st != null && st.has("result") && st.has("data") ? st.get("data") : st;
        if (data != null && data.isObject()) flatten(data, new LinkedHashMap<>(), "", out);
        out.add(new Sample("connections", Map.of(), "connections", connections(service, 0)));
        return out;
    }

    static void flatten(JsonNode node, Map<String, String> labels, String path, List<Sample> out) {
        Iterator<Map.Entry<String, JsonNode>> it = node.fields();
        while (it.hasNext() && out.size() < MAX_SAMPLES_PER_SERVICE) {
            Map.Entry<String, JsonNode> e = it.next();
            String k = e.getKey();
            JsonNode v = e.getValue();
            String p = path.isEmpty() ? k : path + "." + k;
            if (v.isNumber()) {
                out.add(new Sample(k, labels, p, v.asDouble()));
            } else if (v.isBoolean()) {
                out.add(new Sample(k, labels, p, v.asBoolean() ? 1 : 0));
            } else if (v.isObject()) {
                if (k.equals("channels")) {
                    Iterator<Map.Entry<String, JsonNode>> ch = v.fields();
                    while (ch.hasNext()) {
                        Map.Entry<String, JsonNode> c = ch.next();
                        if (!c.getValue().isObject()) continue;
                        Map<String, String> l = new LinkedHashMap<>(labels);
                        l.put("channel", c.getKey());
                        flatten(c.getValue(), l, p + "." + c.getKey(), out);
                    }
                } else {
                    Map<String, String> l = new LinkedHashMap<>(labels);
                    l.merge("gobj", k, (a, b) -> a + "`" + b);
                    flatten(v, l, p, out);
                }
            }
        }
    }

    private static int connections(GObj g, int depth) {
        if (depth > 32) return 0;
        int n = 0;
        Attr<Boolean> up = g.gclass().linkUp();
        // A protocol over its transport (C_PROT_TCP4H over C_TCP) is one connection, not two.
        if (up != null && g.readBool(up) && !bottomIsUpLink(g)) n++;
        for (GObj c : g.children()) n += connections(c, depth + 1);
        return n;
    }

    private static boolean bottomIsUpLink(GObj g) {
        GObj b = g.bottom();
        return b != null && b.gclass().linkUp() != null && b.readBool(b.gclass().linkUp());
    }
}
