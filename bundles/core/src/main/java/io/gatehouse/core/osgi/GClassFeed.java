// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core.osgi;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.core.YunoRuntime;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * What one yuno (the framework-property one, or a Config Admin one) hears of the {@link GClassTracker}: the gclasses
 * it builds from, kept in step, and its running yuno told of every change (a live upgrade, a bundle going).
 * Before the yuno runs, a change tries to start it instead.
 */
final class GClassFeed implements GClassTracker.Listener {
    private static final Logger LOG = LoggerFactory.getLogger("gatehouse.core");

    private final String yunoLabel;
    private final Supplier<YunoRuntime> runtime;
    private final Runnable tryStart;
    private final Map<String, GClassSpec<?>> specs = new LinkedHashMap<>();
    /** Told of every upgrade report (update-bundle waits for its own). */
    private final List<java.util.function.Consumer<ObjectNode>> reportWatchers = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** The last reports, newest last: what {@code list-upgrades} answers. Bounded. */
    private final java.util.ArrayDeque<ObjectNode> history = new java.util.ArrayDeque<>();
    static final int HISTORY = 50;

    synchronized List<ObjectNode> history() {
        return new java.util.ArrayList<>(history);
    }

    void watchReports(java.util.function.Consumer<ObjectNode> w) {
        reportWatchers.add(w);
    }

    void unwatchReports(java.util.function.Consumer<ObjectNode> w) {
        reportWatchers.remove(w);
    }

    GClassFeed(String yunoLabel, Supplier<YunoRuntime> runtime, Runnable tryStart) {
        this.yunoLabel = yunoLabel;
        this.runtime = runtime;
        this.tryStart = tryStart;
    }

    /** The serving gclasses now, by name. */
    synchronized Map<String, GClassSpec<?>> specs() {
        return new LinkedHashMap<>(specs);
    }

    @Override
    public void gclassesArrived(List<GClassSpec<?>> arrived) {
        synchronized (this) {
            for (GClassSpec<?> s : arrived) specs.put(s.name(), s);
        }
        YunoRuntime rt = runtime.get();
        if (rt == null || rt.isClosed()) {
            tryStart.run();
            return;
        }
        ObjectNode report = rt.gclassesArrived(arrived);
        if (report.path("gobjs_migrated").asInt() > 0 || report.path("rebuilt").size() > 0) {
            LOG.info("{}: gclasses {} serve from a new revision: {}", yunoLabel, report.path("gclasses"), report);
        }
        if (report.path("gobjs_migrated").asInt() > 0 || report.path("rebuilt").size() > 0) {
            report.put("at", java.time.Instant.now().toString());
            synchronized (this) {
                if (history.size() == HISTORY) history.poll();
                history.add(report);
            }
        }
        for (java.util.function.Consumer<ObjectNode> w : reportWatchers) w.accept(report);
    }

    @Override
    public void gclassesGone(List<String> gone) {
        synchronized (this) {
            for (String n : gone) specs.remove(n);
        }
        YunoRuntime rt = runtime.get();
        if (rt == null || rt.isClosed()) return;
        List<String> suspended = rt.gclassesGone(gone);
        if (!suspended.isEmpty()) {
            LOG.info("{}: gclasses {} have no revision: their gobjs wait, suspended", yunoLabel, suspended);
        }
    }
}
