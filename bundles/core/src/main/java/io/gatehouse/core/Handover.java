// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.POJONode;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.support.Glog;
import io.netty.channel.Channel;
import io.netty.util.ReferenceCounted;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A live upgrade of some gclasses, on the core thread, in one task: every gobj of those gclasses moves to the new
 * revisions together (a bundle's gclasses call each other's behaviours, so no gobj may run one revision while its
 * peer runs the other), and nothing else runs in between, so no event needs holding on this path.
 *
 * <ol>
 *   <li>export: each old behaviour gives its state ({@code onExport});</li>
 *   <li>swap: each gobj takes the new revision's spec (attributes by name, FSM state by name), its old timers are
 *       cancelled and a new behaviour is made;</li>
 *   <li>import: each new behaviour takes the state ({@code onImport});</li>
 *   <li>the events held while the gobj was suspended (the {@code Bundle.update} path) are delivered.</li>
 * </ol>
 *
 * A gobj that cannot be handed over (no state version, an unknown FSM state, an export or import that throws, a
 * class the old revision never loaded and its refreshed class loader no longer finds) has
 * its whole service rebuilt from its config node, as a hot swap did before: one log line says why, connections of
 * that service close and its queues send again what was in flight, nothing is lost.
 */
final class Handover {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    /** What an upgrade did. */
    static final class Report {
        final List<String> gclasses = new ArrayList<>();
        int migrated;
        /** Of those, the gobjs that were suspended, waiting for a revision (a stop; not a {@code Bundle.update()}). */
        int resumed;
        /** Service name to the reason it was rebuilt. */
        final Map<String, String> rebuilt = new LinkedHashMap<>();
        long pauseMicros;

        ObjectNode toJson() {
            ObjectNode o = F.objectNode();
            ArrayNode g = o.putArray("gclasses");
            gclasses.forEach(g::add);
            o.put("gobjs_migrated", migrated);
            o.put("gobjs_resumed", resumed);
            ArrayNode r = o.putArray("rebuilt");
            rebuilt.forEach((service, why) -> r.addObject().put("service", service).put("reason", why));
            o.put("pause_ms", pauseMicros / 1000.0);
            return o;
        }
    }

    private Handover() {}

    /**
     * Moves every gobj of the gclasses of {@code specs} to those revisions (the gobjs already running them, and not
     * suspended, are left alone). Answers what happened; the rebuilds are done by the caller ({@link YunoImpl#rebuildServices}) after the
     * pause is measured, since a rebuild is not part of a live upgrade's pause.
     */
    static Report run(YunoImpl yuno, List<GClassSpec<?>> specs) {
        long t0 = System.nanoTime();
        Report report = new Report();
        Map<String, GClassSpec<?>> byName = new LinkedHashMap<>();
        for (GClassSpec<?> s : specs) {
            byName.put(s.name(), s);
            report.gclasses.add(s.name());
        }
        List<GObjImpl> moving = new ArrayList<>();
        for (GObjImpl g : yuno.allGobjs()) {
            GClassSpec<?> to = byName.get(g.gclassName());
            // A suspended gobj moves even to the revision it ran (a gclass re-registered unchanged): its behaviour
            // stopped reading when it was suspended, and a new behaviour taking its state is what resumes it.
            if (to != null && (g.gclass() != to || g.isSuspended()) && !g.isDestroyed()) moving.add(g);
        }
        Map<GObjImpl, ObjectNode> states = new IdentityHashMap<>();
        Map<GObjImpl, Integer> fromVersion = new IdentityHashMap<>();
        Set<GObjImpl> failed = java.util.Collections.newSetFromMap(new IdentityHashMap<>());
        for (GObjImpl g : moving) {
            try {
                states.put(g, g.exportFor(byName.get(g.gclassName())));
                fromVersion.put(g, g.gclass().stateVersion());
            } catch (RuntimeException | LinkageError e) {
                fail(yuno, report, failed, g, String.valueOf(e.getMessage()));
            }
        }
        for (GObjImpl g : moving) {
            if (states.containsKey(g)) g.swapTo(byName.get(g.gclassName()));
        }
        for (GObjImpl g : moving) {
            ObjectNode state = states.get(g);
            if (state == null) continue;
            try {
                g.importState(state, fromVersion.get(g));
                report.migrated++;
            } catch (RuntimeException | LinkageError e) {
                releaseRefs(state);
                fail(yuno, report, failed, g, "import failed: " + e.getMessage());
            }
        }
        for (GObjImpl g : moving) {
            if (!failed.contains(g) && g.isSuspended()) {
                g.resumeHeld();
                report.resumed++;
            }
        }
        report.pauseMicros = (System.nanoTime() - t0) / 1000;
        return report;
    }

    private static void fail(YunoImpl yuno, Report report, Set<GObjImpl> failed, GObjImpl g, String why) {
        failed.add(g);
        GObj service = serviceOf(g);
        String name = service == null ? g.fullName() : service.name();
        if (!report.rebuilt.containsKey(name)) {
            report.rebuilt.put(name, g.shortName() + ": " + why);
            Glog.warn(g, "Live upgrade not possible, service rebuilt from its config", "service", name, "reason", why);
        }
    }

    static GObj serviceOf(GObj g) {
        GObj s = g;
        while (s != null && !s.isService()) s = s.parent();
        return s;
    }

    /**
     * What an exported state references and no behaviour took: buffers released, sockets closed, handles closed.
     * Walks the state's dicts and lists. References are told apart by identity: two buffers of equal bytes (a tx
     * queue of equal messages) are equal as JSON nodes, and each must be released.
     */
    static void releaseRefs(JsonNode n) {
        releaseRefs(n, Collections.newSetFromMap(new IdentityHashMap<>()));
    }

    private static void releaseRefs(JsonNode n, Set<Object> done) {
        if (n instanceof POJONode) {
            Object o = ((POJONode) n).getPojo();
            if (o == null || !done.add(o)) return;
            try {
                if (o instanceof ReferenceCounted) {
                    ReferenceCounted r = (ReferenceCounted) o;
                    if (r.refCnt() > 0) r.release(r.refCnt());
                } else if (o instanceof Channel) {
                    ((Channel) o).close();
                } else if (o instanceof AutoCloseable) {
                    ((AutoCloseable) o).close();
                }
            } catch (Exception e) {
                Glog.warn(null, "Upgrade: a reference of a state could not be released", "error", String.valueOf(e));
            }
            return;
        }
        if (n != null && n.isContainerNode()) {
            List<JsonNode> elements = new ArrayList<>(n.size());
            n.elements().forEachRemaining(elements::add);
            for (JsonNode c : elements) releaseRefs(c, done);
        }
    }
}
