// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueFactory;
import io.gatehouse.api.queue.TrQueueOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceRegistration;
import org.osgi.framework.Version;

import java.io.IOException;
import java.lang.reflect.Proxy;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Dictionary;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The trqueue bundle publishes its factory ranked by the bundle's version, so that of two trqueue revisions
 * installed at once the higher one is the best service (C_QIOGATE's greedy reference moves to it); going away it
 * unregisters the service before it parks the queues (forced, files kept open for the next revision to take over).
 */
class TrQueueServiceTest {
    @TempDir
    Path tmp;

    /** What the service did with the framework, in order. */
    final List<String> calls = new ArrayList<>();
    Dictionary<String, ?> props;
    Object registered;
    /** getServiceReferences(TrQueueFactory) finds another revision's factory. */
    boolean besideAnother;

    @SuppressWarnings("unchecked")
    BundleContext context(Version version) {
        Bundle bundle = (Bundle) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {Bundle.class},
                (p, m, args) -> m.getName().equals("getVersion") ? version : null);
        ServiceRegistration<TrQueueFactory> reg = (ServiceRegistration<TrQueueFactory>) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {ServiceRegistration.class}, (p, m, args) -> {
                    calls.add(m.getName());
                    return null;
                });
        return (BundleContext) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {BundleContext.class},
                (p, m, args) -> {
                    switch (m.getName()) {
                        case "getBundle":
                            return bundle;
                        case "getProperty":
                            return "gatehouse.data".equals(args[0]) ? tmp.toString() : null;
                        case "getServiceReferences":
                            // another trqueue revision serving: this one comes in beside it (a live upgrade)
                            return besideAnother ? List.of(Proxy.newProxyInstance(getClass().getClassLoader(),
                                    new Class<?>[] {org.osgi.framework.ServiceReference.class}, (q, n, a) -> null))
                                    : List.of();
                        case "registerService":
                            calls.add("registerService " + ((Class<?>) args[0]).getName());
                            registered = args[1];
                            props = (Dictionary<String, ?>) args[2];
                            return reg;
                        default:
                            throw new UnsupportedOperationException(m.getName());
                    }
                });
    }

    @Test
    void shouldWarmUpItsCodeOnlyWhenAnotherRevisionServesAndLeaveNoScratchQueueBehind() throws Exception {
        try (io.gatehouse.testkit.LogCapture log = new io.gatehouse.testkit.LogCapture()) {
            TrQueueService first = new TrQueueService(context(new Version(0, 1, 0)));
            assertEquals(0, log.count("trqueue warmed up beside the revision serving"), "a first start: no warm-up");
            besideAnother = true;
            TrQueueService next = new TrQueueService(context(new Version(0, 1, 1)));
            assertEquals(1, log.count("trqueue warmed up beside the revision serving"));
            try (java.util.stream.Stream<Path> left = java.nio.file.Files.list(tmp)) {
                assertEquals(0, left.count(), "the scratch queue is removed");
            }
            next.deactivate();
            first.deactivate();
        }
    }

    @Test
    void shouldRankAHigherVersionHigher() {
        assertEquals(1_002_003, TrQueueService.ranking(new Version(1, 2, 3)));
        assertEquals(1_000, TrQueueService.ranking(Version.parseVersion("0.1.0.SNAPSHOT")));
        assertTrue(TrQueueService.ranking(new Version(0, 2, 0)) > TrQueueService.ranking(new Version(0, 1, 999)));
        assertTrue(TrQueueService.ranking(new Version(2, 0, 0)) > TrQueueService.ranking(new Version(1, 999, 999)));
        assertTrue(TrQueueService.ranking(new Version(0, 1, 1)) > TrQueueService.ranking(Version.parseVersion("0.1.0.SNAPSHOT")));
        assertEquals(TrQueueService.ranking(Version.parseVersion("0.1.0.a")),
                TrQueueService.ranking(Version.parseVersion("0.1.0.b")), "the qualifier does not rank");
        assertEquals(TrQueueService.ranking(new Version(0, 0, 999)), TrQueueService.ranking(new Version(0, 0, 5000)),
                "a part past 999 is capped");
        assertTrue(TrQueueService.ranking(new Version(Integer.MAX_VALUE, 0, 0)) > 0, "never wraps");
    }

    @Test
    void shouldRegisterTheFactoryRankedByTheBundleVersion() {
        TrQueueService service = new TrQueueService(context(new Version(1, 4, 2)));
        assertEquals(List.of("registerService " + TrQueueFactory.class.getName()), calls);
        assertInstanceOf(TrQueueFactoryImpl.class, registered);
        assertEquals(1_004_002, props.get(Constants.SERVICE_RANKING));
        service.deactivate();
    }

    @Test
    void shouldUnregisterBeforeItParksTheQueuesForTheNextRevision() {
        TrQueueService service = new TrQueueService(context(new Version(0, 1, 0)));
        TrQueue q = ((TrQueueFactory) registered).open(tmp, "db", "t", "", 0, 0);
        q.append(io.gatehouse.api.Kw.create().put("id", "1"));
        service.deactivate();
        assertEquals(List.of("registerService " + TrQueueFactory.class.getName(), "unregister"), calls);
        assertEquals(1, q.lastRowid(), "parked, not closed: its files stay open for the next trqueue");
        try (TrQueueFactoryImpl next = new TrQueueFactoryImpl()) {
            TrQueue taken = next.takeOver(q, tmp, "db", "t", "", 0, 0, TrQueueOptions.defaults());
            assertEquals(1, taken.size(), "taken over by the next revision without reading the topic again");
            assertEquals(0, q.lastRowid(), "the parked handle detached");
        }
    }

    @Test
    void shouldLetTheOwnerCloseAParkedQueueAndReleaseItsTopic() {
        TrQueueService service = new TrQueueService(context(new Version(0, 1, 0)));
        TrQueue q = ((TrQueueFactory) registered).open(tmp, "db", "t", "", 0, 0);
        q.append(io.gatehouse.api.Kw.create().put("id", "1"));
        service.deactivate();
        q.close();   // no revision came: the gate closes its queue
        try (TrQueueFactoryImpl next = new TrQueueFactoryImpl()) {
            TrQueue again = next.open(tmp, "db", "t", "", 0, 0);
            again.load();
            assertEquals(1, again.size(), "its lock released and what it wrote there for the next trqueue");
        }
    }

    /** Without a service of its own, the bundle still declares the one it registers (resolvers read it). */
    @Test
    void shouldDeclareTheServiceItRegistersInItsManifest() throws IOException {
        String manifest = Files.readString(Path.of("target/classes/META-INF/MANIFEST.MF")).replace("\r\n ", "")
                .replace("\n ", "");
        assertTrue(manifest.contains("osgi.service;objectClass:List<String>=\"io.gatehouse.api.queue.TrQueueFactory\""),
                manifest);
        String component = Files.readString(Path.of("target/classes/OSGI-INF/io.gatehouse.trqueue.TrQueueService.xml"));
        assertTrue(component.contains("immediate=\"true\""), component);
        assertTrue(!component.contains("<service"), "the component itself provides no service: " + component);
    }
}
