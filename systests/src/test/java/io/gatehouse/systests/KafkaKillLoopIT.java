package io.gatehouse.systests;

import io.gatehouse.testkit.kafka.KafkaBroker;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Path;
import java.time.Duration;
import java.util.BitSet;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A Kafka edge (the sample config: TCP4H input, relay, C_QIOGATE, C_KAFKA) killed with SIGKILL five times under
 * load and restarted on the same data directory, in front of a real broker. Every message the edge acked upstream
 * must be in the topic; the records it produced twice must all carry a gh-msg-id seen before (a consumer drops
 * them), so what is left after that dedup is only what the producer itself sent twice.
 */
class KafkaKillLoopIT {
    /** Messages an edge acks after each (re)start before it is killed again. */
    static final int PROGRESS = Reliability.pick(2_000, 10_000);

    static void awaitProgress(Reliability.Producer p, long acked, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (p.ackedCount() < acked) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("the producer reached " + p.ackedCount() + " acks of " + acked + " in "
                        + timeoutMs + " ms");
            }
            Thread.sleep(50);
        }
    }

    @Test
    @Timeout(1200)
    void shouldLoseNothingAckedAndLeaveNoEdgeDuplicateAfterGhMsgIdDedupWhenKilledFiveTimesUnderLoad() throws Exception {
        int rounds = 5;
        // enough for five kills mid-flow: a restart's catch-up burst alone took 13,500 acks in one run
        int count = Reliability.pick(80_000, 200_000);
        long seed = Long.getLong("gatehouse.seed", System.nanoTime());
        Random random = new Random(seed);
        Path work = Reliability.work("kafka-kill-loop");
        try (KafkaBroker broker = KafkaEdges.broker(work);
             KafkaEdges.Edge edge = new KafkaEdges.Edge("edge-1", work, broker.bootstrapServers())) {
            broker.createTopic(KafkaEdges.TOPIC, 3);
            edge.start();
            Reliability.Producer producer = new Reliability.Producer(edge.input, 0, count);
            producer.rate = Reliability.pick(3_000, 5_000);   // keeps the load on through every round
            // an edge acks within milliseconds; only a starved machine takes seconds, and a resend then is noise
            producer.resendAfterMs = 30_000;
            CompletableFuture<Boolean> flow = CompletableFuture.supplyAsync(() -> producer.run(900_000));
            StringBuilder kills = new StringBuilder();
            for (int r = 1; r <= rounds; r++) {
                // Under load means mid-flow: the edge has taken a good number of messages since it (re)started, so
                // it holds records in its queue and its producer when it dies, however slow the machine is.
                // The producer's pacing catches up after each restart, so one round can run far past its share
                // (acked at the kills of 40,000: 2011, 6985, 9977, 29168, 40000 in one CI run). Kill points spread
                // over the count keep the kills mid-flow, and a target never passes the last message, or the last
                // round would wait for acks that are never sent.
                long spread = (long) r * count / (rounds + 1);
                awaitProgress(producer, Math.min(count, Math.max(spread, producer.ackedCount() + PROGRESS)), 240_000);
                Thread.sleep(random.nextInt(1500));
                edge.kill9();
                kills.append(r == 1 ? "" : ",").append(producer.ackedCount());
                Thread.sleep(random.nextInt(500));
                edge.start();
            }
            producer.rate = 0;
            boolean all = flow.get(900, TimeUnit.SECONDS);
            assertTrue(edge.awaitDrained(180_000), "the edge's queue drained into Kafka: " + edge.stats());
            BitSet acked = producer.ackedIds();
            KafkaEdges.TopicCheck topic = new KafkaEdges.TopicCheck(
                    broker.consumeAll(KafkaEdges.TOPIC, Duration.ofSeconds(120)));
            long lost = topic.lost(acked);
            long unexplained = topic.unexplained(producer.resentIds());
            Reliability.report("kafka kill-9 loop", count, topic.ids.cardinality(), lost, topic.rawDuplicates,
                    rounds + " kills (acked so far at each: " + kills + "), " + topic.summary() + ", producer resent "
                            + producer.resentIds().cardinality() + " ids, reconnects " + producer.reconnects.get()
                            + ", seed " + seed);
            assertTrue(all, "every message acked in the end");
            assertEquals(0, lost, "acked messages missing from the topic");
            assertEquals(count, topic.ids.cardinality(), "every id in the topic");
            assertEquals(0, unexplained, "ids queued twice that the producer never sent twice");
            assertEquals(0, topic.badRecords, "records without a message id");
            assertEquals(0, edge.stop(), "SIGTERM stops the edge with exit 0");
        }
    }
}
