// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.systests;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.testkit.load.AckingSink;
import io.gatehouse.testkit.load.PacedProducer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The baseline a live upgrade is measured against: what a process restart (SIGTERM, then a start on the same data)
 * does to the same paced flow through the demo pipeline that {@code itests/LiveUpgradeUnderLoadIT} upgrades bundle
 * by bundle. Nothing acked may be lost; the gaps at the sinks, the duplicates and the connections closed are
 * printed (docs/OPERATIONS.md puts them beside the live-upgrade figures), not asserted: they are what a restart
 * costs, and the point of a live upgrade is not to pay it.
 */
class RestartUnderLoadIT {
    private static final int RATE = Integer.getInteger("gatehouse.systests.restart.rate", 20_000);
    private static final int RESTARTS = Integer.getInteger("gatehouse.systests.restart.count", 3);

    @Test
    @Timeout(600)
    void shouldLoseNothingAcrossRestartsUnderAPacedFlowAndReportWhatTheyCost() throws Exception {
        Path work = Files.createTempDirectory(Files.createDirectories(Path.of("target/systests")), "restart-");
        int[] ports = Gateways.freePorts(4);
        int input = ports[0], sink0Port = ports[1], sink1Port = ports[2], control = ports[3];
        ObjectNode cfg = Gateways.demoConfig(Map.of("__input_port__", "" + input,
                "__sink0_port__", "" + sink0Port, "__sink1_port__", "" + sink1Port));
        // the sinks are this test's AckingSinks: the gateway keeps its input, relay, queues and outputs
        Gateways.keepServices(cfg, false);
        Path gwConfig = work.resolve("gateway.json");
        Files.writeString(gwConfig, cfg.toPrettyString());

        List<String> rows = new ArrayList<>();
        try (AckingSink sink0 = new AckingSink(sink0Port, 2_000_000); AckingSink sink1 = new AckingSink(sink1Port, 2_000_000);
             GatewayProcess gw = new GatewayProcess(gwConfig, work.resolve("data"), work.resolve("gateway.log"), control)) {
            gw.start();
            gw.awaitListening(input, 60_000);
            await("the outputs connected to the sinks", 60_000,
                    () -> sink0.connectionsAccepted() == 1 && sink1.connectionsAccepted() == 1);
            try (PacedProducer producer = new PacedProducer(input, RATE, 20_000).start()) {
                await("the flow started", 60_000, () -> sink0.received() + sink1.received() > RATE);
                long steadyFrom = System.nanoTime();
                Thread.sleep(2_000);
                rows.add(String.format("  %-14s %9s %9s %28.1f", "steady flow", "-", "-",
                        longestGap(sink0, sink1, steadyFrom, System.nanoTime())));
                for (int i = 0; i < RESTARTS; i++) {
                    long from = System.nanoTime();
                    int exit = gw.stop();
                    long stopped = System.nanoTime();
                    assertEquals(0, exit, "SIGTERM stops the gateway with exit 0, see " + work.resolve("gateway.log"));
                    gw.start();
                    gw.awaitListening(input, 60_000);
                    long listening = System.nanoTime();
                    int delivered = sink0.distinct() + sink1.distinct();
                    await("the flow going again", 60_000, () -> sink0.distinct() + sink1.distinct() > delivered + RATE);
                    Thread.sleep(1_000);
                    rows.add(String.format("  %-14s %9.0f %9.0f %28.1f", "restart " + (i + 1), (stopped - from) / 1e6,
                            (listening - stopped) / 1e6, longestGap(sink0, sink1, from, System.nanoTime())));
                }
                producer.stop();
                await("every message acked", 180_000, producer::allAcked);
                int sent = producer.sent();
                await("every message at a sink", 180_000, () -> sink0.distinct() + sink1.distinct() >= sent);
                Thread.sleep(500);

                int lost = 0;
                for (int i = 0; i < sent; i++) if (!sink0.has(i) && !sink1.has(i)) lost++;
                StringBuilder report = new StringBuilder(String.format("RestartUnderLoadIT: %d messages at %d msgs/s,"
                        + " %d restarts, load average %s; producer: %d acked twice, %d connections lost or refused; sinks: %d distinct, %d lost,"
                        + " %d duplicates, connections %d + %d%n", sent, RATE, RESTARTS, loadAverage(), producer.duplicateAcks(),
                        producer.lostConnections(), sink0.distinct() + sink1.distinct(), lost,
                        sink0.duplicates() + sink1.duplicates(), sink0.connectionsAccepted(), sink1.connectionsAccepted()));
                report.append("  what           stop ms  start ms  longest gap at the sinks ms\n");
                rows.forEach(r -> report.append(r).append('\n'));
                System.out.print(report);
                assertEquals(0, lost, "lost\n" + report);
                assertTrue(producer.lostConnections() >= RESTARTS, "a restart closes the producer's connection\n" + report);
            }
            assertEquals(0, gw.stop(), "SIGTERM stops the gateway with exit 0");
        }
    }

    /** The machine's 1-minute load average, printed with the figures: a gap means little without it. */
    static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
        } catch (java.io.IOException | RuntimeException e) {
            return "?";
        }
    }

    private static double longestGap(AckingSink a, AckingSink b, long from, long to) {
        return Math.max(a.longestGapMs(from, to), b.longestGapMs(from, to));
    }

    private static void await(String what, long timeoutMs, BooleanSupplier done) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!done.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) throw new AssertionError("timed out after " + timeoutMs + " ms waiting for " + what);
            Thread.sleep(20);
        }
    }
}
