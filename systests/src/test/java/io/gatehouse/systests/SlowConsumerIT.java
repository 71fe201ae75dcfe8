package io.gatehouse.systests;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.util.BitSet;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reliability: a fast producer (as fast as the gateway acks) and two slow consumers (each reads about 2,500
 * msgs/s, then stops reading while it sleeps, so TCP pushes back). The backlog lives in the queues on disk:
 * the gateway's RSS stays under a bound set by its thresholds (heap -Xmx256m, C_QIOGATE window
 * max_pending_acks 10,000 per queue, C_TCP tx queue max_tx_bytes 64 MiB), and everything arrives.
 */
class SlowConsumerIT {
    static final long RSS_BOUND_KB = 640 * 1024;   // 256 MiB heap + 2 x 64 MiB tx bound + JVM/metaspace/direct

    @Test
    @Timeout(900)
    void shouldKeepTheGatewayMemoryBoundedWithSlowConsumers() throws Exception {
        int count = Reliability.pick(60_000, 1_000_000);
        Path work = Reliability.work("slow-consumer");
        Reliability.Ports p = new Reliability.Ports();
        Path config = Reliability.writeConfig(work, Reliability.gatewayConfig(p));
        Reliability.Ledger ledger = new Reliability.Ledger();
        try (Reliability.IdSink s0 = new Reliability.IdSink(p.sink0, ledger);
             Reliability.IdSink s1 = new Reliability.IdSink(p.sink1, ledger);
             GatewayProcess gw = new GatewayProcess(config, work.resolve("data"), work.resolve("gateway.log"), p.control)) {
            for (Reliability.IdSink s : new Reliability.IdSink[] {s0, s1}) {
                s.pauseEvery = 25;
                s.pauseMs = 10;
            }
            gw.start();
            gw.awaitListening(p.input, 60_000);
            AtomicLong maxRss = new AtomicLong();
            AtomicLong rssAtProducerEnd = new AtomicLong();
            Thread sampler = new Thread(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    maxRss.accumulateAndGet(Reliability.rssKb(gw.pid()), Math::max);
                    Reliability.sleep(200);
                }
            }, "rss-sampler");
            sampler.setDaemon(true);
            long rss0 = Reliability.rssKb(gw.pid());
            sampler.start();
            Reliability.Producer producer = new Reliability.Producer(p.input, 0, count);
            producer.window = 5000;
            long t0 = System.nanoTime();
            boolean all = CompletableFuture.supplyAsync(() -> producer.run(600_000)).get(700, TimeUnit.SECONDS);
            double produceS = (System.nanoTime() - t0) / 1e9;
            rssAtProducerEnd.set(Reliability.rssKb(gw.pid()));
            long backlog = Math.max(0, Reliability.queued(p.control, 0)) + Math.max(0, Reliability.queued(p.control, 1));
            BitSet acked = producer.ackedIds();
            Reliability.awaitDelivered(ledger, acked, Reliability.pick(120_000, 900_000));
            double totalS = (System.nanoTime() - t0) / 1e9;
            sampler.interrupt();
            long lost = ledger.lost(acked);
            String extra = String.format(Locale.ROOT,
                    "producer acked all in %.1f s (%.0f msgs/s), backlog then %d, consumers done after %.1f s;"
                            + " gateway RSS %d MiB at start, %d MiB when the producer finished, max %d MiB (bound %d MiB)",
                    produceS, count / produceS, backlog, totalS, rss0 / 1024, rssAtProducerEnd.get() / 1024,
                    maxRss.get() / 1024, RSS_BOUND_KB / 1024);
            Reliability.report("slow consumer", count, ledger.distinct(), lost, ledger.duplicates(), extra);
            assertTrue(all, "every message acked");
            assertEquals(0, lost, "acked messages lost");
            assertEquals(count, ledger.distinct(), "every id delivered");
            assertTrue(maxRss.get() < RSS_BOUND_KB, "RSS " + maxRss.get() + " KiB over the bound");
        }
    }
}
