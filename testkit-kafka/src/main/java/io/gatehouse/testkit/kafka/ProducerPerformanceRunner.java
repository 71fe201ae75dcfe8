package io.gatehouse.testkit.kafka;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Kafka's own producer benchmark ({@code org.apache.kafka.tools.ProducerPerformance} from kafka-tools) in a child
 * JVM: the raw-client baseline that Gatehouse's Kafka output is measured against, on the same broker, record size,
 * acks and idempotence. The child JVM is a plain one (full JIT, G1, 512 MB), as Kafka's own script would start it.
 */
public final class ProducerPerformanceRunner {
    private static final String MAIN = "org.apache.kafka.tools.ProducerPerformance";
    // "%d%s records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency,
    //  %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th." -- the %s is empty for the whole run, or names the
    // steady-state part after --warmup-records.
    private static final Pattern SUMMARY = Pattern.compile(
        "(\\d+)( [a-z -]+)? records sent, ([0-9.]+) records/sec \\(([0-9.]+) MB/sec\\), ([0-9.]+) ms avg latency, "
            + "([0-9.]+) ms max latency, (\\d+) ms 50th, (\\d+) ms 95th, (\\d+) ms 99th, (\\d+) ms 99.9th");

    /** The final summary of one run; {@code steadyState} is the one after the warm-up records, if any. */
    public record Result(long records, double recordsPerSec, double mbPerSec, double avgLatencyMs,
                         double maxLatencyMs, long p50Ms, long p95Ms, long p99Ms, long p999Ms, boolean steadyState,
                         String command) {
        @Override
        public String toString() {
            return String.format("%d records, %.0f records/s (%.2f MB/s), latency avg %.1f ms, p50 %d ms, p95 %d ms, "
                + "p99 %d ms, p99.9 %d ms, max %.0f ms%s", records, recordsPerSec, mbPerSec, avgLatencyMs, p50Ms,
                p95Ms, p99Ms, p999Ms, maxLatencyMs, steadyState ? " (steady state)" : "");
        }
    }

    private final String bootstrapServers;
    private final String topic;
    private long numRecords = 1_000_000;
    private int recordSize = 132;
    private long warmupRecords;
    private long throughput = -1;
    private final Map<String, String> producerProps = new LinkedHashMap<>();
    private List<String> jvmOptions = List.of("-Xms512m", "-Xmx512m", "-XX:+UseG1GC");
    private Duration timeout = Duration.ofMinutes(10);

    /** acks=all and enable.idempotence=true unless a producer property says otherwise. */
    public ProducerPerformanceRunner(String bootstrapServers, String topic) {
        this.bootstrapServers = bootstrapServers;
        this.topic = topic;
        producerProps.put("acks", "all");
        producerProps.put("enable.idempotence", "true");
    }

    public ProducerPerformanceRunner records(long n) {
        this.numRecords = n;
        return this;
    }

    public ProducerPerformanceRunner recordSize(int bytes) {
        this.recordSize = bytes;
        return this;
    }

    /** Records sent first and left out of the steady-state summary (ProducerPerformance --warmup-records). */
    public ProducerPerformanceRunner warmupRecords(long n) {
        this.warmupRecords = n;
        return this;
    }

    /**
     * Records/s the tool aims at (--throughput); -1 (the default) for as fast as it can. Unthrottled, the latency it
     * reports is mostly time spent queued in the producer's buffer; a throttled run measures the path itself.
     */
    public ProducerPerformanceRunner throughput(long recordsPerSec) {
        this.throughput = recordsPerSec;
        return this;
    }

    /** A producer config passed with --command-property (linger.ms, batch.size, compression.type, ...). */
    public ProducerPerformanceRunner producerProperty(String key, String value) {
        producerProps.put(key, value);
        return this;
    }

    public ProducerPerformanceRunner jvmOptions(List<String> options) {
        this.jvmOptions = List.copyOf(options);
        return this;
    }

    public ProducerPerformanceRunner timeout(Duration t) {
        this.timeout = t;
        return this;
    }

    /**
     * Runs it to the end, its output in {@code log}; returns the steady-state summary when warm-up records were
     * asked for, else the whole-run one.
     */
    public Result run(Path log) throws IOException, InterruptedException {
        List<String> args = new ArrayList<>(List.of("--topic", topic, "--num-records", Long.toString(numRecords),
            "--record-size", Integer.toString(recordSize), "--throughput", Long.toString(throughput), "--bootstrap-server",
            bootstrapServers));
        if (warmupRecords > 0) {
            args.add("--warmup-records");
            args.add(Long.toString(warmupRecords));
        }
        args.add("--command-property");
        for (Map.Entry<String, String> e : producerProps.entrySet()) {
            args.add(e.getKey() + "=" + e.getValue());
        }
        String command = "ProducerPerformance " + String.join(" ", args);
        Files.createDirectories(log.toAbsolutePath().getParent());
        Files.deleteIfExists(log);
        int rc = ChildJvm.run(jvmOptions, MAIN, args, log, timeout);
        String out = Files.readString(log);
        if (rc != 0) {
            throw new IOException("ProducerPerformance exited " + rc + ":\n" + ChildJvm.tail(log, 4000));
        }
        Result whole = null;
        Result steady = null;
        Matcher m = SUMMARY.matcher(out);
        while (m.find()) {
            boolean isSteady = m.group(2) != null && !m.group(2).isBlank();
            Result r = new Result(Long.parseLong(m.group(1)), Double.parseDouble(m.group(3)),
                Double.parseDouble(m.group(4)), Double.parseDouble(m.group(5)), Double.parseDouble(m.group(6)),
                Long.parseLong(m.group(7)), Long.parseLong(m.group(8)), Long.parseLong(m.group(9)),
                Long.parseLong(m.group(10)), isSteady, command);
            if (isSteady) {
                steady = r;
            } else {
                whole = r;
            }
        }
        Result r = steady != null ? steady : whole;
        if (r == null) {
            throw new IOException("no summary line in the ProducerPerformance output:\n" + ChildJvm.tail(log, 4000));
        }
        return r;
    }
}
