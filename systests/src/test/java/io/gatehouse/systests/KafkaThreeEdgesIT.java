package io.gatehouse.systests;

import io.gatehouse.testkit.kafka.KafkaBroker;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three Kafka edges (three gateway processes, shared-nothing, each with its own queue) in front of one broker, one
 * producer each. One edge is killed with SIGKILL and restarted: nothing any edge acked is lost, and the two others
 * keep their rate. Their rates while the third dies and comes back are compared with their own rates in the same
 * run just before the kill, not with a fixed figure, so a machine loaded by others weighs on both.
 */
class KafkaThreeEdgesIT {
    /** Ids of producer k are k * ID_SPAN + i: one topic, three disjoint ranges. */
    static final int ID_SPAN = 1_000_000;

    @Test
    @Timeout(1200)
    void shouldLoseNothingAndKeepTheOtherEdgesRatesWhenOneEdgeIsKilledAndRestarted() throws Exception {
        int rate = Reliability.pick(500, 2_000);
        int count = rate * 150;   // more than the run needs: the producers stop once the rates are measured
        Path work = Reliability.work("kafka-three-edges");
        List<KafkaEdges.Edge> edges = new ArrayList<>();
        List<Reliability.Producer> producers = new ArrayList<>();
        List<CompletableFuture<Boolean>> flows = new ArrayList<>();
        try (KafkaBroker broker = KafkaEdges.broker(work)) {
            broker.createTopic(KafkaEdges.TOPIC, 3);
            for (int k = 0; k < 3; k++) {
                KafkaEdges.Edge e = new KafkaEdges.Edge("edge-" + (k + 1), work, broker.bootstrapServers());
                edges.add(e);
                e.start();
            }
            for (int k = 0; k < 3; k++) {
                Reliability.Producer p = new Reliability.Producer(edges.get(k).input, (long) k * ID_SPAN, count);
                p.rate = rate;
                p.resendAfterMs = 30_000;   // resends only after a reconnect, not for a slow ack on a starved machine
                producers.add(p);
                flows.add(CompletableFuture.supplyAsync(() -> p.run(900_000)));
            }
            // warm-up: three JVMs and the broker settle, each edge serving its producer
            for (Reliability.Producer p : producers) KafkaKillLoopIT.awaitProgress(p, rate * 5L, 240_000);

            long[] before0 = acked(producers);
            long t0 = System.nanoTime();
            Thread.sleep(20_000);
            long[] before1 = acked(producers);
            double beforeSeconds = (System.nanoTime() - t0) / 1e9;

            KafkaEdges.Edge victim = edges.get(0);
            long killAt = System.nanoTime();
            victim.kill9();
            Thread.sleep(500);
            victim.start();   // returns once it listens again
            double restartSeconds = (System.nanoTime() - killAt) / 1e9;
            // and it serves its producer again (reconnect, resend); the window ends a few seconds after that
            KafkaKillLoopIT.awaitProgress(producers.get(0), producers.get(0).ackedCount() + rate * 3L, 240_000);
            Thread.sleep(3_000);
            long[] during = acked(producers);
            double duringSeconds = (System.nanoTime() - killAt) / 1e9;

            StringBuilder figures = new StringBuilder(String.format(Locale.ROOT,
                    "%d msgs/s offered per edge; edge-1 killed and listening again after %.1f s", rate, restartSeconds));
            double worst = Double.MAX_VALUE;
            for (int k = 1; k < 3; k++) {
                double rBefore = (before1[k] - before0[k]) / beforeSeconds;
                double rDuring = (during[k] - before1[k]) / duringSeconds;
                assertTrue(rBefore > 0, "edge-" + (k + 1) + " served its producer before the kill");
                // A paced producer that fell behind its schedule (a starved start) sends faster until it catches up:
                // a rate above the offered one is that catching up, not what the edge sustains, so the reference is
                // the lower of the two.
                double ratio = rDuring / Math.min(rBefore, rate);
                worst = Math.min(worst, ratio);
                figures.append(String.format(Locale.ROOT, "; edge-%d %.0f msgs/s before, %.0f while edge-1 died and "
                        + "came back (%.2fx)", k + 1, rBefore, rDuring, ratio));
            }

            for (Reliability.Producer p : producers) p.stop();
            for (CompletableFuture<Boolean> f : flows) f.get(60, TimeUnit.SECONDS);
            for (KafkaEdges.Edge e : edges) {
                assertTrue(e.awaitDrained(180_000), e.name + " drained into Kafka: " + e.stats());
            }
            BitSet acked = new BitSet();
            BitSet resent = new BitSet();
            for (Reliability.Producer p : producers) {
                acked.or(p.ackedIds());
                resent.or(p.resentIds());
            }
            KafkaEdges.TopicCheck topic = new KafkaEdges.TopicCheck(
                    broker.consumeAll(KafkaEdges.TOPIC, Duration.ofSeconds(180)));
            long lost = topic.lost(acked);
            figures.append("; ").append(topic.summary()).append("; producer reconnects");
            for (Reliability.Producer p : producers) figures.append(' ').append(p.reconnects.get());
            figures.append("; load ").append(KafkaDownIT.loadAverage());
            Reliability.report("kafka three edges, one killed", acked.cardinality(), topic.ids.cardinality(), lost,
                    topic.rawDuplicates, figures.toString());
            assertEquals(0, lost, "acked messages missing from the topic");
            assertEquals(0, topic.unexplained(resent), "ids queued twice that no producer resent");
            assertTrue(worst >= 0.8, "the other edges kept 80 % of their rate or more: " + figures);
            for (KafkaEdges.Edge e : edges) assertEquals(0, e.stop(), e.name + " stops with exit 0 on SIGTERM");
        } finally {
            for (Reliability.Producer p : producers) p.stop();
            for (KafkaEdges.Edge e : edges) e.close();
        }
    }

    static long[] acked(List<Reliability.Producer> producers) {
        long[] a = new long[producers.size()];
        for (int k = 0; k < a.length; k++) a[k] = producers.get(k).ackedCount();
        return a;
    }
}
