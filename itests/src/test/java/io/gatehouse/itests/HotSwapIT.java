package io.gatehouse.itests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.ops4j.pax.exam.CoreOptions.frameworkProperty;
import static org.ops4j.pax.exam.CoreOptions.options;

import java.io.FileInputStream;
import java.io.InputStream;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.Configuration;
import org.ops4j.pax.exam.Option;
import org.ops4j.pax.exam.junit.PaxExam;
import org.ops4j.pax.exam.spi.reactors.ExamReactorStrategy;
import org.ops4j.pax.exam.spi.reactors.PerClass;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleEvent;
import org.osgi.framework.BundleListener;

/**
 * Hot swap of one gclass bundle: {@code Bundle.update} of the sink bundle from its freshly built jar hands the
 * C_SINK gobj over to the new revision (the value written at run time survives, no service is rebuilt), while
 * api and core are neither refreshed nor restarted and the other service stays as it was.
 */
@RunWith(PaxExam.class)
@ExamReactorStrategy(PerClass.class)
public class HotSwapIT extends ITSupport {
    // The class is loaded twice (by the driver for the configuration, in the framework for the test), and the
    // native container shares the JVM: the port goes from one to the other as a system property.
    private static final String PORT_PROPERTY = "gatehouse.itests.hotswap.control.port";

    @Configuration
    public Option[] config() {
        int port = freePort();
        System.setProperty(PORT_PROPERTY, String.valueOf(port));
        return options(base(), gatehouseBundles("api", "core", "relay", "sink"), yunoConfig("hotswap.json"),
            frameworkProperty("gatehouse.control.port").value(String.valueOf(port)));
    }

    private String cmd(String line) {
        int port = Integer.getInteger(PORT_PROPERTY);
        String[] answer = new String[1];
        await("an answer to '" + line + "'", 10_000, () -> (answer[0] = ControlLink.tryCommand(port, line)) != null);
        return answer[0];
    }

    private int upgrades() throws Exception {
        return new ObjectMapper().readTree(cmd("list-upgrades")).path("data").size();
    }

    @Test
    public void shouldHandTheGobjsOfAnUpdatedGclassBundleToItsNewRevisionWithoutRefreshingApi() throws Exception {
        await("the sink service", 10_000, () -> cmd("read-attrs service=sink").contains("\"result\":0"));
        assertTrue(cmd("write-attr service=sink attr=echo value=true").contains("\"result\":0"));
        assertTrue(cmd("read-attrs service=sink").contains("\"echo\":true"));

        Bundle api = installedBundle(GROUP + ".api");
        Bundle core = installedBundle(GROUP + ".core");
        Bundle sink = installedBundle(GROUP + ".sink");
        long apiModified = api.getLastModified();
        long coreModified = core.getLastModified();
        List<String> events = new CopyOnWriteArrayList<>();
        BundleListener listener = e -> {
            if (e.getBundle() == api || e.getBundle() == core) events.add(e.getBundle().getSymbolicName() + " " + e.getType());
        };
        ctx.addBundleListener(listener);
        int upgradesBefore = upgrades();
        try (InputStream jar = new FileInputStream(bundleFile("sink"))) {
            sink.update(jar);
        }
        await("the sink bundle active again", 10_000, () -> sink.getState() == Bundle.ACTIVE);
        await("the upgrade of the sink reported", 30_000, () -> {
            try {
                return upgrades() > upgradesBefore;
            } catch (Exception e) {
                return false;
            }
        });
        ctx.removeBundleListener(listener);
        JsonNode all = new ObjectMapper().readTree(cmd("list-upgrades")).path("data");
        JsonNode report = all.get(all.size() - 1);
        assertTrue("the sink's gobj migrated, nothing rebuilt: " + report,
            report.path("gobjs_migrated").asInt() >= 1 && report.path("rebuilt").size() == 0);
        // Bundle.update() stops the bundle with its persistent state started: the gobj went on running the stopped
        // revision while the framework installed the new one, so it was never suspended.
        assertEquals("no gobj was suspended on the Bundle.update() path: " + report, 0,
            report.path("gobjs_resumed").asInt());
        // Handed over, not built again from its config node: the value written at run time is still there.
        assertTrue(cmd("read-attrs service=sink").contains("\"echo\":true"));

        assertEquals("api not updated", apiModified, api.getLastModified());
        assertEquals("core not updated", coreModified, core.getLastModified());
        assertEquals("api ACTIVE", Bundle.ACTIVE, api.getState());
        assertEquals("core ACTIVE", Bundle.ACTIVE, core.getState());
        assertTrue("api and core saw no bundle event (no refresh, no restart): " + events,
            events.stream().noneMatch(e -> e.endsWith(" " + BundleEvent.STOPPED) || e.endsWith(" " + BundleEvent.UNRESOLVED)));
        assertTrue(cmd("list-services").contains("\"service\":\"relay\""));
        assertTrue(cmd("view-gobj-tree service=sink").contains("\"running\":true"));
    }

    /**
     * A plain stop is not an update: the bundle is recorded stopped, so the gobj is suspended at once (its events
     * held), and the revision started again takes it over from there, its state kept.
     */
    @Test
    public void shouldSuspendTheGobjsOfAStoppedGclassBundleAndHandThemToItWhenItStartsAgain() throws Exception {
        await("the sink service", 10_000, () -> cmd("read-attrs service=sink").contains("\"result\":0"));
        assertTrue(cmd("write-attr service=sink attr=echo value=true").contains("\"result\":0"));
        Bundle sink = installedBundle(GROUP + ".sink");
        int upgradesBefore = upgrades();
        sink.stop();
        assertEquals(Bundle.RESOLVED, sink.getState());
        assertEquals("a stop hands nothing over", upgradesBefore, upgrades());
        sink.start();
        await("the upgrade of the sink reported", 30_000, () -> {
            try {
                return upgrades() > upgradesBefore;
            } catch (Exception e) {
                return false;
            }
        });
        JsonNode all = new ObjectMapper().readTree(cmd("list-upgrades")).path("data");
        JsonNode report = all.get(all.size() - 1);
        assertTrue("the suspended gobj was handed over, nothing rebuilt: " + report,
            report.path("gobjs_resumed").asInt() >= 1 && report.path("gobjs_migrated").asInt() >= 1
                && report.path("rebuilt").size() == 0);
        assertTrue(cmd("read-attrs service=sink").contains("\"echo\":true"));
        assertTrue(cmd("view-gobj-tree service=sink").contains("\"running\":true"));
    }
}
