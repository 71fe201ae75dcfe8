// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.itests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.ops4j.pax.exam.CoreOptions.frameworkProperty;
import static org.ops4j.pax.exam.CoreOptions.mavenBundle;
import static org.ops4j.pax.exam.CoreOptions.options;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.jar.JarInputStream;

import io.gatehouse.testkit.load.AckingSink;
import io.gatehouse.testkit.load.PacedProducer;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.Configuration;
import org.ops4j.pax.exam.Option;
import org.ops4j.pax.exam.junit.PaxExam;
import org.ops4j.pax.exam.spi.reactors.ExamReactorStrategy;
import org.ops4j.pax.exam.spi.reactors.PerClass;

/**
 * Live upgrade under load: the demo pipeline (input → C_RELAY → C_MQIOGATE → two C_QIOGATE → TCP4H), fed at a steady
 * rate by a producer speaking the queue protocol and by an MQTT device (QoS 1 and 2 into C_PROT_MQTT, so that the
 * mqtt bundle's swaps hand over a connection with messages in flight), delivering to two acking sinks outside the
 * gateway. While the
 * messages flow, every gclass bundle is upgraded to a new version of itself (the same classes, a higher
 * Bundle-Version, made here) and rolled back, by both paths:
 * <ol>
 *   <li>{@code update-bundle name=BSN url=...} (the new revision started beside the old one, then the takeover);</li>
 *   <li>{@code update-bundle ... rollback=true} back to the original jar;</li>
 *   <li>a jar of a higher version dropped into {@code deploy/} (FileInstall installs it beside the old one);</li>
 *   <li>that jar taken out of {@code deploy/} again (a rollback: the gobjs move back to the revision that remains);</li>
 *   <li>{@code Bundle.update()} (Karaf's {@code bundle:update}): the old revision stops before the new one exists;
 *       the gobjs go on running the stopped revision while the framework works, and the new one takes them over
 *       when it registers.</li>
 * </ol>
 * Then: every message reached a sink, none twice, neither producer lost a connection (nor got an ack it did not
 * expect) and neither sink was connected
 * to twice (no connection closed), no service was rebuilt. Each swap's pause (the core-loop task of the handover)
 * and the longest gap at the sinks around it are printed; docs/OPERATIONS.md has the figures.
 */
@RunWith(PaxExam.class)
@ExamReactorStrategy(PerClass.class)
public class LiveUpgradeUnderLoadIT extends ITSupport {
    // The class is loaded twice (driver and framework) in one JVM: values pass as system properties.
    private static final String PORTS = "gatehouse.itests.liveupgrade.ports";
    private static final String DEPLOY = "gatehouse.itests.liveupgrade.deploy";
    private static final String JARS = "gatehouse.itests.liveupgrade.jars";
    // 5,000 by default: at 20,000 on a quiet machine the producer is acked at the full rate while the sinks get
    // ~2,000 msgs/s (this JVM runs Netty's leak detector at paranoid: a stack trace per buffer access, and the
    // output path pays most of them), and the backlog of a whole run did not drain in the time below (CI,
    // 2026-12-02). The upgrades are judged here; the forwarding rate is issue 17's, measured in bench/.
    static final int RATE = Integer.getInteger("gatehouse.itests.liveupgrade.rate", 5_000);
    static final int MQTT_RATE = Integer.getInteger("gatehouse.itests.liveupgrade.mqtt.rate", 1_000);
    /** How long the flow runs before the steady-flow row: the JIT compiles the pipeline in its first seconds. */
    static final int WARMUP_MS = Integer.getInteger("gatehouse.itests.liveupgrade.warmup.ms", 10_000);
    /** The MQTT device's ids start here ({@code m-100000000}...), far above the queue-protocol producer's. */
    static final int MQTT_BASE = 100_000_000;
    /** Every gclass bundle of the demo pipeline; {@code -Dgatehouse.itests.liveupgrade.bundles=a,b} runs some. */
    static final List<String> BUNDLES = List.of(System.getProperty("gatehouse.itests.liveupgrade.bundles",
        "tcp,tcp4h,channel,iogate,qiogate,mqiogate,trqueue,relay,sink,portal,http,mqtt").split(","));
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Services of the demo config that the sinks of this test replace. */
    private static final Set<String> DEMO_SINKS = Set.of("__sink0_side__", "sink0", "__sink1_side__", "sink1");

    @Configuration
    public Option[] config() {
        int[] p = freePorts(5); // control, input, sink0, sink1, mqtt
        System.setProperty(PORTS, p[0] + "," + p[1] + "," + p[2] + "," + p[3] + "," + p[4]);
        Path dir = newTestDir("liveupgrade");
        Path deploy = dir.resolve("deploy");
        try {
            Files.createDirectories(deploy);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        System.setProperty(DEPLOY, deploy.toString());
        // The upgraded jars: every bundle under two higher versions (made here, on the driver's class path).
        Path jars = dir.resolve("jars");
        try {
            Files.createDirectories(jars);
            for (String b : BUNDLES) {
                Path original = bundleFile(b).toPath();
                Files.copy(io.gatehouse.testkit.BundleJars.bumped(original, jars, 1), jars.resolve(b + "-up.jar"));
                Files.copy(io.gatehouse.testkit.BundleJars.bumped(original, jars, 2), jars.resolve(b + "-deploy.jar"));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        System.setProperty(JARS, jars.toString());
        Path config = pipelineConfig(dir, p[1], p[2], p[3], p[4]);
        return options(base(), allGatehouseBundles(),
            mavenBundle("org.apache.felix", "org.apache.felix.fileinstall").versionAsInProject(),
            frameworkProperty("felix.fileinstall.dir").value(deploy.toString()),
            // in the test's directory, not a fileinstall-<random> left in /tmp by a container that does not exit
            frameworkProperty("felix.fileinstall.tmpdir").value(dir.resolve("fileinstall-tmp").toString()),
            frameworkProperty("felix.fileinstall.poll").value("100"),
            frameworkProperty("felix.fileinstall.noInitialDelay").value("true"),
            frameworkProperty("gatehouse.deploy.dir").value(deploy.toString()),
            frameworkProperty("gatehouse.config").value(config.toString()),
            frameworkProperty("gatehouse.data").value(dir.resolve("data").toString()),
            frameworkProperty("gatehouse.control.port").value(String.valueOf(p[0])),
            frameworkProperty("gatehouse.metrics.port").value("0"));
    }

    /** The demo config with its port variables set and its sinks left out: the outputs go to this test's sinks. */
    static Path pipelineConfig(Path dir, int input, int sink0, int sink1, int mqtt) {
        try {
            ObjectNode cfg = (ObjectNode) JSON.readTree(Files.readString(Path.of(System.getProperty(
                "gatehouse.demo.config", "../runtime/felix/src/main/dist/conf/gatehouse.json"))));
            ObjectNode vars = (ObjectNode) cfg.get("__json_config_variables__");
            vars.put("__input_port__", String.valueOf(input));
            vars.put("__sink0_port__", String.valueOf(sink0));
            vars.put("__sink1_port__", String.valueOf(sink1));
            vars.put("__http_port__", String.valueOf(freePorts(1)[0]));   // never the demo's fixed HTTP port
            vars.put("__mqtt_port__", String.valueOf(mqtt));   // nor its fixed MQTT port
            ArrayNode kept = JSON.createArrayNode();
            for (JsonNode s : cfg.get("services")) {
                if (!DEMO_SINKS.contains(s.path("name").asText())) kept.add(s);
            }
            cfg.set("services", kept);
            Path out = dir.resolve("pipeline.json");
            Files.writeString(out, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(cfg));
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static int port(int i) {
        return Integer.parseInt(System.getProperty(PORTS).split(",")[i]);
    }

    private static JsonNode cmd(String line) {
        String[] answer = new String[1];
        await("an answer to '" + line + "'", 120_000, () -> (answer[0] = ControlLink.tryCommand(port(0), line)) != null);
        try {
            return JSON.readTree(answer[0]);
        } catch (IOException e) {
            throw new AssertionError("not JSON: " + answer[0], e);
        }
    }

    /**
     * A command that changes something, sent once: {@link #cmd} sends again after a read timeout, and a second
     * update-bundle would answer for the state the first one left (a rollback done twice finds nothing to go back
     * from). Its answer may take a while: up to 60 s for the new revision to take over, and more to install it.
     */
    private static JsonNode once(String line) {
        try {
            return JSON.readTree(ControlLink.command(port(0), line, 300_000));
        } catch (IOException e) {
            throw new AssertionError("no answer to '" + line + "'", e);
        }
    }

    /** One swap done: what, how, how long, and what the gateway said. */
    private static final class Swap {
        final String bundle;
        final String how;
        final long startNanos;
        long endNanos;
        double pauseMs = -1;
        int migrated = -1;
        String rebuilt = "";
        /** Sent by the producer, and at the sinks, when the swap was done: a backlog growing shows here. */
        int sentThen = -1;
        int deliveredThen = -1;
        /** When those were read, and the core thread's CPU time then (-1: unknown). */
        long countedNanos;
        long coreCpuNanos = -1;

        Swap(String bundle, String how) {
            this.bundle = bundle;
            this.how = how;
            this.startNanos = System.nanoTime();
        }
    }

    @Test
    public void shouldUpgradeAndRollBackEveryBundleUnderLoadLosingNothingClosingNothing() throws Exception {
        await("the pipeline yuno", 60_000, () -> {
            String s = ControlLink.tryCommand(port(0), "list-services");
            return s != null && s.contains("\"relay\"") && !s.contains("waiting");
        });
        Path deploy = Path.of(System.getProperty(DEPLOY));
        Path jars = Path.of(System.getProperty(JARS));
        List<Swap> swaps = new ArrayList<>();
        try (AckingSink sink0 = new AckingSink(port(2), 4_000_000); AckingSink sink1 = new AckingSink(port(3), 4_000_000)) {
            await("the outputs connected to the sinks", 30_000,
                () -> sink0.connectionsAccepted() == 1 && sink1.connectionsAccepted() == 1);
            try (PacedProducer producer = new PacedProducer(port(1), RATE, 20_000).start();
                 PacedMqttProducer device = new PacedMqttProducer(port(4), "liveupgrade-device", MQTT_BASE, MQTT_RATE, 200)
                     .start()) {
                await("the flow started", 30_000, () -> sink0.received() + sink1.received() > RATE);
                await("the MQTT device connected and acked", 30_000, () -> {
                    assertEquals("the MQTT CONNECT", null, device.refusal());
                    return device.acked() > 0;
                });
                Thread.sleep(WARMUP_MS);
                // The baseline the swaps' gaps are read against: the same flow on the same machine, nothing upgraded.
                Swap start = counted(new Swap("(none)", "start"), producer, sink0, sink1);
                Swap steady = new Swap("(none)", "steady flow");
                Thread.sleep(2_300);
                steady.endNanos = System.nanoTime() - 300_000_000L;
                swaps.add(counted(steady, producer, sink0, sink1));
                for (String b : BUNDLES) {
                    String bsn = GROUP + "." + b;
                    File original = bundleFile(b);
                    Path up = jars.resolve(b + "-up.jar");
                    Path deployed = jars.resolve(b + "-deploy.jar");
                    swaps.add(counted(updateBundle(bsn, up.toUri().toString(), false, "update-bundle"), producer, sink0, sink1));
                    swaps.add(counted(updateBundle(bsn, original.toURI().toString(), true, "rollback"), producer, sink0, sink1));
                    swaps.add(counted(dropIntoDeploy(bsn, deployed, deploy), producer, sink0, sink1));
                    swaps.add(counted(removeFromDeploy(bsn, deployed, deploy), producer, sink0, sink1));
                    swaps.add(counted(frameworkUpdate(bsn, original), producer, sink0, sink1));
                    Thread.sleep(200);
                }
                producer.stop();
                device.stop();
                await("every message acked", 120_000, producer::allAcked);
                await("every MQTT message acked and every QoS 2 one completed", 120_000, device::allDone);
                int sent = producer.sent();
                int mqttSent = device.sent();
                // Not asserted here: the report below says what is missing, and which swap the sinks stalled after.
                // The backlog is waited for while it drains: a loaded machine may leave the input ahead of the outputs
                // by a million messages (the core thread takes the producer's 20,000 msgs/s first), and a message still
                // arriving is not lost. Given up after 30 s without progress, or 10 minutes in all.
                long deadline = System.nanoTime() + 600_000_000_000L;
                long progressed = System.nanoTime();
                int seen = -1;
                while (sink0.distinct() + sink1.distinct() < sent + mqttSent && System.nanoTime() < deadline
                    && System.nanoTime() - progressed < 30_000_000_000L) {
                    int now = sink0.distinct() + sink1.distinct();
                    if (now != seen) {
                        seen = now;
                        progressed = System.nanoTime();
                    }
                    Thread.sleep(50);
                }
                Thread.sleep(500);

                StringBuilder report = new StringBuilder();
                report.append(String.format("LiveUpgradeUnderLoadIT: %d messages at %d msgs/s, load average %s; producer: %d acked, %d acked"
                    + " twice, %d nacks, %d connections lost; sinks: %d + %d distinct, %d duplicates, connections %d + %d%n",
                    sent, RATE, loadAverage(), producer.acked(), producer.duplicateAcks(), producer.nacks(), producer.lostConnections(),
                    sink0.distinct(), sink1.distinct(), sink0.duplicates() + sink1.duplicates(),
                    sink0.connectionsAccepted(), sink1.connectionsAccepted()));
                report.append(String.format("  MQTT device: %d PUBLISHes at %d msgs/s (QoS 1 and 2), %d acked, %d QoS 2 completed,"
                    + " %d answers not expected, %d connections lost%n", mqttSent, MQTT_RATE, device.acked(),
                    device.completed(), device.unexpected(), device.lostConnections()));
                report.append("  bundle     path             took ms  gobjs  pause ms  longest gap at the sinks ms  sent, at sinks then"
                    + "  to sinks/s  core busy %  core us/msg  rebuilt\n");
                Swap prev = start;
                for (int i = 0; i < swaps.size(); i++) {
                    Swap s = swaps.get(i);
                    // until 300 ms after the swap, but not into the next one (its gap is its own)
                    long until = s.endNanos + 300_000_000L;
                    if (i + 1 < swaps.size()) until = Math.min(until, swaps.get(i + 1).startNanos);
                    double gap = Math.max(sink0.longestGapMs(s.startNanos, until), sink1.longestGapMs(s.startNanos, until));
                    // Since the row before: messages to the sinks per second, how busy the core thread was, and its CPU
                    // time per message delivered (it also takes the input in, so this is the whole pipeline's cost).
                    String rate = "-", busy = "-", perMsg = "-";
                    if (prev != null && s.countedNanos > prev.countedNanos) {
                        double sec = (s.countedNanos - prev.countedNanos) / 1e9;
                        int delivered = s.deliveredThen - prev.deliveredThen;
                        rate = String.format("%.0f", delivered / sec);
                        if (s.coreCpuNanos >= 0 && prev.coreCpuNanos >= 0) {
                            long cpu = s.coreCpuNanos - prev.coreCpuNanos;
                            busy = String.format("%.0f", cpu / 1e7 / sec);
                            perMsg = delivered > 0 ? String.format("%.1f", cpu / 1e3 / delivered) : "-";
                        }
                    }
                    prev = s;
                    if (gap > 50) {
                        report.append("      gaps of 20 ms or more, from the start of the swap (+ms: ms): sink0 "
                            + sink0.gapsOver(s.startNanos, until, 20) + ", sink1 " + sink1.gapsOver(s.startNanos, until, 20) + "\n");
                    }
                    report.append(String.format("  %-10s %-14s %9.0f %6s %9s %28.1f  %9d %9d  %10s  %11s  %11s  %s%n", s.bundle,
                        s.how, (s.endNanos - s.startNanos) / 1e6, s.migrated < 0 ? "-" : String.valueOf(s.migrated),
                        s.pauseMs < 0 ? "-" : String.format("%.2f", s.pauseMs), gap, s.sentThen, s.deliveredThen,
                        rate, busy, perMsg, s.rebuilt));
                }
                System.out.print(report);

                int lost = 0;
                int firstLost = -1;
                int lastLost = -1;
                for (int i = 0; i < sent; i++) {
                    if (!sink0.has(i) && !sink1.has(i)) {
                        lost++;
                        if (firstLost < 0) firstLost = i;
                        lastLost = i;
                    }
                }
                if (lost > 0) {
                    report.append(String.format("  missing: %d, ids %d..%d%n", lost, firstLost, lastLost));
                    for (String out : new String[] {"__output_side__"}) {
                        report.append("  ").append(out).append(": ").append(cmd("stats-yuno service=" + out)).append('\n');
                    }
                    System.out.print(report);
                }
                assertEquals("lost\n" + report, 0, lost);
                int lostMqtt = 0;
                for (int i = 0; i < mqttSent; i++) if (!sink0.has(MQTT_BASE + i) && !sink1.has(MQTT_BASE + i)) lostMqtt++;
                assertEquals("MQTT messages lost\n" + report, 0, lostMqtt);
                assertEquals("connections the MQTT device lost\n" + report, 0, device.lostConnections());
                assertEquals("MQTT answers not expected\n" + report, 0, device.unexpected());
                assertEquals("duplicates at the sinks\n" + report, 0, sink0.duplicates() + sink1.duplicates());
                assertEquals("connections the producer lost\n" + report, 0, producer.lostConnections());
                assertEquals("connections to sink0\n" + report, 1, sink0.connectionsAccepted());
                assertEquals("connections to sink1\n" + report, 1, sink1.connectionsAccepted());
                for (Swap s : swaps) {
                    assertTrue(s.bundle + " " + s.how + " rebuilt services: " + s.rebuilt + "\n" + report, s.rebuilt.isEmpty());
                }
            }
        }
    }

    /** The machine's 1-minute load average, printed with the figures: a gap means little without it. */
    private static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (IOException | RuntimeException e) {
            return "?";
        }
    }

    private static Swap counted(Swap s, PacedProducer producer, AckingSink sink0, AckingSink sink1) {
        s.sentThen = producer.sent();
        s.deliveredThen = sink0.distinct() + sink1.distinct();
        s.countedNanos = System.nanoTime();
        s.coreCpuNanos = coreCpuNanos();
        return s;
    }

    /** The CPU time of the yuno's core thread (it runs every gobj of the demo), or -1 when it is not found. */
    private static long coreCpuNanos() {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().startsWith("gatehouse-core-")) return mx.getThreadCpuTime(t.getId());
        }
        return -1;
    }

    private Swap updateBundle(String bsn, String url, boolean rollback, String how) {
        Swap s = new Swap(bsn.substring(GROUP.length() + 1), how);
        int before = upgrades();
        JsonNode a = once("update-bundle name=" + bsn + " url=" + url + (rollback ? " rollback=true" : ""));
        s.endNanos = System.nanoTime();
        assertEquals(how + " of " + bsn + ": " + a, 0, a.path("result").asInt());
        JsonNode d = a.path("data");
        s.pauseMs = d.path("pause_ms").asDouble(-1);
        s.migrated = d.path("gobjs_migrated").asInt(-1);
        s.rebuilt = d.path("rebuilt").isArray() && d.path("rebuilt").size() > 0 ? d.path("rebuilt").toString() : "";
        // a bundle without gclasses (trqueue) moves no gobj: its handover (the queues taken over) is in list-upgrades
        if (s.pauseMs < 0) lastUpgrade(s, before);
        return s;
    }

    /** FileInstall installs the jar beside the serving revision; done when it serves (or, without gclasses, runs). */
    private Swap dropIntoDeploy(String bsn, Path jar, Path deploy) throws IOException {
        Swap s = new Swap(bsn.substring(GROUP.length() + 1), "deploy/ in");
        int before = upgrades();
        Path tmp = deploy.resolve("." + jar.getFileName() + ".part");
        Files.copy(jar, tmp, StandardCopyOption.REPLACE_EXISTING);
        Files.move(tmp, deploy.resolve(jar.getFileName()), StandardCopyOption.ATOMIC_MOVE);
        String version = versionOf(jar);
        await(bsn + " " + version + " serving from deploy/", 60_000, () -> servesOrRuns(bsn, version));
        s.endNanos = System.nanoTime();
        lastUpgrade(s, before);
        return s;
    }

    private Swap removeFromDeploy(String bsn, Path jar, Path deploy) throws IOException {
        Swap s = new Swap(bsn.substring(GROUP.length() + 1), "deploy/ out");
        int before = upgrades();
        String version = versionOf(jar);
        Files.delete(deploy.resolve(jar.getFileName()));
        await(bsn + " " + version + " gone after its jar left deploy/", 60_000, () -> !installed(bsn, version));
        s.endNanos = System.nanoTime();
        lastUpgrade(s, before);
        return s;
    }

    /** The framework path: the same bundle updated in place from its jar. */
    private Swap frameworkUpdate(String bsn, File jar) throws Exception {
        Swap s = new Swap(bsn.substring(GROUP.length() + 1), "Bundle.update");
        int before = upgrades();
        org.osgi.framework.Bundle b = installedBundle(bsn);
        try (InputStream in = Files.newInputStream(jar.toPath())) {
            b.update(in);
        }
        await(bsn + " ACTIVE again", 60_000, () -> b.getState() == org.osgi.framework.Bundle.ACTIVE);
        await(bsn + " serving again", 60_000, () -> servesOrRuns(bsn, b.getVersion().toString()));
        s.endNanos = System.nanoTime();
        lastUpgrade(s, before);
        return s;
    }

    private static int upgrades() {
        return cmd("list-upgrades").path("data").size();
    }

    /** The report of the upgrade the swap caused, if it caused one (a bundle without gobjs causes none). */
    private static void lastUpgrade(Swap s, int before) {
        JsonNode all = cmd("list-upgrades").path("data");
        if (all.size() <= before && all.size() < 50) return;
        JsonNode r = all.get(all.size() - 1);
        s.pauseMs = r.path("pause_ms").asDouble(-1);
        s.migrated = r.path("gobjs_migrated").asInt(-1);
        s.rebuilt = r.path("rebuilt").size() > 0 ? r.path("rebuilt").toString() : "";
    }

    private static boolean servesOrRuns(String bsn, String version) {
        for (JsonNode b : cmd("list-bundles").path("data")) {
            if (!bsn.equals(b.path("symbolic_name").asText()) || !version.equals(b.path("version").asText())) continue;
            if (!"ACTIVE".equals(b.path("state").asText())) return false;
            JsonNode g = b.path("gclasses");
            if (g.size() == 0) return true;
            for (JsonNode x : g) if (!x.path("serving").asBoolean()) return false;
            return true;
        }
        return false;
    }

    private static boolean installed(String bsn, String version) {
        for (JsonNode b : cmd("list-bundles").path("data")) {
            if (bsn.equals(b.path("symbolic_name").asText()) && version.equals(b.path("version").asText())) return true;
        }
        return false;
    }

    private static String versionOf(Path jar) throws IOException {
        try (InputStream in = Files.newInputStream(jar); JarInputStream j = new JarInputStream(in)) {
            return j.getManifest().getMainAttributes().getValue("Bundle-Version");
        }
    }
}
