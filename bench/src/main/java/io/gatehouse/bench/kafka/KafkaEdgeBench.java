package io.gatehouse.bench.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.bench.load.LoadGen;
import io.gatehouse.bench.load.SideBySide;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.kafka.KafkaOutGClass;
import io.gatehouse.testkit.kafka.KafkaBroker;
import io.gatehouse.testkit.kafka.ProducerPerformanceRunner;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Issue 16's benchmark: records into one Kafka broker through a Kafka edge, producer → TCP4H input (C_IOGATE) →
 * C_RELAY → C_QIOGATE (interval fsync: the producer is acked once its message is on disk) → C_KAFKA → the broker,
 * against Kafka's own {@code ProducerPerformance} on the same broker in the same run, with the same record value
 * size, {@code acks=all}, idempotence and the same producer config (linger.ms 5, no compression, keyless records,
 * and one batch size, {@code --batch-size}: written to C_KAFKA's {@code batch_size} and to ProducerPerformance's
 * {@code batch.size}, 65536 unless given, C_KAFKA's default; until 2026-12-02 ProducerPerformance ran with Kafka's
 * 16384 against the edge's 65536). Rounds interleave the two on fresh topics; a last pair of rounds runs both
 * throttled to half their
 * median rates, for the latency:
 * <ul>
 *   <li>ProducerPerformance: its own send → callback latency;</li>
 *   <li>the edge: the producer's write (its {@code tm}, ms) → the broker's append time (the topic stores
 *       LogAppendTime): input, relay, queue and Kafka, read back from the topic.</li>
 * </ul>
 * The edge's throughput is what reached Kafka (C_KAFKA's {@code records_acked} over the measuring window), not what
 * the input acked: with Kafka slower than the input, the difference stays queued on disk, and both are printed.
 *
 * <pre>
 * KafkaEdgeBench [--rounds 3] [--records 1000000] [--size 132] [--warmup 5] [--duration 20] [--connections 4]
 *                [--window 2000] [--key ""] [--max-in-flight 10000] [--batch-size B] [--send-thread true] [--dir DIR]
 * </pre>
 */
public final class KafkaEdgeBench {
    /** The edge's records: the frame without the queue md, whose length varies with the rowid's digits. */
    static final int MD_OVERHEAD = ",\"__md_trq__\":{\"__msg_rowid__\":1000000,\"__msg_t__\":1}".length();
    /** C_KAFKA's {@code batch_size} default (docs/KAFKA.md), given to both sides when {@code --batch-size} is not. */
    static final long DEFAULT_BATCH_SIZE = 65_536;

    private KafkaEdgeBench() {}

    /** The C_KAFKA attributes a run varies; {@code sendThread} false puts {@code producer.send} back on the core loop. */
    record KafkaKw(long maxInFlight, long batchSize, boolean sendThread) {
        String json() {
            return "\"max_in_flight\":" + maxInFlight + ",\"batch_size\":" + batchSize + ",\"send_thread\":" + sendThread;
        }

        @Override
        public String toString() {
            return "max_in_flight " + maxInFlight + ", batch_size " + batchSize + ", send_thread " + sendThread;
        }
    }

    public static void main(String[] args) throws Exception {
        int rounds = 3;
        long records = 1_000_000;
        int size = 132;
        double warmup = 5;
        double duration = 20;
        int connections = 4;
        int window = 2000;
        String key = "";
        long maxInFlight = 10_000;
        long batchSize = DEFAULT_BATCH_SIZE;
        boolean sendThread = true;
        Path dir = null;
        for (int i = 0; i < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
                case "--rounds": rounds = Integer.parseInt(v); break;
                case "--records": records = Long.parseLong(v); break;
                case "--size": size = Integer.parseInt(v); break;
                case "--warmup": warmup = Double.parseDouble(v); break;
                case "--duration": duration = Double.parseDouble(v); break;
                case "--connections": connections = Integer.parseInt(v); break;
                case "--window": window = Integer.parseInt(v); break;
                case "--key": key = v; break;
                case "--max-in-flight": maxInFlight = Long.parseLong(v); break;
                case "--batch-size": batchSize = Long.parseLong(v); break;
                case "--send-thread":
                    if (!v.equals("true") && !v.equals("false"))
                        throw new IllegalArgumentException("--send-thread takes true or false, not '" + v + "'");
                    sendThread = v.equals("true");
                    break;
                case "--dir": dir = Path.of(v); break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (dir == null) dir = Files.createTempDirectory("kafka-edge-bench-");
        KafkaKw kafkaKw = new KafkaKw(maxInFlight, batchSize, sendThread);
        System.out.printf(Locale.ROOT, "# kafka edge bench: %d rounds, value %d B, acks=all, idempotent, key '%s'; "
                        + "ProducerPerformance %d records (10%% warm-up); edge %d connections x window %d, %s (batch_size is ProducerPerformance's batch.size too), "
                        + "warm-up %.0f s, window %.0f s; JVM %s, %d cpus, load average %s%n", rounds, size, key, records,
                connections, window, kafkaKw, warmup, duration, System.getProperty("java.version"),
                Runtime.getRuntime().availableProcessors(), loadAverage());
        List<ProducerPerformanceRunner.Result> base = new ArrayList<>();
        List<EdgeResult> edge = new ArrayList<>();
        try (KafkaBroker broker = KafkaBroker.builder(dir.resolve("broker"))
                .jvmOptions(KafkaBroker.BENCH_JVM_OPTIONS).start()) {
            System.out.printf("broker %s started in %d ms%n", broker.bootstrapServers(), broker.lastStartTime().toMillis());
            // The edge runs in this JVM, which starts cold: a first round, not counted, compiles its paths (each
            // ProducerPerformance round leaves its cold start out with its warm-up records).
            EdgeResult cold = runEdge(broker, "gh-warmup", dir, size, key, kafkaKw, connections, window, warmup,
                    duration, 0);
            System.out.printf(Locale.ROOT, "warm-up edge round (not counted): %s%n", cold);
            for (int r = 1; r <= rounds; r++) {
                String t = "pp-" + r;
                broker.createTopic(t, 1);
                ProducerPerformanceRunner.Result p = new ProducerPerformanceRunner(broker.bootstrapServers(), t)
                        .records(records).recordSize(size).warmupRecords(records / 10)
                        .producerProperty("batch.size", Long.toString(batchSize)).run(dir.resolve(t + ".log"));
                base.add(p);
                System.out.printf(Locale.ROOT, "round %d ProducerPerformance: %s; load %s%n", r, p,
                        loadAverage());
                EdgeResult e = runEdge(broker, "gh-" + r, dir, size, key, kafkaKw, connections, window, warmup, duration, 0);
                edge.add(e);
                System.out.printf(Locale.ROOT, "round %d edge: %s; load %s%n", r, e, loadAverage());
            }
            ProducerPerformanceRunner.Result baseMedian = base.stream()
                    .sorted(Comparator.comparingDouble(ProducerPerformanceRunner.Result::recordsPerSec))
                    .toList().get(base.size() / 2);
            EdgeResult edgeMedian = edge.stream().sorted(Comparator.comparingDouble(x -> x.kafkaRate))
                    .toList().get(edge.size() / 2);
            long halfBase = Math.max(1, (long) (baseMedian.recordsPerSec() / 2));
            long halfEdge = Math.max(1, (long) (edgeMedian.kafkaRate / 2));
            broker.createTopic("pp-half", 1);
            ProducerPerformanceRunner.Result pHalf = new ProducerPerformanceRunner(broker.bootstrapServers(), "pp-half")
                    .records(Math.max(records / 2, halfBase * 20)).recordSize(size).warmupRecords(records / 10)
                    .throughput(halfBase).producerProperty("batch.size", Long.toString(batchSize))
                    .run(dir.resolve("pp-half.log"));
            System.out.printf(Locale.ROOT, "ProducerPerformance at %d records/s: %s%n", halfBase, pHalf);
            EdgeResult eHalf = runEdge(broker, "gh-half", dir, size, key, kafkaKw, 1, window, warmup, duration, halfEdge);
            System.out.printf(Locale.ROOT, "edge at %d msgs/s: %s%n", halfEdge, eHalf);

            System.out.println();
            System.out.println("| round | ProducerPerformance records/s | edge: into Kafka records/s | edge: input acked msgs/s"
                    + " | ratio (edge into Kafka / ProducerPerformance) |");
            System.out.println("|---|---|---|---|---|");
            for (int r = 0; r < rounds; r++) {
                System.out.printf(Locale.ROOT, "| %d | %,.0f | %,.0f | %,.0f | %.2f |%n", r + 1, base.get(r).recordsPerSec(),
                        edge.get(r).kafkaRate, edge.get(r).inputRate, edge.get(r).kafkaRate / base.get(r).recordsPerSec());
            }
            System.out.printf(Locale.ROOT, "| median | %,.0f | %,.0f | | %.2f |%n", baseMedian.recordsPerSec(),
                    edgeMedian.kafkaRate, edgeMedian.kafkaRate / baseMedian.recordsPerSec());
            List<Double> ratios = new ArrayList<>();
            for (int r = 0; r < rounds; r++) ratios.add(edge.get(r).kafkaRate / base.get(r).recordsPerSec());
            ratios.sort(null);
            System.out.printf(Locale.ROOT, "median of the rounds' ratios (each edge round against the "
                    + "ProducerPerformance round just before it): %.2f%n", ratios.get(rounds / 2));
            System.out.printf(Locale.ROOT, "%nlatency at half the median rates: ProducerPerformance %d records/s: p50 %d ms, "
                            + "p99 %d ms, p99.9 %d ms, max %.0f ms; edge %d msgs/s (%,.0f reached Kafka/s): write -> broker "
                            + "append p50 %d ms, p99 %d ms, p99.9 %d ms, max %d ms (%d records)%n", halfBase,
                    pHalf.p50Ms(), pHalf.p99Ms(), pHalf.p999Ms(), pHalf.maxLatencyMs(), halfEdge, eHalf.kafkaRate,
                    eHalf.latency.getValueAtPercentile(50), eHalf.latency.getValueAtPercentile(99),
                    eHalf.latency.getValueAtPercentile(99.9), eHalf.latency.getMaxValue(), eHalf.latency.getTotalCount());
            System.out.println("edge record value " + edgeMedian.valueBytes + " B on average; load average at the end "
                    + loadAverage());
        }
    }

    /** What one edge round measured. */
    static final class EdgeResult {
        double kafkaRate;
        double inputRate;
        long queuedAtEnd;
        double valueBytes;
        double p50InputUs;
        double p99InputUs;
        long inFlight;
        double requestLatencyMs;
        double recordsPerRequest;
        Histogram latency = new Histogram(3);

        @Override
        public String toString() {
            return String.format(Locale.ROOT, "%,.0f records/s into Kafka, %,.0f msgs/s acked at the input (p50 %.0f us, "
                            + "p99 %.0f us to the durable ack), %d left queued, value %.0f B; at the end %d in the producer, "
                            + "request latency avg %.1f ms, %.0f records per request%s", kafkaRate, inputRate,
                    p50InputUs, p99InputUs, queuedAtEnd, valueBytes, inFlight, requestLatencyMs, recordsPerRequest,
                    latency.getTotalCount() == 0 ? ""
                            : String.format(Locale.ROOT, ", write -> append p50 %d ms p99 %d ms max %d ms",
                            latency.getValueAtPercentile(50), latency.getValueAtPercentile(99), latency.getMaxValue()));
        }
    }

    /**
     * One edge in this JVM on a fresh data directory and topic (LogAppendTime). Unpaced ({@code rate} 0): the load
     * generator, throughput only. Paced: a producer that writes its send time into each message, and the latency
     * read back from the topic.
     */
    static EdgeResult runEdge(KafkaBroker broker, String topic, Path dir, int size, String key, KafkaKw kafkaKw,
                              int connections, int window, double warmup, double duration, long rate) throws Exception {
        broker.createTopic(topic, 1, Map.of("message.timestamp.type", "LogAppendTime"));
        Path data = Files.createTempDirectory(dir, topic + "-data-");
        EdgeResult res = new EdgeResult();
        int input = SideBySide.freePortPublic();
        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl()) {
            List<GClassSpec<?>> gclasses = new ArrayList<>(SideBySide.gclasses(queues));
            gclasses.add(new KafkaOutGClass().spec());
            try (YunoRuntime rt = YunoRuntime.builder().name("bench").dataDir(data).gclasses(gclasses)
                    .config(edgeConfig(input, broker.bootstrapServers(), topic, key, kafkaKw)).build().start()) {
                awaitListening(input, 20_000);
                long deadline = System.currentTimeMillis() + 60_000;
                while (!stats(rt).path("connected").asBoolean() && System.currentTimeMillis() < deadline) Thread.sleep(50);
                int frame = size + MD_OVERHEAD;
                CompletableFuture<?> load;
                TimedProducer timed = null;
                if (rate == 0) {
                    LoadGen.Options o = new LoadGen.Options();
                    // burst: each connection keeps up to its window unacked; the input acks on the durable
                    // enqueue, and what reached Kafka is read from C_KAFKA (sustained mode needs destinations in
                    // this JVM that count what they receive, and Kafka is not one)
                    o.mode = LoadGen.Mode.BURST;
                    o.port = input;
                    o.connections = connections;
                    o.window = window;
                    o.size = frame;
                    o.warmup = warmup;
                    o.duration = duration;
                    o.label = "kafka-edge";
                    load = CompletableFuture.supplyAsync(() -> {
                        try {
                            return LoadGen.run(o);
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    });
                } else {
                    timed = new TimedProducer(input, frame, rate, window);
                    TimedProducer t = timed;
                    load = CompletableFuture.runAsync(() -> t.run((long) ((warmup + duration) * 1000)));
                }
                Thread.sleep((long) (warmup * 1000));
                long a0 = stats(rt).path("records_acked").asLong();
                long in0 = timed == null ? 0 : timed.acked.get();
                long t0 = System.nanoTime();
                long fromMs = System.currentTimeMillis();
                Thread.sleep((long) (duration * 1000));
                JsonNode end = stats(rt);
                long a1 = end.path("records_acked").asLong();
                res.inFlight = end.path("in_flight").asLong();
                res.requestLatencyMs = end.path("kafka_request_latency_avg").asDouble();
                res.recordsPerRequest = end.path("kafka_records_per_request_avg").asDouble();
                long in1 = timed == null ? 0 : timed.acked.get();
                double secs = (System.nanoTime() - t0) / 1e9;
                long toMs = System.currentTimeMillis();
                res.kafkaRate = (a1 - a0) / secs;
                Object done = load.get(120, TimeUnit.SECONDS);
                if (done instanceof LoadGen.Result) {
                    LoadGen.Result lr = (LoadGen.Result) done;
                    res.inputRate = lr.msgsPerSec;
                    // burst mode without destinations in this JVM: the ack round trip (the durable enqueue)
                    res.p50InputUs = lr.ackP(50);
                    res.p99InputUs = lr.ackP(99);
                } else {
                    res.inputRate = (in1 - in0) / secs;
                }
                res.queuedAtEnd = stats(rt).path("msgs_in_queue").asLong();
                if (timed != null) {
                    // let what was written in the window reach Kafka before reading it back
                    long until = System.currentTimeMillis() + 60_000;
                    while (stats(rt).path("msgs_in_queue").asLong() > 0 && System.currentTimeMillis() < until) {
                        Thread.sleep(100);
                    }
                }
                readBack(broker, topic, res, timed != null, fromMs, toMs);
            }
        } finally {
            SideBySide.deleteTree(data);
        }
        return res;
    }

    static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException e) {
            return "?";
        }
    }

    static void awaitListening(int port, long ms) throws InterruptedException {
        long deadline = System.currentTimeMillis() + ms;
        while (System.currentTimeMillis() < deadline) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException notYet) {
                Thread.sleep(20);
            }
        }
        throw new IllegalStateException("not listening on " + port);
    }

    static JsonNode stats(YunoRuntime rt) {
        return rt.command("stats-yuno service=__output_side__").path("data");
    }

    /** The bench edge: dynamic input channels (as SideBySide) → relay → C_QIOGATE (interval) → C_KAFKA. */
    static String edgeConfig(int inputPort, String servers, String topic, String key, KafkaKw kafkaKw) {
        return "{\"yuno\":{\"yuno_role\":\"gatehouse\",\"yuno_name\":\"bench\"},\"services\":["
                + "{\"name\":\"__output_side__\",\"gclass\":\"C_QIOGATE\",\"priority\":3,\"kw\":{\"topic_name\":\"bench\","
                + "\"fsync_policy\":\"interval\",\"alert_queue_size\":0},\"children\":[{\"name\":\"kafka\","
                + "\"gclass\":\"C_KAFKA\",\"kw\":{\"bootstrap_servers\":\"" + servers + "\",\"topic\":\"" + topic
                + "\",\"key\":\"" + key + "\"," + kafkaKw.json() + "}}]},"
                + "{\"name\":\"relay\",\"gclass\":\"C_RELAY\",\"priority\":4,\"kw\":{\"input\":\"__input_side__\","
                + "\"output\":\"__output_side__\"}},"
                + "{\"name\":\"__input_side__\",\"gclass\":\"C_IOGATE\",\"priority\":5,\"children\":["
                + "{\"name\":\"__input_side__-listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + inputPort
                + "\",\"max_connections\":1000,\"channel_template\":{\"gclass\":\"C_CHANNEL\",\"children\":"
                + "[{\"gclass\":\"C_PROT_TCP4H\"}]}}}]}]}";
    }

    /**
     * The topic read back: the mean value size, and with {@code latency} the broker's append time minus the
     * producer's write time ({@code "tm"}) of each record written in [fromMs, toMs].
     */
    static void readBack(KafkaBroker broker, String topic, EdgeResult res, boolean latency, long fromMs, long toMs) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
        TopicPartition tp = new TopicPartition(topic, 0);
        long bytes = 0;
        long n = 0;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            long until = latency ? end : Math.min(end, 20_000);
            long deadline = System.currentTimeMillis() + 120_000;
            while (c.position(tp) < until && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(500))) {
                    bytes += r.value().length;
                    n++;
                    if (!latency) continue;
                    long tm = TimedProducer.tmOf(r.value());
                    if (tm >= fromMs && tm <= toMs) res.latency.recordValue(Math.max(0, r.timestamp() - tm));
                }
            }
        }
        res.valueBytes = n == 0 ? 0 : (double) bytes / n;
    }

    /**
     * A paced producer of the queue protocol over one TCP4H connection that writes its send time into each message:
     * {@code {"id":"t-N","tm":<epoch ms>,"pad":"x..","__md_trq__":{"__msg_rowid__":N+1,"__msg_t__":1}}}, at most
     * {@code window} unacked.
     */
    static final class TimedProducer {
        final int port;
        final int frameSize;
        final long rate;
        final int window;
        final AtomicLong acked = new AtomicLong();

        TimedProducer(int port, int frameSize, long rate, int window) {
            this.port = port;
            this.frameSize = frameSize;
            this.rate = rate;
            this.window = window;
        }

        void run(long forMs) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
                s.setTcpNoDelay(true);
                Semaphore credit = new Semaphore(window);
                // buffered: a readInt on the socket's own stream was up to four read syscalls per ack, and this
                // thread took as much CPU as the gateway's core loop in the latency run's profile
                DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 64 * 1024));
                Thread reader = new Thread(() -> {
                    byte[] buf = new byte[4096];
                    try {
                        while (true) {
                            int len = in.readInt() - 4;
                            if (len < 0 || len > buf.length) return;
                            in.readFully(buf, 0, len);
                            acked.incrementAndGet();
                            credit.release();
                        }
                    } catch (IOException closed) {
                        // the run ended
                    }
                }, "timed-producer-acks");
                reader.setDaemon(true);
                reader.start();
                OutputStream o = new BufferedOutputStream(s.getOutputStream(), 64 * 1024);
                long t0 = System.nanoTime();
                long end = t0 + TimeUnit.MILLISECONDS.toNanos(forMs);
                for (long n = 0; System.nanoTime() < end; n++) {
                    long due = t0 + n * 1_000_000_000L / rate;
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        o.flush();
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                    while (!credit.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                        o.flush();
                        if (System.nanoTime() > end) return;
                    }
                    o.write(frame(n));
                }
                o.flush();
                Thread.sleep(200);
            } catch (IOException | InterruptedException e) {
                throw new IllegalStateException("timed producer: " + e, e);
            }
        }

        byte[] frame(long n) {
            String head = "{\"id\":\"t-" + n + "\",\"tm\":" + System.currentTimeMillis() + ",\"pad\":\"";
            String tail = "\",\"__md_trq__\":{\"__msg_rowid__\":" + (n + 1) + ",\"__msg_t__\":1}}";
            int pad = Math.max(0, frameSize - head.length() - tail.length());
            byte[] body = (head + "x".repeat(pad) + tail).getBytes(StandardCharsets.US_ASCII);
            byte[] f = new byte[body.length + 4];
            int l = body.length + 4;
            f[0] = (byte) (l >>> 24);
            f[1] = (byte) (l >>> 16);
            f[2] = (byte) (l >>> 8);
            f[3] = (byte) l;
            System.arraycopy(body, 0, f, 4, body.length);
            return f;
        }

        /** The {@code tm} of a record's value, -1 if none. */
        static long tmOf(byte[] v) {
            byte[] key = "\"tm\":".getBytes(StandardCharsets.US_ASCII);
            outer:
            for (int i = 0; i <= v.length - key.length; i++) {
                for (int j = 0; j < key.length; j++) {
                    if (v[i + j] != key[j]) continue outer;
                }
                long x = 0;
                int k = i + key.length;
                boolean any = false;
                while (k < v.length && v[k] >= '0' && v[k] <= '9') {
                    x = x * 10 + (v[k++] - '0');
                    any = true;
                }
                return any ? x : -1;
            }
            return -1;
        }
    }
}
