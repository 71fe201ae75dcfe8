package io.gatehouse.testkit.kafka;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The Kafka baseline of docs/BENCHMARKS.md: a fresh broker, then ProducerPerformance rounds against it (acks=all,
 * idempotent, no throttle), each round on a topic of its own so no round pays for the previous one's segments, then
 * one round throttled to half the median rate for the latency (unthrottled, the tool's latency is the time records
 * wait in the producer's full buffer).
 *
 * <pre>
 * java -cp "testkit-kafka/target/classes:$(cat testkit-kafka/target/testkit.classpath)" \
 *     io.gatehouse.testkit.kafka.KafkaBaseline \
 *     [records=1000000] [recordSize=132] [rounds=3] [partitions=1] [dir]
 * </pre>
 *
 * Prints the broker's start time, one summary per round, the round with the median rate and the throttled round;
 * the broker is stopped
 * and its directory removed at the end. With a {@code dir} it must be empty or absent; without, a temporary one.
 */
public final class KafkaBaseline {
    private KafkaBaseline() {
    }

    public static void main(String[] args) throws Exception {
        long records = args.length > 0 ? Long.parseLong(args[0]) : 1_000_000;
        int size = args.length > 1 ? Integer.parseInt(args[1]) : 132;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        int partitions = args.length > 3 ? Integer.parseInt(args[3]) : 1;
        Path dir = args.length > 4 ? Path.of(args[4]) : Files.createTempDirectory("kafka-baseline-");
        List<ProducerPerformanceRunner.Result> results = new ArrayList<>();
        try (KafkaBroker broker = KafkaBroker.builder(dir).jvmOptions(KafkaBroker.BENCH_JVM_OPTIONS).start()) {
            System.out.printf("broker %s started in %d ms%n", broker.bootstrapServers(),
                broker.lastStartTime().toMillis());
            for (int i = 1; i <= rounds; i++) {
                String topic = "baseline-" + i;
                broker.createTopic(topic, partitions);
                ProducerPerformanceRunner.Result r = new ProducerPerformanceRunner(broker.bootstrapServers(), topic)
                    .records(records).recordSize(size).warmupRecords(records / 10)
                    .run(dir.resolve("perf-" + i + ".log"));
                results.add(r);
                System.out.printf("round %d: %s%n", i, r);
            }
            System.out.println("command: " + results.get(0).command());
            List<ProducerPerformanceRunner.Result> sorted = new ArrayList<>(results);
            sorted.sort(Comparator.comparingDouble(ProducerPerformanceRunner.Result::recordsPerSec));
            ProducerPerformanceRunner.Result median = sorted.get(sorted.size() / 2);
            System.out.println("median: " + median);
            long half = Math.max(1, (long) (median.recordsPerSec() / 2));
            broker.createTopic("baseline-half", partitions);
            ProducerPerformanceRunner.Result throttled =
                new ProducerPerformanceRunner(broker.bootstrapServers(), "baseline-half").records(records)
                    .recordSize(size).warmupRecords(records / 10).throughput(half)
                    .run(dir.resolve("perf-half.log"));
            System.out.println("at " + half + " records/s: " + throttled);
        }
    }
}
