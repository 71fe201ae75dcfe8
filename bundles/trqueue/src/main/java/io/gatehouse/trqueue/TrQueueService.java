// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import io.gatehouse.api.queue.TrQueueFactory;
import io.gatehouse.support.BundleClasses;
import io.gatehouse.support.Glog;
import org.osgi.annotation.bundle.Capability;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceRegistration;
import org.osgi.framework.Version;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Hashtable;

/**
 * Publishes this bundle's {@link TrQueueFactory}, ranked by the bundle's version ({@link #ranking}). With two
 * trqueue revisions installed at once (a higher jar in {@code deploy/} beside the one the runtime started with),
 * the higher one is the best factory, and C_QIOGATE's greedy reference moves to it; when it goes, the reference
 * moves back. DS fixes a component's service properties at build time, and a ranking must follow the version the
 * bundle really has (a jar whose manifest alone was bumped ranks higher), so the factory is registered here, at
 * activation, instead of being the component's own service.
 *
 * <p>Going away, the service is unregistered first (the gates using it are suspended, or move to another trqueue)
 * and the factory parked after ({@link TrQueueFactoryImpl#park}: what its queues wrote is forced, their files stay
 * open for the next revision to take over, or for their gates to close).
 */
@Component(immediate = true, service = {})
@Capability(namespace = "osgi.service", attribute = "objectClass:List<String>=\"io.gatehouse.api.queue.TrQueueFactory\"",
        uses = TrQueueFactory.class)
public final class TrQueueService {
    /** Each part of the version weighs this much more than the next one; parts at or over it are capped. */
    static final int PART = 1000;

    /** The framework property that sets the factory's flusher threads. */
    static final String FLUSHERS_PROPERTY = "gatehouse.trqueue.flushers";

    private final TrQueueFactoryImpl factory;
    private final ServiceRegistration<TrQueueFactory> registration;

    @Activate
    public TrQueueService(BundleContext ctx) {
        factory = new TrQueueFactoryImpl(new FileOps(), flushers(ctx.getProperty(FLUSHERS_PROPERTY)));
        // before the factory is registered: a gate takes its queue over through it in a live upgrade's pause, and
        // every class of this revision loaded there for the first time made that pause longer
        BundleClasses.loadAll(ctx.getBundle());
        warmUpBesideAnother(ctx);
        Hashtable<String, Object> props = new Hashtable<>();
        props.put(Constants.SERVICE_RANKING, ranking(ctx.getBundle().getVersion()));
        registration = ctx.registerService(TrQueueFactory.class, factory, props);
    }

    /**
     * The flusher threads a value of {@link #FLUSHERS_PROPERTY} asks for: the default when it is unset, and when it is
     * not a number from 1 to {@link TrQueueFactoryImpl#MAX_FLUSHERS} (said, since the queues still work).
     */
    static int flushers(String value) {
        if (value == null || value.isBlank()) return TrQueueFactoryImpl.DEFAULT_FLUSHERS;
        try {
            int n = Integer.parseInt(value.trim());
            if (n >= 1 && n <= TrQueueFactoryImpl.MAX_FLUSHERS) return n;
        } catch (NumberFormatException e) {
            // said below
        }
        Glog.error(null, "Bad " + FLUSHERS_PROPERTY + ", the default is used: it must be a number from 1 to "
                + TrQueueFactoryImpl.MAX_FLUSHERS, "value", value, "flushers", TrQueueFactoryImpl.DEFAULT_FLUSHERS);
        return TrQueueFactoryImpl.DEFAULT_FLUSHERS;
    }

    /**
     * When another trqueue serves already (this revision comes in beside it: a live upgrade), its code is run once
     * on a scratch queue first ({@link WarmUp}), so that the gates' first calls after they move here run compiled.
     * Not at a first start, nor on {@code Bundle.update()} (no other revision serves, and the gates wait for this
     * one); {@code gatehouse.trqueue.warmup=false} turns it off.
     */
    private static void warmUpBesideAnother(BundleContext ctx) {
        if ("false".equalsIgnoreCase(ctx.getProperty("gatehouse.trqueue.warmup"))) return;
        try {
            if (ctx.getServiceReferences(TrQueueFactory.class, null).isEmpty()) return;
        } catch (org.osgi.framework.InvalidSyntaxException e) {
            return;
        }
        String data = ctx.getProperty("gatehouse.data");
        Path parent = data != null && !data.isBlank() ? Paths.get(data) : Paths.get(System.getProperty("java.io.tmpdir"));
        long ms = WarmUp.run(parent);
        if (ms >= 0) Glog.info(null, "trqueue warmed up beside the revision serving", "ms", ms, "messages", WarmUp.MESSAGES);
    }

    @Deactivate
    void deactivate() {
        try {
            registration.unregister();
        } catch (IllegalStateException alreadyGone) {
            // the framework unregistered it with the stopping bundle
        }
        // Parked, not closed: the gates over these queues are suspended now (their gclass went with this service),
        // and the next trqueue revision takes the open files over instead of reading the topics again; a gate that
        // gets no revision closes its queue itself.
        factory.park();
    }

    /**
     * The service ranking of a trqueue of version {@code v}: major, minor and micro in base {@value #PART} (1.2.3 is
     * 1,002,003), so a higher version ranks higher; the qualifier is left out, and two jars differing only by it
     * rank alike (the first registered keeps serving).
     */
    static int ranking(Version v) {
        int major = Math.min(v.getMajor(), Integer.MAX_VALUE / PART / PART - 1);
        return (major * PART + Math.min(v.getMinor(), PART - 1)) * PART + Math.min(v.getMicro(), PART - 1);
    }
}
