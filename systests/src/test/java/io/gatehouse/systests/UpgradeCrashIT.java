// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.systests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.BundleJars;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A crash in the middle of an upgrade: the real runtime under load, new versions of qiogate and tcp dropped into its
 * deploy/, and the process killed with SIGKILL while FileInstall installs them and the gobjs move. Restarted on the
 * same data: nothing acked is lost, and the highest versions are the ones serving.
 */
class UpgradeCrashIT {
    private static final int COUNT = 600_000;

    @Test
    @Timeout(600)
    void shouldLoseNothingAndRunTheHighestVersionAfterAKillDuringAnUpgrade() throws Exception {
        Path work = Files.createTempDirectory(Files.createDirectories(Path.of("target/systests")), "upgrade-crash-");
        Path dist = GatewayProcess.copyOfDist(work);
        int[] ports = Gateways.freePorts(4);
        int input = ports[0], sink0 = ports[1], sink1 = ports[2], control = ports[3];
        ObjectNode cfg = Gateways.demoConfig(Map.of("__input_port__", "" + input,
                "__sink0_port__", "" + sink0, "__sink1_port__", "" + sink1));
        ObjectNode sinksCfg = cfg.deepCopy();
        Gateways.keepServices(cfg, false);
        Gateways.keepServices(sinksCfg, true);
        Path gwConfig = work.resolve("gateway.json");
        Files.writeString(gwConfig, cfg.toPrettyString());
        Path jars = Files.createDirectories(work.resolve("jars"));
        Path qiogate = BundleJars.bumped(dist.resolve("bundle/" + jarName(dist, "io.gatehouse.qiogate")), jars, 1);
        Path tcp = BundleJars.bumped(dist.resolve("bundle/" + jarName(dist, "io.gatehouse.tcp")), jars, 1);

        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl();
             YunoRuntime sinks = YunoRuntime.builder().name("sinks").dataDir(work.resolve("sinks-data"))
                     .gclasses(Gateways.allGclasses(queues)).config(sinksCfg).build().start();
             GatewayProcess gw = new GatewayProcess(gwConfig, work.resolve("data"), work.resolve("gateway.log"), control,
                     dist)) {
            gw.start();
            gw.awaitListening(input, 60_000);
            CompletableFuture<Gateways.Sent> flow = CompletableFuture.supplyAsync(() -> Gateways.send(
                    "--port", "" + input, "--count", "" + COUNT, "--window", "2000", "--timeout", "300",
                    "--resend-after", "5", "--quiet"));
            // the producer is acked once durable and runs ahead of the sinks: wait for a fiftieth delivered, not more,
            // so that the upgrade and the kill land while it still sends
            awaitDistinct(sinks, COUNT / 50, 120_000);
            for (Path jar : new Path[] {qiogate, tcp}) {
                Path part = dist.resolve("deploy/." + jar.getFileName() + ".part");
                Files.copy(jar, part);
                Files.move(part, dist.resolve("deploy/" + jar.getFileName()), StandardCopyOption.ATOMIC_MOVE);
            }
            Thread.sleep(150 + (System.nanoTime() % 300));   // FileInstall polls every 500 ms: somewhere in the upgrade
            boolean midFlow = !flow.isDone();
            gw.kill9();
            Thread.sleep(300);
            gw.start();
            gw.awaitListening(input, 60_000);
            assertTrue(midFlow, "the kill -9 landed while the producer was still sending");
            Gateways.Sent sent = flow.get(360, TimeUnit.SECONDS);
            assertEquals(0, sent.exit, sent.output);
            awaitDistinct(sinks, COUNT, 240_000);

            long missing = Gateways.missing(sinks, "sink0", COUNT) + Gateways.missing(sinks, "sink1", COUNT);
            System.out.printf("upgrade crash: sent %d, delivered %d, lost %d, duplicated %d%n", COUNT,
                    Gateways.distinct(sinks), missing, Gateways.stat(sinks, "sink0", "duplicates") + Gateways.stat(sinks, "sink1", "duplicates"));
            assertEquals(0, missing, "lost messages");
            String v = BundleJars.version(qiogate);
            String vt = BundleJars.version(tcp);
            long deadline = System.currentTimeMillis() + 60_000;
            JsonNode bundles = null;
            while (System.currentTimeMillis() < deadline) {
                bundles = Reliability.command(control, "list-bundles").path("data");
                if (serving(bundles, "io.gatehouse.qiogate", v) && serving(bundles, "io.gatehouse.tcp", vt)) break;
                Thread.sleep(200);
            }
            assertTrue(serving(bundles, "io.gatehouse.qiogate", v), "qiogate " + v + " serves: " + bundles);
            assertTrue(serving(bundles, "io.gatehouse.tcp", vt), "tcp " + vt + " serves: " + bundles);
            assertEquals(0, gw.stop(), "SIGTERM stops the gateway with exit 0");
        }
    }

    private static String jarName(Path dist, String bsn) throws java.io.IOException {
        try (var list = Files.list(dist.resolve("bundle"))) {
            return list.map(p -> p.getFileName().toString()).filter(n -> n.startsWith(bsn + "-")).findFirst()
                    .orElseThrow(() -> new IllegalStateException("no " + bsn + " in " + dist));
        }
    }

    /** The bundle of that name and version is active and serves every gclass it has, with gobjs. */
    private static boolean serving(JsonNode bundles, String bsn, String version) {
        if (bundles == null) return false;
        for (JsonNode b : bundles) {
            if (!bsn.equals(b.path("symbolic_name").asText()) || !version.equals(b.path("version").asText())) continue;
            if (!"ACTIVE".equals(b.path("state").asText()) || b.path("gclasses").size() == 0) return false;
            for (JsonNode g : b.path("gclasses")) {
                if (!g.path("serving").asBoolean() || g.path("gobjs").asInt() == 0) return false;
            }
            return true;
        }
        return false;
    }

    private static void awaitDistinct(YunoRuntime sinks, long n, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline && Gateways.distinct(sinks) < n) Thread.sleep(200);
        assertTrue(Gateways.distinct(sinks) >= n, "delivered " + Gateways.distinct(sinks) + " of " + n);
    }
}
