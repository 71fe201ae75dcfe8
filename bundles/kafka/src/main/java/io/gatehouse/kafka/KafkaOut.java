// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.AttrType;
import io.gatehouse.api.Cancellable;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.Param;
import io.gatehouse.api.St;
import io.gatehouse.kafka.link.Connectivity;
import io.gatehouse.kafka.link.KafkaLink;
import io.gatehouse.kafka.link.SendResult;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.support.Gbuffers;
import io.gatehouse.support.Glog;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.Producer;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * C_KAFKA: an output that produces to one Kafka topic. It sits under a C_QIOGATE in place of the
 * C_IOGATE &gt; C_CHANNEL &gt; C_PROT_TCP4H &gt; C_TCP stack and answers the queue exactly as a remote peer of the
 * queue protocol would: each record C_QIOGATE sends (compact JSON with {@code __md_trq__}) is produced by one
 * idempotent {@code acks=all} producer, and acked back ({@code __md_trq__} with {@code result} 0, published as
 * EV_ON_MESSAGE) only in the producer's success callback; a failed send is nacked ({@code result} -1), so
 * C_QIOGATE clears a record only once Kafka has it and sends it again later otherwise. A record Kafka refuses for
 * good (too large, invalid) goes to a dead-letter file when the queue sends it again, and only then is acked; a
 * refused producer (not authorised, authentication) closes the link, keeps everything queued and is made again. EV_ON_OPEN / EV_ON_CLOSE follow Kafka's connectivity (the cluster answers and the producer knows
 * the topic's partitions), so the queue grows on disk while Kafka is away and drains when it is back.
 *
 * <pre>
 *   ST_DISCONNECTED --EV_KAFKA_LINK up--&gt;   ST_CONNECTED     publishes EV_ON_OPEN
 *   ST_CONNECTED    --EV_KAFKA_LINK down--&gt; ST_DISCONNECTED  publishes EV_ON_CLOSE
 * </pre>
 *
 * <p>Threading: the producer's callbacks and the connectivity checks run on Kafka's threads. They reach the gobj
 * only as events ({@value #EV_KAFKA_DELIVERY}, {@value #EV_KAFKA_LINK}: a kw of JSON) posted to the yuno's core
 * loop; no lambda holds this behaviour. That is what lets a live upgrade hand the producer and its sends in flight
 * to the next revision: their callbacks send to the gobj, and the gobj then runs the new behaviour.
 *
 * <p>Each record carries the header {@value #GH_MSG_ID} = {@code <gateway>/<queue database>/<topic>/<generation>/
 * <rowid>}, unique across the queues of a gateway and over its queue generations, so that a consumer can drop what
 * a crash made the edge send twice. Its key is the value at the {@code key} path of the message (C_MQIOGATE's
 * {@code id} by default), so one device's records stay in order in one partition.
 *
 * <p>No C original: new in Gatehouse (issue 16), the output side of an edge that feeds a Kafka cluster.
 *
 * <p>Direct mode: a message sent with a {@link Kw#DURABLE} dict (a C_RELAY whose output is this gobj, no queue in
 * between) is produced the same way and its sender gets {@link Ev#EV_ON_DURABLE} once Kafka has it; a refused or
 * failed record gets nothing, and the upstream producer sends it again. The record id is then
 * {@code <gateway>/<gobj>/direct/<start>-<n>}.
 */
public final class KafkaOut implements GObjBehavior {
    public static final String GCLASS = "C_KAFKA";
    /** The record header that names a queued message across restarts (the consumers' dedup key). */
    public static final String GH_MSG_ID = "gh-msg-id";

    // --- Attributes ---

    static final Set<String> COMPRESSIONS = Set.of("none", "gzip", "snappy", "lz4", "zstd");

    /** Kafka's own default of {@code buffer.memory}, when the {@code kafka} dict does not set it. */
    static final long DEFAULT_BUFFER_MEMORY = 32L << 20;

    static final Attr<String> BOOTSTRAP_SERVERS = Attr.string("bootstrap_servers", "", AttrFlag.RD | AttrFlag.REQUIRED,
            "Kafka bootstrap servers, host:port[,host:port...]");
    static final Attr<String> TOPIC = Attr.string("topic", "", AttrFlag.RD | AttrFlag.REQUIRED,
            "Topic every record goes to");
    static final Attr<String> KEY = Attr.string("key", "id", AttrFlag.RD,
            "Path (backquote-separated) of the record key in the message, as C_MQIOGATE's key; empty = no key");
    static final Attr<String> GATEWAY_NAME = Attr.string("gateway_name", "", AttrFlag.RD,
            "First part of the gh-msg-id header; empty = the yuno's name. Give every edge its own");
    static final Attr<Long> LINGER_MS = Attr.integer("linger_ms", 5, AttrFlag.RD,
            "Producer linger.ms: how long a batch waits for more records");
    static final Attr<Long> BATCH_SIZE = Attr.integer("batch_size", 65536, AttrFlag.RD,
            "Producer batch.size in bytes (Kafka's own default is 16384; 64 KB makes fewer, fuller batches, and "
                    + "fewer callback bursts for the core loop)");
    static final Attr<String> COMPRESSION = Attr.string("compression", "none", AttrFlag.RD,
            "Producer compression.type: none, gzip, snappy, lz4 or zstd");
    static final Attr<Long> MAX_IN_FLIGHT = Attr.integer("max_in_flight", 10000, AttrFlag.RD,
            "Records handed to the producer and not called back yet, at most; the C_QIOGATE above gets it as its "
                    + "max_pending_acks (and max_pending_bytes at most half the producer's buffer.memory)");
    static final Attr<Boolean> SEND_THREAD = Attr.bool("send_thread", true, AttrFlag.RD,
            "Hand records to the producer on a thread of C_KAFKA's own (record building, partitioner, accumulator), "
                    + "not on the core loop; false: on the core loop");
    static final Attr<Long> DELIVERY_TIMEOUT_MS = Attr.integer("delivery_timeout_ms", 30000, AttrFlag.RD,
            "Producer delivery.timeout.ms: how long Kafka retries a record before it is nacked "
                    + "(keep it under the queue's timeout_ack)");
    static final Attr<Long> REQUEST_TIMEOUT_MS = Attr.integer("request_timeout_ms", 15000, AttrFlag.RD,
            "Producer request.timeout.ms (delivery_timeout_ms must be at least it plus linger_ms)");
    static final Attr<JsonNode> KAFKA = Attr.json("kafka", AttrType.DICT, null, AttrFlag.RD,
            "Extra Kafka client properties passed through (security.protocol, ssl.*, sasl.*, buffer.memory, ...); "
                    + "idempotence, acks, serializers and bootstrap servers are C_KAFKA's and refused here");
    static final Attr<Long> CHECK_INTERVAL_MS = Attr.integer("check_interval_ms", 1000, AttrFlag.RD,
            "Period of the connectivity check (cluster answers, topic known)");
    static final Attr<Long> CHECK_TIMEOUT_MS = Attr.integer("check_timeout_ms", 5000, AttrFlag.RD,
            "How long one connectivity check waits for a broker before calling Kafka down");
    static final Attr<Long> REOPEN_INTERVAL_MS = Attr.integer("reopen_interval_ms", 5000, AttrFlag.RD,
            "Delay before making the producer again after Kafka refused its configuration (an unresolvable "
                    + "address may resolve later)");

    static final Attr<Long> DEAD_LETTER_MAX_BYTES = Attr.integer("dead_letter_max_bytes", 104857600, AttrFlag.RD,
            "Size bound of the dead-letter file, where a record Kafka refuses for good (too large, invalid) goes "
                    + "before it leaves the queue; 0 = no file: such a record stays queued and is retried");

    static final Attr<Boolean> CONNECTED = Attr.bool("connected", false, AttrFlag.STATS,
            "Kafka reachable and the topic known: records are being sent");
    static final Attr<String> KAFKA_STATUS = Attr.string("kafka_status", "not started", AttrFlag.STATS,
            "What the last connectivity check saw, or why there is no producer");
    static final Attr<String> LAST_ERROR = Attr.string("last_error", "", AttrFlag.STATS,
            "The last failure of a record or of the producer, empty if none");
    static final Attr<Long> KAFKA_BROKERS = Attr.integer("kafka_brokers", 0, AttrFlag.STATS,
            "Brokers the last check saw");
    static final Attr<Long> KAFKA_PARTITIONS = Attr.integer("kafka_partitions", 0, AttrFlag.STATS,
            "Partitions of the topic the producer knows");
    static final Attr<Long> IN_FLIGHT = Attr.integer("in_flight", 0, AttrFlag.STATS,
            "Records handed to the producer and not called back yet");
    static final Attr<Long> OLDEST_IN_FLIGHT_MS = Attr.integer("oldest_in_flight_ms", 0, AttrFlag.STATS,
            "Age of the oldest record waiting for Kafka's answer, ms");
    static final Attr<Long> RECORDS_SENT = Attr.counter("records_sent", AttrFlag.RSTATS,
            "Records handed to the producer (retries included)");
    static final Attr<Long> RECORDS_ACKED = Attr.counter("records_acked", AttrFlag.RSTATS,
            "Records Kafka acknowledged (acked to the queue)");
    static final Attr<Long> RECORDS_FAILED = Attr.counter("records_failed", AttrFlag.RSTATS,
            "Records whose send failed after Kafka's retries (nacked to the queue, sent again later)");
    static final Attr<Long> RECORDS_RETRIED = Attr.counter("records_retried", AttrFlag.RSTATS,
            "Records sent again after a failure");
    static final Attr<Long> RESENDS_ABSORBED = Attr.counter("resends_absorbed", AttrFlag.RSTATS,
            "Records the queue sent again while the first send was still in the producer: not produced twice");
    static final Attr<Long> REFUSED = Attr.counter("refused", AttrFlag.RSTATS,
            "Messages refused: Kafka not reachable, no producer, producer window full");
    static final Attr<Long> BAD_MESSAGES = Attr.counter("bad_messages", AttrFlag.RSTATS,
            "Messages that were not JSON objects (dropped with an error)");
    static final Attr<Long> RECORDS_DEAD_LETTERED = Attr.counter("records_dead_lettered", AttrFlag.RSTATS,
            "Records Kafka refused for good, written to the dead-letter file and then cleared from the queue");
    static final Attr<Long> PRODUCER_REFUSALS = Attr.counter("producer_refusals", AttrFlag.RSTATS,
            "Times Kafka refused the producer itself (not authorized, authentication): link closed, records kept "
                    + "queued, producer made again after reopen_interval_ms");
    static final Attr<Double> KAFKA_RECORD_SEND_RATE = Attr.real("kafka_record_send_rate", 0, AttrFlag.STATS,
            "The producer's record-send-rate (records/s, Kafka's own window), for /metrics and JMX");
    static final Attr<Double> KAFKA_REQUEST_LATENCY_AVG = Attr.real("kafka_request_latency_avg", 0, AttrFlag.STATS,
            "The producer's request-latency-avg (ms), for /metrics and JMX");
    static final Attr<String> DEAD_LETTER_FILE = Attr.string("dead_letter_file", "", AttrFlag.STATS,
            "Path of the dead-letter file (NDJSON: gh_msg_id, topic, t, error, key, value), empty until one is written");

    // --- Trace levels ---

    static final String TRACE_MESSAGES = "messages";
    static final String TRACE_CONNECTIVITY = "connectivity";

    // --- FSM ---

    /** From a producer callback, through the core loop: how one record ended. Sent by this gobj to itself only. */
    static final String EV_KAFKA_DELIVERY = "EV_KAFKA_DELIVERY";
    /** From the connectivity check, through the core loop: the cluster reachable or not, and why. */
    static final String EV_KAFKA_LINK = "EV_KAFKA_LINK";
    /**
     * From the producer callbacks of one burst, through the core loop: the queued records Kafka acked, as the
     * store's md numbers ({@code acked}: a {@code long[][]} of rowid, t, generation, and a 1 after them for a
     * record handed as a queue record). Sent by this gobj to itself.
     */
    static final String EV_KAFKA_ACKED = "EV_KAFKA_ACKED";

    static final Fsm<KafkaOut> FSM = Fsm.<KafkaOut>builder()
        .state(St.ST_DISCONNECTED)
            .on(Ev.EV_SEND_MESSAGE,  KafkaOut::acSendMessage)
            .on(EV_KAFKA_DELIVERY,   KafkaOut::acDelivery)
            .on(EV_KAFKA_ACKED,      KafkaOut::acAcked)
            .on(EV_KAFKA_LINK,       KafkaOut::acLink)
            .on(Ev.EV_TIMEOUT,       KafkaOut::acReopen)
            .ignore(Ev.EV_DROP)
        .state(St.ST_CONNECTED)
            .enteredByAction()
            .on(Ev.EV_SEND_MESSAGE,  KafkaOut::acSendMessage)
            .on(EV_KAFKA_DELIVERY,   KafkaOut::acDelivery)
            .on(EV_KAFKA_ACKED,      KafkaOut::acAcked)
            .on(EV_KAFKA_LINK,       KafkaOut::acLink)
            .on(Ev.EV_TIMEOUT,       KafkaOut::acReopen)
            .ignore(Ev.EV_DROP)
        .publishes(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE)
        .build();

    // --- Spec ---

    /**
     * Version of what {@link #onExport} hands over: the producer, its Admin client, the in-flight records. 2: the
     * same state, but the handed producer's callbacks may answer with {@value #EV_KAFKA_ACKED}, which a revision of
     * version 1 does not know, so such a revision refuses it (a rebuild) instead of losing those acks. Takes 1 and 2.
     */
    static final int STATE_VERSION = 2;

    public static final GClassSpec<KafkaOut> SPEC = GClassSpec.builder(GCLASS, KafkaOut.class)
            .description("Output to a Kafka topic (idempotent, acks=all) that acks the queue above it once Kafka has "
                    + "each record")
            .attrs(BOOTSTRAP_SERVERS, TOPIC, KEY, GATEWAY_NAME, LINGER_MS, BATCH_SIZE, COMPRESSION, MAX_IN_FLIGHT,
                    SEND_THREAD, DELIVERY_TIMEOUT_MS, REQUEST_TIMEOUT_MS, KAFKA, CHECK_INTERVAL_MS, CHECK_TIMEOUT_MS,
                    REOPEN_INTERVAL_MS, DEAD_LETTER_MAX_BYTES, CONNECTED, KAFKA_STATUS, LAST_ERROR, KAFKA_BROKERS, KAFKA_PARTITIONS,
                    IN_FLIGHT, OLDEST_IN_FLIGHT_MS, RECORDS_SENT, RECORDS_ACKED, RECORDS_FAILED, RECORDS_RETRIED,
                    RESENDS_ABSORBED, REFUSED, BAD_MESSAGES, RECORDS_DEAD_LETTERED, PRODUCER_REFUSALS,
                    KAFKA_RECORD_SEND_RATE, KAFKA_REQUEST_LATENCY_AVG, DEAD_LETTER_FILE)
            .fsm(FSM)
            .command("view-kafka", "The producer: settings, connectivity, oldest records in flight, producer metrics",
                    KafkaOut::cmdViewKafka, Param.integer("limit", "10", "Records in flight to list"))
            .traceLevel(TRACE_MESSAGES, "Trace every record produced and its outcome")
            .traceLevel(TRACE_CONNECTIVITY, "Trace every connectivity report, changed or not")
            .confirmsDurability()
            .takesQueueRecords()
            .linkUp(CONNECTED)
            .stateVersion(STATE_VERSION)
            .factory(KafkaOut::new)
            .build();

    // --- Private data ---

    /** The result of a nack: negative, so C_QIOGATE sends the record again after its retry delay. */
    static final int NACK_RESULT = -1;

    /** A record refused for good: sending it again meets the same answer (too large, invalid for the topic). */
    static final String REFUSAL_RECORD = "record";
    /** The producer refused, whatever the record (not authorized, authentication, a fatal producer state). */
    static final String REFUSAL_PRODUCER = "producer";

    /** Producer metrics shown in stats, as {@code kafka_<name with underscores>}. */
    static final List<String> PRODUCER_METRICS = List.of("record-send-rate", "record-send-total",
            "record-retry-total", "record-error-total", "request-latency-avg", "request-latency-max",
            "record-queue-time-avg", "records-per-request-avg", "batch-size-avg", "buffer-available-bytes");

    /** A queued record by the queue's identity of it. */
    record RecordKey(long generation, long rowid) {
        // written out: the record's generated ones go through ObjectMethods, which showed in the send path's profile
        @Override
        public boolean equals(Object o) {
            return o instanceof RecordKey && ((RecordKey) o).rowid == rowid && ((RecordKey) o).generation == generation;
        }

        @Override
        public int hashCode() {
            return Long.hashCode(rowid) * 31 + Long.hashCode(generation);
        }
    }

    private final GObj gobj;
    private KafkaLink link;
    /**
     * Which producer the link wraps; a callback or report of an older producer (closed at a stop or a reopen) is
     * told apart by it. A live upgrade keeps the producer, so it keeps this number.
     */
    private long producerSeq;
    /**
     * The acks of the current burst of callbacks of {@link #link}, md numbers (rowid, t, generation), sent to the
     * gobj as one {@value #EV_KAFKA_ACKED} by the link's after-burst hook. Core loop only.
     */
    private java.util.ArrayList<long[]> ackBurst;
    /** Queued records in the producer, in send order (the first is the oldest). Bounded by max_in_flight. */
    private final InFlightRecords inflight = new InFlightRecords();
    /** Records nacked and not sent again yet: the next send of one is a retry. Bounded like inflight. */
    private final Set<RecordKey> nacked = new HashSet<>();
    /**
     * Records Kafka refused for good (too large, invalid), by the error: the queue's next send of one goes to the
     * dead-letter file instead of Kafka. Bounded like inflight.
     */
    private final Map<RecordKey, String> refusedForGood = new HashMap<>();
    /** The dead-letter file, opened at its first record. */
    private FileChannel deadLetters;
    /** Dead-lettered in a row / failures to dead-letter in a row: each streak said once. */
    private long deadLetterStreak;
    private String deadLetterFailSaid;
    /** The producer refusal last said (not authorized, ...), until a record is acked. */
    private String producerRefusalSaid;
    private String[] keyPath;
    private Map<String, Object> extraProperties;
    private byte[] msgIdPrefix;
    /** Failures in a row; the first one is said, then the end of the streak with its count. */
    private long failStreak;
    /** The reason the producer could not be made, said once until it changes. */
    private String openFailureSaid;
    /** The connectivity detail last said while Kafka is down. */
    private String downSaid;
    private Cancellable reopenTimer = Cancellable.NONE;
    /** Direct mode (no queue): records produced since start, the tail of their gh-msg-id. */
    private long directSeq;
    private long startedAtMs;

    KafkaOut(GObj gobj) {
        this.gobj = gobj;
    }

    // --- Framework methods ---

    @Override
    public void onCreate() {
        String compression = gobj.read(COMPRESSION);
        if (!COMPRESSIONS.contains(compression)) {
            throw new IllegalArgumentException("compression must be one of " + COMPRESSIONS + ", not '" + compression + "'");
        }
        if (gobj.readLong(MAX_IN_FLIGHT) < 1) throw new IllegalArgumentException("max_in_flight must be at least 1");
        if (gobj.readLong(LINGER_MS) < 0) throw new IllegalArgumentException("linger_ms must be >= 0");
        if (gobj.readLong(BATCH_SIZE) < 0) throw new IllegalArgumentException("batch_size must be >= 0");
        if (gobj.readLong(CHECK_INTERVAL_MS) <= 0 || gobj.readLong(CHECK_TIMEOUT_MS) <= 0
                || gobj.readLong(REOPEN_INTERVAL_MS) <= 0) {
            throw new IllegalArgumentException("check_interval_ms, check_timeout_ms and reopen_interval_ms must be > 0");
        }
        if (gobj.readLong(DELIVERY_TIMEOUT_MS) < gobj.readLong(REQUEST_TIMEOUT_MS) + gobj.readLong(LINGER_MS)) {
            throw new IllegalArgumentException("delivery_timeout_ms must be at least request_timeout_ms + linger_ms "
                    + "(Kafka refuses the producer otherwise)");
        }
        String key = gobj.read(KEY);
        keyPath = key == null || key.isEmpty() ? null : key.split("`");
        extraProperties = properties(gobj.read(KAFKA));
        // The owned keys are refused now, with the node's path, instead of at every attempt to open.
        KafkaLink.builder("x:1", "x", Runnable::run).properties(extraProperties);
    }

    @Override
    public int onStart() {
        startedAtMs = gobj.yuno().clock().epochMillis();
        msgIdPrefix = (gatewayName() + "/" + queueName() + "/").getBytes(StandardCharsets.UTF_8);
        boundTheQueueWindow();
        if (link == null) openLink();
        return 0;
    }

    @Override
    public int onStop() {
        reopenTimer.cancel();
        closeLink();
        goDown("stopped");
        inflight.clear();
        nacked.clear();
        refusedForGood.clear();
        closeDeadLetters();
        return 0;
    }

    @Override
    public void onDestroy() {
        reopenTimer.cancel();
        closeLink();
        closeDeadLetters();
    }

    @Override
    public void onReadAttrs() {
        refreshGauges();
    }

    /**
     * The producer and what it holds go to the next revision: the producer keeps its id and sequence numbers (the
     * broker drops nothing as a duplicate and nothing is produced twice), the records in flight complete through
     * the callbacks they were given, which send to this gobj, so the new behaviour gets their outcome.
     */
    @Override
    public ObjectNode onExport() {
        ObjectNode s = Kw.create();
        if (link != null && !link.isClosed()) {
            KafkaLink.Handoff h = link.handOff();
            // The producer and the Admin client travel in a holder, not as references core would close itself: a
            // state no revision takes (a rollback to one that refuses this state version) is released by core, and
            // KafkaProducer.close() waits without bound for what the producer holds, on the core thread. The
            // "release" closer closes both at once instead; the queue then sends their records again.
            Kw.putRef(s, "producer", new AtomicReference<>(h.producer()));
            Kw.putRef(s, "admin", new AtomicReference<>(h.admin()));
            Kw.putRef(s, "in_flight_count", h.inFlight());
            Producer<byte[], byte[]> p = h.producer();
            Admin a = h.admin();
            Kw.putRef(s, "release", (AutoCloseable) () -> {
                try {
                    p.close(Duration.ZERO);
                } finally {
                    a.close(Duration.ZERO);
                }
            });
        }
        link = null;
        closeDeadLetters();
        ArrayNode rg = s.putArray("refused_for_good");
        refusedForGood.forEach((k, why) -> rg.addArray().add(k.generation()).add(k.rowid()).add(why));
        s.put("dead_letter_streak", deadLetterStreak);
        s.put("producer_seq", producerSeq);
        ArrayNode in = s.putArray("in_flight");
        for (long[] e : inflight.inSendOrder()) in.addArray().add(e[0]).add(e[1]).add(e[2]);
        ArrayNode nk = s.putArray("nacked");
        for (RecordKey k : nacked) nk.addArray().add(k.generation()).add(k.rowid());
        s.put("fail_streak", failStreak);
        s.put("direct_seq", directSeq);
        s.put("started_at_ms", startedAtMs);
        s.put("msg_id_prefix", new String(msgIdPrefix == null ? new byte[0] : msgIdPrefix, StandardCharsets.UTF_8));
        return s;
    }

    @Override
    @SuppressWarnings("unchecked")
    public void onImport(ObjectNode state, int stateVersion) {
        if (stateVersion < 1 || stateVersion > STATE_VERSION) {
            throw new IllegalArgumentException("C_KAFKA state version " + stateVersion + " unknown (takes 1.."
                    + STATE_VERSION + ")");
        }
        onCreate();
        producerSeq = state.path("producer_seq").asLong();
        for (JsonNode e : state.path("in_flight")) {
            inflight.put(e.get(0).asLong(), e.get(1).asLong(), e.get(2).asLong());
        }
        for (JsonNode e : state.path("nacked")) nacked.add(new RecordKey(e.get(0).asLong(), e.get(1).asLong()));
        for (JsonNode e : state.path("refused_for_good")) {
            refusedForGood.put(new RecordKey(e.get(0).asLong(), e.get(1).asLong()), e.get(2).asText());
        }
        deadLetterStreak = state.path("dead_letter_streak").asLong();
        failStreak = state.path("fail_streak").asLong();
        directSeq = state.path("direct_seq").asLong();
        startedAtMs = state.path("started_at_ms").asLong();
        msgIdPrefix = state.path("msg_id_prefix").asText().getBytes(StandardCharsets.UTF_8);
        AtomicReference<Producer<byte[], byte[]>> producerRef = Kw.ref(state, "producer", AtomicReference.class);
        AtomicReference<Admin> adminRef = Kw.ref(state, "admin", AtomicReference.class);
        Producer<byte[], byte[]> producer = producerRef == null ? null : producerRef.get();
        Admin admin = adminRef == null ? null : adminRef.get();
        AtomicInteger count = Kw.ref(state, "in_flight_count", AtomicInteger.class);
        if (producer != null && admin != null && count != null) {
            link = builder(producerSeq).adopt(new KafkaLink.Handoff(producer, admin, count)).open();
        } else if (gobj.isRunning()) {
            openLink();
        }
    }

    /**
     * The counters and gauges, and the producer's own metrics of interest as {@code kafka_<metric>} (the latencies
     * in ms): C_QIOGATE merges them into its stats, which {@code /metrics} and JMX export as they are.
     */
    @Override
    public ObjectNode onStats(String filter, ObjectNode kw, GObj src) {
        if ("__reset__".equals(filter)) {
            for (Attr<Long> a : List.of(RECORDS_SENT, RECORDS_ACKED, RECORDS_FAILED, RECORDS_RETRIED,
                    RESENDS_ABSORBED, REFUSED, BAD_MESSAGES, RECORDS_DEAD_LETTERED, PRODUCER_REFUSALS)) {
                gobj.setLong(a, 0);
            }
        }
        refreshGauges();
        ObjectNode d = Kw.create();
        for (Attr<?> a : SPEC.attrs().values()) {
            if (a.is(AttrFlag.STATS)) d.set(a.name(), statValue(a));
        }
        KafkaLink l = link;
        if (l != null && !l.isClosed()) {
            l.producerMetrics(PRODUCER_METRICS).forEach((name, v) -> d.put("kafka_" + name.replace('-', '_'), v));
        }
        return Envelope.ok(d);
    }

    // --- Commands ---

    private ObjectNode cmdViewKafka(ObjectNode kw, GObj src) {
        refreshGauges();
        ObjectNode d = Kw.create();
        d.put("bootstrap_servers", gobj.read(BOOTSTRAP_SERVERS));
        d.put("topic", gobj.read(TOPIC));
        d.put("key", gobj.read(KEY));
        d.put("gh_msg_id_prefix", msgIdPrefix == null ? "" : new String(msgIdPrefix, StandardCharsets.UTF_8));
        d.put("acks", "all");
        d.put("enable_idempotence", true);
        d.put("state", gobj.state());
        d.put("kafka_status", gobj.read(KAFKA_STATUS));
        d.put("last_error", gobj.read(LAST_ERROR));
        d.put("in_flight", inflight.size());
        d.put("max_in_flight", gobj.readLong(MAX_IN_FLIGHT));
        d.put("producer", link == null ? "none" : link.toString());
        d.put("dead_letter_file", deadLetterPath().toString());
        d.put("refused_for_good_pending", refusedForGood.size());
        ArrayNode arr = d.putArray("oldest_in_flight");
        long limit = Kw.getLong(kw, "limit", 10);
        long now = now();
        long[][] oldest = inflight.inSendOrder();
        for (int i = 0; i < limit && i < oldest.length; i++) {
            arr.addObject().put("generation", oldest[i][0]).put("rowid", oldest[i][1]).put("age_ms", now - oldest[i][2]);
        }
        ObjectNode m = d.putObject("producer_metrics");
        if (link != null && !link.isClosed()) link.producerMetrics(PRODUCER_METRICS).forEach(m::put);
        return Envelope.ok(d);
    }

    // --- Actions ---

    /**
     * EV_SEND_MESSAGE: from C_QIOGATE, the record as stored with its {@link Kw#QUEUE_MESSAGE} (this gclass
     * {@link GClassSpec#takesQueueRecords() takes queue records}), or a gbuffer of compact JSON with
     * {@code __md_trq__} (a record the queue could not hand so, or a revision of C_QIOGATE before api 2.3); from a
     * relay (direct mode), a JSON dict with {@link Kw#DURABLE}. Produced at once when Kafka is reachable; answered later, by
     * {@link #acDelivery}.
     */
    private int acSendMessage(String event, ObjectNode kw, GObj src) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        KafkaRecords.Outgoing out;
        JsonNode durable = null;
        try {
            QueueMessage queued = buf == null ? null : Kw.ref(kw, Kw.QUEUE_MESSAGE, QueueMessage.class);
            if (queued != null) {
                out = KafkaRecords.fromRecord(buf, queued, keyPath);
            } else if (buf != null) {
                out = KafkaRecords.fromQueue(buf, keyPath);
            } else {
                durable = kw.remove(Kw.DURABLE);
                out = KafkaRecords.fromDict(kw, keyPath);
            }
        } catch (IOException e) {
            gobj.inc(BAD_MESSAGES);
            Glog.error(gobj, "Message is not a JSON object, not produced", "error", String.valueOf(e.getMessage()));
            return -1;
        } finally {
            if (buf != null) buf.release();
        }
        if (link == null || !gobj.inState(St.ST_CONNECTED)) {
            // C_QIOGATE sends only while the link is open: this is a relay in direct mode, told at once (it nacks).
            gobj.inc(REFUSED);
            return -1;
        }
        if (out.queued()) return produceQueued(out);
        return produceDirect(out, durable instanceof ObjectNode ? (ObjectNode) durable : null, src);
    }

    /** EV_KAFKA_DELIVERY: a record's outcome, from its producer callback. */
    private int acDelivery(String event, ObjectNode kw, GObj src) {
        if (src != gobj) {
            Glog.error(gobj, "source unknown", "event", event, "src", src == null ? "" : src.shortName());
            return -1;
        }
        boolean ok = kw.path("ok").asBoolean();
        boolean stale = kw.path("producer").asLong() != producerSeq;
        ObjectNode md = kw.get("md") instanceof ObjectNode ? (ObjectNode) kw.get("md") : null;
        RecordKey key = md == null ? null : recordKey(md);
        if (kw.path("dead_lettered").asBoolean()) {
            // Written to the dead-letter file by produceQueued: now the queue may clear it.
            if (md != null && gobj.isRunning()) answerQueue(md, 0);
            return 0;
        }
        if (key != null && !stale) inflight.remove(key.generation(), key.rowid());
        if (gobj.isTraced(TRACE_MESSAGES)) {
            Glog.info(gobj, "record " + (ok ? "acked" : "failed"), "record", key == null ? "direct" : key.toString(),
                    "partition", kw.path("partition").asInt(), "offset", kw.path("offset").asLong(),
                    "error", kw.path("error").asText(""), "latency_us", kw.path("latency_us").asLong());
        }
        if (!gobj.isRunning()) {
            // Stopped: the queue above is closed and reloads what is pending at its next start.
            return 0;
        }
        if (ok) {
            gobj.inc(RECORDS_ACKED);
            takesRecordsAgain();
            if (md != null) {
                answerQueue(md, 0);
            } else {
                GObj to = Kw.ref(kw, "reply_to", GObj.class);
                JsonNode durable = kw.get("durable");
                if (to != null && !to.isDestroyed() && durable instanceof ObjectNode) {
                    to.send(Ev.EV_ON_DURABLE, (ObjectNode) durable, gobj);
                }
            }
            return 0;
        }
        if (stale) return 0;   // a producer closed by a stop or a reopen: the queue took its records back
        gobj.inc(RECORDS_FAILED);
        String error = kw.path("error").asText("");
        gobj.set(LAST_ERROR, error);
        String refusal = kw.path("refusal").asText("");
        if (REFUSAL_PRODUCER.equals(refusal)) {
            refuseProducer(error);
            return 0;
        }
        if (md == null) {
            // Direct mode: no queue sends it again. A record refused for good goes to the dead-letter file now and
            // its sender is told it is durable there; any other failure gets no answer, and the producer upstream
            // sends the message again after its own timeout.
            if (REFUSAL_RECORD.equals(refusal)) {
                deadLetterDirect(kw, error);
            } else if (failStreak++ == 0) {
                Glog.warn(gobj, "Kafka refused records: not confirmed, the producers upstream send them again",
                        "error", error, "retriable", kw.path("retriable").asBoolean(), "topic", gobj.read(TOPIC));
            }
            return 0;
        }
        if (REFUSAL_RECORD.equals(refusal) && key != null && gobj.readLong(DEAD_LETTER_MAX_BYTES) > 0
                && refusedForGood.size() < 2 * gobj.readLong(MAX_IN_FLIGHT)) {
            // Sending it again would meet the same answer: the queue's next send of it goes to the dead-letter file.
            refusedForGood.put(key, error);
        }
        if (failStreak++ == 0) {
            Glog.warn(gobj, "Kafka refused records: they stay queued and are sent again", "error", error,
                    "retriable", kw.path("retriable").asBoolean(), "topic", gobj.read(TOPIC));
        }
        if (key != null) {
            if (nacked.size() < 2 * gobj.readLong(MAX_IN_FLIGHT)) nacked.add(key);
            // While Kafka is down the queue has put everything in flight back to "not sent" (EV_ON_CLOSE): a nack
            // would only be ignored there. Once connected, it makes the queue send the record again.
            if (gobj.inState(St.ST_CONNECTED)) answerQueue(md, NACK_RESULT);
        }
        return 0;
    }

    /**
     * EV_KAFKA_ACKED: the queued records Kafka acked in one burst of callbacks, each answered to the queue as
     * {@link #acDelivery} answers one; one event, one counter update and one streak check for the whole burst.
     */
    private int acAcked(String event, ObjectNode kw, GObj src) {
        if (src != gobj) {
            Glog.error(gobj, "source unknown", "event", event, "src", src == null ? "" : src.shortName());
            return -1;
        }
        long[][] acked = Kw.ref(kw, "acked", long[][].class);
        if (acked == null || acked.length == 0) return 0;
        if (kw.path("producer").asLong() == producerSeq) {
            for (long[] a : acked) inflight.remove(a[2], a[0]);
        }
        if (!gobj.isRunning()) return 0;   // the queue above is closed and reloads what is pending at its start
        gobj.add(RECORDS_ACKED, acked.length);
        takesRecordsAgain();
        answerQueue(acked);
        return 0;
    }

    /**
     * The acks of a burst: those of records the queue handed as queue records in one {@link Kw#QUEUE_ACKS} (the
     * gate that handed them reads it), any other one as the JSON ack a peer would send.
     */
    private void answerQueue(long[][] acked) {
        int byNumbers = 0;
        for (long[] a : acked) {
            if (KafkaRecords.cameAsRecord(a)) byNumbers++;
            else answerQueue(a[0], a[1], a[2], 0);
        }
        if (byNumbers == 0) return;
        long[] answers = new long[4 * byNumbers];
        int i = 0;
        for (long[] a : acked) {
            if (!KafkaRecords.cameAsRecord(a)) continue;
            answers[i] = a[0];
            answers[i + 1] = a[1];
            answers[i + 2] = a[2];
            i += 4;   // result 0
        }
        ObjectNode kw = Kw.create();
        Kw.putRef(kw, Kw.QUEUE_ACKS, answers);
        gobj.publish(Ev.EV_ON_MESSAGE, kw);
    }

    /** A record acked: the streaks of failures and refusals end, said once. */
    private void takesRecordsAgain() {
        if (failStreak > 0) {
            Glog.info(gobj, "Kafka takes records again", "failed_in_a_row", failStreak);
            failStreak = 0;
        }
        producerRefusalSaid = null;
        if (deadLetterStreak > 0) {
            Glog.info(gobj, "Kafka takes records again after refusing some for good", "dead_lettered",
                    deadLetterStreak, "file", deadLetterPath().toString());
            deadLetterStreak = 0;
        }
    }

    /** EV_KAFKA_LINK: the connectivity check's report; opens or closes the link for the queue above. */
    private int acLink(String event, ObjectNode kw, GObj src) {
        if (src != gobj || kw.path("producer").asLong() != producerSeq) return 0;   // a closed producer's report
        boolean up = kw.path("up").asBoolean();
        String detail = kw.path("detail").asText("");
        if (gobj.isTraced(TRACE_CONNECTIVITY)) Glog.info(gobj, "connectivity", "up", up, "detail", detail);
        gobj.set(KAFKA_STATUS, detail);
        gobj.setLong(KAFKA_BROKERS, kw.path("brokers").asLong());
        gobj.setLong(KAFKA_PARTITIONS, kw.path("partitions").asLong());
        if (up) {
            downSaid = null;
            if (!gobj.inState(St.ST_CONNECTED)) {
                Glog.info(gobj, "Kafka reachable: sending", "topic", gobj.read(TOPIC), "detail", detail);
                gobj.changeState(St.ST_CONNECTED);
                gobj.setBool(CONNECTED, true);
                gobj.publish(Ev.EV_ON_OPEN, Kw.create().put(Kw.URL, gobj.read(BOOTSTRAP_SERVERS)));
            }
            return 0;
        }
        if (!detail.equals(downSaid)) {
            downSaid = detail;
            Glog.warn(gobj, "Kafka not reachable: records stay queued", "topic", gobj.read(TOPIC), "detail", detail);
        }
        goDown(detail);
        return 0;
    }

    /** EV_TIMEOUT: time to try making the producer again. */
    private int acReopen(String event, ObjectNode kw, GObj src) {
        if (link == null && gobj.isRunning()) openLink();
        return 0;
    }

    // --- Local methods ---

    private int produceQueued(KafkaRecords.Outgoing out) {
        long[] store = out.store;
        RecordKey key = store == null ? recordKey(out.md()) : store[0] > 0 ? new RecordKey(store[2], store[0]) : null;
        if (key == null) {
            gobj.inc(BAD_MESSAGES);
            Glog.error(gobj, "Message without __md_trq__.__msg_rowid__, not produced");
            return -1;
        }
        if (inflight.contains(key.generation(), key.rowid())) {
            // Sent again by the queue (its ack timeout, or a reopen) while the producer still holds it: the first
            // send's callback answers for both, and Kafka gets it once.
            gobj.inc(RESENDS_ABSORBED);
            return 0;
        }
        byte[] id = msgId(key);
        // both sets are empty but for faults: no hashing per record then
        String refusedWhy = refusedForGood.isEmpty() ? null : refusedForGood.get(key);
        if (refusedWhy != null) return deadLetter(key, id, out, refusedWhy);
        KafkaLink.Offer offer = link.send(out.key, out.value, GH_MSG_ID, id, store != null
                ? storeDelivery(gobj, producerSeq, store, ackBurst) : delivery(gobj, producerSeq, out.md(), null, null, null));
        if (offer != KafkaLink.Offer.ACCEPTED) {
            // Only when the queue's window was raised over max_in_flight after the start: a nack makes it wait.
            gobj.inc(REFUSED);
            nackSoon(gobj, producerSeq, out.md(), "producer window full (" + offer + ")");
            return 0;
        }
        if (!nacked.isEmpty() && nacked.remove(key)) gobj.inc(RECORDS_RETRIED);
        inflight.put(key.generation(), key.rowid(), now());
        gobj.inc(RECORDS_SENT);
        return 0;
    }

    private int produceDirect(KafkaRecords.Outgoing out, ObjectNode durable, GObj src) {
        byte[] id = (new String(msgIdPrefix, StandardCharsets.UTF_8) + "direct/" + startedAtMs + "-" + (++directSeq))
                .getBytes(StandardCharsets.UTF_8);
        // The callback keeps the record (JDK types, so a callback of this revision is read by the next one): with
        // no queue to send it again, a record Kafka refuses for good goes to the dead-letter file from the callback.
        byte[][] record = gobj.readLong(DEAD_LETTER_MAX_BYTES) > 0 ? new byte[][] {id, out.key, out.value} : null;
        KafkaLink.Offer offer = link.send(out.key, out.value, GH_MSG_ID, id,
                delivery(gobj, producerSeq, null, durable, durable == null ? null : src, record));
        if (offer != KafkaLink.Offer.ACCEPTED) {
            gobj.inc(REFUSED);
            return -1;
        }
        gobj.inc(RECORDS_SENT);
        return 0;
    }

    /**
     * The callback of one send. Static, so the lambda holds the gobj and JSON only, never this behaviour: it runs on
     * the core loop (the link's executor) and sends the outcome to the gobj as an event, which reaches whichever
     * behaviour the gobj runs then (a live upgrade may have replaced this one).
     */
    private static KafkaLink.SendCallback delivery(GObj g, long producer, ObjectNode md, ObjectNode durable,
                                                   GObj replyTo, byte[][] record) {
        return r -> g.send(EV_KAFKA_DELIVERY, deliveryKw(producer, md, durable, replyTo, record, r), g);
    }

    /**
     * The callback of a record whose md is the store's own (its numbers): an ack joins the burst the link's
     * after-burst hook sends as one {@value #EV_KAFKA_ACKED}; a failure, or any outcome while the messages are
     * traced, is one {@value #EV_KAFKA_DELIVERY} as for any other record. JDK types only, as {@link #delivery}.
     */
    private static KafkaLink.SendCallback storeDelivery(GObj g, long producer, long[] store, List<long[]> burst) {
        return r -> {
            if (r.ok() && burst != null && !g.isTraced(TRACE_MESSAGES)) {
                burst.add(store);
            } else {
                g.send(EV_KAFKA_DELIVERY, deliveryKw(producer, KafkaRecords.storeMdTree(store), null, null, null, r), g);
            }
        };
    }

    /** The after-burst hook of a link: the acks its callbacks gathered, as one event to the gobj. */
    private static Runnable ackedBurst(GObj g, long producer, List<long[]> burst) {
        return () -> {
            if (burst.isEmpty()) return;
            long[][] acked = burst.toArray(new long[0][]);
            burst.clear();
            ObjectNode kw = Kw.create().put("producer", producer);
            Kw.putRef(kw, "acked", acked);
            g.send(EV_KAFKA_ACKED, kw, g);
        };
    }

    private static ObjectNode deliveryKw(long producer, ObjectNode md, ObjectNode durable, GObj replyTo,
                                         byte[][] record, SendResult r) {
        ObjectNode kw = Kw.create();
        kw.put("producer", producer);
        kw.put("ok", r.ok());
        if (md != null) kw.set("md", md);
        if (durable != null) kw.set("durable", durable);
        if (replyTo != null) Kw.putRef(kw, "reply_to", replyTo);
        if (r.ok()) {
            kw.put("partition", r.partition()).put("offset", r.offset());
        } else {
            String refusal = refusal(r.error());
            kw.put("error", String.valueOf(r.error())).put("retriable", r.retriable()).put("refusal", refusal);
            // direct mode: the record itself, for the dead-letter file (id, key, value)
            if (record != null && REFUSAL_RECORD.equals(refusal)) Kw.putRef(kw, "record", record);
        }
        kw.put("latency_us", r.latencyNanos() / 1000);
        return kw;
    }

    /** A nack for a record the producer did not take, as a delivery event on the next loop turn (never inline). */
    private static void nackSoon(GObj g, long producer, ObjectNode md, String why) {
        ObjectNode kw = Kw.create().put("producer", producer).put("ok", false).put("error", why).put("retriable", true);
        kw.set("md", md);
        g.yuno().eventLoop().execute(() -> g.send(EV_KAFKA_DELIVERY, kw, g));
    }

    private static Executor loopOf(GObj g) {
        // Always through the loop's task queue: Yuno.execute runs a task at once when called on the core thread,
        // and a send that fails inside producer.send (no metadata, with max.block.ms 0) calls back on it, which
        // would answer the queue inside the queue's own send.
        return task -> g.yuno().eventLoop().execute(task);
    }

    private static KafkaLink.ConnectivityListener linkEvents(GObj g, long producer) {
        return c -> g.send(EV_KAFKA_LINK, linkKw(producer, c), g);
    }

    private static ObjectNode linkKw(long producer, Connectivity c) {
        return Kw.create().put("producer", producer).put("up", c.up()).put("detail", c.detail())
                .put("brokers", c.brokers()).put("partitions", c.partitions());
    }

    /**
     * What a failed send says about the next try: {@value #REFUSAL_RECORD}, {@value #REFUSAL_PRODUCER}, or "" (a
     * transient failure, or one Kafka does not class: nacked and sent again).
     */
    static String refusal(Throwable error) {
        for (Throwable c = error; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof org.apache.kafka.common.errors.RecordTooLargeException
                    || c instanceof org.apache.kafka.common.InvalidRecordException
                    || c instanceof org.apache.kafka.common.errors.InvalidTimestampException) {
                return REFUSAL_RECORD;
            }
            if (c instanceof org.apache.kafka.common.errors.AuthorizationException
                    || c instanceof org.apache.kafka.common.errors.AuthenticationException
                    || c instanceof org.apache.kafka.common.errors.UnsupportedVersionException) {
                return REFUSAL_PRODUCER;
            }
        }
        return "";
    }

    /**
     * Kafka refused the producer itself: every record would fail alike, and an idempotent producer refused its id
     * stays failed for good. The link closes (EV_ON_CLOSE: the queue keeps everything and puts what was in flight
     * back), and a new producer is made after {@code reopen_interval_ms}, so records flow again by themselves once
     * the operator fixes the ACLs or credentials. Said once until a record is acked.
     */
    private void refuseProducer(String error) {
        gobj.inc(PRODUCER_REFUSALS);
        String why = "Kafka refused the producer: " + error;
        gobj.set(KAFKA_STATUS, why + "; made again every " + gobj.readLong(REOPEN_INTERVAL_MS) + " ms");
        if (!error.equals(producerRefusalSaid)) {
            producerRefusalSaid = error;
            Glog.error(gobj, "Kafka refused the producer: records stay queued, producer made again", "error", error,
                    "topic", gobj.read(TOPIC), "retry_ms", gobj.readLong(REOPEN_INTERVAL_MS));
        }
        goDown(why);
        closeLink();
        // The closed producer's records fail as stale and the queue took them back at the close: forget them, or
        // the queue's next send of each would be taken for a resend of a record still in the producer.
        inflight.clear();
        reopenTimer.cancel();
        reopenTimer = gobj.setTimeout(gobj.readLong(REOPEN_INTERVAL_MS), Ev.EV_TIMEOUT, null);
    }

    /**
     * A record Kafka refused for good, sent again by the queue: it goes to the dead-letter file (one NDJSON line,
     * forced to disk) and only then is acked to the queue, on the next loop turn, so it neither holds the queue
     * forever nor vanishes. When the file cannot take it (full, or an I/O error) it is nacked and stays queued.
     */
    private int deadLetter(RecordKey key, byte[] id, KafkaRecords.Outgoing out, String error) {
        try {
            appendDeadLetter(id, out.key, out.value, error);
        } catch (IOException | RuntimeException e) {
            nackSoon(gobj, producerSeq, out.md(), deadLetterFailed(e, error, "it stays queued and is retried"));
            return 0;
        }
        refusedForGood.remove(key);
        nacked.remove(key);
        deadLettered(id, error, "cleared from the queue");
        ObjectNode kw = Kw.create().put("producer", producerSeq).put("ok", false).put("dead_lettered", true);
        kw.set("md", out.md());
        GObj g = gobj;
        g.yuno().eventLoop().execute(() -> g.send(EV_KAFKA_DELIVERY, kw, g));
        return 0;
    }

    /**
     * Direct mode: a record Kafka refused for good, from its callback (which kept the record). Written to the
     * dead-letter file, then its sender gets EV_ON_DURABLE: the message is on the edge's disk, as a queued record
     * that went there would be, and the producer upstream is acked instead of sending it again forever. When the
     * file cannot take it (no file, full, I/O error) the sender gets nothing, as for any failure in this mode.
     */
    private void deadLetterDirect(ObjectNode kw, String error) {
        byte[][] record = Kw.ref(kw, "record", byte[][].class);
        if (record == null) {
            // dead_letter_max_bytes 0: nothing kept, nothing written
            if (failStreak++ == 0) {
                Glog.warn(gobj, "Kafka refused a record for good and there is no dead-letter file: not confirmed, "
                        + "the producers upstream send it again", "error", error, "topic", gobj.read(TOPIC));
            }
            return;
        }
        try {
            appendDeadLetter(record[0], record[1], record[2], error);
        } catch (IOException | RuntimeException e) {
            deadLetterFailed(e, error, "not confirmed, the producers upstream send it again");
            return;
        }
        deadLettered(record[0], error, "confirmed to its sender");
        GObj to = Kw.ref(kw, "reply_to", GObj.class);
        JsonNode durable = kw.get("durable");
        if (to != null && !to.isDestroyed() && durable instanceof ObjectNode) {
            to.send(Ev.EV_ON_DURABLE, (ObjectNode) durable, gobj);
        }
    }

    /** One NDJSON line appended to the dead-letter file and forced to disk; throws when the file cannot take it. */
    private void appendDeadLetter(byte[] id, byte[] key, byte[] value, String error) throws IOException {
        Path path = deadLetterPath();
        ObjectNode line = Kw.create();
        line.put("gh_msg_id", new String(id, StandardCharsets.UTF_8));
        line.put("topic", gobj.read(TOPIC));
        line.put("t", gobj.yuno().clock().epochMillis());
        line.put("error", error);
        if (key == null) line.putNull("key");
        else line.put("key", new String(key, StandardCharsets.UTF_8));
        line.put("value", new String(value, StandardCharsets.UTF_8));
        byte[] bytes = (Kw.toJson(line) + "\n").getBytes(StandardCharsets.UTF_8);
        if (deadLetters == null) {
            Files.createDirectories(path.getParent());
            deadLetters = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                    StandardOpenOption.APPEND);
        }
        long max = gobj.readLong(DEAD_LETTER_MAX_BYTES);
        if (deadLetters.size() + bytes.length > max) {
            throw new IOException("dead-letter file full (" + deadLetters.size() + " of " + max + " bytes)");
        }
        ByteBuffer b = ByteBuffer.wrap(bytes);
        while (b.hasRemaining()) deadLetters.write(b);
        deadLetters.force(false);
    }

    /** Counted, the file in stats, and said once per streak. */
    private void deadLettered(byte[] id, String error, String then) {
        Path path = deadLetterPath();
        deadLetterFailSaid = null;
        gobj.inc(RECORDS_DEAD_LETTERED);
        gobj.set(DEAD_LETTER_FILE, path.toString());
        if (deadLetterStreak++ == 0) {
            Glog.error(gobj, "Kafka refused a record for good: written to the dead-letter file, " + then,
                    "error", error, "gh_msg_id", new String(id, StandardCharsets.UTF_8), "file", path.toString());
        }
    }

    /** The file could not take a record: in last_error, said once per reason; answers the reason. */
    private String deadLetterFailed(Exception e, String error, String then) {
        Path path = deadLetterPath();
        String why = "dead letter " + path + ": " + e.getMessage();
        gobj.set(LAST_ERROR, why);
        if (!why.equals(deadLetterFailSaid)) {
            deadLetterFailSaid = why;
            Glog.error(gobj, "Record Kafka refused cannot be dead-lettered: " + then,
                    "error", String.valueOf(e.getMessage()), "file", path.toString(), "refused_by_kafka", error);
        }
        return why;
    }

    /** {@code <data dir>/kafka-dead-letters/<client id>.ndjson}: one file per C_KAFKA of the gateway. */
    private Path deadLetterPath() {
        return gobj.yuno().dataDir().resolve("kafka-dead-letters").resolve(clientId() + ".ndjson");
    }

    private void closeDeadLetters() {
        FileChannel c = deadLetters;
        deadLetters = null;
        if (c != null) {
            try {
                c.close();
            } catch (IOException e) {
                Glog.warn(gobj, "Dead-letter file not closed", "error", String.valueOf(e.getMessage()));
            }
        }
    }

    /**
     * The answer of the queue protocol, published to the queue above: the record's md with {@code result}, as the
     * bytes a remote peer would send ({@code {"__md_trq__":{...,"result":0}}}), which C_QIOGATE reads with its ack
     * scan and no JSON tree. The store's md (rowid, t, generation) is written digit by digit; any other md through
     * Jackson.
     */
    private void answerQueue(ObjectNode md, int result) {
        JsonNode rowid = md.get(TrQueue.MSG_ROWID);
        JsonNode t = md.get(TrQueue.MSG_T);
        JsonNode gen = md.get(TrQueue.MSG_GEN);
        if (md.size() == 3 && isLong(rowid) && isLong(t) && isLong(gen)) {
            answerQueue(rowid.longValue(), t.longValue(), gen.longValue(), result);
        } else {
            ByteBuf b = Gbuffers.allocate(ByteBufAllocator.DEFAULT, 96);
            ObjectNode answer = Kw.create();
            answer.set(Kw.MD_TRQ, md.deepCopy().put(Kw.RESULT, result));
            b.writeCharSequence(Kw.toJson(answer), StandardCharsets.UTF_8);
            gobj.publish(Ev.EV_ON_MESSAGE, Kw.withGbuffer(b));
        }
    }

    /**
     * {@link #answerQueue(ObjectNode, int)} for the store's md, from its numbers. On the heap, unpooled, and large
     * enough for three 19-digit numbers: the gate reads it at once and lets it go, so a pool arena and Netty's leak
     * sampling (a stack trace per sample) cost more than the buffer; 96 bytes made most acks grow once.
     */
    private void answerQueue(long rowid, long t, long gen, int result) {
        ByteBuf b = Gbuffers.allocateHeap(ACK_CAPACITY);
        b.writeBytes(ACK_ROWID);
        Gbuffers.writeDecimal(b, rowid);
        b.writeBytes(ACK_T);
        Gbuffers.writeDecimal(b, t);
        b.writeBytes(ACK_GEN);
        Gbuffers.writeDecimal(b, gen);
        b.writeBytes(ACK_RESULT);
        Gbuffers.writeDecimal(b, result);
        b.writeBytes(ACK_END);
        gobj.publish(Ev.EV_ON_MESSAGE, Kw.withGbuffer(b));
    }

    private static final byte[] ACK_ROWID = ascii("{\"" + Kw.MD_TRQ + "\":{\"" + TrQueue.MSG_ROWID + "\":");
    private static final byte[] ACK_T = ascii(",\"" + TrQueue.MSG_T + "\":");
    private static final byte[] ACK_GEN = ascii(",\"" + TrQueue.MSG_GEN + "\":");
    private static final byte[] ACK_RESULT = ascii(",\"" + Kw.RESULT + "\":");
    private static final byte[] ACK_END = ascii("}}");
    private static final int ACK_CAPACITY = ACK_ROWID.length + ACK_T.length + ACK_GEN.length + ACK_RESULT.length
            + ACK_END.length + 4 * 20;

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private static boolean isLong(JsonNode n) {
        return n != null && n.isIntegralNumber() && n.canConvertToLong();
    }

    private KafkaLink.Builder builder(long seq) {
        ackBurst = new java.util.ArrayList<>();
        return KafkaLink.builder(gobj.read(BOOTSTRAP_SERVERS), gobj.read(TOPIC), loopOf(gobj))
                .listener(linkEvents(gobj, seq))
                .sendThread(gobj.read(SEND_THREAD))
                .afterBurst(ackedBurst(gobj, seq, ackBurst))
                .clientId(clientId())
                .lingerMs((int) gobj.readLong(LINGER_MS))
                .batchSize((int) gobj.readLong(BATCH_SIZE))
                .compression(gobj.read(COMPRESSION))
                .maxInFlight((int) Math.min(Integer.MAX_VALUE, gobj.readLong(MAX_IN_FLIGHT)))
                .deliveryTimeoutMs((int) gobj.readLong(DELIVERY_TIMEOUT_MS))
                .requestTimeoutMs((int) gobj.readLong(REQUEST_TIMEOUT_MS))
                .connectivityInterval(Duration.ofMillis(gobj.readLong(CHECK_INTERVAL_MS)))
                .connectivityTimeout(Duration.ofMillis(gobj.readLong(CHECK_TIMEOUT_MS)))
                .properties(extraProperties);
    }

    /**
     * Makes the producer. Kafka refusing its configuration (an address that does not resolve, SASL without a JAAS
     * configuration, a property of the wrong type) keeps the gobj up and disconnected: the queue keeps every
     * message, the reason is in stats ({@code kafka_status}, {@code last_error}) and said once, and the producer is
     * made again after {@code reopen_interval_ms}.
     */
    private void openLink() {
        reopenTimer.cancel();
        long seq = producerSeq + 1;
        try {
            link = builder(seq).open();
            producerSeq = seq;
            openFailureSaid = null;
            gobj.set(KAFKA_STATUS, "connecting to " + gobj.read(BOOTSTRAP_SERVERS));
        } catch (RuntimeException e) {
            link = null;
            String why = String.valueOf(e.getMessage());
            gobj.set(KAFKA_STATUS, "no producer: " + why);
            gobj.set(LAST_ERROR, why);
            if (!why.equals(openFailureSaid)) {
                openFailureSaid = why;
                Glog.error(gobj, "Kafka producer not made: messages stay queued, trying again", "error", why,
                        "retry_ms", gobj.readLong(REOPEN_INTERVAL_MS));
            }
            reopenTimer = gobj.setTimeout(gobj.readLong(REOPEN_INTERVAL_MS), Ev.EV_TIMEOUT, null);
        }
    }

    /**
     * Closes the producer without waiting: what it still holds fails at once. Those records are still queued on
     * disk (the queue above stops first and reloads them at its next start), so nothing is lost; some may have
     * reached Kafka already and come again, which {@value #GH_MSG_ID} lets a consumer drop.
     */
    private void closeLink() {
        KafkaLink l = link;
        link = null;
        if (l != null) {
            producerSeq++;   // reports and failures of the closed producer are stale from now on
            l.close(Duration.ZERO);
        }
    }

    private void goDown(String why) {
        if (gobj.inState(St.ST_CONNECTED)) {
            gobj.changeState(St.ST_DISCONNECTED);
            gobj.setBool(CONNECTED, false);
            gobj.publish(Ev.EV_ON_CLOSE, Kw.create().put(Kw.URL, gobj.read(BOOTSTRAP_SERVERS)).put("reason", why));
        }
    }

    /**
     * max_in_flight is the credit window of the queue above: its {@code max_pending_acks} is lowered to it (or set
     * when unlimited), so the queue never hands over more records than the producer may hold, and its
     * {@code max_pending_bytes} to half the producer's {@code buffer.memory}, so a window of large records never
     * fills the producer's buffer. Memory stays bounded however slow Kafka is: the rest waits on disk.
     */
    private void boundTheQueueWindow() {
        GObj p = gobj.parent();
        if (p == null) return;
        lower(p, "max_pending_acks", gobj.readLong(MAX_IN_FLIGHT));
        lower(p, "max_pending_bytes", bufferMemory() / 2);
    }

    private void lower(GObj p, String attr, long bound) {
        JsonNode cur = p.readAttr(attr);
        if (cur == null || !cur.canConvertToLong()) return;
        long v = cur.asLong();
        if (v > 0 && v <= bound) return;
        try {
            p.writeAttr(attr, LongNode.valueOf(bound));
            Glog.info(gobj, "Queue window bounded by C_KAFKA", "queue", p.shortName(), "attr", attr, "was", v,
                    "now", bound);
        } catch (IllegalArgumentException e) {
            Glog.warn(gobj, "Queue window not bounded: keep it under max_in_flight yourself", "queue", p.shortName(),
                    "attr", attr, "error", e.getMessage());
        }
    }

    private long bufferMemory() {
        Object v = extraProperties.get("buffer.memory");
        if (v == null) return DEFAULT_BUFFER_MEMORY;
        try {
            return Long.parseLong(String.valueOf(v).trim());
        } catch (NumberFormatException e) {
            return DEFAULT_BUFFER_MEMORY;
        }
    }

    @SuppressWarnings("unchecked")
    private JsonNode statValue(Attr<?> a) {
        Attr<Object> o = (Attr<Object>) a;
        return o.toJson(gobj.read(o));
    }

    private void refreshGauges() {
        gobj.setLong(IN_FLIGHT, inflight.size());
        // the two producer metrics of interest as attributes: /metrics and JMX read attributes, not stats
        KafkaLink l = link;
        Map<String, Double> pm = l == null || l.isClosed() ? Map.of()
                : l.producerMetrics(List.of("record-send-rate", "request-latency-avg"));
        gobj.set(KAFKA_RECORD_SEND_RATE, finite(pm.get("record-send-rate")));
        gobj.set(KAFKA_REQUEST_LATENCY_AVG, finite(pm.get("request-latency-avg")));
        long oldest = inflight.oldestSentAtMs();
        gobj.setLong(OLDEST_IN_FLIGHT_MS, oldest < 0 ? 0 : Math.max(0, now() - oldest));
    }

    /** Kafka answers NaN for a metric with no sample yet. */
    private static double finite(Double v) {
        return v == null || v.isNaN() || v.isInfinite() ? 0 : v;
    }

    /** {@code <prefix><generation>/<rowid>}, the digits written into the array (no String made). */
    private byte[] msgId(RecordKey k) {
        long gen = k.generation();
        long rowid = k.rowid();
        int gl = digits(gen);
        int rl = digits(rowid);
        byte[] id = new byte[msgIdPrefix.length + gl + 1 + rl];
        System.arraycopy(msgIdPrefix, 0, id, 0, msgIdPrefix.length);
        int at = msgIdPrefix.length;
        putDigits(id, at, gl, gen);
        id[at + gl] = '/';
        putDigits(id, at + gl + 1, rl, rowid);
        return id;
    }

    /** Characters of {@code v} in decimal, its sign included. */
    static int digits(long v) {
        if (v == Long.MIN_VALUE) return 20;
        int n = v < 0 ? 2 : 1;
        for (long x = Math.abs(v); x >= 10; x /= 10) n++;
        return n;
    }

    /** {@code v} in decimal into {@code b[at, at + len)}, {@code len} = {@link #digits}(v). */
    static void putDigits(byte[] b, int at, int len, long v) {
        if (v == Long.MIN_VALUE) {
            byte[] s = Long.toString(v).getBytes(StandardCharsets.US_ASCII);
            System.arraycopy(s, 0, b, at, s.length);
            return;
        }
        if (v < 0) {
            b[at] = '-';
            v = -v;
        }
        int i = at + len - 1;
        do {
            b[i--] = (byte) ('0' + v % 10);
            v /= 10;
        } while (v != 0);
    }

    private String gatewayName() {
        String n = gobj.read(GATEWAY_NAME);
        return n == null || n.isEmpty() ? gobj.yuno().name() : n;
    }

    /**
     * The queue above, as its files are named: its {@code tranger_database} (by default its gobj name, as
     * C_QIOGATE names it) and {@code topic_name}; a gobj that is not a queue gives its own name.
     */
    private String queueName() {
        GObj p = gobj.parent();
        JsonNode topic = p == null ? null : p.readAttr("topic_name");
        if (topic == null || !topic.isTextual()) return gobj.name();
        JsonNode db = p.readAttr("tranger_database");
        String database = db != null && db.isTextual() && !db.asText().isEmpty() ? db.asText()
                : (p.name().isEmpty() ? p.fullName() : p.name()).replaceAll("[^A-Za-z0-9_.^-]", "_");
        return database + "/" + topic.asText();
    }

    private String clientId() {
        return ("gatehouse-" + gatewayName() + "-" + queueName()).replaceAll("[^A-Za-z0-9._-]", "-");
    }

    private long now() {
        return gobj.yuno().clock().monotonicMillis();
    }

    private static RecordKey recordKey(ObjectNode md) {
        long rowid = md.path("__msg_rowid__").asLong(0);
        if (rowid <= 0) return null;
        return new RecordKey(md.path("__msg_gen__").asLong(0), rowid);
    }

    /**
     * The kafka dict as client properties: scalars only (a nested value has no Kafka meaning), each as its text,
     * which Kafka parses to the type of the property (a JSON number would reach an int property as a Long, which
     * Kafka refuses).
     */
    static Map<String, Object> properties(JsonNode dict) {
        Map<String, Object> out = new LinkedHashMap<>();
        if (dict == null || dict.isNull()) return out;
        if (!dict.isObject()) throw new IllegalArgumentException("kafka must be a dict of Kafka client properties");
        Iterator<Map.Entry<String, JsonNode>> it = dict.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode v = e.getValue();
            if (!v.isValueNode() || v.isNull()) {
                throw new IllegalArgumentException("kafka." + e.getKey() + " must be a string, number or bool");
            }
            out.put(e.getKey(), v.asText());
        }
        return out;
    }

    KafkaLink link() {
        return link;
    }

    int inflightCount() {
        return inflight.size();
    }

    @Override
    public String toString() {
        return GCLASS + "[" + Objects.toString(link) + "]";
    }
}
