package io.gatehouse.testkit.kafka;

import java.io.IOException;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * One real Kafka node for tests: KRaft, broker and controller in one process ({@code kafka.Kafka} from the Maven
 * Central jars) in a child JVM, listening on 127.0.0.1 only, all its files under one directory.
 *
 * <pre>
 * try (KafkaBroker kafka = KafkaBroker.start(dir)) {
 *     kafka.createTopic("t", 1);
 *     ... produce to kafka.bootstrapServers() ...
 *     List&lt;KafkaRecord&gt; got = kafka.consumeAll("t", Duration.ofSeconds(10));
 *     kafka.kill();       // "Kafka down": SIGKILL, data kept
 *     kafka.restart();    // same ports, same data
 * }                       // close(): stopped (SIGTERM, SIGKILL after a bound) and the directory removed
 * </pre>
 *
 * The directory holds {@code server.properties}, {@code data/} (log.dirs) and {@code broker.log} (the child's
 * output, appended across restarts). Topics are never created on the fly ({@code auto.create.topics.enable=false}),
 * so a test sees what an unknown topic does. The node is sized for a shared 2-core machine: one network thread,
 * two I/O threads, a 512 MB heap, a JVM tuned to start fast ({@link #TEST_JVM_OPTIONS}).
 */
public final class KafkaBroker implements AutoCloseable {
    private static final String KAFKA_MAIN = "kafka.Kafka";
    private static final String STORAGE_TOOL = "kafka.tools.StorageTool";

    /**
     * The default broker JVM: C1 only and the serial collector. On a busy 2-core machine that halves the start
     * (measured 5-7 s against 10-27 s with C2 and G1, which spend the first seconds compiling and collecting in
     * threads of their own); a test broker never runs long enough for C2 to pay back.
     */
    public static final List<String> TEST_JVM_OPTIONS =
        List.of("-Xms128m", "-Xmx512m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");

    /** A broker JVM for throughput measurements: full JIT, G1, a fixed 1 GB heap. */
    public static final List<String> BENCH_JVM_OPTIONS = List.of("-Xms1g", "-Xmx1g", "-XX:+UseG1GC");

    private final Path dir;
    private final Map<String, String> extra;
    private final List<String> jvmOptions;
    private final Duration startTimeout;
    private final Duration stopGrace;
    private final String saslUser;
    private final String saslPassword;
    private int port;
    private int controllerPort;
    private int saslPort = -1;
    private Process process;
    private Duration lastStartTime = Duration.ZERO;

    private KafkaBroker(Builder b) {
        this.dir = b.dir.toAbsolutePath();
        this.extra = new LinkedHashMap<>(b.properties);
        this.jvmOptions = List.copyOf(b.jvmOptions);
        this.startTimeout = b.startTimeout;
        this.stopGrace = b.stopGrace;
        this.saslUser = b.saslUser;
        this.saslPassword = b.saslPassword;
    }

    /** A broker with the defaults, formatted and started in {@code dir} (created if missing, must be empty). */
    public static KafkaBroker start(Path dir) throws IOException, InterruptedException {
        return builder(dir).start();
    }

    public static Builder builder(Path dir) {
        return new Builder(dir);
    }

    public static final class Builder {
        private final Path dir;
        private final Map<String, String> properties = new LinkedHashMap<>();
        private final List<String> jvmOptions = new ArrayList<>(TEST_JVM_OPTIONS);
        private Duration startTimeout = Duration.ofSeconds(90);
        private Duration stopGrace = Duration.ofSeconds(30);
        private String saslUser;
        private String saslPassword;

        private Builder(Path dir) {
            this.dir = dir;
        }

        /** A server property added to (or replacing one of) the generated server.properties. */
        public Builder property(String key, String value) {
            properties.put(key, value);
            return this;
        }

        /** Replaces the broker JVM's options (default {@link #TEST_JVM_OPTIONS}; {@link #BENCH_JVM_OPTIONS}). */
        public Builder jvmOptions(List<String> options) {
            jvmOptions.clear();
            jvmOptions.addAll(options);
            return this;
        }

        /** How long start and restart wait for the node to answer before failing (default 90 s). */
        public Builder startTimeout(Duration timeout) {
            this.startTimeout = timeout;
            return this;
        }

        /** How long {@link #stop()} waits after SIGTERM before SIGKILL (default 30 s). */
        public Builder stopGrace(Duration grace) {
            this.stopGrace = grace;
            return this;
        }

        /**
         * A second client listener, SASL_PLAINTEXT with the PLAIN mechanism, that knows one user
         * ({@link #saslBootstrapServers()}): what a client's SASL settings are tested against. The PLAINTEXT listener
         * stays, and brokers and controller keep talking over it.
         */
        public Builder saslPlain(String user, String password) {
            this.saslUser = java.util.Objects.requireNonNull(user);
            this.saslPassword = java.util.Objects.requireNonNull(password);
            return this;
        }

        /** Formats the storage and starts the node; fails if {@code dir} is not empty. */
        public KafkaBroker start() throws IOException, InterruptedException {
            KafkaBroker broker = new KafkaBroker(this);
            broker.formatAndStart();
            return broker;
        }
    }

    /** {@code 127.0.0.1:port}: the same across restarts. */
    public String bootstrapServers() {
        return "127.0.0.1:" + port;
    }

    public int port() {
        return port;
    }

    /** {@code 127.0.0.1:port} of the SASL_PLAINTEXT listener ({@link Builder#saslPlain}). */
    public String saslBootstrapServers() {
        if (saslPort < 0) {
            throw new IllegalStateException("this broker has no SASL listener (Builder.saslPlain)");
        }
        return "127.0.0.1:" + saslPort;
    }

    public Path directory() {
        return dir;
    }

    public Path logFile() {
        return dir.resolve("broker.log");
    }

    /** The broker JVM's pid, or -1 when it is not running. */
    public long pid() {
        Process p = process;
        return p != null && p.isAlive() ? p.pid() : -1;
    }

    public boolean isRunning() {
        Process p = process;
        return p != null && p.isAlive();
    }

    /** From launching the JVM to the node answering a describeCluster, for the last start or restart. */
    public Duration lastStartTime() {
        return lastStartTime;
    }

    // --- lifecycle ---

    private void formatAndStart() throws IOException, InterruptedException {
        Files.createDirectories(dir);
        try (var entries = Files.list(dir)) {
            if (entries.findAny().isPresent()) {
                throw new IllegalArgumentException(dir + " is not empty: a new broker needs an empty directory");
            }
        }
        // Free ports are only free until someone binds them: if the node fails to start, a port was likely
        // taken in between, so try again with new ones (only on the first start; a restart keeps its ports).
        IOException last = null;
        for (int attempt = 1; attempt <= 3; attempt++) {
            int[] ports = freePorts(saslUser == null ? 2 : 3);
            port = ports[0];
            controllerPort = ports[1];
            saslPort = saslUser == null ? -1 : ports[2];
            writeProperties();
            format();
            try {
                launch();
                return;
            } catch (IOException e) {
                last = e;
                deleteTree(dir.resolve("data"));
            }
        }
        throw last;
    }

    private void format() throws IOException, InterruptedException {
        String clusterId = Uuid.randomUuid().toString();
        Path log = dir.resolve("format.log");
        int rc = ChildJvm.run(List.of("-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"), STORAGE_TOOL,
            List.of("format", "-t", clusterId, "-c", dir.resolve("server.properties").toString()), log,
            Duration.ofSeconds(120));
        if (rc != 0) {
            throw new IOException("kafka storage format exited " + rc + ":\n" + ChildJvm.tail(log, 4000));
        }
    }

    private void launch() throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        List<String> opts = new ArrayList<>(jvmOptions);
        opts.add("-Djava.awt.headless=true");
        opts.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
        opts.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=info");
        // The broker's shutdown logs through log4j2 (the dynamic logger config); without a configuration it
        // prints a warning about the missing file on every start.
        opts.add("-Dlog4j2.level=WARN");
        Files.writeString(logFile(), "=== start " + java.time.Instant.now() + "\n", StandardCharsets.UTF_8,
            java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
        process = ChildJvm.start(opts, KAFKA_MAIN, List.of(dir.resolve("server.properties").toString()), logFile());
        awaitReady(t0 + startTimeout.toNanos());
        lastStartTime = Duration.ofNanos(System.nanoTime() - t0);
    }

    private void awaitReady(long deadline) throws IOException, InterruptedException {
        // The Admin client is made only once the port listens: one made earlier backs off after each refused
        // connection (up to a second) and notices the broker late.
        Admin admin = null;
        try {
            while (true) {
                if (!process.isAlive()) {
                    throw new IOException("kafka broker exited " + process.exitValue() + " while starting:\n"
                        + ChildJvm.tail(logFile(), 6000));
                }
                if (System.nanoTime() > deadline) {
                    ChildJvm.kill(process);
                    throw new IOException("kafka broker not ready after " + startTimeout.toSeconds() + " s:\n"
                        + ChildJvm.tail(logFile(), 6000));
                }
                if (admin == null && listening()) {
                    admin = admin(Map.of(AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 100));
                }
                if (admin != null) {
                    try {
                        admin.describeCluster(new DescribeClusterOptions().timeoutMs(2000)).nodes()
                            .get(3, TimeUnit.SECONDS);
                        return;
                    } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                        // not serving yet: the listener opens before the broker has caught up with the metadata
                    }
                }
                Thread.sleep(50);
            }
        } finally {
            if (admin != null) {
                admin.close(Duration.ofSeconds(2));
            }
        }
    }

    private boolean listening() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Graceful stop: SIGTERM, then SIGKILL past the grace period. The data stays; {@link #restart()} continues
     * from it. Returns true if the broker exited on the SIGTERM.
     */
    public boolean stop() throws InterruptedException {
        Process p = process;
        return p == null || ChildJvm.stop(p, stopGrace);
    }

    /** SIGKILL: the broker vanishes as in a crash. The data stays. */
    public void kill() throws InterruptedException {
        Process p = process;
        if (p != null && p.isAlive()) {
            ChildJvm.kill(p);
        }
    }

    /** Starts the node again on the same directory and ports (stopping it first if it still runs). */
    public void restart() throws IOException, InterruptedException {
        stop();
        // A port released a moment ago can still be refused to a new listener for a short while
        // (another process took it, or the kernel is slow to let go): wait for it rather than fail.
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!bindable(port) || !bindable(controllerPort) || (saslPort > 0 && !bindable(saslPort))) {
            if (System.nanoTime() > until) {
                throw new IOException("ports " + port + "/" + controllerPort + " still taken 30 s after the stop");
            }
            Thread.sleep(100);
        }
        launch();
    }

    /** Stops the broker and removes its directory. */
    @Override
    public void close() throws InterruptedException, IOException {
        stop();
        deleteTree(dir);
    }

    // --- client side ---

    /** An Admin client on this broker; extra properties added or replaced. The caller closes it. */
    public Admin admin(Map<String, Object> extraProps) {
        Map<String, Object> p = new HashMap<>();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10000);
        p.putAll(extraProps);
        return Admin.create(p);
    }

    /** Creates a topic (replication factor 1) and waits until its partitions have leaders. */
    public void createTopic(String topic, int partitions) throws InterruptedException {
        createTopic(topic, partitions, Map.of());
    }

    /** Creates a topic with topic configs (e.g. {@code min.insync.replicas}) and waits for its leaders. */
    public void createTopic(String topic, int partitions, Map<String, String> configs) throws InterruptedException {
        try (Admin admin = admin(Map.of())) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(configs))).all()
                .get(30, TimeUnit.SECONDS);
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("cannot create topic " + topic + ": " + e.getMessage(), e);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        try (KafkaConsumer<byte[], byte[]> c = consumer()) {
            while (true) {
                List<PartitionInfo> infos = c.partitionsFor(topic, Duration.ofSeconds(5));
                if (infos.size() == partitions && infos.stream().allMatch(i -> i.leader() != null)) {
                    return;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("topic " + topic + " has no leaders after 30 s: " + infos);
                }
                Thread.sleep(50);
            }
        }
    }

    /**
     * Every record of {@code topic}, all partitions, from the beginning to the end offsets as they are when the
     * call starts; ordered by partition, then offset. Fails if they cannot all be read within {@code timeout}.
     */
    public List<KafkaRecord> consumeAll(String topic, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (KafkaConsumer<byte[], byte[]> c = consumer()) {
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo pi : c.partitionsFor(topic, timeout)) {
                parts.add(new TopicPartition(topic, pi.partition()));
            }
            if (parts.isEmpty()) {
                throw new IllegalStateException("topic " + topic + " does not exist");
            }
            parts.sort((a, b) -> Integer.compare(a.partition(), b.partition()));
            Map<TopicPartition, Long> end = c.endOffsets(parts, timeout);
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<Integer, List<KafkaRecord>> byPartition = new HashMap<>();
            while (!reached(c, end)) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("read " + count(byPartition) + " records of " + topic
                        + " within " + timeout + ", end offsets " + end);
                }
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    if (r.offset() < end.get(new TopicPartition(r.topic(), r.partition()))) {
                        byPartition.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(KafkaRecord.of(r));
                    }
                }
            }
            List<KafkaRecord> all = new ArrayList<>();
            for (TopicPartition tp : parts) {
                all.addAll(byPartition.getOrDefault(tp.partition(), List.of()));
            }
            return all;
        }
    }

    private static boolean reached(KafkaConsumer<?, ?> c, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (c.position(e.getKey(), Duration.ofSeconds(5)) < e.getValue()) {
                return false;
            }
        }
        return true;
    }

    private static int count(Map<Integer, List<KafkaRecord>> m) {
        return m.values().stream().mapToInt(Collection::size).sum();
    }

    private KafkaConsumer<byte[], byte[]> consumer() {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    // --- files ---

    private void writeProperties() throws IOException {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("process.roles", "broker,controller");
        p.put("node.id", "1");
        p.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        p.put("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
        p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
        p.put("controller.listener.names", "CONTROLLER");
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        if (saslUser != null) {
            p.put("listeners", p.get("listeners") + ",SASL_PLAINTEXT://127.0.0.1:" + saslPort);
            p.put("advertised.listeners", p.get("advertised.listeners") + ",SASL_PLAINTEXT://127.0.0.1:" + saslPort);
            p.put("listener.security.protocol.map", p.get("listener.security.protocol.map")
                + ",SASL_PLAINTEXT:SASL_PLAINTEXT");
            p.put("sasl.enabled.mechanisms", "PLAIN");
            // the server side of PLAIN: user_<name>="<password>" lists who may log in
            p.put("listener.name.sasl_plaintext.plain.sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required user_" + saslUser + "=\""
                    + saslPassword + "\";");
        }
        p.put("log.dirs", dir.resolve("data").toString());
        p.put("auto.create.topics.enable", "false");
        p.put("num.partitions", "1");
        // one node: every internal topic has a single replica
        p.put("offsets.topic.replication.factor", "1");
        p.put("offsets.topic.num.partitions", "1");
        p.put("transaction.state.log.replication.factor", "1");
        p.put("transaction.state.log.min.isr", "1");
        p.put("transaction.state.log.num.partitions", "1");
        p.put("share.coordinator.state.topic.replication.factor", "1");
        p.put("share.coordinator.state.topic.min.isr", "1");
        p.put("group.initial.rebalance.delay.ms", "0");
        // After a SIGKILL the restarted node waits for its previous broker session to expire before it serves
        // again: 9 s by default, measured 13-14 s per restart against 5-6 s with a 2 s session. 3 s leaves room
        // for a pause on a loaded machine (the heartbeat is local: broker and controller share the process).
        p.put("broker.session.timeout.ms", "3000");
        p.put("broker.heartbeat.interval.ms", "500");
        // small threads and files for a shared 2-core machine
        p.put("num.network.threads", "1");
        p.put("num.io.threads", "2");
        p.put("num.recovery.threads.per.data.dir", "1");
        p.put("background.threads", "2");
        p.put("log.segment.bytes", Integer.toString(64 * 1024 * 1024));
        p.put("log.index.size.max.bytes", Integer.toString(1024 * 1024));
        p.putAll(extra);
        try (Writer w = Files.newBufferedWriter(dir.resolve("server.properties"), StandardCharsets.UTF_8)) {
            w.write("# written by io.gatehouse.testkit.kafka.KafkaBroker\n");
            for (Map.Entry<String, String> e : p.entrySet()) {
                w.write(e.getKey() + "=" + e.getValue() + "\n");
            }
        }
    }

    private static int[] freePorts(int n) throws IOException {
        List<ServerSocket> open = new ArrayList<>();
        try {
            int[] ports = new int[n];
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
                open.add(s);
                ports[i] = s.getLocalPort();
            }
            return ports;
        } finally {
            for (ServerSocket s : open) {
                s.close();
            }
        }
    }

    private static boolean bindable(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException exc) throws IOException {
                if (exc != null) {
                    throw exc;
                }
                Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    @Override
    public String toString() {
        return "KafkaBroker[" + bootstrapServers() + ", pid " + pid() + ", " + dir + "]";
    }
}
