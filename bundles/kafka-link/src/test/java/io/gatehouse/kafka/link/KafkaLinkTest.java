package io.gatehouse.kafka.link;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.gatehouse.testkit.kafka.KafkaBroker;
import io.gatehouse.testkit.kafka.KafkaRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * KafkaLink against a real broker (testkit-kafka, a child JVM on 127.0.0.1). A single-thread executor plays the
 * gateway's core loop: every callback and connectivity report must arrive on it. The broker outage test runs last.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class KafkaLinkTest {
    static final String LOOP = "core-loop";
    static KafkaBroker broker;
    static ExecutorService loop;
    final List<KafkaLink> links = new ArrayList<>();
    final LinkedBlockingQueue<Connectivity> reports = new LinkedBlockingQueue<>();
    final Set<String> wrongThreads = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** System.nanoTime() of the latest report, as seen on the loop. */
    volatile long lastReportNanos;

    @BeforeAll
    static void startBroker() throws Exception {
        Path root = Path.of(System.getProperty("gatehouse.testkit.dir", "target/kafka-tests"));
        Files.createDirectories(root);
        broker = KafkaBroker.start(Files.createTempDirectory(root, "link-"));
        System.out.println("broker started in " + broker.lastStartTime().toMillis() + " ms");
        loop = Executors.newSingleThreadExecutor(r -> new Thread(r, LOOP));
    }

    @AfterAll
    static void stopBroker() throws Exception {
        if (loop != null) {
            loop.shutdownNow();
        }
        if (broker != null) {
            broker.close();
        }
    }

    @AfterEach
    void closeLinks() {
        for (KafkaLink l : links) {
            l.close(Duration.ofSeconds(2));
        }
        assertTrue(wrongThreads.isEmpty(), "callbacks off the core loop: " + wrongThreads);
    }

    KafkaLink.Builder link(String bootstrap, String topic) {
        return KafkaLink.builder(bootstrap, topic, loop)
            .connectivityInterval(Duration.ofMillis(200)).connectivityTimeout(Duration.ofSeconds(1))
            .listener(c -> {
                onLoop("listener");
                lastReportNanos = System.nanoTime();
                reports.add(c);
            });
    }

    KafkaLink open(KafkaLink.Builder b) {
        KafkaLink l = b.open();
        links.add(l);
        return l;
    }

    void onLoop(String what) {
        if (!Thread.currentThread().getName().equals(LOOP)) {
            wrongThreads.add(what + " on " + Thread.currentThread().getName());
        }
    }

    Connectivity awaitReport(boolean up, long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        List<Connectivity> seen = new ArrayList<>();
        while (System.nanoTime() < deadline) {
            Connectivity c = reports.poll(50, TimeUnit.MILLISECONDS);
            if (c != null) {
                seen.add(c);
                if (c.up() == up) {
                    return c;
                }
            }
        }
        throw new AssertionError("no connectivity " + (up ? "up" : "down") + " within " + timeoutMs + " ms; saw "
            + seen);
    }

    /** Sends n records (key dev-(i % 10), header gh-msg-id) and returns the results in completion order. */
    List<SendResult> sendAll(KafkaLink l, String prefix, int n, long timeoutMs) throws InterruptedException {
        LinkedBlockingQueue<SendResult> results = new LinkedBlockingQueue<>();
        for (int i = 0; i < n; i++) {
            Map<String, byte[]> h = new HashMap<>();
            h.put("gh-msg-id", bytes(prefix + i));
            KafkaLink.Offer o = l.send(bytes("dev-" + (i % 10)), bytes(prefix + i), h, r -> {
                onLoop("send callback");
                results.add(r);
            });
            assertEquals(KafkaLink.Offer.ACCEPTED, o, "send " + i);
        }
        List<SendResult> got = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (got.size() < n) {
            SendResult r = results.poll(Math.max(1, (deadline - System.nanoTime()) / 1_000_000), TimeUnit.MILLISECONDS);
            if (r == null) {
                throw new AssertionError(got.size() + " of " + n + " callbacks within " + timeoutMs + " ms");
            }
            got.add(r);
        }
        return got;
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd"})
    @Order(1)
    void shouldAckEverySendOnTheLoopAndKeepPerKeyOrderWhenTheBrokerIsUp(String compression) throws Exception {
        String topic = "acked-" + compression;
        broker.createTopic(topic, 3);
        KafkaLink l = open(link(broker.bootstrapServers(), topic).compression(compression).lingerMs(2));
        Connectivity up = awaitReport(true, 15_000);
        assertEquals(3, up.partitions(), up.toString());
        List<SendResult> results = sendAll(l, compression + "-", 500, 30_000);
        for (SendResult r : results) {
            assertTrue(r.ok(), "send failed: " + r.error());
            assertTrue(r.offset() >= 0 && r.partition() >= 0);
        }
        assertEquals(new KafkaLink.Stats(500, 500, 0, 0, 0), l.stats());
        assertTrue(l.producerMetric("record-send-rate") >= 0, "record-send-rate is a producer metric");

        List<KafkaRecord> got = broker.consumeAll(topic, Duration.ofSeconds(30));
        assertEquals(500, got.size());
        Set<String> ids = new HashSet<>();
        Map<String, Integer> lastPerKey = new HashMap<>();
        Map<String, Integer> partitionOfKey = new HashMap<>();
        for (KafkaRecord r : got) {
            assertEquals(r.valueString(), r.header("gh-msg-id"));
            assertTrue(ids.add(r.header("gh-msg-id")), "duplicate " + r.header("gh-msg-id"));
            int seq = Integer.parseInt(r.valueString().substring(compression.length() + 1));
            Integer prev = lastPerKey.put(r.keyString(), seq);
            assertTrue(prev == null || prev < seq, "key " + r.keyString() + ": " + seq + " after " + prev);
            Integer p = partitionOfKey.putIfAbsent(r.keyString(), r.partition());
            assertTrue(p == null || p == r.partition(), "key " + r.keyString() + " split over partitions");
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    @Order(1)
    void shouldRunTheAfterBurstHookOnTheLoopAfterTheCallbacksOfEachBurst(boolean sendThread) throws Exception {
        String topic = "bursts-" + sendThread;
        broker.createTopic(topic, 1);
        java.util.concurrent.atomic.AtomicInteger hooks = new java.util.concurrent.atomic.AtomicInteger();
        KafkaLink l = open(link(broker.bootstrapServers(), topic).sendThread(sendThread).lingerMs(20).maxInFlight(5000)
            .afterBurst(() -> {
                onLoop("after-burst hook");
                hooks.incrementAndGet();
            }));
        awaitReport(true, 15_000);
        List<SendResult> results = sendAll(l, "b-", 2000, 30_000);
        assertTrue(results.stream().allMatch(SendResult::ok));
        Thread.sleep(200);   // the hook of the last burst runs after its callbacks
        System.out.println("send thread " + sendThread + ": 2000 callbacks in " + hooks.get() + " bursts");
        assertTrue(hooks.get() >= 1 && hooks.get() < 2000, "one hook per burst, not per record: " + hooks.get());
        List<String> values = broker.consumeAll(topic, Duration.ofSeconds(20)).stream()
            .map(KafkaRecord::valueString).toList();
        assertEquals(2000, values.size());
        for (int i = 0; i < 2000; i++) {
            assertEquals("b-" + i, values.get(i), "the order of the sends kept in the partition");
        }
    }

    @Test
    @Order(2)
    void shouldCallBackEveryQueuedSendOnceWhenClosedAtOnce() throws Exception {
        broker.createTopic("closed-at-once", 1);
        KafkaLink l = open(link(broker.bootstrapServers(), "closed-at-once").maxInFlight(20_000).lingerMs(1000));
        awaitReport(true, 15_000);
        LinkedBlockingQueue<SendResult> results = new LinkedBlockingQueue<>();
        int n = 20_000;
        for (int i = 0; i < n; i++) {
            assertEquals(KafkaLink.Offer.ACCEPTED, l.send(null, bytes("c" + i), null, results::add));
        }
        l.close(Duration.ZERO);   // most are still queued for the send thread or in the producer's linger
        int got = 0;
        for (; got < n; got++) {
            assertNotNull(results.poll(15, TimeUnit.SECONDS), "callback " + got + " of " + n);
        }
        Thread.sleep(200);
        assertEquals(0, results.size(), "each callback once");
        assertEquals(0, l.inFlight());
        assertEquals(KafkaLink.Offer.CLOSED, l.send(null, bytes("late"), null, results::add));
    }

    @Test
    @Order(2)
    void shouldRefuseSendsPastMaxInFlightAndTakeThemAgainAfterCallbacks() throws Exception {
        broker.createTopic("window", 1);
        // a long linger keeps the first sends in the producer until their batch is due
        KafkaLink l = open(link(broker.bootstrapServers(), "window").maxInFlight(5).lingerMs(1500));
        awaitReport(true, 15_000);
        LinkedBlockingQueue<SendResult> results = new LinkedBlockingQueue<>();
        for (int i = 0; i < 5; i++) {
            assertEquals(KafkaLink.Offer.ACCEPTED, l.send(null, bytes("w" + i), null, results::add));
        }
        assertEquals(5, l.inFlight());
        assertEquals(KafkaLink.Offer.FULL, l.send(null, bytes("w5"), null, results::add));
        for (int i = 0; i < 5; i++) {
            SendResult r = results.poll(10, TimeUnit.SECONDS);
            assertNotNull(r, "callback " + i);
            assertTrue(r.ok(), String.valueOf(r.error()));
        }
        assertEquals(0, l.inFlight());
        assertEquals(KafkaLink.Offer.ACCEPTED, l.send(null, bytes("w5"), null, results::add));
        assertTrue(results.poll(10, TimeUnit.SECONDS).ok());
        assertEquals(1, l.stats().refusedFull());
        assertEquals(6, broker.consumeAll("window", Duration.ofSeconds(20)).size());
    }

    @Test
    @Order(2)
    void shouldKeepTheProducerAndTheSendsInFlightWhenHandedOffToANewLink() throws Exception {
        broker.createTopic("handoff", 1);
        KafkaLink first = open(link(broker.bootstrapServers(), "handoff").lingerMs(1500));
        awaitReport(true, 15_000);
        LinkedBlockingQueue<String> done = new LinkedBlockingQueue<>();
        for (int i = 0; i < 5; i++) {
            String v = "old-" + i;
            assertEquals(KafkaLink.Offer.ACCEPTED, first.send(null, bytes(v), null, r -> {
                onLoop("send callback");
                done.add(v + (r.ok() ? "" : " failed: " + r.error()));
            }));
        }
        KafkaLink.Handoff h = first.handOff();
        assertEquals(5, h.inFlight().get(), "the sends in a 1.5 s linger are still in the producer");
        assertEquals(KafkaLink.Offer.CLOSED, first.send(null, bytes("refused"), null, r -> { }));
        first.close();   // a no-op now: the producer belongs to the next link

        KafkaLink second = open(link(broker.bootstrapServers(), "handoff").adopt(h));
        awaitReport(true, 15_000);
        for (int i = 0; i < 5; i++) {
            String v = "new-" + i;
            assertEquals(KafkaLink.Offer.ACCEPTED, second.send(null, bytes(v), null, r -> done.add(v)));
        }
        Set<String> completed = new HashSet<>();
        for (int i = 0; i < 10; i++) {
            String r = done.poll(15, TimeUnit.SECONDS);
            assertNotNull(r, "callback " + i);
            completed.add(r);
        }
        assertEquals(Set.of("old-0", "old-1", "old-2", "old-3", "old-4", "new-0", "new-1", "new-2", "new-3", "new-4"),
            completed, "every send acked, those made before the hand-off through their own callbacks");
        assertEquals(0, second.inFlight(), "one count for both links");
        List<String> values = broker.consumeAll("handoff", Duration.ofSeconds(20)).stream()
            .map(KafkaRecord::valueString).toList();
        assertEquals(10, values.size(), "each record once: " + values);
        assertEquals(10, new HashSet<>(values).size());
    }

    @Test
    @Order(3)
    void shouldReportTheTopicMissingAndFailSendsWhenTheClusterDoesNotCreateIt() throws Exception {
        KafkaLink l = open(link(broker.bootstrapServers(), "no-such-topic"));
        Connectivity down = awaitReport(false, 15_000);
        assertTrue(down.detail().contains("'no-such-topic' does not exist"), down.detail());
        long t0 = System.nanoTime();
        List<SendResult> results = sendAll(l, "x", 3, 10_000);
        for (SendResult r : results) {
            assertFalse(r.ok());
            System.out.println("send to a missing topic: " + r.error());
        }
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(5), "sends fail at once, not after a wait");
    }

    @Test
    @Order(4)
    void shouldReportUnreachableAndFailSendsWhenTheBootstrapServersAreWrong() throws Exception {
        String nowhere = "127.0.0.1:" + freePort();
        KafkaLink l = open(link(nowhere, "t").deliveryTimeoutMs(2000).requestTimeoutMs(1000));
        Connectivity down = awaitReport(false, 10_000);
        assertTrue(down.detail().contains("no broker of " + nowhere + " answered"), down.detail());
        for (SendResult r : sendAll(l, "n", 3, 10_000)) {
            assertFalse(r.ok());
            assertTrue(r.retriable(), String.valueOf(r.error()));
        }
        long t0 = System.nanoTime();
        l.close(Duration.ofSeconds(1));
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(ms < 4000, "close took " + ms + " ms");
        assertEquals(KafkaLink.Offer.CLOSED, l.send(null, bytes("late"), null, r -> { }));
    }

    @Test
    @Order(5)
    void shouldRefuseAtOpenWithAClearMessageWhenTheConfigurationIsBad() {
        IllegalArgumentException host = assertThrows(IllegalArgumentException.class,
            () -> open(link("no-such-host.invalid:9092", "t")));
        System.out.println("unresolvable bootstrap: " + host.getMessage());
        assertTrue(host.getMessage().contains("bootstrap"), host.getMessage());

        IllegalArgumentException compression = assertThrows(IllegalArgumentException.class,
            () -> open(link(broker.bootstrapServers(), "t").compression("brotli")));
        assertTrue(compression.getMessage().contains("brotli"), compression.getMessage());

        IllegalArgumentException jaas = assertThrows(IllegalArgumentException.class,
            () -> open(link(broker.bootstrapServers(), "t").property("security.protocol", "SASL_PLAINTEXT")
                .property("sasl.mechanism", "PLAIN")));
        System.out.println("SASL without JAAS: " + jaas.getMessage());
        assertTrue(jaas.getMessage().contains("JAAS"), jaas.getMessage());

        assertThrows(IllegalArgumentException.class, () -> link(broker.bootstrapServers(), "t").property("acks", "1"));
        assertThrows(IllegalArgumentException.class,
            () -> link(broker.bootstrapServers(), "t").property("enable.idempotence", false));
        assertThrows(IllegalArgumentException.class, () -> link(broker.bootstrapServers(), "t").maxInFlightRequests(6));
    }

    @Test
    @Order(6)
    void shouldReportAuthenticationDownAndFailSendsWhenSaslMeetsAPlaintextListener() throws Exception {
        broker.createTopic("sasl", 1);
        KafkaLink l = open(link(broker.bootstrapServers(), "sasl").deliveryTimeoutMs(3000).requestTimeoutMs(1000)
            .property("security.protocol", "SASL_PLAINTEXT").property("sasl.mechanism", "PLAIN")
            .property("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required "
                + "username=\"alice\" password=\"wrong\";"));
        Connectivity down = awaitReport(false, 15_000);
        System.out.println("SASL against PLAINTEXT: " + down.detail());
        for (SendResult r : sendAll(l, "s", 3, 15_000)) {
            assertFalse(r.ok());
            System.out.println("send with bad SASL: " + r.error());
        }
        assertEquals(0, broker.consumeAll("sasl", Duration.ofSeconds(10)).size());
    }

    @Test
    @Order(7)
    void shouldFailSendsAndReportDownThenUpWhenTheBrokerDiesAndReturns() throws Exception {
        broker.createTopic("outage", 1);
        // linger 1 s: the records sent just before the crash are still batched in the producer when it happens
        KafkaLink l = open(link(broker.bootstrapServers(), "outage").lingerMs(1000).deliveryTimeoutMs(3000)
            .requestTimeoutMs(1000));
        awaitReport(true, 15_000);
        for (SendResult r : sendAll(l, "before-", 10, 20_000)) {
            assertTrue(r.ok(), String.valueOf(r.error()));
        }

        // Accepted while the producer still knows the partition leader: they wait in the producer for the dead
        // broker and fail once delivery.timeout.ms has passed since their batch was made.
        LinkedBlockingQueue<SendResult> batched = new LinkedBlockingQueue<>();
        long t0 = System.nanoTime();
        for (int i = 0; i < 20; i++) {
            assertEquals(KafkaLink.Offer.ACCEPTED, l.send(null, bytes("during-" + i), null, r -> {
                onLoop("send callback");
                batched.add(r);
            }));
        }
        broker.kill();
        long killedAt = System.nanoTime();
        SendResult first = null;
        for (int i = 0; i < 20; i++) {
            SendResult r = batched.poll(15, TimeUnit.SECONDS);
            assertNotNull(r, "callback " + i + " of the batched sends");
            first = first == null ? r : first;
            assertFalse(r.ok());
            assertTrue(r.retriable(), String.valueOf(r.error()));
        }
        long failMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        System.out.println("20 batched sends failed " + failMs + " ms after they were sent: " + l.stats() + ", "
            + first.error());
        assertTrue(failMs >= 2500 && failMs < 10_000, "failed after the 3 s delivery timeout, took " + failMs);
        Connectivity down = awaitReport(false, 10_000);
        System.out.printf("down reported %d ms after the kill: %s%n",
            TimeUnit.NANOSECONDS.toMillis(lastReportNanos - killedAt), down.detail());

        // Once the producer has no broker left it drops the cluster's metadata (Kafka 4 re-bootstraps), so a send
        // made during the outage fails at once instead of holding memory for the delivery timeout.
        long s0 = System.nanoTime();
        for (SendResult r : sendAll(l, "lost-", 5, 10_000)) {
            assertFalse(r.ok());
            assertTrue(r.retriable(), String.valueOf(r.error()));
        }
        System.out.println("5 sends during the outage failed in "
            + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - s0) + " ms");
        assertEquals(new KafkaLink.Stats(35, 10, 25, 0, 0), l.stats());

        // close is bounded even with records pending towards a dead broker, and fails them
        KafkaLink other = KafkaLink.builder(broker.bootstrapServers(), "outage", loop).lingerMs(500).open();
        LinkedBlockingQueue<SendResult> pending = new LinkedBlockingQueue<>();
        for (int i = 0; i < 5; i++) {
            other.send(null, bytes("closing-" + i), null, pending::add);
        }
        long c0 = System.nanoTime();
        other.close(Duration.ofSeconds(1));
        long closeMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - c0);
        assertTrue(closeMs < 4000, "close took " + closeMs + " ms");
        for (int i = 0; i < 5; i++) {
            SendResult r = pending.poll(5, TimeUnit.SECONDS);
            assertNotNull(r, "callback of pending send " + i + " after close");
            assertFalse(r.ok());
        }

        broker.restart();
        long restartedAt = System.nanoTime();
        awaitReport(true, 30_000);
        System.out.printf("broker restart took %d ms, up reported %d ms after it%n", broker.lastStartTime().toMillis(),
            TimeUnit.NANOSECONDS.toMillis(lastReportNanos - restartedAt));
        for (SendResult r : sendAll(l, "after-", 10, 30_000)) {
            assertTrue(r.ok(), String.valueOf(r.error()));
        }
        List<KafkaRecord> got = broker.consumeAll("outage", Duration.ofSeconds(30));
        List<String> values = got.stream().map(KafkaRecord::valueString).toList();
        assertEquals(20, got.size(), "only the acked records are in the topic: " + values);
        for (String v : values) {
            assertTrue(v.startsWith("before-") || v.startsWith("after-"), v);
        }
    }
}
