package io.gatehouse.systests;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.BitSet;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reliability: one destination (sink1, odd ids) goes down for a while under a steady load. Its queue grows,
 * sink0 keeps its rate; when sink1 comes back its queue drains and every id arrives.
 */
class DestinationDownIT {
    @Test
    @Timeout(600)
    void shouldKeepTheOtherDestinationFlowingAndDrainTheQueueWhenTheDestinationReturns() throws Exception {
        long rate = 4_000;
        int beforeS = 4;
        int downS = Reliability.pick(8, 60);
        int afterS = 4;
        int count = (int) (rate * (beforeS + downS + afterS + 2));
        Path work = Reliability.work("destination-down");
        Reliability.Ports p = new Reliability.Ports();
        Path config = Reliability.writeConfig(work, Reliability.gatewayConfig(p));
        Reliability.Ledger ledger = new Reliability.Ledger();
        Reliability.Ledger ledger1 = new Reliability.Ledger();
        Reliability.Ledger merged;
        try (Reliability.IdSink s0 = new Reliability.IdSink(p.sink0, ledger);
             GatewayProcess gw = new GatewayProcess(config, work.resolve("data"), work.resolve("gateway.log"), p.control)) {
            Reliability.IdSink s1 = new Reliability.IdSink(p.sink1, ledger1);
            gw.start();
            gw.awaitListening(p.input, 60_000);
            Reliability.Producer producer = new Reliability.Producer(p.input, 0, count);
            producer.rate = rate;
            CompletableFuture<Boolean> flow = CompletableFuture.supplyAsync(() -> producer.run(300_000));

            Thread.sleep(beforeS * 1000L);
            long a0 = s0.received.get();
            long p0 = producer.ackedCount();
            long t0 = System.nanoTime();
            s1.close();                                        // the destination goes down
            long maxQueue = 0;
            long end = System.currentTimeMillis() + downS * 1000L;
            while (System.currentTimeMillis() < end) {
                maxQueue = Math.max(maxQueue, Reliability.queued(p.control, 1));
                Thread.sleep(500);
            }
            double downFor = (System.nanoTime() - t0) / 1e9;
            double sink0Rate = (s0.received.get() - a0) / downFor;
            double ackRate = (producer.ackedCount() - p0) / downFor;
            long queuedAtReturn = Reliability.queued(p.control, 1);
            s1 = new Reliability.IdSink(p.sink1, ledger1);     // back, same port
            long back = System.nanoTime();
            try {
                // drained: the backlog is gone (what the producer still sends passes straight through)
                long drainDeadline0 = System.currentTimeMillis() + 120_000;
                while (System.currentTimeMillis() < drainDeadline0) {
                    long q = Reliability.queued(p.control, 1);
                    if (q >= 0 && q < 200) break;
                    Thread.sleep(50);
                }
                double drainS = (System.nanoTime() - back) / 1e9;
                boolean all = flow.get(300, TimeUnit.SECONDS);
                assertTrue(all, "every message acked");
                BitSet acked = producer.ackedIds();
                long drainDeadline = System.currentTimeMillis() + 120_000;
                while (System.currentTimeMillis() < drainDeadline && Reliability.queued(p.control, 1) != 0) Thread.sleep(100);
                merged = new Reliability.Ledger();
                BitSet both = ledger.snapshot();
                both.or(ledger1.snapshot());
                for (int i = both.nextSetBit(0); i >= 0; i = both.nextSetBit(i + 1)) merged.delivered(i);
                Reliability.awaitDelivered(merged, acked, 10_000);
                long lost = merged.lost(acked);
                String extra = String.format(Locale.ROOT,
                        "offered %d msgs/s; sink1 down %d s: producer acked %.0f msgs/s, sink0 kept %.0f msgs/s (expected %d), output-1 queue"
                                + " peaked at %d (%d at return), backlog drained in %.1f s after the return (reconnect delay included)",
                        rate, downS, ackRate, sink0Rate, rate / 2, maxQueue, queuedAtReturn, drainS);
                Reliability.report("destination down", count, both.cardinality(), lost,
                        ledger.duplicates() + ledger1.duplicates(), extra);
                assertEquals(0, lost, "acked messages lost");
                assertEquals(count, both.cardinality(), "every id delivered");
                assertTrue(sink0Rate >= 0.8 * rate / 2, "sink0 kept its rate during the outage: " + sink0Rate);
                assertTrue(maxQueue >= rate / 2 * downS / 2, "the queue of the down destination grew: " + maxQueue);
                assertEquals(0, Reliability.queued(p.control, 1), "the queue drained");
            } finally {
                s1.close();
            }
        }
    }
}
