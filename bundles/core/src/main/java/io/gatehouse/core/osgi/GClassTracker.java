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
 * (a rollback), every gclass of the leaving bundle moves to what remains at once; with none left (a
 * {@code Bundle.update()} has begun, or the bundle stopped) listeners hear {@link Listener#gclassesGone} and keep
 * their gobjs suspended until a revision is there again.
 */
@Component(service = GClassTracker.class, immediate = true)
public class GClassTracker {
    private static final Logger LOG = LoggerFactory.getLogger("gatehouse.core");

    /** How long a bundle may take to register all its gclasses before the ones it has are served anyway. */
    public static final String PROP_UPGRADE_GRACE = "gatehouse.upgrade.grace.ms";
    public static final long DEFAULT_UPGRADE_GRACE_MS = 30_000;

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

        Revision(GClassSpec<?> spec, long bundleId, String bsn, Version version, long serviceId) {
            this.spec = spec;
            this.bundleId = bundleId;
            this.bsn = bsn;
            this.version = version;
            this.serviceId = serviceId;
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
    private ScheduledExecutorService timer;

    @Activate
    void activate(org.osgi.framework.BundleContext ctx) {
        String g = ctx.getProperty(PROP_UPGRADE_GRACE);
        if (g != null && !g.isBlank()) graceMs = Long.parseLong(g.trim());
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "gatehouse-gclass-tracker");
            t.setDaemon(true);
            return t;
        });
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
        added(revisionOf(gclass.spec(), ref));
        drain();
    }

    void removeGClass(GClass gclass, ServiceReference<GClass> ref) {
        Bundle b = ref.getBundle();
        boolean bundleGoing = b == null || (b.getState() & (Bundle.STOPPING | Bundle.UNINSTALLED)) != 0;
        removed(gclass.spec().name(), serviceId(ref), bundleGoing);
        drain();
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

    synchronized void removed(String name, long serviceId, boolean bundleGoing) {
        List<Revision> list = revisions.get(name);
        if (list == null) return;
        Revision gone = null;
        for (Revision x : list) if (x.serviceId == serviceId) gone = x;
        if (gone == null) return;
        list.remove(gone);
        if (list.isEmpty()) revisions.remove(name);
        if (serving.get(name) != gone) return;                  // it did not serve: nothing changes
        if (bundleGoing) leaving.add(gone.bundleId);
        // Every gclass the leaving revision's bundle serves moves now, to what remains of each.
        List<Revision> moving = new ArrayList<>();
        List<String> left = new ArrayList<>();
        for (Map.Entry<String, Revision> e : new ArrayList<>(serving.entrySet())) {
            Revision s = e.getValue();
            if (s.bundleId != gone.bundleId || (!bundleGoing && !e.getKey().equals(name))) continue;
            Revision alt = bestExcept(e.getKey(), gone.bundleId, bundleGoing || e.getKey().equals(name));
            if (alt == null) {
                serving.remove(e.getKey());
                goneByBsn.computeIfAbsent(s.bsn, k -> new LinkedHashSet<>()).add(e.getKey());
                left.add(e.getKey());
            } else {
                moving.add(alt);
            }
        }
        if (!moving.isEmpty()) commit(null, moving);
        if (!left.isEmpty()) tell(l -> l.gclassesGone(left));
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

    static Revision revisionOf(GClassSpec<?> spec, ServiceReference<GClass> ref) {
        Bundle b = ref == null ? null : ref.getBundle();
        return new Revision(spec, b == null ? -1 : b.getBundleId(), b == null ? "" : String.valueOf(b.getSymbolicName()),
                b == null ? Version.emptyVersion : b.getVersion(), serviceId(ref));
    }

    private static long serviceId(ServiceReference<GClass> ref) {
        Object id = ref == null ? null : ref.getProperty(Constants.SERVICE_ID);
        return id instanceof Long ? (Long) id : -1;
    }
}
