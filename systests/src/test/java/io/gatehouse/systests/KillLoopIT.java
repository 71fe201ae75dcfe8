package io.gatehouse.systests;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.BitSet;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reliability: kill -9 of the gateway at random moments under load, restarted on the same data directory,
 * several rounds (short profile 3, long 10). Every id the gateway acked must reach a sink.
 */
class KillLoopIT {
    @Test
    @Timeout(900)
    void shouldLoseNothingAckedWhenKilledAtRandomMomentsUnderLoad() throws Exception {
        int rounds = Reliability.pick(3, 10);
        int count = Reliability.pick(40_000, 300_000);
        Random random = new Random(Long.getLong("gatehouse.seed", System.nanoTime()));
        Path work = Reliability.work("kill-loop");
        Reliability.Ports p = new Reliability.Ports();
        Path config = Reliability.writeConfig(work, Reliability.gatewayConfig(p));
        Reliability.Ledger ledger = new Reliability.Ledger();
        try (Reliability.IdSink s0 = new Reliability.IdSink(p.sink0, ledger);
             Reliability.IdSink s1 = new Reliability.IdSink(p.sink1, ledger);
             GatewayProcess gw = new GatewayProcess(config, work.resolve("data"), work.resolve("gateway.log"), p.control)) {
            gw.start();
            gw.awaitListening(p.input, 60_000);
            Reliability.Producer producer = new Reliability.Producer(p.input, 0, count);
            producer.rate = Reliability.pick(3_000, 5_000);   // keeps the load on through every round
            CompletableFuture<Boolean> flow = CompletableFuture.supplyAsync(() -> producer.run(600_000));
            StringBuilder kills = new StringBuilder();
            for (int r = 1; r <= rounds; r++) {
                long wait = 500 + random.nextInt(2000);
                Thread.sleep(wait);
                gw.kill9();
                kills.append(r == 1 ? "" : ",").append(producer.ackedCount());
                Thread.sleep(random.nextInt(500));
                gw.start();
                gw.awaitListening(p.input, 60_000);
            }
            producer.rate = 0;
            boolean all = flow.get(600, TimeUnit.SECONDS);
            BitSet acked = producer.ackedIds();
            Reliability.awaitDelivered(ledger, acked, 120_000);
            long lost = ledger.lost(acked);
            Reliability.report("kill-9 loop", count, ledger.distinct(), lost, ledger.duplicates(),
                    rounds + " kills (acked so far at each: " + kills + "), producer reconnects "
                            + producer.reconnects.get() + ", frames sent " + producer.sent.get());
            assertTrue(all, "every message acked in the end");
            assertEquals(0, lost, "acked messages lost");
            assertEquals(count, ledger.distinct(), "every id delivered");
            assertEquals(0, gw.stop(), "SIGTERM stops the gateway with exit 0");
        }
    }
}
