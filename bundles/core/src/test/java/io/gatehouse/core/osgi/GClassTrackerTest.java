// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core.osgi;

import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.St;
import org.junit.jupiter.api.Test;
import org.osgi.framework.Version;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which revision serves, and that a bundle's gclasses change revision together. */
class GClassTrackerTest {
    static final class B implements GObjBehavior {
    }

    private static GClassSpec<B> spec(String name, String rev) {
        return GClassSpec.builder(name, B.class).description(name + " " + rev)
                .fsm(Fsm.<B>builder().state(St.ST_IDLE).build()).factory(g -> new B()).build();
    }

    private final GClassTracker tracker = new GClassTracker();
    private final List<String> told = new ArrayList<>();
    private long nextServiceId = 1;

    GClassTrackerTest() {
        tracker.listen(new GClassTracker.Listener() {
            @Override
            public void gclassesArrived(List<GClassSpec<?>> specs) {
                told.add("arrived " + specs.stream().map(GClassSpec::description).collect(Collectors.joining(", ")));
            }

            @Override
            public void gclassesGone(List<String> names) {
                told.add("gone " + String.join(", ", names));
            }
        });
    }

    private long add(GClassSpec<?> spec, long bundleId, String version) {
        long id = nextServiceId++;
        tracker.added(new GClassTracker.Revision(spec, bundleId, "io.gatehouse.tcp", Version.parseVersion(version), id));
        tracker.drain();
        return id;
    }

    /** A revision whose classes are all loaded: its gobjs may run it after its bundle stopped for an update. */
    private long addLoaded(GClassSpec<?> spec, long bundleId, String version, boolean runsStopped) {
        long id = nextServiceId++;
        tracker.added(new GClassTracker.Revision(spec, bundleId, "io.gatehouse.tcp", Version.parseVersion(version), id,
                () -> runsStopped));
        tracker.drain();
        return id;
    }

    private void remove(String name, long serviceId, GClassTracker.Going how) {
        tracker.removed(name, serviceId, how);
        tracker.drain();
    }

    private void remove(String name, long serviceId, boolean bundleGoing) {
        tracker.removed(name, serviceId, bundleGoing);
        tracker.drain();
    }

    @Test
    void shouldServeTheFirstRevisionAtOnce() {
        add(spec("C_TCP", "v1"), 10, "1.0.0");
        assertEquals(List.of("arrived C_TCP v1"), told);
    }

    @Test
    void shouldMoveABundlesGclassesTogetherWhenAHigherVersionHasThemAll() {
        add(spec("C_TCP", "v1"), 10, "1.0.0");
        add(spec("C_TCP_S", "v1"), 10, "1.0.0");
        told.clear();
        add(spec("C_TCP", "v2"), 11, "1.1.0");
        assertTrue(told.isEmpty(), "v2 has not registered C_TCP_S yet: nothing moves " + told);
        add(spec("C_TCP_S", "v2"), 11, "1.1.0");
        assertEquals(List.of("arrived C_TCP v2, C_TCP_S v2"), told);
    }

    @Test
    void shouldKeepALowerVersionStandingByAndRollBackToItWhenTheHigherLeaves() {
        long t1 = add(spec("C_TCP", "v1"), 10, "1.0.0");
        add(spec("C_TCP_S", "v1"), 10, "1.0.0");
        long t2 = add(spec("C_TCP", "v2"), 11, "1.1.0");
        long s2 = add(spec("C_TCP_S", "v2"), 11, "1.1.0");
        told.clear();
        add(spec("C_TCP", "v0"), 12, "0.9.0");
        assertTrue(told.isEmpty(), "a lower version does not serve");
        remove("C_TCP", t2, true);
        assertEquals(List.of("arrived C_TCP v1, C_TCP_S v1"), told, "the leaving bundle's gclasses move back together");
        remove("C_TCP_S", s2, true);
        assertEquals(1, told.size(), "its other gclass leaving changes nothing more");
        assertTrue(t1 > 0);
    }

    @Test
    void shouldSayGoneThenServeTheUpdatedBundleOnceItHasEverything() {
        long t = add(spec("C_TCP", "v1"), 10, "1.0.0");
        long s = add(spec("C_TCP_S", "v1"), 10, "1.0.0");
        told.clear();
        remove("C_TCP", t, true);      // Bundle.update(): the old revision stops...
        remove("C_TCP_S", s, true);
        assertEquals(List.of("gone C_TCP, C_TCP_S"), told, "both at once: the bundle is going");
        add(spec("C_TCP_S", "v2"), 10, "1.1.0");   // ...and the new one starts, under the same bundle id
        assertEquals(1, told.size(), "C_TCP is not back yet");
        add(spec("C_TCP", "v2"), 10, "1.1.0");
        assertEquals(List.of("gone C_TCP, C_TCP_S", "arrived C_TCP v2, C_TCP_S v2"), told);
    }

    @Test
    void shouldSuspendOnlyTheGclassWhoseServiceWentWhileItsBundleStays() {
        add(spec("C_QIOGATE", "a"), 20, "1.0.0");
        long q = nextServiceId - 1;
        told.clear();
        remove("C_QIOGATE", q, false);  // its DS component lost its queue store; the bundle is still active
        assertEquals(List.of("gone C_QIOGATE"), told);
        add(spec("C_QIOGATE", "b"), 20, "1.0.0");
        assertEquals(List.of("gone C_QIOGATE", "arrived C_QIOGATE b"), told);
    }

    @Test
    void shouldKeepTheStoppedRevisionServingWhileItsBundleIsUpdatedThenHandOverOnce() {
        long t = addLoaded(spec("C_TCP", "v1"), 10, "1.0.0", true);
        long s = addLoaded(spec("C_TCP_S", "v1"), 10, "1.0.0", true);
        told.clear();
        remove("C_TCP", t, GClassTracker.Going.TRANSIENT);     // Bundle.update(): the old revision stops...
        remove("C_TCP_S", s, GClassTracker.Going.TRANSIENT);
        assertTrue(told.isEmpty(), "nothing is gone: the gobjs go on running the stopped revision " + told);
        assertEquals(List.of("C_TCP", "C_TCP_S"), tracker.runningStoppedNames());
        assertEquals(10L, tracker.servingBundles().get("C_TCP"));
        addLoaded(spec("C_TCP_S", "v2"), 10, "1.0.0", true);     // ...the new one starts, same bundle id and version
        assertTrue(told.isEmpty(), "C_TCP is not back yet: nothing moves " + told);
        addLoaded(spec("C_TCP", "v2"), 10, "1.0.0", true);
        assertEquals(List.of("arrived C_TCP v2, C_TCP_S v2"), told, "one handover of the bundle's gclasses");
        assertTrue(tracker.runningStoppedNames().isEmpty());
        tracker.stopRunningStopped(10);
        tracker.drain();                          // a late timer changes nothing
        assertEquals(1, told.size());
    }

    @Test
    void shouldSuspendAtOnceOnAPlainStopAsBefore() {
        long t = addLoaded(spec("C_TCP", "v1"), 10, "1.0.0", true);
        long s = addLoaded(spec("C_TCP_S", "v1"), 10, "1.0.0", true);
        told.clear();
        remove("C_TCP", t, GClassTracker.Going.STOPPED);       // Bundle.stop(), uninstall: recorded stopped
        remove("C_TCP_S", s, GClassTracker.Going.STOPPED);
        assertEquals(List.of("gone C_TCP, C_TCP_S"), told);
        assertTrue(tracker.runningStoppedNames().isEmpty());
    }

    @Test
    void shouldSuspendOnUpdateARevisionThatSaysItNeedsItsBundleOrIsNotLoaded() {
        long t = addLoaded(spec("C_TCP", "v1"), 10, "1.0.0", false);
        told.clear();
        remove("C_TCP", t, GClassTracker.Going.TRANSIENT);
        assertEquals(List.of("gone C_TCP"), told, "gatehouse.upgrade.runs.stopped=false, or classes not all loaded");
    }

    @Test
    void shouldSuspendWhenNoNewRevisionComesWithinTheRunStoppedTime() {
        long t = addLoaded(spec("C_TCP", "v1"), 10, "1.0.0", true);
        long s = addLoaded(spec("C_TCP_S", "v1"), 10, "1.0.0", true);
        told.clear();
        remove("C_TCP", t, GClassTracker.Going.TRANSIENT);
        remove("C_TCP_S", s, GClassTracker.Going.TRANSIENT);
        tracker.stopRunningStopped(10);
        tracker.drain();                          // the run-stopped timer: the update failed
        assertEquals(List.of("gone C_TCP, C_TCP_S"), told);
        assertTrue(tracker.servingBundles().isEmpty());
        addLoaded(spec("C_TCP", "v2"), 10, "1.0.0", true);      // started at last: the suspended gobjs move
        addLoaded(spec("C_TCP_S", "v2"), 10, "1.0.0", true);
        assertEquals(List.of("gone C_TCP, C_TCP_S", "arrived C_TCP v2, C_TCP_S v2"), told);
    }

    @Test
    void shouldSuspendAtOnceWithRunStoppedZero() {
        tracker.runStoppedMs(0);
        long t = addLoaded(spec("C_TCP", "v1"), 10, "1.0.0", true);
        told.clear();
        remove("C_TCP", t, GClassTracker.Going.TRANSIENT);
        assertEquals(List.of("gone C_TCP"), told);
    }

    @Test
    void shouldRollBackToAStandbyRevisionRatherThanRunTheStoppedOne() {
        addLoaded(spec("C_TCP", "v0"), 9, "0.9.0", true);
        long t = addLoaded(spec("C_TCP", "v1"), 10, "1.0.0", true);
        told.clear();
        remove("C_TCP", t, GClassTracker.Going.TRANSIENT);
        assertEquals(List.of("arrived C_TCP v0"), told, "a registered revision is there: it serves");
        assertTrue(tracker.runningStoppedNames().isEmpty());
    }

    @Test
    void shouldSuspendTheGclassWhoseServiceWentWhileItsBundleStaysEvenIfLoaded() {
        long q = addLoaded(spec("C_QIOGATE", "a"), 20, "1.0.0", true);
        told.clear();
        remove("C_QIOGATE", q, GClassTracker.Going.STAYS);      // trqueue left: its queue factory is going
        assertEquals(List.of("gone C_QIOGATE"), told);
    }

    @Test
    void shouldSuspendAllOfABundlesGclassesWhenOneOfThemCannotRunStopped() {
        long t = addLoaded(spec("C_TCP", "v1"), 10, "1.0.0", true);
        long s = addLoaded(spec("C_TCP_S", "v1"), 10, "1.0.0", false);
        told.clear();
        remove("C_TCP", t, GClassTracker.Going.TRANSIENT);
        remove("C_TCP_S", s, GClassTracker.Going.TRANSIENT);
        assertEquals(List.of("gone C_TCP, C_TCP_S"), told, "they call each other: none runs the stopped revision");
        assertTrue(tracker.runningStoppedNames().isEmpty());
    }

    /** A bundle in a state, with its persistent state started or not (a Proxy: Bundle and BundleStartLevel). */
    private static org.osgi.framework.Bundle bundle(int state, boolean persistentlyStarted) {
        org.osgi.framework.startlevel.BundleStartLevel sl = (org.osgi.framework.startlevel.BundleStartLevel)
                java.lang.reflect.Proxy.newProxyInstance(GClassTrackerTest.class.getClassLoader(),
                        new Class<?>[] {org.osgi.framework.startlevel.BundleStartLevel.class},
                        (p, m, a) -> m.getName().equals("isPersistentlyStarted") ? persistentlyStarted : null);
        return (org.osgi.framework.Bundle) java.lang.reflect.Proxy.newProxyInstance(
                GClassTrackerTest.class.getClassLoader(), new Class<?>[] {org.osgi.framework.Bundle.class},
                (p, m, a) -> {
                    switch (m.getName()) {
                        case "getState": return state;
                        case "adapt": return a[0] == org.osgi.framework.startlevel.BundleStartLevel.class ? sl : null;
                        default: return null;
                    }
                });
    }

    @Test
    void shouldTellAnUpdateFromAStopByThePersistentState() {
        assertEquals(GClassTracker.Going.TRANSIENT,
                GClassTracker.going(bundle(org.osgi.framework.Bundle.STOPPING, true)), "Bundle.update(): stop(record=false)");
        assertEquals(GClassTracker.Going.STOPPED,
                GClassTracker.going(bundle(org.osgi.framework.Bundle.STOPPING, false)), "Bundle.stop(), uninstall");
        assertEquals(GClassTracker.Going.STAYS,
                GClassTracker.going(bundle(org.osgi.framework.Bundle.ACTIVE, true)), "only the service went");
        assertEquals(GClassTracker.Going.STOPPED,
                GClassTracker.going(bundle(org.osgi.framework.Bundle.UNINSTALLED, true)));
        assertEquals(GClassTracker.Going.STOPPED, GClassTracker.going(null));
    }
}
