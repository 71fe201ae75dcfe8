// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.GClassSpec;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * How a new config differs from the running one, service by service: unchanged, written (only writable
 * attributes of its own kw changed), rebuilt, removed or added. It decides; {@link YunoImpl#reconfigure} applies.
 */
final class ConfigDiff {
    /** The running services by name. */
    final Map<String, ServiceNode> old = new LinkedHashMap<>();
    /** What happens to each service, by name, in config order (removed ones first). */
    final Map<String, String> outcome = new LinkedHashMap<>();
    /** Services stopped and destroyed: removed, and the old node of the rebuilt ones. */
    final List<ServiceNode> gone = new ArrayList<>();
    /** New nodes to build: added and rebuilt services. */
    final List<ServiceNode> toBuild = new ArrayList<>();
    /** New nodes whose running gobj gets writable attributes written. */
    final List<ServiceNode> toWrite = new ArrayList<>();

    private ConfigDiff() {}

    static ConfigDiff of(List<ServiceNode> running, ConfigReader.Loaded next) {
        ConfigDiff d = new ConfigDiff();
        for (ServiceNode sn : running) d.old.put(sn.name, sn);
        for (ServiceNode sn : d.old.values()) {
            if (next.nodes.stream().noneMatch(n -> n.name.equals(sn.name))) {
                d.gone.add(sn);
                d.outcome.put(sn.name, "removed");
            }
        }
        for (ServiceNode n : next.nodes) {
            ServiceNode o = d.old.get(n.name);
            if (o == null) {
                d.toBuild.add(n);
                d.outcome.put(n.name, "added");
            } else if (o.node.equals(n.node)) {
                n.gobj = o.gobj;
                n.neededGclasses.addAll(o.neededGclasses);
                d.outcome.put(n.name, "unchanged");
            } else if (o.gobj != null && onlyWritableKwChanged(o, n)) {
                n.gobj = o.gobj;
                d.toWrite.add(n);
                d.outcome.put(n.name, "written");
            } else {
                d.gone.add(o);
                d.toBuild.add(n);
                d.outcome.put(n.name, "rebuilt");
            }
        }
        return d;
    }

    /** True when the two nodes differ only in the service's own kw, and only in keys of writable attributes. */
    private static boolean onlyWritableKwChanged(ServiceNode o, ServiceNode n) {
        ObjectNode a = o.node.deepCopy();
        ObjectNode b = n.node.deepCopy();
        JsonNode ka = a.remove("kw");
        JsonNode kb = b.remove("kw");
        if (!a.equals(b)) return false;
        ObjectNode oldKw = ka instanceof ObjectNode ? (ObjectNode) ka : null;
        ObjectNode newKw = kb instanceof ObjectNode ? (ObjectNode) kb : null;
        GClassSpec<?> spec = o.gobj.gclass();
        Set<String> changed = changedKeys(oldKw, newKw);
        if (changed.isEmpty()) return false;
        for (String k : changed) {
            Attr<?> attr = spec.attr(k);
            if (attr == null || !attr.is(AttrFlag.WR)) return false;
        }
        return true;
    }

    static Set<String> changedKeys(ObjectNode a, ObjectNode b) {
        Set<String> keys = new java.util.TreeSet<>();
        if (a != null) a.fieldNames().forEachRemaining(keys::add);
        if (b != null) b.fieldNames().forEachRemaining(keys::add);
        keys.removeIf(k -> java.util.Objects.equals(a == null ? null : a.get(k), b == null ? null : b.get(k)));
        return keys;
    }
}
