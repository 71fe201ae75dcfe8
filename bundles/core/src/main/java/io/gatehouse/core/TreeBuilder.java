// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.support.Glog;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Makes gobjs: from a config node (attributes from its kw and the persistent file, the behaviour, the
 * subscription model, its children and templates, the bottom auto-wiring of a single child) and at run time
 * ({@link GObj#createChild}). A node that fails anywhere destroys what it made and throws, so a service is built
 * whole or not at all.
 */
final class TreeBuilder {
    private final YunoImpl yuno;
    private final PersistentAttrs persistent;

    TreeBuilder(YunoImpl yuno, PersistentAttrs persistent) {
        this.yuno = yuno;
        this.persistent = persistent;
    }

    /** Gobjs whose kw named a subscriber service: resolved after every build, so rebuilt services rejoin. */
    private final Map<GObjImpl, String> namedSubscribers = new LinkedHashMap<>();

    GObjImpl createFromNode(GObjImpl parent, ObjectNode node, String path, boolean isService) {
        String gclassName = Kw.getString(node, "gclass", "");
        GClassSpec<?> spec = yuno.gclasses().get(gclassName);
        if (spec == null) throw new ConfigException(path, "gclass '" + gclassName + "' NOT FOUND");
        String gname = Kw.getString(node, "name", "");
        ObjectNode kw = Kw.getDict(node, "kw");
        boolean pure = Kw.getBool(node, "pure_child", false);
        GObjImpl g = new GObjImpl(yuno, spec, gname, parent, isService, false, pure, node);
        try {
            g.applyKw(kw, path);
            if (isService) g.applyPersistent(persistent.load(g));
            g.createBehavior();
            parent.addChild(g);
            subscribeByModel(g, kw, true);
            g.behavior().onCreate();
            if (parent != yuno.root()) parent.behavior().onChildAdded(g);
            if (Kw.getBool(node, "disabled", false)) g.disable();
            JsonNode children = node.get("children");
            if (children == null && node.has("zchilds")) {
                Glog.error(g, "'zchilds' is DEPRECATED, use 'children'");
                children = node.get("zchilds");
            }
            int created = 0;
            if (children != null) {
                int i = 0;
                for (JsonNode c : children) {
                    createFromNode(g, (ObjectNode) c, path + "/" + ConfigReader.childLabel(c, i++), false);
                    created++;
                }
            }
            JsonNode tpl = node.get("[^^children^^]");
            if (tpl != null) {
                long[] range = ConfigReader.rangeOf(tpl.get("__range__"), path);
                ObjectNode vars = (ObjectNode) tpl.get("__vars__");
                for (long i = range[0]; i <= range[1]; i++) {
                    Map<String, String> v = new HashMap<>(yuno.globalVars());
                    vars.fields().forEachRemaining(e -> {
                        if (e.getValue().isTextual()) v.put(e.getKey(), e.getValue().asText());
                    });
                    v.put("__range__", String.valueOf(i));
                    ObjectNode content = (ObjectNode) Variables.substitute(tpl.get("__content__"), v);
                    createFromNode(g, content, path + "/" + ConfigReader.childLabel(content, (int) i), false);
                }
            } else if (created == 1) {
                // Bottom auto-wiring: a single explicit child is the next layer down (never with a template).
                g.setBottom(g.childrenView().get(0));
            }
            return g;
        } catch (ConfigException e) {
            g.destroy();
            throw e;
        } catch (RuntimeException e) {
            g.destroy();
            throw new ConfigException(path, e.getMessage() == null ? e.toString() : e.getMessage());
        }
    }

    GObj createRuntimeChild(GObjImpl parent, String childName, String gclassName, ObjectNode kw, boolean isVolatile) {
        GClassSpec<?> spec = yuno.gclasses().get(gclassName);
        if (spec == null) {
            Glog.error(parent, "gclass NOT FOUND", "gclass", gclassName, "name", childName);
            return null;
        }
        GObjImpl g = new GObjImpl(yuno, spec, childName, parent, false, isVolatile, !isVolatile, null);
        try {
            g.applyKw(kw, parent.fullName() + "/" + childName);
            g.createBehavior();
            parent.addChild(g);
            subscribeByModel(g, kw, false);
            g.behavior().onCreate();
            parent.behavior().onChildAdded(g);
            return g;
        } catch (RuntimeException e) {
            Glog.error(parent, "Cannot create child", "gclass", gclassName, "name", childName, "error", e.getMessage());
            g.destroy();
            return null;
        }
    }

    /**
     * Who hears a new gobj: the {@code subscriber} of its kw (a gobj reference, or a service name resolved when
     * that service exists), else its parent unless the parent is the yuno (services have no implicit subscriber).
     */
    private void subscribeByModel(GObjImpl g, ObjectNode kw, boolean fromConfig) {
        JsonNode sub = kw == null ? null : kw.get("subscriber");
        if (sub != null && !sub.isNull()) {
            GObj ref = Kw.ref(kw, "subscriber", GObj.class);
            if (ref != null) {
                g.subscribe(null, ref);
                return;
            }
            if (sub.isTextual() && !sub.asText().isEmpty()) {
                namedSubscribers.put(g, sub.asText());
                return;
            }
        }
        if (g.parent() != yuno.root() && g.parent() != null) {
            if (fromConfig || g.gclass().subscriptionModel() == GClassSpec.SubscriptionModel.CHILD || g.isPureChild()) {
                g.subscribe(null, g.parent());
            }
        }
    }

    void resolveNamedSubscribers(Map<String, GObjImpl> services) {
        namedSubscribers.entrySet().removeIf(e -> e.getKey().isDestroyed());
        for (Map.Entry<GObjImpl, String> e : namedSubscribers.entrySet()) {
            GObj target = services.get(e.getValue());
            if (target == null) {
                Glog.warn(e.getKey(), "subscriber service gobj NOT FOUND (yet)", "subscriber", e.getValue());
                continue;
            }
            e.getKey().subscribe(null, target);
        }
    }
}
