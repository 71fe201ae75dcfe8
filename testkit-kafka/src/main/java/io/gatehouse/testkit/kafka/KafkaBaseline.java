package io.gatehouse.testkit.kafka;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The Kafka baseline of docs/BENCHMARKS.md: a fresh broker, then ProducerPerformance rounds against it (acks=all,
 * idempotent, no throttle), each round on a topic of its own so no round pays for the previous one's segments.
 *
 * <pre>
 * java -cp "testkit-kafka/target/classes:$(cat testkit-kafka/target/testkit.classpath)" \
 *     io.gatehouse.testkit.kafka.KafkaBaseline \
 *     [records=1000000] [recordSize=132] [rounds=3] [partitions=1] [dir]
 * </pre>
 *
 * Prints the broker's start time, one summary per round and the round with the median rate; the broker is stopped
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
        }
        results.sort(Comparator.comparingDouble(ProducerPerformanceRunner.Result::recordsPerSec));
        System.out.println("median: " + results.get(results.size() / 2));
    }
}
