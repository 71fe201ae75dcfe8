package io.gatehouse.systests;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Nothing acked is lost when the gateway process is killed with SIGKILL: with 100,000 messages queued (the
 * destinations down), and again in the middle of a flow. The sinks run in this JVM and count every id; the
 * gateway is the demo gateway without its sinks, run from the built distribution as a child process.
 */
class KillRestartIT {
    private static final int QUEUED = 100_000;
    private static final int UNDER_LOAD = 200_000;

    @Test
    @Timeout(600)
    void shouldDeliverEveryAckedMessageAfterKillMinus9() throws Exception {
        Path dir = Files.createDirectories(Path.of("target/systests"));
        Path work = Files.createTempDirectory(dir, "kill9-");
        int[] ports = Gateways.freePorts(4);
        int input = ports[0], sink0 = ports[1], sink1 = ports[2], control = ports[3];
        ObjectNode cfg = Gateways.demoConfig(Map.of("__input_port__", "" + input,
                "__sink0_port__", "" + sink0, "__sink1_port__", "" + sink1));
        ObjectNode sinksCfg = cfg.deepCopy();
        Gateways.keepServices(cfg, false);
        Gateways.keepServices(sinksCfg, true);
        Path gwConfig = work.resolve("gateway.json");
        Files.writeString(gwConfig, cfg.toPrettyString());
        Path data = work.resolve("data");
        Path log = work.resolve("gateway.log");

        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl();
             GatewayProcess gw = new GatewayProcess(gwConfig, data, log, control)) {
            gw.start();
            gw.awaitListening(input, 60_000);

            // 1. Destinations down: everything the producer gets acked is durably queued in the gateway.
            Gateways.Sent sent = Gateways.send("--port", "" + input, "--count", "" + QUEUED, "--window", "5000",
                    "--timeout", "180", "--quiet");
            assertEquals(0, sent.exit, sent.output);
            gw.kill9();

            try (YunoRuntime sinks = YunoRuntime.builder().name("sinks").dataDir(work.resolve("sinks-data"))
                    .gclasses(Gateways.allGclasses(queues)).config(sinksCfg).build().start()) {
                gw.start();
                awaitDelivered(sinks, QUEUED, 240_000);

                // 2. Kill -9 in the middle of a flow; the producer reconnects and resends what is not acked.
                CompletableFuture<Gateways.Sent> flow = CompletableFuture.supplyAsync(() -> Gateways.send(
                        "--port", "" + input, "--count", "" + UNDER_LOAD, "--start", "" + QUEUED, "--window", "2000",
                        "--timeout", "240", "--resend-after", "5", "--quiet"));
                // the kill lands once a tenth of the flow is delivered, not after a fixed time: with acks one fsync
                // away (fsync_max_records) the whole flow can be over in a second
                awaitDelivered(sinks, QUEUED + UNDER_LOAD / 10, 240_000);
                boolean midFlow = !flow.isDone();
                gw.kill9();
                Thread.sleep(500);
                gw.start();
                gw.awaitListening(input, 60_000);
                assertTrue(midFlow, "the kill -9 landed while the producer was still sending");
                Gateways.Sent second = flow.get(300, TimeUnit.SECONDS);
                assertEquals(0, second.exit, second.output);
                awaitDelivered(sinks, QUEUED + UNDER_LOAD, 240_000);

                long missing = Gateways.missing(sinks, "sink0", QUEUED + UNDER_LOAD) + Gateways.missing(sinks, "sink1", QUEUED + UNDER_LOAD);
                long dups = Gateways.stat(sinks, "sink0", "duplicates") + Gateways.stat(sinks, "sink1", "duplicates");
                System.out.printf("kill -9: sent %d, delivered %d, lost %d, duplicated %d%n",
                        QUEUED + UNDER_LOAD, Gateways.distinct(sinks), missing, dups);
                assertEquals(0, missing, "lost messages");
                assertEquals(0, gw.stop(), "SIGTERM stops the gateway with exit 0");
            }
        }
    }

    /** Keeps only the sinks' services (true) or only the gateway's (false). */
    private static void awaitDelivered(YunoRuntime sinks, long n, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        long got = 0;
        while (System.currentTimeMillis() < deadline) {
            got = Gateways.distinct(sinks);
            if (got >= n) return;
            Thread.sleep(200);
        }
        assertEquals(n, got, "delivered before the deadline");
    }
}
