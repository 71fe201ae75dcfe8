package io.gatehouse.testkit.kafka;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;

/**
 * The harness itself against one broker: produce and read back with headers, the SASL/PLAIN listener taking its
 * user and refusing a wrong password, a graceful stop and a SIGKILL each followed by a restart on the same data and
 * ports, and close removing everything.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class KafkaBrokerTest {
    static Path dir;
    static KafkaBroker broker;

    @BeforeAll
    static void start() throws Exception {
        Path root = Path.of(System.getProperty("gatehouse.testkit.dir", "target/kafka-tests"));
        Files.createDirectories(root);
        dir = Files.createTempDirectory(root, "broker-");
        broker = KafkaBroker.builder(dir).saslPlain("edge", "s3cret").start();
        System.out.println("broker " + broker + " started in " + broker.lastStartTime().toMillis() + " ms");
    }

    @AfterAll
    static void stop() throws Exception {
        if (broker != null) {
            broker.close();
        }
    }

    static void produce(String topic, int from, int to) throws Exception {
        produce(topic, from, to, new Properties());
    }

    static void produce(String topic, int from, int to, Properties extra) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.putAll(extra);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        try (KafkaProducer<byte[], byte[]> producer =
                 new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = from; i < to; i++) {
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, bytes("k" + (i % 3)), bytes("v" + i));
                r.headers().add("gh-msg-id", bytes("gw/q/" + i));
                producer.send(r).get(30, TimeUnit.SECONDS);
            }
        }
    }

    static boolean alive(long pid) {
        return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static void assertRecords(List<KafkaRecord> got, int n) {
        assertEquals(n, got.size(), "records read back");
        for (int i = 0; i < n; i++) {
            KafkaRecord r = got.get(i);
            assertEquals("v" + i, r.valueString());
            assertEquals("k" + (i % 3), r.keyString());
            assertEquals("gw/q/" + i, r.header("gh-msg-id"));
            assertEquals(i, r.offset());
        }
    }

    @Test
    @Order(1)
    void shouldReadBackEveryRecordWithItsHeadersWhenProducedWithAcksAll() throws Exception {
        assertTrue(broker.isRunning());
        assertTrue(broker.bootstrapServers().startsWith("127.0.0.1:"));
        assertTrue(Files.isRegularFile(dir.resolve("server.properties")));
        broker.createTopic("t1", 1);
        produce("t1", 0, 100);
        assertRecords(broker.consumeAll("t1", Duration.ofSeconds(30)), 100);
    }

    static Properties sasl(String password) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.saslBootstrapServers());
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "PLAIN");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"edge\""
            + " password=\"" + password + "\";");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000");
        return p;
    }

    @Test
    @Order(1)
    void shouldAuthenticateItsSaslUserOnTheSaslListenerAndRefuseAWrongPassword() throws Exception {
        assertTrue(broker.saslBootstrapServers().startsWith("127.0.0.1:"));
        assertFalse(broker.saslBootstrapServers().equals(broker.bootstrapServers()));
        String props = Files.readString(dir.resolve("server.properties"));
        assertTrue(props.contains("listener.name.sasl_plaintext.plain.sasl.jaas.config="), props);
        broker.createTopic("t-sasl", 1);
        produce("t-sasl", 0, 10, sasl("s3cret"));
        assertRecords(broker.consumeAll("t-sasl", Duration.ofSeconds(30)), 10);
        Exception e = assertThrows(Exception.class, () -> produce("t-sasl", 10, 11, sasl("wrong")));
        Throwable c = e;
        while (c != null && !(c instanceof org.apache.kafka.common.errors.AuthenticationException)) c = c.getCause();
        assertTrue(c != null, "an AuthenticationException: " + e);
        assertTrue(c.getMessage().contains("Invalid username or password"), c.getMessage());
        assertEquals(10, broker.consumeAll("t-sasl", Duration.ofSeconds(30)).size(), "nothing more written");
    }

    @Test
    @Order(2)
    void shouldKeepTheDataAndThePortWhenStoppedAndRestarted() throws Exception {
        String before = broker.bootstrapServers();
        long pid = broker.pid();
        assertTrue(broker.stop(), "the broker exits on SIGTERM within the grace period");
        assertFalse(broker.isRunning());
        assertFalse(alive(pid), "pid " + pid + " is gone");
        broker.restart();
        System.out.println("restart after stop took " + broker.lastStartTime().toMillis() + " ms");
        assertEquals(before, broker.bootstrapServers());
        assertRecords(broker.consumeAll("t1", Duration.ofSeconds(30)), 100);
        produce("t1", 100, 150);
        assertRecords(broker.consumeAll("t1", Duration.ofSeconds(30)), 150);
    }

    @Test
    @Order(3)
    void shouldKeepAckedRecordsWhenKilledAndRestarted() throws Exception {
        long pid = broker.pid();
        broker.kill();
        assertFalse(broker.isRunning());
        assertFalse(alive(pid), "pid " + pid + " is gone");
        broker.restart();
        System.out.println("restart after kill took " + broker.lastStartTime().toMillis() + " ms");
        assertRecords(broker.consumeAll("t1", Duration.ofSeconds(30)), 150);
    }

    @Test
    @Order(4)
    void shouldFailClearlyWhenTheTopicIsMissingOrTheDirectoryIsUsed() {
        IllegalStateException e = assertThrows(IllegalStateException.class,
            () -> broker.consumeAll("no-such-topic", Duration.ofSeconds(5)));
        assertTrue(e.getMessage().contains("no-such-topic"), e.getMessage());
        IllegalArgumentException used = assertThrows(IllegalArgumentException.class, () -> KafkaBroker.start(dir));
        assertTrue(used.getMessage().contains("not empty"), used.getMessage());
    }

    @Test
    @Order(5)
    void shouldRemoveItsDirectoryAndProcessWhenClosed() throws Exception {
        long pid = broker.pid();
        broker.close();
        broker = null;
        assertFalse(Files.exists(dir), dir + " removed");
        assertFalse(alive(pid), "pid " + pid + " is gone");
    }
}
