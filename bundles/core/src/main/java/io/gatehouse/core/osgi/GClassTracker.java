// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core.osgi;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassSpec;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceReference;
import org.osgi.framework.Version;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The one whiteboard of {@link GClass} services in the framework: every yuno (the framework-property one and the
 * Config Admin ones) listens to it instead of tracking the services itself.
 *
 * <p>Several revisions of a gclass may be registered at once (a new version of a bundle installed beside the old
 * one): the one that serves is the highest bundle version, and among equal versions the last registered. A
 * listener hears {@link Listener#gclassArrived} when the serving revision of a name changes (the first one, or a
 * higher one) and {@link Listener#gclassLeft} when no revision of the name is left; when the serving revision
 * leaves and a lower one remains, it hears that one arrive.
 */
@Component(service = GClassTracker.class, immediate = true)
public class GClassTracker {

    /** Told of the serving revisions; called on the thread that registered or unregistered the service. */
    public interface Listener {
        void gclassArrived(GClassSpec<?> spec);

        void gclassLeft(String gclassName);
    }

    /** One registered revision of a gclass. */
    private static final class Revision {
        final GClassSpec<?> spec;
        final Version version;
        final long serviceId;

        Revision(GClassSpec<?> spec, Version version, long serviceId) {
            this.spec = spec;
            this.version = version;
            this.serviceId = serviceId;
        }
    }

    private static final Comparator<Revision> SERVING_ORDER =
            Comparator.<Revision, Version>comparing(r -> r.version).thenComparingLong(r -> r.serviceId);

    private final Map<String, List<Revision>> revisions = new LinkedHashMap<>();
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void addGClass(GClass gclass, ServiceReference<GClass> ref) {
        GClassSpec<?> spec = gclass.spec();
        GClassSpec<?> nowServing;
        synchronized (this) {
            GClassSpec<?> before = serving(spec.name());
            revisions.computeIfAbsent(spec.name(), n -> new ArrayList<>()).add(revisionOf(spec, ref));
            nowServing = serving(spec.name());
            if (nowServing == before) return;
        }
        for (Listener l : listeners) l.gclassArrived(nowServing);
    }

    void removeGClass(GClass gclass, ServiceReference<GClass> ref) {
        String name = gclass.spec().name();
        long id = serviceId(ref);
        GClassSpec<?> before;
        GClassSpec<?> after;
        synchronized (this) {
            List<Revision> list = revisions.get(name);
            if (list == null) return;
            before = serving(name);
            list.removeIf(r -> r.serviceId == id);
            if (list.isEmpty()) revisions.remove(name);
            after = serving(name);
            if (after == before) return;
        }
        for (Listener l : listeners) {
            if (after == null) l.gclassLeft(name);
            else l.gclassArrived(after);
        }
    }

    /** Adds a listener and tells it, before this returns, every gclass serving now. */
    public void listen(Listener l) {
        List<GClassSpec<?>> now;
        synchronized (this) {
            listeners.add(l);
            now = servingSpecs();
        }
        for (GClassSpec<?> s : now) l.gclassArrived(s);
    }

    public void unlisten(Listener l) {
        listeners.remove(l);
    }

    /** The serving revision of every gclass, in the order their names first registered. */
    public synchronized List<GClassSpec<?>> servingSpecs() {
        List<GClassSpec<?>> out = new ArrayList<>();
        for (String name : revisions.keySet()) out.add(serving(name));
        return out;
    }

    /** Registered gclass names. */
    public synchronized List<String> gclassNames() {
        return new ArrayList<>(revisions.keySet());
    }

    private GClassSpec<?> serving(String name) {
        List<Revision> list = revisions.get(name);
        if (list == null || list.isEmpty()) return null;
        return list.stream().max(SERVING_ORDER).map(r -> r.spec).orElse(null);
    }

    private static Revision revisionOf(GClassSpec<?> spec, ServiceReference<GClass> ref) {
        Version v = ref == null || ref.getBundle() == null ? Version.emptyVersion : ref.getBundle().getVersion();
        return new Revision(spec, v, serviceId(ref));
    }

    private static long serviceId(ServiceReference<GClass> ref) {
        Object id = ref == null ? null : ref.getProperty(Constants.SERVICE_ID);
        return id instanceof Long ? (Long) id : -1;
    }
}
