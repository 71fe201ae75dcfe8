package io.gatehouse.systests;

import com.fasterxml.jackson.databind.JsonNode;
import io.gatehouse.testkit.kafka.KafkaBroker;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.time.Duration;
import java.util.BitSet;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The broker stopped for 30 s under a steady load through a Kafka edge: the edge keeps acking its producer (the
 * relay acks once the message is on disk, whatever Kafka does), its queue grows on disk meanwhile, and once the
 * broker is back the backlog drains at least twice as fast as the producer sends, with nothing lost. Rates are
 * measured in the same run, so a loaded machine slows both sides of each comparison.
 */
class KafkaDownIT {
    static final long OUTAGE_MS = 30_000;

    @Test
    @Timeout(900)
    void shouldQueueOnDiskKeepAckingAndDrainTwiceAsFastAsTheInputWhenTheBrokerIsDownFor30s() throws Exception {
        int rate = Reliability.pick(1_000, 4_000);
        int count = rate * 120;   // more than the run needs: the producer is stopped once the drain is measured
        Path work = Reliability.work("kafka-down");
        try (KafkaBroker broker = KafkaEdges.broker(work);
             KafkaEdges.Edge edge = new KafkaEdges.Edge("edge-1", work, broker.bootstrapServers())) {
            broker.createTopic(KafkaEdges.TOPIC, 3);
            edge.start();
            Reliability.Producer producer = new Reliability.Producer(edge.input, 0, count);
            producer.rate = rate;
            producer.resendAfterMs = 30_000;   // no resend for a slow ack on a starved machine: only after a reconnect
            CompletableFuture<Boolean> flow = CompletableFuture.supplyAsync(() -> producer.run(600_000));

            KafkaKillLoopIT.awaitProgress(producer, rate * 5L, 180_000);   // warm-up: the edge is serving
            long a0 = producer.ackedCount();
            long t0 = System.nanoTime();
            Thread.sleep(10_000);
            double inputBefore = rate(a0, producer.ackedCount(), t0);

            long stopAt = System.nanoTime();
            long ackedAtStop = producer.ackedCount();
            broker.stop();
            long peakQueue = 0;
            boolean sawClosed = false;
            while (System.nanoTime() - stopAt < TimeUnit.MILLISECONDS.toNanos(OUTAGE_MS)) {
                JsonNode s = edge.stats();
                if (s != null) {
                    peakQueue = Math.max(peakQueue, s.get("msgs_in_queue").asLong());
                    sawClosed |= !s.get("connected").asBoolean();
                }
                Thread.sleep(250);
            }
            long ackedInOutage = producer.ackedCount() - ackedAtStop;
            double inputDuring = rate(ackedAtStop, producer.ackedCount(), stopAt);
            broker.restart();
            long backAt = System.nanoTime();

            // The drain: from the broker's return until the queue is down to what a steady flow keeps in flight.
            long acked0 = edge.stat("records_acked");
            long inAtBack = producer.ackedCount();
            long backlog = edge.stat("msgs_in_queue");
            long drainedAt = -1;
            long deadline = backAt + TimeUnit.SECONDS.toNanos(240);
            while (System.nanoTime() < deadline) {
                long q = edge.stat("msgs_in_queue");
                peakQueue = Math.max(peakQueue, q);
                if (q >= 0 && q <= Math.max(500, rate / 4)) {
                    drainedAt = System.nanoTime();
                    break;
                }
                Thread.sleep(100);
            }
            assertTrue(drainedAt > 0, "the backlog drained within 240 s: " + edge.stats());
            double drainSeconds = (drainedAt - backAt) / 1e9;
            double outputRate = (edge.stat("records_acked") - acked0) / drainSeconds;
            double inputAfter = (producer.ackedCount() - inAtBack) / drainSeconds;

            producer.stop();
            flow.get(60, TimeUnit.SECONDS);
            assertTrue(edge.awaitDrained(120_000), "everything acked reached Kafka: " + edge.stats());
            BitSet acked = producer.ackedIds();
            KafkaEdges.TopicCheck topic = new KafkaEdges.TopicCheck(
                    broker.consumeAll(KafkaEdges.TOPIC, Duration.ofSeconds(120)));
            long lost = topic.lost(acked);
            String figures = String.format(Locale.ROOT, "input %.0f msgs/s before, %.0f during the outage (%d acked in "
                            + "%.0f s), queue peak %d; broker back after %.1f s, backlog %d drained in %.1f s at %.0f "
                            + "records/s = %.1fx the input (%.0f msgs/s meanwhile); %s; load %s", inputBefore,
                    inputDuring, ackedInOutage, OUTAGE_MS / 1000.0, peakQueue, (backAt - stopAt) / 1e9, backlog,
                    drainSeconds, outputRate, outputRate / Math.max(1, inputAfter), inputAfter, topic.summary(),
                    loadAverage());
            Reliability.report("kafka down 30 s", acked.cardinality(), topic.ids.cardinality(), lost,
                    topic.rawDuplicates, figures);

            assertTrue(sawClosed, "the edge saw Kafka go");
            // A paced producer behind its schedule sends faster until it catches up: above the offered rate is that,
            // so the reference is the lower of the two.
            assertTrue(inputDuring >= 0.8 * Math.min(inputBefore, rate),
                    "the producer kept being acked during the outage: " + figures);
            assertTrue(peakQueue >= 0.9 * ackedInOutage, "the outage's messages waited on disk: " + figures);
            assertTrue(outputRate >= 2 * inputAfter, "drained at 2x the input or more: " + figures);
            assertEquals(0, lost, "acked messages missing from the topic");
            assertEquals(0, topic.unexplained(producer.resentIds()), "ids queued twice that the producer never resent");
            assertFalse(topic.ids.cardinality() < acked.cardinality());
            assertEquals(0, edge.stop(), "SIGTERM stops the edge with exit 0");
        }
    }

    static double rate(long from, long to, long sinceNanos) {
        return (to - from) / ((System.nanoTime() - sinceNanos) / 1e9);
    }

    static String loadAverage() {
        try {
            return java.nio.file.Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException e) {
            return "?";
        }
    }
}
