// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core.osgi;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassSpec;
import org.osgi.framework.Bundle;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceReference;
import org.osgi.framework.Version;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The one whiteboard of {@link GClass} services in the framework: every yuno (the framework-property one and the
 * Config Admin ones) listens to it.
 *
 * <p>Which revision serves. Several revisions of a gclass may be registered at once (a jar of a higher version
 * dropped into {@code deploy/} beside the one the runtime started with): the highest bundle version serves, and
 * among equal versions the one registered last. The others stay registered, idle, ready to serve again (taking
 * the higher jar out of {@code deploy/} is a rollback).
 *
 * <p>A bundle's gclasses change revision together. A bundle's gclasses call each other's behaviours (C_TCP_S hands
 * sockets to C_TCP), so a yuno must never run one of them on the new revision and another on the old: when a
 * bundle of a symbolic name registers a gclass that is to serve, listeners are told only once that bundle serves
 * every gclass its symbolic name served before (or the upgrade grace has passed), and then of all of them in one
 * {@link Listener#gclassesArrived} call. When the serving revision of a gclass unregisters with another one left
 * (a rollback), every gclass of the leaving bundle moves to what remains at once; with none left and the bundle
 * stopped for good (or its service gone while the bundle stays) listeners hear {@link Listener#gclassesGone} and keep
 * their gobjs suspended until a revision is there again.
 *
 * <p>{@code Bundle.update()}: the bundle stops with its persistent state started ({@link Going#TRANSIENT}), and the
 * stopped revision goes on serving (its gobjs run it; listeners are told nothing) until the new revision has
 * registered its gclasses, which then arrive as any new revision does: the handover is the only pause. Its classes
 * were all loaded when it registered, because Felix refreshes the updated bundle before it starts the new revision.
 * After {@link #PROP_RUN_STOPPED} without a new revision, or for a gclass saying {@link #PROP_RUNS_STOPPED}{@code =false},
 * the gclasses are gone as for a stop.
 */
@Component(service = GClassTracker.class, immediate = true)
public class GClassTracker {
    private static final Logger LOG = LoggerFactory.getLogger("gatehouse.core");

    /** How long a bundle may take to register all its gclasses before the ones it has are served anyway. */
    public static final String PROP_UPGRADE_GRACE = "gatehouse.upgrade.grace.ms";
    public static final long DEFAULT_UPGRADE_GRACE_MS = 30_000;

    /**
     * How long the gobjs of a gclass whose bundle stopped for an update ({@code Bundle.update()}, a refresh) go on
     * running the stopped revision while the framework installs and starts the new one; after that they are
     * suspended as for a stop. 0 suspends them at once, as before.
     */
    public static final String PROP_RUN_STOPPED = "gatehouse.upgrade.run.stopped.ms";
    public static final long DEFAULT_RUN_STOPPED_MS = 10_000;

    /**
     * A {@code GClass} service property: {@code false} says the gclass's behaviours use their bundle (its
     * BundleContext, services DS gave its component, its resources) while they run, so its gobjs are suspended as
     * soon as its bundle stops, even for an update. Absent: true.
     */
    public static final String PROP_RUNS_STOPPED = "gatehouse.upgrade.runs.stopped";

    /** How a gclass service went: its bundle stopped for good, stopped to come back, or stayed active. */
    enum Going {
        /** {@code Bundle.stop()}, uninstall: the bundle is no longer to run (its persistent state says stopped). */
        STOPPED,
        /** {@code Bundle.update()}, a refresh, a transient stop: the bundle stops with its persistent state started. */
        TRANSIENT,
        /** Only the service went (its DS component lost a reference); the bundle stays active. */
        STAYS
    }

    /** Told which revisions serve; calls come one at a time, in the order the changes happened. */
    public interface Listener {
        /** These revisions serve from now on; the names of one bundle come in one call. */
        void gclassesArrived(List<GClassSpec<?>> specs);

        /** No revision of these gclasses is left. */
        void gclassesGone(List<String> gclassNames);
    }

    /** One registered revision of a gclass. */
    static final class Revision {
        final GClassSpec<?> spec;
        final long bundleId;
        final String bsn;
        final Version version;
        final long serviceId;
        /**
         * Whether its gobjs may go on running it after its bundle stopped for an update: its classes are all loaded
         * (the class loader of a stopped revision loads nothing more once Felix refreshed it) and the gclass did
         * not say {@link #PROP_RUNS_STOPPED}{@code =false}.
         */
        final java.util.function.BooleanSupplier runsStopped;

        Revision(GClassSpec<?> spec, long bundleId, String bsn, Version version, long serviceId) {
            this(spec, bundleId, bsn, version, serviceId, () -> false);
        }

        Revision(GClassSpec<?> spec, long bundleId, String bsn, Version version, long serviceId,
                java.util.function.BooleanSupplier runsStopped) {
            this.spec = spec;
            this.bundleId = bundleId;
            this.bsn = bsn;
            this.version = version;
            this.serviceId = serviceId;
            this.runsStopped = runsStopped;
        }

        String name() {
            return spec.name();
        }

        @Override
        public String toString() {
            return spec.name() + " of " + bsn + " " + version + " (bundle " + bundleId + ")";
        }
    }

    private static final Comparator<Revision> SERVING_ORDER =
            Comparator.<Revision, Version>comparing(r -> r.version).thenComparingLong(r -> r.serviceId);

    private final Map<String, List<Revision>> revisions = new LinkedHashMap<>();
    /** The revision listeners were last told serves, by gclass name. */
    private final Map<String, Revision> serving = new LinkedHashMap<>();
    /** Per symbolic name, gclasses it served whose revision went with none left: the next revision must bring them. */
    private final Map<String, Set<String>> goneByBsn = new LinkedHashMap<>();
    /** Bundles whose gclasses are leaving (a rollback in progress): they serve nothing any more. */
    private final Set<Long> leaving = new HashSet<>();
    /** Per symbolic name, the timer that serves an incomplete new revision anyway. */
    private final Map<String, ScheduledFuture<?>> waitingGroups = new LinkedHashMap<>();
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private final ArrayDeque<Consumer<Listener>> toTell = new ArrayDeque<>();
    private boolean telling;
    private long graceMs = DEFAULT_UPGRADE_GRACE_MS;
    private long runStoppedMs = DEFAULT_RUN_STOPPED_MS;
    /**
     * Stopped revisions still serving, by gclass name: their bundle stopped for an update and their gobjs go on
     * running them until the new revision registers (then the handover) or {@link #runStoppedMs} passes (then
     * {@link Listener#gclassesGone}).
     */
    private final Map<String, Revision> runningStopped = new LinkedHashMap<>();
    /** Per bundle id, the timer that ends its stopped revisions' run. */
    private final Map<Long, ScheduledFuture<?>> runStoppedTimers = new LinkedHashMap<>();
    /** Class loaders whose bundle's classes have all been loaded (weak: a refreshed revision's loader may go). */
    private final Map<ClassLoader, Boolean> loadedLoaders =
            java.util.Collections.synchronizedMap(new java.util.WeakHashMap<>());
    private ScheduledExecutorService timer;
    private volatile Bundle systemBundle;

    @Activate
    void activate(org.osgi.framework.BundleContext ctx) {
        String g = ctx.getProperty(PROP_UPGRADE_GRACE);
        if (g != null && !g.isBlank()) graceMs = Long.parseLong(g.trim());
        systemBundle = ctx.getBundle(Constants.SYSTEM_BUNDLE_ID);
        String rs = ctx.getProperty(PROP_RUN_STOPPED);
        if (rs != null && !rs.isBlank()) runStoppedMs = Long.parseLong(rs.trim());
        if (runStoppedMs < 0) throw new IllegalArgumentException(PROP_RUN_STOPPED + " must be >= 0");
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "gatehouse-gclass-tracker");
            t.setDaemon(true);
            return t;
        });
    }

    /** For tests: how long stopped revisions run (0: suspended at once). */
    void runStoppedMs(long ms) {
        this.runStoppedMs = ms;
    }

    @Deactivate
    void deactivate() {
        if (timer != null) timer.shutdownNow();
    }

    public long graceMs() {
        return graceMs;
    }

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void addGClass(GClass gclass, ServiceReference<GClass> ref) {
        Revision r = revisionOf(gclass.spec(), ref);
        loadAllClasses(ref.getBundle());
        added(r);
        drain();
    }

    void removeGClass(GClass gclass, ServiceReference<GClass> ref) {
        Bundle system = systemBundle;
        // The framework stopping stops every bundle without recording it: that is no update, the gobjs are
        // suspended as before until core closes the yuno.
        boolean shutdown = system != null && (system.getState() & Bundle.STOPPING) != 0;
        removed(gclass.spec().name(), serviceId(ref), shutdown ? Going.STOPPED : going(ref.getBundle()));
        drain();
    }

    /**
     * How a gclass service's bundle is going. Felix's {@code Bundle.update()} stops the bundle without recording it
     * stopped (its persistent state stays started, as for a refresh or a start-level change), while
     * {@code Bundle.stop()} and uninstall record it stopped before the bundle is STOPPING.
     */
    static Going going(Bundle b) {
        if (b == null || (b.getState() & Bundle.UNINSTALLED) != 0) return Going.STOPPED;
        if ((b.getState() & Bundle.STOPPING) == 0) return Going.STAYS;
        org.osgi.framework.startlevel.BundleStartLevel sl = b.adapt(org.osgi.framework.startlevel.BundleStartLevel.class);
        return sl != null && sl.isPersistentlyStarted() ? Going.TRANSIENT : Going.STOPPED;
    }

    /**
     * Loads every class of the bundle's current revision (without initializing them), once per class loader, on the
     * thread registering its gclass: its gobjs may then run it after it stopped. Felix refreshes a bundle it updates
     * when no bundle imports from it (every gclass bundle: only api exports packages), before the new revision
     * starts; the stopped revision's loader then keeps the classes it has and loads no other one. It also moves
     * the reading of the jar out of the handover's pause.
     */
    private void loadAllClasses(Bundle b) {
        org.osgi.framework.wiring.BundleWiring w = b == null ? null : b.adapt(org.osgi.framework.wiring.BundleWiring.class);
        ClassLoader cl = w == null ? null : w.getClassLoader();
        if (cl == null || loadedLoaders.containsKey(cl)) return;
        long t0 = System.nanoTime();
        int n = io.gatehouse.support.BundleClasses.loadAll(b);
        loadedLoaders.put(cl, Boolean.TRUE);
        LOG.debug("bundle {}: {} classes loaded in {} ms", b.getSymbolicName(), n, (System.nanoTime() - t0) / 1_000_000);
    }

    // --- The rules, without OSGi (package-private for tests; each change is told by drain()) ---

    synchronized void added(Revision r) {
        leaving.remove(r.bundleId);
        revisions.computeIfAbsent(r.name(), n -> new ArrayList<>()).add(r);
        if (best(r.name()) != r) return;                        // a lower revision: standby
        Set<String> expected = expectedNames(r.bsn);
        expected.add(r.name());
        List<Revision> group = new ArrayList<>();
        for (String n : expected) {
            Revision b = best(n);
            if (b == null || b.bundleId != r.bundleId) {
                // The bundle has not registered all of its symbolic name's gclasses yet: wait for the rest.
                waitingGroups.computeIfAbsent(r.bsn, bsn -> timer == null ? null
                        : timer.schedule(() -> {
                            serveIncomplete(bsn, r.bundleId);
                            drain();
                        }, graceMs, TimeUnit.MILLISECONDS));
                return;
            }
            group.add(b);
        }
        commit(r.bsn, group);
    }

    /** As {@link #removed(String, long, Going)}: {@code bundleGoing} is a stop for good. */
    synchronized void removed(String name, long serviceId, boolean bundleGoing) {
        removed(name, serviceId, bundleGoing ? Going.STOPPED : Going.STAYS);
    }

    synchronized void removed(String name, long serviceId, Going how) {
        List<Revision> list = revisions.get(name);
        if (list == null) return;
        Revision gone = null;
        for (Revision x : list) if (x.serviceId == serviceId) gone = x;
        if (gone == null) return;
        list.remove(gone);
        if (list.isEmpty()) revisions.remove(name);
        if (runningStopped.get(name) == gone) return;           // already running stopped with its bundle's others
        if (serving.get(name) != gone) return;                  // it did not serve: nothing changes
        boolean bundleGoing = how != Going.STAYS;
        if (bundleGoing) leaving.add(gone.bundleId);
        // Every gclass the leaving revision's bundle serves moves now, to what remains of each.
        List<Revision> moving = new ArrayList<>();
        List<String> left = new ArrayList<>();
        List<Revision> keptRunning = new ArrayList<>();
        // The bundle's gclasses call each other's behaviours: they all run the stopped revision, or none does.
        boolean runStopped = how == Going.TRANSIENT && runStoppedMs > 0;
        for (Revision s : serving.values()) {
            if (runStopped && s.bundleId == gone.bundleId && !s.runsStopped.getAsBoolean()) runStopped = false;
        }
        for (Map.Entry<String, Revision> e : new ArrayList<>(serving.entrySet())) {
            Revision s = e.getValue();
            if (s.bundleId != gone.bundleId || (!bundleGoing && !e.getKey().equals(name))) continue;
            Revision alt = bestExcept(e.getKey(), gone.bundleId, bundleGoing || e.getKey().equals(name));
            if (alt != null) {
                moving.add(alt);
            } else if (runStopped) {
                // Bundle.update(): the gobjs go on running the stopped revision (it stays in serving) until the
                // new one registers and takes them over in one task, the pause of the upgrade.
                runningStopped.put(e.getKey(), s);
                goneByBsn.computeIfAbsent(s.bsn, k -> new LinkedHashSet<>()).add(e.getKey());
                keptRunning.add(s);
            } else {
                serving.remove(e.getKey());
                goneByBsn.computeIfAbsent(s.bsn, k -> new LinkedHashSet<>()).add(e.getKey());
                left.add(e.getKey());
            }
        }
        if (!moving.isEmpty()) commit(null, moving);
        if (!left.isEmpty()) tell(l -> l.gclassesGone(left));
        if (!keptRunning.isEmpty()) {
            long bundleId = gone.bundleId;
            LOG.info("bundle {} {} stopped to be updated: the gobjs of {} go on running it until its new revision"
                    + " registers (at most {} ms)", gone.bsn, gone.version, keptRunning, runStoppedMs);
            ScheduledFuture<?> old = runStoppedTimers.remove(bundleId);
            if (old != null) old.cancel(false);
            if (timer != null) {
                runStoppedTimers.put(bundleId, timer.schedule(() -> {
                    stopRunningStopped(bundleId);
                    drain();
                }, runStoppedMs, TimeUnit.MILLISECONDS));
            }
        }
    }

    /**
     * No new revision took over the stopped revisions of this bundle within {@link #runStoppedMs}: their gobjs are
     * suspended now, as for a stop (then rebuilt, or waiting, after the upgrade grace).
     */
    synchronized void stopRunningStopped(long bundleId) {
        runStoppedTimers.remove(bundleId);
        List<String> left = new ArrayList<>();
        for (Map.Entry<String, Revision> e : new ArrayList<>(runningStopped.entrySet())) {
            if (e.getValue().bundleId != bundleId) continue;
            runningStopped.remove(e.getKey());
            if (serving.get(e.getKey()) == e.getValue()) {
                serving.remove(e.getKey());
                left.add(e.getKey());
            }
        }
        if (left.isEmpty()) return;
        LOG.warn("no new revision of {} registered within {} ms of its bundle stopping: their gobjs are suspended",
                left, runStoppedMs);
        tell(l -> l.gclassesGone(left));
    }

    /** Gclass names whose gobjs run a revision whose bundle stopped, waiting for the new one. */
    public synchronized List<String> runningStoppedNames() {
        return new ArrayList<>(runningStopped.keySet());
    }

    private synchronized void serveIncomplete(String bsn, long bundleId) {
        waitingGroups.remove(bsn);
        List<Revision> group = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        for (String n : expectedNames(bsn)) {
            Revision b = best(n);
            if (b != null && b.bundleId == bundleId) group.add(b);
            else missing.add(n);
        }
        if (group.isEmpty()) return;
        LOG.warn("bundle {} did not register {} within {} ms: serving the gclasses it has, {}", bsn, missing, graceMs,
                group);
        commit(bsn, group);
    }

    /** Serves the group and tells the listeners of the revisions that changed. Called holding the lock. */
    private void commit(String bsn, List<Revision> group) {
        if (bsn != null) {
            ScheduledFuture<?> w = waitingGroups.remove(bsn);
            if (w != null) w.cancel(false);
        }
        List<GClassSpec<?>> changed = new ArrayList<>();
        for (Revision r : group) {
            Set<String> gone = goneByBsn.get(r.bsn);
            if (gone != null && gone.remove(r.name()) && gone.isEmpty()) goneByBsn.remove(r.bsn);
            Revision stopped = runningStopped.remove(r.name());
            if (stopped != null && !runningStopped.values().stream().anyMatch(x -> x.bundleId == stopped.bundleId)) {
                ScheduledFuture<?> t = runStoppedTimers.remove(stopped.bundleId);
                if (t != null) t.cancel(false);
            }
            if (serving.put(r.name(), r) != r) changed.add(r.spec);
        }
        if (!changed.isEmpty()) tell(l -> l.gclassesArrived(changed));
    }

    /** The gclasses a symbolic name serves now or served before its revision went. */
    private Set<String> expectedNames(String bsn) {
        Set<String> out = new LinkedHashSet<>();
        for (Revision s : serving.values()) if (s.bsn.equals(bsn)) out.add(s.name());
        out.addAll(goneByBsn.getOrDefault(bsn, Set.of()));
        return out;
    }

    private Revision best(String name) {
        List<Revision> list = revisions.get(name);
        if (list == null) return null;
        return list.stream().filter(r -> !leaving.contains(r.bundleId)).max(SERVING_ORDER).orElse(null);
    }

    private Revision bestExcept(String name, long bundleId, boolean exclude) {
        List<Revision> list = revisions.get(name);
        if (list == null) return null;
        return list.stream().filter(r -> !leaving.contains(r.bundleId) && (!exclude || r.bundleId != bundleId))
                .max(SERVING_ORDER).orElse(null);
    }

    // --- Telling the listeners, one call at a time, in order ---

    /** Queues a call for every listener; called holding the lock, run by {@link #drain} outside it. */
    private void tell(Consumer<Listener> call) {
        toTell.add(call);
    }

    /**
     * Runs the queued calls. The thread that finds nobody telling tells until the queue is empty, outside the lock:
     * calls keep their order although registrations come from several threads, and a listener that calls into a
     * yuno (which may call back into this tracker) holds no lock of the tracker.
     */
    void drain() {
        synchronized (this) {
            if (telling) return;
            telling = true;
        }
        while (true) {
            Consumer<Listener> call;
            synchronized (this) {
                call = toTell.poll();
                if (call == null) {
                    telling = false;
                    return;
                }
            }
            for (Listener l : listeners) {
                try {
                    call.accept(l);
                } catch (RuntimeException e) {
                    LOG.error("a gclass listener failed", e);
                }
            }
        }
    }

    // --- Listeners and views ---

    /** Adds a listener and tells it, before this returns, every gclass serving now (one call). */
    public void listen(Listener l) {
        List<GClassSpec<?>> now = new ArrayList<>();
        synchronized (this) {
            listeners.add(l);
            for (Revision r : serving.values()) now.add(r.spec);
        }
        if (!now.isEmpty()) l.gclassesArrived(now);
    }

    public void unlisten(Listener l) {
        listeners.remove(l);
    }

    /** Registered gclass names (serving or not). */
    public synchronized List<String> gclassNames() {
        return new ArrayList<>(revisions.keySet());
    }

    /** The bundle whose revision serves each gclass: name to bundle id. */
    public synchronized Map<String, Long> servingBundles() {
        Map<String, Long> out = new LinkedHashMap<>();
        serving.forEach((n, r) -> out.put(n, r.bundleId));
        return out;
    }

    /** Every registered revision: gclass name to the ids of the bundles registering it. */
    public synchronized Map<String, List<Long>> registeredBundles() {
        Map<String, List<Long>> out = new LinkedHashMap<>();
        revisions.forEach((n, list) -> {
            List<Long> ids = new ArrayList<>();
            for (Revision r : list) ids.add(r.bundleId);
            out.put(n, ids);
        });
        return out;
    }

    /** The gclass specs each bundle registers, by bundle id (the spec a gobj runs tells its bundle). */
    public synchronized Map<Long, List<GClassSpec<?>>> specsByBundle() {
        Map<Long, List<GClassSpec<?>>> out = new LinkedHashMap<>();
        revisions.values().forEach(list -> list.forEach(
                r -> out.computeIfAbsent(r.bundleId, k -> new ArrayList<>()).add(r.spec)));
        return out;
    }

    Revision revisionOf(GClassSpec<?> spec, ServiceReference<GClass> ref) {
        Bundle b = ref == null ? null : ref.getBundle();
        boolean declaredNo = ref != null && "false".equalsIgnoreCase(String.valueOf(ref.getProperty(PROP_RUNS_STOPPED)));
        org.osgi.framework.wiring.BundleWiring w = b == null ? null : b.adapt(org.osgi.framework.wiring.BundleWiring.class);
        ClassLoader cl = w == null ? null : w.getClassLoader();
        java.util.function.BooleanSupplier runs = () -> !declaredNo && cl != null && loadedLoaders.containsKey(cl);
        return new Revision(spec, b == null ? -1 : b.getBundleId(), b == null ? "" : String.valueOf(b.getSymbolicName()),
                b == null ? Version.emptyVersion : b.getVersion(), serviceId(ref), runs);
    }

    private static long serviceId(ServiceReference<GClass> ref) {
        Object id = ref == null ? null : ref.getProperty(Constants.SERVICE_ID);
        return id instanceof Long ? (Long) id : -1;
    }
}
