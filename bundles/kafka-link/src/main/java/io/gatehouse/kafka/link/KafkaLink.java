package io.gatehouse.kafka.link;

import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One idempotent Kafka producer for one topic, shaped for a single-threaded event loop.
 *
 * <ul>
 * <li><b>Delivery:</b> {@code enable.idempotence=true}, {@code acks=all}, at most 5 requests in flight per
 *     connection (more would silently lose the ordering guarantee), so a record is acked only once the in-sync
 *     replicas have it, and the broker drops the producer's own retries.</li>
 * <li><b>Never blocks the caller:</b> {@code max.block.ms} is 0 by default, so {@link #send} returns at once: a
 *     record whose topic metadata is missing, or that finds the buffer full, fails through its callback instead of
 *     waiting. At most {@code maxInFlight} sends are outstanding; past that {@link #send} answers
 *     {@link Offer#FULL} and takes nothing.</li>
 * <li><b>Results on the caller's thread:</b> every {@link SendCallback} and every connectivity change runs on the
 *     {@link Executor} given to the builder (the gateway's core loop), never on Kafka's I/O thread and never inside
 *     {@link #send}. Callbacks of one partition run in the order of their sends if the executor is FIFO.</li>
 * <li><b>Connectivity:</b> a side thread asks the cluster every {@code connectivityInterval} (an Admin
 *     {@code describeCluster}, then the producer's partitions of the topic) and reports changes of
 *     {@link Connectivity}: down when no broker answers within {@code connectivityTimeout}, when authentication
 *     fails, or when the topic does not exist.</li>
 * <li><b>Close:</b> {@link #close(Duration)} gives the producer that long to deliver what it holds; what is still
 *     pending then fails through its callbacks.</li>
 * <li><b>Send thread</b> ({@link Builder#sendThread}, on by default): {@link #send} only queues the record for one
 *     thread of the link's own, which hands it to the producer (record building, partitioner, accumulator append and
 *     its lock) in the order of the sends: the caller's loop does not pay for Kafka's {@code send}. A parked send
 *     thread is woken once per burst of sends, by a task on the executor, not once per record. The queue is
 *     bounded by {@code maxInFlight} (a record counts from {@link #send} to its callback), and a record's
 *     callback still runs exactly once. Off, {@link #send} calls the producer on the caller's thread.</li>
 * <li><b>Bursts:</b> the results of one burst of callbacks run in one executor task, in order, followed by the
 *     {@link Builder#afterBurst} hook, so a caller can answer a whole burst at once.</li>
 * <li><b>Hand-off:</b> {@link #handOff()} stops this link without closing its producer and gives the producer, the
 *     Admin client and the count of sends outstanding to whoever builds the next link around them
 *     ({@link Builder#adopt}): a live upgrade of the gclass that owns the link keeps the producer's id and sequence
 *     numbers, so nothing is sent twice, and the sends in flight complete through the callbacks they were given.</li>
 * </ul>
 *
 * A bad configuration (an unknown compression, an unresolvable bootstrap address, a SASL mechanism without a JAAS
 * configuration) fails {@link Builder#open()} with an {@link IllegalArgumentException} that says what Kafka
 * refused. Extra properties go to the producer and, as far as they are Admin properties (TLS, SASL), to the
 * connectivity check, so both authenticate alike.
 */
public final class KafkaLink implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(KafkaLink.class);

    /** Properties the link owns: overriding them would break what the link promises. */
    private static final Set<String> OWNED = Set.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG,
        ProducerConfig.ACKS_CONFIG, ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG,
        ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION,
        ProducerConfig.TRANSACTIONAL_ID_CONFIG, ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);

    /** What {@link #send} did with a record. */
    public enum Offer {
        /** Taken: its callback will run exactly once. */
        ACCEPTED,
        /** Not taken: {@code maxInFlight} sends are outstanding. Try again after a callback. */
        FULL,
        /** Not taken: the link is closed. */
        CLOSED
    }

    @FunctionalInterface
    public interface SendCallback {
        void onComplete(SendResult result);
    }

    @FunctionalInterface
    public interface ConnectivityListener {
        void onConnectivity(Connectivity connectivity);
    }

    private final String topic;
    private final String bootstrapServers;
    private final Executor executor;
    private final ConnectivityListener listener;
    private final int maxInFlight;
    private final Duration connectivityTimeout;
    private final Producer<byte[], byte[]> producer;
    private final Admin admin;
    private final ScheduledExecutorService watcher;
    /** Shared with the link that adopts this one's producer: the callbacks of either decrement it. */
    private final AtomicInteger inFlight;
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Set by {@link #handOff()}: the producer and the Admin client belong to the next link. */
    private volatile boolean handedOff;
    /** Results waiting for the executor, run by one task per burst (see {@link #complete}). */
    private final ConcurrentLinkedQueue<Runnable> results = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean drainScheduled = new AtomicBoolean();
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong acked = new AtomicLong();
    private final AtomicLong failed = new AtomicLong();
    private final AtomicLong refusedFull = new AtomicLong();
    private final AtomicBoolean rejectionLogged = new AtomicBoolean();
    private final Runnable afterBurst;
    /** Records {@link #send} queued for the send thread; null when the producer is called on the caller's thread. */
    private final ConcurrentLinkedQueue<Pending> toSend;
    private final Thread sender;
    private volatile boolean senderParked;
    /** A wake of the send thread is queued on the executor (see {@link #send}). */
    private final AtomicBoolean wakeScheduled = new AtomicBoolean();
    private volatile boolean senderStop;
    private volatile Connectivity connectivity = Connectivity.down("not checked yet");
    private Connectivity reported; // watcher thread only

    private KafkaLink(Builder b) {
        this.topic = b.topic;
        this.bootstrapServers = b.bootstrapServers;
        this.executor = b.executor;
        this.listener = b.listener;
        this.maxInFlight = b.maxInFlight;
        this.connectivityTimeout = b.connectivityTimeout;
        this.afterBurst = b.afterBurst;

        Map<String, Object> p = new HashMap<>(b.extra);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, b.bootstrapServers);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, b.maxInFlightRequests);
        p.put(ProducerConfig.LINGER_MS_CONFIG, b.lingerMs);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, b.batchSize);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, b.compression);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, b.maxBlockMs);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, b.clientId);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, b.deliveryTimeoutMs);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, b.requestTimeoutMs);

        Map<String, Object> a = new HashMap<>();
        for (Map.Entry<String, Object> e : b.extra.entrySet()) {
            if (AdminClientConfig.configNames().contains(e.getKey())) {
                a.put(e.getKey(), e.getValue());
            }
        }
        a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, b.bootstrapServers);
        a.put(AdminClientConfig.CLIENT_ID_CONFIG, b.clientId + "-check");
        int checkMs = (int) b.connectivityTimeout.toMillis();
        a.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, checkMs);
        a.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, checkMs);

        if (b.adopted != null) {
            // The producer runs with the settings it was made with; the builder's producer settings are not used.
            this.producer = b.adopted.producer();
            this.admin = b.adopted.admin();
            this.inFlight = b.adopted.inFlight();
        } else {
            Producer<byte[], byte[]> prod = create("producer", () ->
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer()));
            Admin adm;
            try {
                adm = create("admin client", () -> Admin.create(a));
            } catch (RuntimeException e) {
                prod.close(Duration.ZERO);
                throw e;
            }
            this.producer = prod;
            this.admin = adm;
            this.inFlight = new AtomicInteger();
        }
        this.watcher = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "kafka-link-" + b.clientId);
            t.setDaemon(true);
            return t;
        });
        watcher.scheduleWithFixedDelay(this::check, 0, b.connectivityInterval.toMillis(), TimeUnit.MILLISECONDS);
        if (b.sendThread) {
            toSend = new ConcurrentLinkedQueue<>();
            sender = new Thread(this::sendLoop, "kafka-send-" + b.clientId);
            sender.setDaemon(true);
            // Kafka's own loader, as for the producer's construction (a callback may resolve classes)
            sender.setContextClassLoader(KafkaProducer.class.getClassLoader());
            sender.start();
        } else {
            toSend = null;
            sender = null;
        }
    }

    /**
     * Kafka resolves the class names of its defaults and of user configs (metric reporters, SASL callback handlers,
     * ...) with the thread context class loader when there is one. In OSGi that is whatever the calling thread
     * carries (often a loader that cannot see Kafka), so Kafka's own loader is set for the construction; the
     * producer's I/O thread, started inside it, inherits it. The wrapper bundle's DynamicImport-Package lets that
     * loader reach a user class exported by another bundle.
     */
    private static <T> T create(String what, Supplier<T> factory) {
        Thread t = Thread.currentThread();
        ClassLoader previous = t.getContextClassLoader();
        t.setContextClassLoader(KafkaProducer.class.getClassLoader());
        try {
            return factory.get();
        } catch (KafkaException e) {
            throw new IllegalArgumentException("kafka " + what + " refused its configuration: " + reasons(e), e);
        } finally {
            t.setContextClassLoader(previous);
        }
    }

    /** The distinct messages along a cause chain, outermost first: Kafka's own are often "Failed to construct". */
    static String reasons(Throwable e) {
        Set<String> parts = new LinkedHashSet<>();
        for (Throwable c = e; c != null && parts.size() < 6; c = c.getCause()) {
            String m = c.getMessage();
            parts.add(m == null || m.isBlank() ? c.getClass().getSimpleName() : m);
            if (c.getCause() == c) {
                break;
            }
        }
        return String.join(": ", parts);
    }

    public static Builder builder(String bootstrapServers, String topic, Executor executor) {
        return new Builder(bootstrapServers, topic, executor);
    }

    public static final class Builder {
        private final String bootstrapServers;
        private final String topic;
        private final Executor executor;
        private ConnectivityListener listener = c -> { };
        private String clientId;
        private int lingerMs = 5;
        private int batchSize = 16384;
        private String compression = "none";
        private int maxInFlight = 1000;
        private int maxInFlightRequests = 5;
        private int deliveryTimeoutMs = 120_000;
        private int requestTimeoutMs = 30_000;
        private int maxBlockMs = 0;
        private Duration connectivityInterval = Duration.ofSeconds(1);
        private Duration connectivityTimeout = Duration.ofSeconds(5);
        private final Map<String, Object> extra = new HashMap<>();
        private Handoff adopted;
        private boolean sendThread = true;
        private Runnable afterBurst;

        private Builder(String bootstrapServers, String topic, Executor executor) {
            this.bootstrapServers = Objects.requireNonNull(bootstrapServers, "bootstrapServers");
            this.topic = Objects.requireNonNull(topic, "topic");
            this.executor = Objects.requireNonNull(executor, "executor");
            this.clientId = "gatehouse-" + topic;
        }

        /** Told every change of {@link Connectivity} (and the first result), on the executor. */
        public Builder listener(ConnectivityListener l) {
            this.listener = Objects.requireNonNull(l);
            return this;
        }

        public Builder clientId(String id) {
            this.clientId = Objects.requireNonNull(id);
            return this;
        }

        /** {@code linger.ms} (default 5, Kafka's own since 4.0). */
        public Builder lingerMs(int ms) {
            this.lingerMs = ms;
            return this;
        }

        /** {@code batch.size} in bytes (default 16384). */
        public Builder batchSize(int bytes) {
            this.batchSize = bytes;
            return this;
        }

        /** {@code compression.type}: none, gzip, snappy, lz4 or zstd (default none). */
        public Builder compression(String type) {
            this.compression = Objects.requireNonNull(type);
            return this;
        }

        /** Sends outstanding at most (accepted, callback not run yet); default 1000. */
        public Builder maxInFlight(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("maxInFlight must be at least 1, not " + n);
            }
            this.maxInFlight = n;
            return this;
        }

        /** {@code max.in.flight.requests.per.connection}, 1 to 5 (default 5): above 5 idempotence is lost. */
        public Builder maxInFlightRequests(int n) {
            if (n < 1 || n > 5) {
                throw new IllegalArgumentException("max in-flight requests per connection must be 1..5 for an "
                    + "idempotent producer, not " + n);
            }
            this.maxInFlightRequests = n;
            return this;
        }

        /** {@code delivery.timeout.ms}: how long Kafka retries a record before its callback fails. */
        public Builder deliveryTimeoutMs(int ms) {
            this.deliveryTimeoutMs = ms;
            return this;
        }

        /** {@code request.timeout.ms} (default 30000; delivery.timeout.ms must be at least it + linger.ms). */
        public Builder requestTimeoutMs(int ms) {
            this.requestTimeoutMs = ms;
            return this;
        }

        /**
         * {@code max.block.ms} (default 0: {@link #send} never waits). Anything else lets a send wait for metadata
         * or buffer room on the caller's thread, which a core loop must not do.
         */
        public Builder maxBlockMs(int ms) {
            this.maxBlockMs = ms;
            return this;
        }

        /**
         * Whether {@link #send} hands records to a send thread of the link (default true) or calls the producer
         * on the caller's thread (false).
         */
        public Builder sendThread(boolean on) {
            this.sendThread = on;
            return this;
        }

        /**
         * Run on the executor after each burst of results (the callbacks of the records Kafka completed together,
         * each run before it), so the caller can answer them at once. Null: none.
         */
        public Builder afterBurst(Runnable hook) {
            this.afterBurst = hook;
            return this;
        }

        /** How often the side thread asks the cluster (default 1 s). */
        public Builder connectivityInterval(Duration d) {
            this.connectivityInterval = Objects.requireNonNull(d);
            return this;
        }

        /** How long one check waits for a broker before reporting the cluster down (default 5 s). */
        public Builder connectivityTimeout(Duration d) {
            this.connectivityTimeout = Objects.requireNonNull(d);
            return this;
        }

        /**
         * A Kafka client property passed through as is (TLS: {@code security.protocol}, {@code ssl.*}; SASL:
         * {@code sasl.*}; tuning: {@code buffer.memory}, {@code retry.backoff.ms}, ...). The properties the link
         * owns (idempotence, acks, serializers, max in-flight requests, transactions, bootstrap servers) are
         * refused: they have builder methods or must not change. A builder method wins over the same key given
         * here (linger.ms, batch.size, compression.type, delivery/request timeouts, max.block.ms, client.id).
         */
        public Builder property(String key, Object value) {
            if (OWNED.contains(key)) {
                throw new IllegalArgumentException(key + " is set by KafkaLink and cannot be passed through");
            }
            extra.put(key, Objects.requireNonNull(value, key));
            return this;
        }

        public Builder properties(Map<String, ?> props) {
            props.forEach(this::property);
            return this;
        }

        /**
         * Builds the link around the producer and Admin client another link handed off ({@link #handOff()})
         * instead of creating new ones: the producer keeps its id, its sequence numbers and the sends it holds. The
         * producer settings of this builder (linger, batch size, compression, timeouts, properties) are not used;
         * the topic, executor, listener, {@code maxInFlight} and the connectivity checks are this builder's.
         */
        public Builder adopt(Handoff handoff) {
            this.adopted = Objects.requireNonNull(handoff, "handoff");
            return this;
        }

        /** Creates the producer (or takes the adopted one) and starts the connectivity checks. */
        public KafkaLink open() {
            return new KafkaLink(this);
        }
    }

    /**
     * Hands one record to the producer. Returns at once; when {@link Offer#ACCEPTED}, {@code callback} runs exactly
     * once later on the executor with the outcome.
     *
     * @param key     the record key (null: Kafka spreads keyless records over the partitions)
     * @param headers header name to value, in the map's iteration order; may be null
     */
    public Offer send(byte[] key, byte[] value, Map<String, byte[]> headers, SendCallback callback) {
        RecordHeaders hs = new RecordHeaders();
        if (headers != null) {
            headers.forEach(hs::add);
        }
        return send(key, value, hs, callback);
    }

    /** {@link #send(byte[], byte[], Map, SendCallback)} with one header, and no map made for it. */
    public Offer send(byte[] key, byte[] value, String header, byte[] headerValue, SendCallback callback) {
        RecordHeaders hs = new RecordHeaders();
        hs.add(header, headerValue);
        return send(key, value, hs, callback);
    }

    private Offer send(byte[] key, byte[] value, RecordHeaders hs, SendCallback callback) {
        Objects.requireNonNull(callback, "callback");
        if (closed.get()) {
            return Offer.CLOSED;
        }
        if (inFlight.incrementAndGet() > maxInFlight) {
            inFlight.decrementAndGet();
            refusedFull.incrementAndGet();
            return Offer.FULL;
        }
        sent.incrementAndGet();
        long t0 = System.nanoTime();
        if (toSend != null) {
            toSend.add(new Pending(key, value, hs, callback, t0));
            if (senderStop) {
                failLeftovers();   // closed between the check above and now (another thread)
            } else if (senderParked && wakeScheduled.compareAndSet(false, true)) {
                // One wake per burst of sends, from a task on the executor: woken per record, the send thread
                // drained one record and parked again, and the caller's loop spent 11 % of its time in the
                // futex of each unpark (async-profiler, the Kafka edge bench).
                try {
                    executor.execute(this::wakeSender);
                } catch (RuntimeException rejected) {
                    wakeSender();
                }
            }
            return Offer.ACCEPTED;
        }
        produce(key, value, hs, callback, t0);
        return Offer.ACCEPTED;
    }

    private void wakeSender() {
        wakeScheduled.set(false);
        LockSupport.unpark(sender);
    }

    /** A record queued for the send thread. */
    private record Pending(byte[] key, byte[] value, RecordHeaders headers, SendCallback callback, long t0) {
    }

    /**
     * The send thread: hands the queued records to the producer in order, parks when there are none. Told to stop
     * (a close or a hand-off), it sends what is queued first, so every record accepted reaches the producer (whose
     * close fails what it still holds) and a hand-off keeps the order of the sends.
     */
    private void sendLoop() {
        while (true) {
            Pending p = toSend.poll();
            if (p != null) {
                try {
                    produce(p.key, p.value, p.headers, p.callback, p.t0);
                } catch (Throwable t) {
                    // produce() completes the record on any exception; an Error must not end the thread, or every
                    // later send would wait in the queue for good
                    LOG.error("kafka link {}: the send thread met {}", topic, t.toString());
                }
                continue;
            }
            if (senderStop) {
                return;
            }
            senderParked = true;
            if (toSend.isEmpty() && !senderStop) {
                LockSupport.park(this);
            }
            senderParked = false;
        }
    }

    /** Stops the send thread once it has sent what is queued (bounded wait), then fails anything still queued. */
    private void stopSender() {
        if (sender == null) {
            return;
        }
        senderStop = true;
        LockSupport.unpark(sender);
        if (sender != Thread.currentThread()) {
            try {
                sender.join(Math.max(5000, connectivityTimeout.toMillis()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            if (sender.isAlive()) {
                LOG.warn("kafka link {}: the send thread did not stop in time; what it still queues fails", topic);
                sender.interrupt();
            }
        }
        failLeftovers();
    }

    private void failLeftovers() {
        for (Pending p; (p = toSend.poll()) != null; ) {
            complete(p.callback, SendResult.failed(new KafkaException("kafka link " + topic + " closed before the "
                + "record reached the producer"), System.nanoTime() - p.t0));
        }
    }

    /** Hands one record to the producer; its callback (or a throw) completes it exactly once. */
    private void produce(byte[] key, byte[] value, RecordHeaders hs, SendCallback callback, long t0) {
        AtomicBoolean done = new AtomicBoolean();
        try {
            // Kafka runs the callback on its I/O thread, or right here for an error found before queueing
            // (missing metadata with max.block.ms=0, a record too large): complete() moves both to the executor.
            producer.send(new ProducerRecord<>(topic, null, null, key, value, hs), (md, e) -> {
                if (done.compareAndSet(false, true)) {
                    complete(callback, e == null ? SendResult.acked(md.partition(), md.offset(), System.nanoTime() - t0)
                        : SendResult.failed(e, System.nanoTime() - t0));
                }
            });
        } catch (RuntimeException e) {
            // thrown rather than called back: the producer is closed or the record was refused outright
            if (done.compareAndSet(false, true)) {
                complete(callback, SendResult.failed(e, System.nanoTime() - t0));
            }
        }
    }

    /**
     * Kafka completes the records of a batch one after the other on its I/O thread: the results are queued and one
     * executor task runs every result queued by then, so a batch of a hundred records costs the core loop one task
     * and one wake-up, not a hundred. Order is kept (one queue, drained in order).
     */
    private void complete(SendCallback callback, SendResult result) {
        inFlight.decrementAndGet();
        (result.ok() ? acked : failed).incrementAndGet();
        results.add(() -> callback.onComplete(result));
        if (drainScheduled.compareAndSet(false, true)) {
            dispatch(this::drainResults);
        }
    }

    private void drainResults() {
        // Cleared before polling: a result queued after the last poll schedules a task of its own.
        drainScheduled.set(false);
        for (Runnable r; (r = results.poll()) != null; ) {
            r.run();
        }
        if (afterBurst != null) {
            afterBurst.run();
        }
    }

    private void dispatch(Runnable task) {
        try {
            executor.execute(task);
        } catch (RejectedExecutionException e) {
            // The loop is shutting down: nobody is left to tell. The record stays unacked upstream, so the queue
            // that sent it still holds it.
            if (rejectionLogged.compareAndSet(false, true)) {
                LOG.warn("kafka link {}: executor refused a result ({}); later ones are dropped silently", topic,
                    e.toString());
            }
        }
    }

    // --- connectivity ---

    private void check() {
        Connectivity c;
        try {
            c = probe();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
        } catch (RuntimeException e) {
            c = Connectivity.down("connectivity check failed: " + reasons(e));
        }
        connectivity = c;
        if (!c.sameAs(reported) && !closed.get()) {
            reported = c;
            if (c.up()) {
                LOG.info("kafka link {}: {}", topic, c.detail());
            } else {
                LOG.warn("kafka link {}: down: {}", topic, c.detail());
            }
            Connectivity r = c;
            dispatch(() -> listener.onConnectivity(r));
        }
    }

    private Connectivity probe() throws InterruptedException {
        long timeoutMs = connectivityTimeout.toMillis();
        int brokers;
        try {
            brokers = admin.describeCluster(new DescribeClusterOptions().timeoutMs((int) timeoutMs)).nodes()
                .get(timeoutMs + 1000, TimeUnit.MILLISECONDS).size();
        } catch (ExecutionException e) {
            return Connectivity.down(clusterProblem(e.getCause()));
        } catch (java.util.concurrent.TimeoutException e) {
            return Connectivity.down(unreachable());
        }
        // The producer learns the topic's partitions from its own metadata requests; with max.block.ms=0 each call
        // asks for them and answers at once, so poll for a while before calling the topic missing.
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        RuntimeException last;
        do {
            try {
                List<PartitionInfo> parts = producer.partitionsFor(topic);
                if (!parts.isEmpty()) {
                    return Connectivity.up(brokers, parts.size());
                }
                last = null;
            } catch (AuthenticationException | AuthorizationException e) {
                return Connectivity.down(clusterProblem(e));
            } catch (RuntimeException e) {
                last = e;
            }
            Thread.sleep(20);
        } while (System.nanoTime() < deadline);
        return Connectivity.down(topicProblem(last));
    }

    private String topicProblem(RuntimeException fromProducer) throws InterruptedException {
        try {
            admin.describeTopics(List.of(topic), new DescribeTopicsOptions().timeoutMs((int) connectivityTimeout
                .toMillis())).allTopicNames().get(connectivityTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof UnknownTopicOrPartitionException) {
                return "topic '" + topic + "' does not exist on the cluster (and the cluster does not create it)";
            }
            return clusterProblem(e.getCause());
        } catch (java.util.concurrent.TimeoutException e) {
            return unreachable();
        }
        return "topic '" + topic + "' exists but the producer has no partitions for it yet"
            + (fromProducer == null ? "" : " (" + reasons(fromProducer) + ")");
    }

    private String clusterProblem(Throwable cause) {
        if (cause instanceof AuthenticationException) {
            return "authentication with " + bootstrapServers + " failed: " + reasons(cause);
        }
        if (cause instanceof AuthorizationException) {
            return "not authorized on " + bootstrapServers + ": " + reasons(cause);
        }
        if (cause instanceof org.apache.kafka.common.errors.TimeoutException) {
            return unreachable();
        }
        return "cluster at " + bootstrapServers + " answered an error: " + reasons(cause);
    }

    private String unreachable() {
        return "no broker of " + bootstrapServers + " answered within " + connectivityTimeout.toMillis() + " ms";
    }

    // --- state ---

    /** The last connectivity seen by the side thread (any thread may read it). */
    public Connectivity connectivity() {
        return connectivity;
    }

    public String topic() {
        return topic;
    }

    /** The producer this link wraps (the same object after a hand-off): for identity checks, not for sending. */
    public Producer<byte[], byte[]> producer() {
        return producer;
    }

    public int inFlight() {
        return inFlight.get();
    }

    public int maxInFlight() {
        return maxInFlight;
    }

    /** Counters since open: accepted sends, acked, failed, refused with {@link Offer#FULL}; in flight now. */
    public record Stats(long sent, long acked, long failed, long refusedFull, int inFlight) {
    }

    public Stats stats() {
        return new Stats(sent.get(), acked.get(), failed.get(), refusedFull.get(), inFlight.get());
    }

    /**
     * A producer metric of the {@code producer-metrics} group, e.g. {@code record-send-rate},
     * {@code request-latency-avg}, {@code record-retry-rate}, {@code record-error-rate},
     * {@code buffer-available-bytes}; NaN if the producer has no such metric.
     */
    public double producerMetric(String name) {
        for (Map.Entry<MetricName, ? extends Metric> e : producer.metrics().entrySet()) {
            MetricName n = e.getKey();
            if (n.name().equals(name) && n.group().equals("producer-metrics")) {
                Object v = e.getValue().metricValue();
                return v instanceof Number ? ((Number) v).doubleValue() : Double.NaN;
            }
        }
        return Double.NaN;
    }

    /**
     * Several metrics of the {@code producer-metrics} group in one pass over the producer's metrics, by name, in the
     * order asked; a name the producer does not have, or whose value is not a finite number yet, is left out.
     */
    public Map<String, Double> producerMetrics(java.util.Collection<String> names) {
        Map<String, Double> found = new HashMap<>();
        for (Map.Entry<MetricName, ? extends Metric> e : producer.metrics().entrySet()) {
            MetricName n = e.getKey();
            if (n.group().equals("producer-metrics") && names.contains(n.name())) {
                Object v = e.getValue().metricValue();
                if (v instanceof Number && Double.isFinite(((Number) v).doubleValue())) {
                    found.put(n.name(), ((Number) v).doubleValue());
                }
            }
        }
        Map<String, Double> out = new java.util.LinkedHashMap<>();
        for (String name : names) {
            Double v = found.get(name);
            if (v != null) {
                out.put(name, v);
            }
        }
        return out;
    }

    public boolean isClosed() {
        return closed.get();
    }

    // --- hand-off ---

    /**
     * What a link hands to the next one ({@link Builder#adopt}): Kafka and JDK types only, so that a link of another
     * class loader (a new revision of the bundle that embeds this class) can take them.
     */
    public record Handoff(Producer<byte[], byte[]> producer, Admin admin, AtomicInteger inFlight) {
    }

    /**
     * Stops this link without closing its producer: no more sends ({@link Offer#CLOSED}), no more connectivity checks
     * (the one running, if any, is waited for and its report dropped). The sends in flight still complete through
     * their callbacks, on this link's executor. {@link #close} does nothing afterwards: the producer and the Admin
     * client belong to whoever adopts them, and must be closed by it.
     *
     * @throws IllegalStateException if the link is already closed or handed off
     */
    public Handoff handOff() {
        if (!closed.compareAndSet(false, true)) {
            throw new IllegalStateException("kafka link " + topic + " is closed");
        }
        handedOff = true;
        stopSender();   // what is queued reaches the producer first: the next link's sends come after it
        watcher.shutdownNow();
        try {
            if (!watcher.awaitTermination(connectivityTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS)) {
                LOG.warn("kafka link {}: the connectivity check did not stop in time for the hand-off", topic);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return new Handoff(producer, admin, inFlight);
    }

    public boolean isHandedOff() {
        return handedOff;
    }

    // --- close ---

    /** {@link #close(Duration)} with 5 s. */
    @Override
    public void close() {
        close(Duration.ofSeconds(5));
    }

    /**
     * Stops taking sends, stops the checks, and gives the producer {@code timeout} to deliver what it holds; the
     * records still pending then fail through their callbacks. Returns within about {@code timeout} plus the
     * length of one connectivity check in progress.
     */
    public void close(Duration timeout) {
        if (!closed.compareAndSet(false, true) || handedOff) {
            return;
        }
        watcher.shutdownNow();
        stopSender();
        try {
            producer.close(timeout);
        } finally {
            try {
                if (!watcher.awaitTermination(connectivityTimeout.toMillis() + 1000, TimeUnit.MILLISECONDS)) {
                    LOG.warn("kafka link {}: the connectivity check did not stop in time", topic);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            admin.close(Duration.ofSeconds(1));
        }
    }

    @Override
    public String toString() {
        return "KafkaLink[" + topic + " @ " + bootstrapServers + ", " + connectivity.detail() + "]";
    }
}
