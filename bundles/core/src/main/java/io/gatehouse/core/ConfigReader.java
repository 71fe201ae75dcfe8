// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.Kw;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Reads a Yuneta config tree ({@code yuno}, {@code global}, {@code services}, {@code __json_config_variables__})
 * into service nodes: globals merged, variables substituted, structure and attribute names checked. It builds
 * nothing and keeps no state, so every structural error of a config is found before a yuno changes; the yuno
 * builds the gobjs from what it answers ({@link TreeBuilder}).
 */
final class ConfigReader {
    private ConfigReader() {}

    /** Yuneta keys any gclass may carry that have no meaning here (pointers, legacy). */
    static final Set<String> GENERIC_UNUSED_KEYS = Set.of("user_data", "user_data2", "persistent_channels");

    /** Node keys of the config tree; everything else at node level is an error. */
    private static final Set<String> NODE_KEYS = Set.of("name", "gclass", "kw", "children", "zchilds",
            "[^^children^^]", "default_service", "as_service", "service", "autostart", "autoplay", "disabled",
            "pure_child", "priority", "__json_config_variables__", "__comment__", "comment");

    private static final ObjectMapper CONFIG_MAPPER = new ObjectMapper()
            .enable(JsonParser.Feature.ALLOW_COMMENTS)
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);


    /** Parses config text, with line and column in the error. */
    static ObjectNode parseConfig(String text) {
        try {
            JsonNode n = CONFIG_MAPPER.readTree(text);
            if (n == null || !n.isObject()) throw new ConfigException("", "the config must be a JSON object");
            return (ObjectNode) n;
        } catch (JsonProcessingException e) {
            var loc = e.getLocation();
            String where = loc == null ? "" : " at line " + loc.getLineNr() + ", column " + loc.getColumnNr();
            throw new ConfigException("", "config is not valid JSON: " + e.getOriginalMessage() + where);
        }
    }

    /** Most worker loops {@code io_threads} may ask for: a typo such as 1000 is a config error, not 1000 threads. */
    static final int MAX_IO_THREADS = 64;

    /**
     * The {@code io_threads} of a config's {@code yuno} section (0 when absent): how many worker loops serve the
     * yuno's sockets. Read before the yuno exists, because the loops are made with it.
     */
    static int ioThreadsOf(ObjectNode config) {
        JsonNode y = config == null ? null : config.get("yuno");
        JsonNode n = y == null || !y.isObject() ? null : y.get("io_threads");
        if (n == null || n.isNull()) return 0;
        long v = -1;
        if (n.isIntegralNumber()) {
            v = n.asLong();
        } else if (n.isTextual()) {
            try {
                v = Long.parseLong(n.asText().trim());
            } catch (NumberFormatException e) {
                v = -1;
            }
        }
        if (v < 0 || v > MAX_IO_THREADS) {
            throw new ConfigException("yuno", "'io_threads' must be an integer from 0 to " + MAX_IO_THREADS + ", got " + n);
        }
        return (int) v;
    }

    /** A config read into service nodes, not applied yet. */
    static final class Loaded {
        boolean autoplay;
        JsonNode yunoSection;
        final Map<String, String> vars = new HashMap<>();
        final List<ServiceNode> nodes = new ArrayList<>();
        ObjectNode traceLevels;
    }

    /** Reads a config (globals merged, variables substituted, structure checked); changes nothing. */
    static Loaded read(ObjectNode config, Map<String, String> baseVars) {
        Loaded l = new Loaded();
        JsonNode yunoSection = config.get("yuno");
        if (yunoSection != null && !yunoSection.isObject()) throw new ConfigException("yuno", "'yuno' must be a dict");
        l.yunoSection = yunoSection;
        l.autoplay = yunoSection != null && Kw.getBool(yunoSection, "autoplay", false);
        JsonNode traceLevels = yunoSection == null ? null : yunoSection.get("trace_levels");
        if (traceLevels != null && traceLevels.isObject()) l.traceLevels = (ObjectNode) traceLevels;
        JsonNode global = config.get("global");
        if (global != null && !global.isObject()) throw new ConfigException("global", "'global' must be a dict");
        Map<String, String> allVars = new HashMap<>(baseVars);
        JsonNode vars = config.get("__json_config_variables__");
        if (vars != null && vars.isObject()) {
            vars.fields().forEachRemaining(e -> {
                if (e.getValue().isTextual()) l.vars.put(e.getKey(), e.getValue().asText());
            });
        }
        allVars.putAll(l.vars);
        JsonNode list = config.get("services");
        if (list == null) return l;
        if (!list.isArray()) throw new ConfigException("services", "'services' must be a list");
        Set<String> names = new HashSet<>();
        int order = 0;
        for (JsonNode s : list) {
            if (!s.isObject()) throw new ConfigException("services", "every service must be a dict");
            String sname = Kw.getString(s, "name", "");
            if (sname.isEmpty()) throw new ConfigException("services[" + order + "]", "a service needs a non-empty 'name'");
            if (!names.add(sname)) throw new ConfigException(sname, "duplicate service name '" + sname + "'");
            ObjectNode node = ((ObjectNode) s).deepCopy();
            applyGlobals(node, sname, global == null ? null : (ObjectNode) global);
            Map<String, String> v = new HashMap<>(allVars);
            JsonNode own = node.remove("__json_config_variables__");
            if (own != null && own.isObject()) {
                own.fields().forEachRemaining(e -> {
                    if (e.getValue().isTextual()) v.put(e.getKey(), e.getValue().asText());
                });
            }
            node = (ObjectNode) Variables.substitute(node, v);
            int priority = (int) Kw.getLong(node, "priority", 5);
            if (priority < 0 || priority > 9) priority = 5;
            boolean autostart = Kw.getBool(node, "autostart", true);
            boolean autoplaySvc = Kw.getBool(node, "autoplay", false);
            ServiceNode sn = new ServiceNode(sname, node, priority, autostart, autoplaySvc, order++);
            validateNode(node, sname);
            l.nodes.add(sn);
        }
        return l;
    }

    /**
     * The checks {@code applyKw} makes at build time, without building: every kw key is an attribute of the node's
     * gclass (or a Yuneta key Gatehouse accepts) and its value converts to the attribute's type (not inside templates,
     * whose values hold variables until expanded). Nodes of gclasses not registered are skipped (they wait).
     */
    static void checkAttrs(JsonNode node, String path, boolean inTemplate, Map<String, GClassSpec<?>> gclasses) {
        GClassSpec<?> spec = gclasses.get(Kw.getString(node, "gclass", ""));
        JsonNode kw = node.get("kw");
        if (spec != null && kw != null && kw.isObject()) {
            var it = kw.fields();
            while (it.hasNext()) {
                var e = it.next();
                String k = e.getKey();
                if (k.equals("subscriber")) continue;
                Attr<?> a = spec.attr(k);
                if (a == null) {
                    if (spec.unusedYunetaKeys().contains(k) || GENERIC_UNUSED_KEYS.contains(k)) continue;
                    throw new ConfigException(path, "attribute '" + k + "' unknown in gclass " + spec.name());
                }
                if (inTemplate) continue;
                try {
                    a.fromJson(e.getValue());
                } catch (IllegalArgumentException ex) {
                    throw new ConfigException(path, ex.getMessage());
                }
            }
        }
        JsonNode children = node.has("children") ? node.get("children") : node.get("zchilds");
        if (children != null && children.isArray()) {
            int i = 0;
            for (JsonNode c : children) checkAttrs(c, path + "/" + childLabel(c, i++), inTemplate, gclasses);
        }
        JsonNode tpl = node.get("[^^children^^]");
        if (tpl != null && tpl.get("__content__") != null) checkAttrs(tpl.get("__content__"), path + "/[^^children^^]", true, gclasses);
    }

    /** Merges {@code global} keys {@code "<gclass or service>.<attr>"} into the service node and its kw. */
    private static void applyGlobals(ObjectNode node, String sname, ObjectNode global) {
        if (global == null) return;
        String gclass = Kw.getString(node, "gclass", "");
        Iterator<Map.Entry<String, JsonNode>> it = global.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            String key = e.getKey();
            int dot = key.indexOf('.');
            if (dot <= 0) continue;
            String target = key.substring(0, dot);
            String attr = key.substring(dot + 1);
            if (!target.equals(gclass) && !target.equalsIgnoreCase(sname)) continue;
            ObjectNode kw = node.has("kw") && node.get("kw").isObject() ? (ObjectNode) node.get("kw") : node.putObject("kw");
            if (attr.equals("kw")) {
                if (e.getValue().isObject()) kw.setAll((ObjectNode) e.getValue().deepCopy());
            } else if (NODE_KEYS.contains(attr)) {
                node.set(attr, e.getValue().deepCopy());
            } else {
                kw.set(attr, e.getValue().deepCopy());
            }
        }
    }

    /** Structural checks of a node subtree: known node keys, gclass present, templates complete. */
    private static void validateNode(JsonNode node, String path) {
        Iterator<String> keys = node.fieldNames();
        while (keys.hasNext()) {
            String k = keys.next();
            if (!NODE_KEYS.contains(k)) throw new ConfigException(path, "unknown key '" + k + "' in a service node");
        }
        if (Kw.getString(node, "gclass", "").isEmpty()) throw new ConfigException(path, "node without 'gclass'");
        JsonNode kw = node.get("kw");
        if (kw != null && !kw.isObject() && !kw.isNull()) throw new ConfigException(path, "'kw' must be a dict");
        JsonNode children = node.has("children") ? node.get("children") : node.get("zchilds");
        if (children != null) {
            if (!children.isArray()) throw new ConfigException(path, "'children' must be a list");
            int i = 0;
            for (JsonNode c : children) {
                if (!c.isObject()) throw new ConfigException(path, "every child must be a dict");
                validateNode(c, path + "/" + childLabel(c, i++));
            }
        }
        JsonNode tpl = node.get("[^^children^^]");
        if (tpl != null) {
            if (!tpl.isObject() || !tpl.has("__range__") || !tpl.has("__vars__") || !tpl.has("__content__")) {
                throw new ConfigException(path, "'[^^children^^]' needs __range__, __vars__ and __content__");
            }
            rangeOf(tpl.get("__range__"), path);
            if (!tpl.get("__content__").isObject()) throw new ConfigException(path, "'__content__' must be a dict");
            if (!tpl.get("__vars__").isObject()) throw new ConfigException(path, "'__vars__' must be a dict");
        }
    }

    static String childLabel(JsonNode c, int i) {
        String n = Kw.getString(c, "name", "");
        return n.isEmpty() ? Kw.getString(c, "gclass", "?") + "[" + i + "]" : n;
    }

    static long[] rangeOf(JsonNode r, String path) {
        if (r.isArray() && r.size() == 2 && r.get(0).canConvertToLong() && r.get(1).canConvertToLong()) {
            return new long[] {r.get(0).asLong(), r.get(1).asLong()};
        }
        if (r.isIntegralNumber()) return new long[] {1, r.asLong()};
        if (r.isTextual()) {
            try {
                return new long[] {1, Long.parseLong(r.asText().trim())};
            } catch (NumberFormatException e) {
                throw new ConfigException(path, "'__range__' must be a number or [first, last], got \"" + r.asText() + "\"");
            }
        }
        throw new ConfigException(path, "'__range__' must be a number or [first, last]");
    }

    /** Every gclass named in a node subtree. */
    static void gclassesOf(JsonNode node, Set<String> out) {
        String g = Kw.getString(node, "gclass", "");
        if (!g.isEmpty()) out.add(g);
        JsonNode children = node.has("children") ? node.get("children") : node.get("zchilds");
        if (children != null && children.isArray()) for (JsonNode c : children) gclassesOf(c, out);
        JsonNode tpl = node.get("[^^children^^]");
        if (tpl != null && tpl.has("__content__")) gclassesOf(tpl.get("__content__"), out);
    }
}
