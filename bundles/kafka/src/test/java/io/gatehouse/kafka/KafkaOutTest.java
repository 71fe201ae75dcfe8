// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.core.JmxExporter;
import io.gatehouse.core.MetricsServer;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.qiogate.QIoGateGClass;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.kafka.KafkaBroker;
import io.gatehouse.testkit.kafka.KafkaRecord;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * C_KAFKA under a real C_QIOGATE (the trqueue store on disk) against a real broker (testkit-kafka, a child JVM on
 * 127.0.0.1 with a SASL/PLAIN listener beside the plain one). Every check reads the topic back. The broker outage
 * runs last.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class KafkaOutTest {
    static final String USER = TestBroker.USER;
    static final String PASSWORD = TestBroker.PASSWORD;
    static KafkaBroker broker;
    static Path root;

    TrQueueFactoryImpl queues;
    YunoRuntime rt;
    Recorder recorder;

    @BeforeAll
    static void startBroker() throws Exception {
        root = Files.createDirectories(Path.of(System.getProperty("gatehouse.testkit.dir", "target/kafka-tests")));
        broker = TestBroker.get();
    }

    @AfterEach
    void stopYuno() {
        if (rt != null) rt.close();
        if (queues != null) queues.close();
    }

    // --- harness ---

    /** out (C_QIOGATE, topic q) over kafka (C_KAFKA) with these kw, in a yuno named edge-t. */
    void start(String kafkaKw) throws IOException {
        queues = new TrQueueFactoryImpl();
        rt = YunoRuntime.builder().name("edge-t").dataDir(Files.createTempDirectory(root, "yuno-"))
                .gclass(new QIoGateGClass(queues).spec(), KafkaOut.SPEC, Recorder.SPEC).config(config(kafkaKw)).build()
                .start();
        recorder = Recorder.create(rt, "rec");
    }

    /** The yuno's config: out (C_QIOGATE) over kafka (C_KAFKA) with these kw. */
    static String config(String kafkaKw) {
        return "{\"yuno\": {\"yuno_name\": \"edge-t\"}, \"services\": [{\"name\": \"out\", \"gclass\": \"C_QIOGATE\","
                + " \"kw\": {\"topic_name\": \"q\", \"timeout_poll\": 100, \"retry_delay\": 200},"
                + " \"children\": [{\"name\": \"kafka\", \"gclass\": \"C_KAFKA\", \"kw\": {\"check_interval_ms\": 200,"
                + " \"check_timeout_ms\": 2000, \"reopen_interval_ms\": 500, " + kafkaKw + "}}]}]}";
    }

    /** The kafka dict of a SASL_PLAINTEXT/PLAIN client, user {@value TestBroker#USER} with this password. */
    static String saslKw(String password) {
        return "\"kafka\": {\"security.protocol\": \"SASL_PLAINTEXT\", \"sasl.mechanism\": \"PLAIN\", "
                + "\"sasl.jaas.config\": \"org.apache.kafka.common.security.plain.PlainLoginModule required "
                + "username=\\\"" + USER + "\\\" password=\\\"" + password + "\\\";\"}";
    }

    static String kw(String bootstrap, String topic) {
        return "\"bootstrap_servers\": \"" + bootstrap + "\", \"topic\": \"" + topic + "\"";
    }

    void send(int from, int count) {
        rt.run(() -> {
            for (int i = from; i < from + count; i++) {
                ObjectNode m = Kw.create().put("id", "dev-" + (i % 5)).put("seq", i);
                assertEquals(0, rt.yuno().service("out").send(Ev.EV_SEND_MESSAGE, m, null), "enqueued " + i);
            }
        });
    }

    JsonNode stats() {
        return rt.command("stats-yuno service=out").get("data");
    }

    GObj kafkaGobj() {
        return rt.call(() -> rt.yuno().service("out").child("kafka"));
    }

    void await(String what, long timeoutMs, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError(what + " within " + timeoutMs + " ms; " + stats());
            Thread.sleep(50);
        }
    }

    void awaitDrained(long acks, long timeoutMs) throws InterruptedException {
        await(acks + " acks and an empty queue", timeoutMs, () -> {
            JsonNode s = stats();
            return s.get("msgs_in_queue").asLong() == 0 && s.get("acks").asLong() >= acks;
        });
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The topic read back: every gh-msg-id once, and the number of records. */
    static List<KafkaRecord> readBack(String topic) throws InterruptedException {
        return broker.consumeAll(topic, Duration.ofSeconds(30));
    }

    // --- tests ---

    @Test
    @Order(1)
    void shouldProduceEachQueuedRecordOnceWithItsIdAndKeyAndClearItOnlyWhenKafkaHasIt() throws Exception {
        broker.createTopic("events", 3);
        start(kw(broker.bootstrapServers(), "events"));
        await("connected", 30_000, () -> stats().get("connected").asBoolean());
        send(0, 200);
        awaitDrained(200, 30_000);

        JsonNode s = stats();
        assertEquals(200, s.get("records_sent").asLong());
        assertEquals(200, s.get("records_acked").asLong());
        assertEquals(0, s.get("records_failed").asLong());
        assertEquals(0, s.get("retries").asLong(), "nothing sent twice by the queue");
        assertTrue(s.has("kafka_record_send_total") && s.has("kafka_request_latency_avg"),
                "producer metrics in the queue's stats: " + s);

        List<KafkaRecord> got = readBack("events");
        assertEquals(200, got.size());
        Set<String> ids = new HashSet<>();
        Map<String, Integer> lastSeqOfKey = new HashMap<>();
        for (KafkaRecord r : got) {
            String id = r.header(KafkaOut.GH_MSG_ID);
            assertTrue(id.matches("edge-t/out/q/\\d+/\\d+"), "<gateway>/<database>/<topic>/<generation>/<rowid>: " + id);
            assertTrue(ids.add(id), "duplicate " + id);
            ObjectNode v = Kw.parse(r.valueString());
            assertFalse(v.has(Kw.MD_TRQ), "the queue's metadata stays out of the record: " + r.valueString());
            assertEquals(v.get("id").asText(), r.keyString(), "the key is the message's id");
            int seq = v.get("seq").asInt();
            assertTrue(id.endsWith("/" + (seq + 1)), "rowid = enqueue order: " + id);
            Integer prev = lastSeqOfKey.put(r.keyString(), seq);
            assertTrue(prev == null || prev < seq, "order of key " + r.keyString() + " kept in its partition");
        }
    }

    @Test
    @Order(2)
    void shouldBoundTheQueueWindowByMaxInFlightAndTheProducerBuffer() throws Exception {
        start(kw("127.0.0.1:" + freePort(), "w") + ", \"max_in_flight\": 50, \"kafka\": {\"buffer.memory\": 4194304}");
        assertEquals(50, rt.call(() -> rt.yuno().service("out").readAttr("max_pending_acks").asLong()));
        assertEquals(2 << 20, rt.call(() -> rt.yuno().service("out").readAttr("max_pending_bytes").asLong()),
                "half the producer's buffer.memory");
    }

    @Test
    @Order(2)
    void shouldExportItsStatsThroughMetricsAndJmxAsCoreExportsTheQueuesStats() throws Exception {
        start(kw("127.0.0.1:" + freePort(), "m"));
        send(0, 3);
        try (MetricsServer metrics = new MetricsServer(rt)) {
            int port = metrics.start("127.0.0.1", 0);
            String body;
            try (java.net.Socket sock = new java.net.Socket("127.0.0.1", port)) {
                sock.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                body = new String(sock.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            }
            for (String family : List.of("gatehouse_records_sent_total", "gatehouse_records_acked_total",
                    "gatehouse_records_dead_lettered_total", "gatehouse_in_flight", "gatehouse_connected",
                    "gatehouse_kafka_request_latency_avg", "gatehouse_msgs_in_queue")) {
                assertTrue(body.contains(family + "{"), family + " in /metrics:\n" + body);
            }
        }
        try (JmxExporter jmx = new JmxExporter(rt).start()) {
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            ObjectName name = new ObjectName("io.gatehouse:type=Service,yuno=edge-t,name=out");
            assertEquals(3.0, server.getAttribute(name, "msgs_in_queue"));
            // C_KAFKA's numbers under its gobj path: counters as Long, gauges as Double
            assertEquals(0.0, server.getAttribute(name, "kafka.connected"));
            assertEquals(0L, server.getAttribute(name, "kafka.records_acked"));
            assertEquals(0L, server.getAttribute(name, "kafka.records_dead_lettered"));
            assertEquals(0.0, server.getAttribute(name, "kafka.kafka_request_latency_avg"));
        }
    }

    @Test
    @Order(3)
    void shouldKeepMessagesQueuedAndSayWhyWhileTheTopicIsMissingThenDrainOnceItExists() throws Exception {
        start(kw(broker.bootstrapServers(), "late-topic"));
        send(0, 20);
        await("the topic reported missing", 30_000,
                () -> stats().get("kafka_status").asText().contains("'late-topic' does not exist"));
        JsonNode s = stats();
        assertFalse(s.get("connected").asBoolean());
        assertEquals(20, s.get("msgs_in_queue").asLong(), "kept on disk");
        assertEquals(0, s.get("pending_acks").asLong(), "nothing sent to a link that is not open");
        broker.createTopic("late-topic", 1);
        awaitDrained(20, 30_000);
        assertEquals(20, readBack("late-topic").size());
    }

    @Test
    @Order(4)
    void shouldKeepMessagesQueuedAndSayWhyWhenTheBootstrapServersAreWrong() throws Exception {
        start(kw("no-such-host.invalid:9092", "t"));
        send(0, 5);
        await("the producer refused", 15_000, () -> stats().get("kafka_status").asText().contains("no producer"));
        System.out.println("unresolvable bootstrap: " + stats().get("kafka_status").asText());
        assertTrue(stats().get("kafka_status").asText().contains("bootstrap"), stats().toString());
        assertEquals(5, stats().get("msgs_in_queue").asLong());
        rt.close();
        queues.close();

        String nowhere = "127.0.0.1:" + freePort();
        start(kw(nowhere, "t"));
        send(0, 5);
        await("unreachable reported", 15_000,
                () -> stats().get("kafka_status").asText().contains("no broker of " + nowhere + " answered"));
        assertEquals(5, stats().get("msgs_in_queue").asLong());
    }

    @Test
    @Order(5)
    void shouldPassSaslThroughAndSayAuthenticationFailedWhenThePasswordIsWrong() throws Exception {
        broker.createTopic("sasl", 1);
        String sasl = "\"kafka\": {\"security.protocol\": \"SASL_PLAINTEXT\", \"sasl.mechanism\": \"PLAIN\", "
                + "\"sasl.jaas.config\": \"org.apache.kafka.common.security.plain.PlainLoginModule required "
                + "username=\\\"" + USER + "\\\" password=\\\"%s\\\";\"}";
        start(kw(broker.saslBootstrapServers(), "sasl") + ", " + String.format(sasl, "wrong"));
        send(0, 5);
        await("authentication failure reported", 30_000,
                () -> stats().get("kafka_status").asText().contains("authentication"));
        System.out.println("bad SASL: " + stats().get("kafka_status").asText());
        assertEquals(5, stats().get("msgs_in_queue").asLong(), "kept queued");
        rt.close();
        queues.close();

        start(kw(broker.saslBootstrapServers(), "sasl") + ", " + String.format(sasl, PASSWORD));
        send(0, 5);
        awaitDrained(5, 30_000);
        assertEquals(5, readBack("sasl").size(), "the same settings with the right password deliver");

        rt.close();
        queues.close();
        start(kw(broker.saslBootstrapServers(), "sasl")
                + ", \"kafka\": {\"security.protocol\": \"SASL_PLAINTEXT\", \"sasl.mechanism\": \"PLAIN\"}");
        await("SASL without JAAS refused", 15_000, () -> stats().get("kafka_status").asText().contains("JAAS"));
    }

    /**
     * The credentials of a running edge changed to a wrong password against the broker's SASL listener (which
     * authenticates every client): the link closes and says why once, nothing is sent or acked, the queue grows on
     * disk; the config fixed (OPERATIONS.md: a changed read-only attribute rebuilds the service, its queue reopens
     * from disk) delivers every record, each once.
     */
    @Test
    @Order(5)
    void shouldKeepEverythingQueuedWhileTheSaslPasswordIsWrongSayItOnceAndDeliverAllOnceTheConfigIsFixed()
            throws Exception {
        String topic = "sasl-fix";
        broker.createTopic(topic, 1);
        TestBroker.allow(org.apache.kafka.common.acl.AclOperation.ALL, topic);
        String good = config(kw(broker.saslBootstrapServers(), topic) + ", " + saslKw(PASSWORD));
        String bad = config(kw(broker.saslBootstrapServers(), topic) + ", " + saslKw("wrong"));
        try (io.gatehouse.testkit.LogCapture logs = new io.gatehouse.testkit.LogCapture()) {
            start(kw(broker.saslBootstrapServers(), topic) + ", " + saslKw(PASSWORD));
            await("connected with the right password", 30_000, () -> stats().get("connected").asBoolean());
            send(0, 10);
            awaitDrained(10, 30_000);

            assertEquals("rebuilt", rt.reconfigure(Kw.parse(bad)).get("out"), "a read-only attribute changed");
            send(10, 10);
            await("authentication failure reported", 30_000,
                    () -> stats().get("kafka_status").asText().contains("authentication with "
                            + broker.saslBootstrapServers() + " failed"));
            send(20, 10);
            Thread.sleep(2_000);   // ten connectivity checks, each failing alike
            JsonNode s = stats();
            System.out.println("wrong SASL password: " + s.get("kafka_status").asText());
            assertTrue(s.get("kafka_status").asText().contains("Invalid username or password"), s.toString());
            assertFalse(s.get("connected").asBoolean(), "link closed: " + s);
            assertEquals(20, s.get("msgs_in_queue").asLong(), "every record since the change kept on disk: " + s);
            assertEquals(0, s.get("pending_acks").asLong(), "nothing handed to a closed link: " + s);
            assertEquals(0, s.get("records_sent").asLong(), s.toString());
            assertEquals(0, s.get("records_acked").asLong(), s.toString());
            assertEquals(0, s.get("acks").asLong(), "nothing cleared: " + s);
            assertEquals(1, logs.count("Kafka not reachable: records stay queued"), "said once: " + logs.all());
            assertEquals(1, logs.count("Kafka reachable: sending"), "reachable only before the change: " + logs.all());

            assertEquals("rebuilt", rt.reconfigure(Kw.parse(good)).get("out"), "the password fixed");
            awaitDrained(20, 30_000);
            assertEquals(2, logs.count("Kafka reachable: sending"), logs.all().toString());
        }
        List<KafkaRecord> got = readBack(topic);
        Set<String> ids = new HashSet<>();
        Set<Integer> seqs = new HashSet<>();
        for (KafkaRecord r : got) {
            ids.add(r.header(KafkaOut.GH_MSG_ID));
            seqs.add(Kw.parse(r.valueString()).get("seq").asInt());
        }
        assertEquals(30, got.size(), "each record once: " + got.size());
        assertEquals(30, ids.size());
        for (int i = 0; i < 30; i++) assertTrue(seqs.contains(i), "record " + i + " delivered");
    }

    /** The dead-letter file's lines. */
    List<JsonNode> deadLetters() throws IOException {
        Path f = Path.of(stats().get("dead_letter_file").asText());
        List<JsonNode> out = new ArrayList<>();
        for (String line : Files.readAllLines(f)) out.add(Kw.parse(line));
        return out;
    }

    void sendBig(String id, int padding) {
        rt.run(() -> rt.yuno().service("out").send(Ev.EV_SEND_MESSAGE,
                Kw.create().put("id", id).put("pad", "x".repeat(padding)), null));
    }

    @Test
    @Order(6)
    void shouldDeadLetterARecordTheProducerRefusesAsTooLargeThenClearItWhileTheOthersFlow() throws Exception {
        broker.createTopic("small", 1);
        start(kw(broker.bootstrapServers(), "small") + ", \"kafka\": {\"max.request.size\": 1024}");
        await("connected", 30_000, () -> stats().get("connected").asBoolean());
        sendBig("big", 4000);
        send(0, 10);
        awaitDrained(11, 30_000);
        JsonNode s = stats();
        assertEquals(1, s.get("records_dead_lettered").asLong(), s.toString());
        assertEquals(10, s.get("records_acked").asLong(), s.toString());
        assertTrue(s.get("last_error").asText().contains("RecordTooLarge"), s.get("last_error").asText());
        List<JsonNode> dead = deadLetters();
        assertEquals(1, dead.size(), dead.toString());
        JsonNode d = dead.get(0);
        assertTrue(d.get("gh_msg_id").asText().matches("edge-t/out/q/\\d+/1"), d.toString());
        assertEquals("small", d.get("topic").asText());
        assertEquals("big", d.get("key").asText());
        assertEquals("big", Kw.parse(d.get("value").asText()).get("id").asText(), "the record's value as it was");
        assertFalse(d.get("value").asText().contains(Kw.MD_TRQ));
        assertTrue(d.get("error").asText().contains("RecordTooLarge"), d.toString());
        assertEquals(10, readBack("small").size(), "the others reached Kafka, the refused one did not");
    }

    @Test
    @Order(6)
    void shouldDeadLetterARecordTheBrokerRefusesAsTooLargeWithoutLosingItsBatch() throws Exception {
        broker.createTopic("small-broker", 1, Map.of("max.message.bytes", "2048"));
        // a long linger puts the large record in one batch with the small ones: the broker refuses the batch,
        // the producer splits it, and only the large one is refused for good
        start(kw(broker.bootstrapServers(), "small-broker") + ", \"linger_ms\": 200");
        await("connected", 30_000, () -> stats().get("connected").asBoolean());
        send(0, 5);
        sendBig("big", 4000);
        send(5, 5);
        awaitDrained(11, 30_000);
        JsonNode s = stats();
        assertEquals(1, s.get("records_dead_lettered").asLong(), s.toString());
        List<JsonNode> dead = deadLetters();
        assertEquals(1, dead.size(), dead.toString());
        assertEquals("big", dead.get(0).get("key").asText());
        List<KafkaRecord> got = readBack("small-broker");
        assertEquals(10, got.size());
        assertEquals(10, got.stream().map(r -> r.header(KafkaOut.GH_MSG_ID)).distinct().count());
    }

    @Test
    @Order(6)
    void shouldKeepARefusedRecordQueuedAndRetryItWhenThereIsNoDeadLetterFile() throws Exception {
        broker.createTopic("small-kept", 1);
        start(kw(broker.bootstrapServers(), "small-kept") + ", \"dead_letter_max_bytes\": 0, "
                + "\"kafka\": {\"max.request.size\": 1024}");
        await("connected", 30_000, () -> stats().get("connected").asBoolean());
        sendBig("big", 4000);
        send(0, 10);
        await("the large record nacked and retried", 20_000, () -> stats().get("nacks").asLong() >= 2);
        await("the others acked", 20_000, () -> stats().get("acks").asLong() >= 10);
        JsonNode s = stats();
        assertEquals(1, s.get("msgs_in_queue").asLong(), "the refused one stays queued: " + s);
        assertTrue(s.get("records_failed").asLong() >= 2);
        assertEquals(0, s.get("records_dead_lettered").asLong());
        assertTrue(s.get("last_error").asText().contains("RecordTooLarge"), s.get("last_error").asText());
        assertEquals(10, readBack("small-kept").size());
    }

    @Test
    @Order(6)
    void shouldKeepARecordQueuedWhenTheDeadLetterFileIsFull() throws Exception {
        broker.createTopic("small-full", 1);
        start(kw(broker.bootstrapServers(), "small-full") + ", \"dead_letter_max_bytes\": 100, "
                + "\"kafka\": {\"max.request.size\": 1024}");
        await("connected", 30_000, () -> stats().get("connected").asBoolean());
        sendBig("big", 4000);
        send(0, 3);
        await("the others acked", 20_000, () -> stats().get("acks").asLong() >= 3);
        await("the dead letter refused", 20_000, () -> stats().get("last_error").asText().contains("dead-letter file full"));
        await("and retried", 20_000, () -> stats().get("nacks").asLong() >= 3);
        JsonNode s = stats();
        assertEquals(1, s.get("msgs_in_queue").asLong(), "not dropped: " + s);
        assertEquals(0, s.get("records_dead_lettered").asLong());
    }

    @Test
    @Order(6)
    void shouldCloseTheLinkKeepEverythingQueuedWhileNotAuthorizedAndDrainOnceAllowed() throws Exception {
        broker.createTopic(TestBroker.ACL_TOPIC, 1);
        String sasl = "\"kafka\": {\"security.protocol\": \"SASL_PLAINTEXT\", \"sasl.mechanism\": \"PLAIN\", "
                + "\"sasl.jaas.config\": \"org.apache.kafka.common.security.plain.PlainLoginModule required "
                + "username=\\\"" + USER + "\\\" password=\\\"" + PASSWORD + "\\\";\"}";
        try (io.gatehouse.testkit.LogCapture logs = new io.gatehouse.testkit.LogCapture()) {
            start(kw(broker.saslBootstrapServers(), TestBroker.ACL_TOPIC) + ", " + sasl);
            send(0, 10);
            await("the producer refused", 30_000, () -> stats().get("producer_refusals").asLong() >= 2);
            JsonNode s = stats();
            System.out.println("not authorized: " + s.get("last_error").asText());
            assertTrue(s.get("last_error").asText().contains("Authorization"), s.toString());
            assertEquals(10, s.get("msgs_in_queue").asLong(), "kept queued: " + s);
            assertEquals(0, s.get("records_acked").asLong());
            assertEquals(1, logs.count("Kafka refused the producer: records stay queued, producer made again"),
                    "said once: " + logs.all());

            TestBroker.allow(org.apache.kafka.common.acl.AclOperation.WRITE, TestBroker.ACL_TOPIC);
            awaitDrained(10, 60_000);
        }
        List<KafkaRecord> got = readBack(TestBroker.ACL_TOPIC);
        assertEquals(10, got.stream().map(r -> r.header(KafkaOut.GH_MSG_ID)).distinct().count(), "every record, once allowed");
    }

    @Test
    @Order(7)
    void shouldTellItsSenderOnceKafkaHasARecordInDirectMode() throws Exception {
        broker.createTopic("direct", 1);
        start(kw(broker.bootstrapServers(), "direct"));
        await("connected", 30_000, () -> stats().get("connected").asBoolean());
        for (int i = 0; i < 3; i++) {
            int n = i;
            rt.run(() -> {
                ObjectNode m = Kw.create().put("id", "d").put("n", n);
                m.putObject(Kw.DURABLE).put("n", n);
                assertEquals(0, kafkaGobj().send(Ev.EV_SEND_MESSAGE, m, recorder.gobj()));
            });
        }
        assertTrue(recorder.awaitCount(Ev.EV_ON_DURABLE, 3, 20_000), "EV_ON_DURABLE for each");
        List<KafkaRecord> got = readBack("direct");
        assertEquals(3, got.size());
        assertTrue(got.get(0).header(KafkaOut.GH_MSG_ID).startsWith("edge-t/out/q/direct/"), got.get(0).header(KafkaOut.GH_MSG_ID));
        assertEquals("{\"id\":\"d\",\"n\":0}", got.get(0).valueString(), "the durable dict stays out");
    }

    /** A message to C_KAFKA itself, as a relay in direct mode sends it, told to the recorder. */
    void sendDirect(int n, int padding) {
        rt.run(() -> {
            ObjectNode m = Kw.create().put("id", "d").put("n", n);
            if (padding > 0) m.put("pad", "x".repeat(padding));
            m.putObject(Kw.DURABLE).put("n", n);
            assertEquals(0, kafkaGobj().send(Ev.EV_SEND_MESSAGE, m, recorder.gobj()), "taken " + n);
        });
    }

    Set<Integer> durableNs() {
        Set<Integer> ns = new HashSet<>();
        for (Recorder.Event e : recorder.events(Ev.EV_ON_DURABLE)) ns.add(e.kw.get("n").asInt());
        return ns;
    }

    @Test
    @Order(7)
    void shouldDeadLetterARecordRefusedForGoodInDirectModeAndTellItsSenderItIsDurableThere() throws Exception {
        // the broker refuses what is over 2048 B for this topic, the producer what is over 8192 B
        broker.createTopic("direct-small", 1, Map.of("max.message.bytes", "2048"));
        try (io.gatehouse.testkit.LogCapture logs = new io.gatehouse.testkit.LogCapture()) {
            start(kw(broker.bootstrapServers(), "direct-small") + ", \"linger_ms\": 100, "
                    + "\"kafka\": {\"max.request.size\": 8192}");
            await("connected", 30_000, () -> stats().get("connected").asBoolean());
            String said = "Kafka refused a record for good: written to the dead-letter file, confirmed to its sender";
            sendDirect(0, 0);
            sendDirect(1, 4000);    // refused by the broker (its batch split, the others go through)
            sendDirect(2, 0);
            assertTrue(recorder.awaitCount(Ev.EV_ON_DURABLE, 3, 30_000), "EV_ON_DURABLE for each: " + durableNs()
                    + " " + stats());
            assertEquals(1, logs.count(said), logs.all().toString());
            sendDirect(3, 10000);   // refused by the producer, inside its send
            sendDirect(4, 10000);   // the same streak: not said again
            assertTrue(recorder.awaitCount(Ev.EV_ON_DURABLE, 5, 30_000), "EV_ON_DURABLE for each: " + durableNs());
            sendDirect(5, 0);
            assertTrue(recorder.awaitCount(Ev.EV_ON_DURABLE, 6, 30_000), "EV_ON_DURABLE for each: " + durableNs());
            assertEquals(Set.of(0, 1, 2, 3, 4, 5), durableNs());
            assertEquals(2, logs.count(said), "said once per streak: " + logs.all());
            JsonNode s = stats();
            assertEquals(3, s.get("records_dead_lettered").asLong(), s.toString());
            assertEquals(3, s.get("records_acked").asLong(), s.toString());
            assertTrue(s.get("last_error").asText().contains("RecordTooLarge"), s.get("last_error").asText());
            List<JsonNode> dead = deadLetters();
            assertEquals(3, dead.size(), dead.toString());
            Set<Integer> deadNs = new HashSet<>();
            for (JsonNode d : dead) {
                assertTrue(d.get("gh_msg_id").asText().matches("edge-t/out/q/direct/\\d+-\\d+"), d.toString());
                assertEquals("direct-small", d.get("topic").asText());
                assertEquals("d", d.get("key").asText());
                assertTrue(d.get("error").asText().contains("RecordTooLarge"), d.toString());
                ObjectNode v = Kw.parse(d.get("value").asText());
                assertFalse(v.has(Kw.DURABLE), "the value as produced: " + v);
                deadNs.add(v.get("n").asInt());
            }
            assertEquals(Set.of(1, 3, 4), deadNs);
        }
        List<KafkaRecord> got = readBack("direct-small");
        Set<Integer> inKafka = new HashSet<>();
        for (KafkaRecord r : got) inKafka.add(Kw.parse(r.valueString()).get("n").asInt());
        assertEquals(Set.of(0, 2, 5), inKafka, "the others reached Kafka, the refused ones did not");
    }

    @Test
    @Order(7)
    void shouldLeaveARecordRefusedForGoodUnconfirmedInDirectModeWhenThereIsNoDeadLetterFile() throws Exception {
        broker.createTopic("direct-kept", 1);
        try (io.gatehouse.testkit.LogCapture logs = new io.gatehouse.testkit.LogCapture()) {
            start(kw(broker.bootstrapServers(), "direct-kept") + ", \"dead_letter_max_bytes\": 0, "
                    + "\"kafka\": {\"max.request.size\": 1024}");
            await("connected", 30_000, () -> stats().get("connected").asBoolean());
            sendDirect(0, 0);
            sendDirect(1, 4000);
            sendDirect(2, 0);
            assertTrue(recorder.awaitCount(Ev.EV_ON_DURABLE, 2, 30_000), "the others confirmed: " + durableNs());
            await("the large one failed", 10_000, () -> stats().get("records_failed").asLong() >= 1);
            Thread.sleep(500);
            assertEquals(Set.of(0, 2), durableNs(), "the refused one is not confirmed: its producer sends it again");
            JsonNode s = stats();
            assertEquals(0, s.get("records_dead_lettered").asLong(), s.toString());
            assertEquals("", s.get("dead_letter_file").asText(), s.toString());
            assertEquals(1, logs.count("Kafka refused a record for good and there is no dead-letter file: not "
                    + "confirmed, the producers upstream send it again"), logs.all().toString());
        }
        assertEquals(2, readBack("direct-kept").size());
    }

    @Test
    @Order(9)
    void shouldCloseTheLinkWhileTheBrokerIsDownKeepQueuingAndDrainWhenItReturns() throws Exception {
        broker.createTopic("outage", 1);
        start(kw(broker.bootstrapServers(), "outage") + ", \"delivery_timeout_ms\": 20000");
        await("connected", 30_000, () -> stats().get("connected").asBoolean());
        send(0, 50);
        awaitDrained(50, 30_000);

        broker.stop();
        await("the link closed", 30_000, () -> !stats().get("connected").asBoolean());
        send(50, 100);
        Thread.sleep(500);
        JsonNode down = stats();
        assertEquals(100, down.get("msgs_in_queue").asLong(), "queued on disk while Kafka is away: " + down);
        assertEquals(0, down.get("pending_acks").asLong(), "nothing handed to a closed link");
        assertTrue(down.get("oldest_pending_age_ms").asLong() >= 0);

        broker.restart();
        awaitDrained(150, 60_000);
        List<KafkaRecord> got = readBack("outage");
        Set<String> ids = new HashSet<>();
        for (KafkaRecord r : got) ids.add(r.header(KafkaOut.GH_MSG_ID));
        assertEquals(150, ids.size(), "every record in the topic");
        System.out.println("outage: " + got.size() + " records for 150 ids (" + (got.size() - 150) + " duplicates)");
        assertNotNull(stats().get("kafka_status"));
    }

    @Test
    @Order(10)
    void shouldStartWhileKafkaIsDownQueueAndDrainWhenItComesUp() throws Exception {
        broker.createTopic("down-at-start", 1);
        broker.stop();
        try {
            start(kw(broker.bootstrapServers(), "down-at-start"));
            send(0, 30);
            await("unreachable reported", 30_000,
                    () -> stats().get("kafka_status").asText().contains("answered within"));
            JsonNode s = stats();
            assertFalse(s.get("connected").asBoolean());
            assertEquals(30, s.get("msgs_in_queue").asLong(), "queued on disk: " + s);
        } finally {
            broker.restart();
        }
        awaitDrained(30, 60_000);
        assertEquals(30, readBack("down-at-start").stream().map(r -> r.header(KafkaOut.GH_MSG_ID)).distinct().count());
    }
}
