// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.qiogate.QIoGateGClass;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.Revision;
import io.gatehouse.testkit.kafka.KafkaBroker;
import io.gatehouse.testkit.kafka.KafkaRecord;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A live upgrade of C_KAFKA under a real C_QIOGATE and a real broker (TestBroker): the producer, its id and its sends
 * in flight go to the next revision (testkit Revision), whose behaviour acks them when Kafka answers, and nothing is
 * produced twice; callbacks that come while a Bundle.update() holds the gobj suspended reach the next revision; a
 * revision that takes no state rebuilds the service, and one that refuses the state has the producer closed at once,
 * in both cases with every record in the topic.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class KafkaHandoverTest {
    static KafkaBroker broker;
    static Path root;
    /** Records stay in the producer this long, in flight, while the revision changes. */
    static final String LINGER = "\"linger_ms\": 3000, \"delivery_timeout_ms\": 60000";

    TrQueueFactoryImpl queues;
    YunoRuntime rt;
    final LogCapture logs = new LogCapture();

    @BeforeAll
    static void startBroker() throws Exception {
        root = Files.createDirectories(Path.of(System.getProperty("gatehouse.testkit.dir", "target/kafka-tests")));
        broker = TestBroker.get();
    }

    @AfterEach
    void stopYuno() {
        logs.close();
        if (rt != null) rt.close();
        if (queues != null) queues.close();
    }

    void start(String topic, String kafkaKw) throws Exception {
        broker.createTopic(topic, 1);
        queues = new TrQueueFactoryImpl();
        String cfg = "{\"yuno\": {\"yuno_name\": \"edge-h\"}, \"services\": [{\"name\": \"out\", \"gclass\": \"C_QIOGATE\","
                + " \"kw\": {\"topic_name\": \"q\", \"timeout_poll\": 100, \"retry_delay\": 200},"
                + " \"children\": [{\"name\": \"kafka\", \"gclass\": \"C_KAFKA\", \"kw\": {\"check_interval_ms\": 200,"
                + " \"check_timeout_ms\": 2000, \"reopen_interval_ms\": 500, \"bootstrap_servers\": \""
                + broker.bootstrapServers() + "\", \"topic\": \"" + topic + "\", " + kafkaKw + "}}]}]}";
        rt = YunoRuntime.builder().name("edge-h").dataDir(Files.createTempDirectory(root, "yuno-"))
                .upgradeGraceMs(120_000)
                .gclass(new QIoGateGClass(queues).spec(), KafkaOut.SPEC).config(cfg).build().start();
        await("connected", 30_000, () -> stats().get("connected").asBoolean());
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

    KafkaOut behaviour() {
        return rt.call(() -> {
            GObj k = rt.yuno().service("out").child("kafka");
            return (KafkaOut) k.behavior();
        });
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

    /** Every record of the topic, after checking each gh-msg-id is there; answers the number of records. */
    static int readBack(String topic, int ids) throws InterruptedException {
        List<KafkaRecord> got = broker.consumeAll(topic, Duration.ofSeconds(30));
        assertEquals(ids, got.stream().map(r -> r.header(KafkaOut.GH_MSG_ID)).distinct().count(), "every id in " + topic);
        return got.size();
    }

    @Test
    void shouldHandTheProducerAndItsSendsInFlightToTheNextRevisionWithoutSendingAnyTwice() throws Exception {
        start("upgrade", LINGER);
        send(0, 20);
        await("20 records in the producer", 5_000, () -> stats().get("in_flight").asLong() == 20);
        KafkaOut before = behaviour();
        Object producer = rt.call(() -> before.link().producer());
        assertEquals(0, stats().get("records_acked").asLong(), "still lingering: nothing acked yet");

        ObjectNode report = Revision.handOver(rt, Revision.next(KafkaOut.SPEC), 1);
        System.out.println("C_KAFKA handover: " + report);
        KafkaOut after = behaviour();
        assertNotSame(before, after, "a behaviour of the new revision");
        assertSame(producer, rt.call(() -> after.link().producer()), "the same producer (same id and sequences)");
        assertEquals(20, rt.call(after::inflightCount), "the records in flight came along");
        assertTrue(rt.call(() -> before.link() == null), "the old behaviour holds nothing");

        send(20, 5);
        awaitDrained(25, 30_000);
        JsonNode s = stats();
        assertEquals(25, s.get("records_sent").asLong(), "each record produced once");
        assertEquals(25, s.get("records_acked").asLong(), "the old sends acked through the new behaviour");
        assertEquals(0, s.get("retries").asLong(), "the queue sent nothing again");
        assertEquals(0, s.get("resends_absorbed").asLong());
        assertEquals(25, readBack("upgrade", 25), "no duplicate in the topic");
        assertEquals(0, logs.count("Live upgrade not possible, service rebuilt from its config"), logs.all().toString());
    }

    @Test
    void shouldHoldTheCallbacksWhileSuspendedAndGiveThemToTheNextRevision() throws Exception {
        start("suspended", "\"linger_ms\": 500, \"delivery_timeout_ms\": 60000");
        send(0, 10);
        await("10 records in the producer", 5_000, () -> stats().get("in_flight").asLong() == 10);
        // a Bundle.update() of the kafka bundle begins: the gclass leaves, its gobj is suspended
        rt.gclassesGone(List.of(KafkaOut.GCLASS));
        Thread.sleep(2_000);   // the linger passes: Kafka answers, the callbacks come to a suspended gobj
        assertEquals(0, stats().get("acks").asLong(), "held, not lost and not handled by the old revision");

        Revision.handOver(rt, Revision.next(KafkaOut.SPEC), 1);
        awaitDrained(10, 30_000);
        send(10, 5);
        awaitDrained(15, 30_000);
        JsonNode s = stats();
        assertEquals(15, s.get("records_sent").asLong(), "each record produced once");
        assertEquals(0, s.get("retries").asLong());
        assertEquals(15, readBack("suspended", 15), "no duplicate in the topic");
    }

    @Test
    void shouldRebuildWhenTheNextRevisionTakesNoStateAndLoseNothing() throws Exception {
        start("rebuild", LINGER);
        send(0, 20);
        await("20 records in the producer", 5_000, () -> stats().get("in_flight").asLong() == 20);
        ObjectNode report = rt.gclassArrived(Revision.of(KafkaOut.SPEC, 0, KafkaOut.SPEC.factory()));
        assertEquals("out", report.get("rebuilt").get(0).get("service").asText(), report.toString());
        awaitDrained(0, 30_000);
        int records = readBack("rebuild", 20);
        System.out.println("rebuild: " + records + " records for 20 ids (a rebuild may send what was in flight again)");
    }

    @Test
    void shouldCloseTheHandedProducerAtOnceWhenTheNextRevisionRefusesTheState() throws Exception {
        start("rollback", LINGER);
        send(0, 20);
        await("20 records in the producer", 5_000, () -> stats().get("in_flight").asLong() == 20);
        // upgrade to a revision of a higher state version, then roll back to this one, which refuses that state
        Revision.handOver(rt, Revision.of(KafkaOut.SPEC, KafkaOut.STATE_VERSION + 1, KafkaOut.SPEC.factory()), 1);
        @SuppressWarnings("unchecked")
        KafkaOut upgraded = behaviour();
        Producer<byte[], byte[]> producer = (Producer<byte[], byte[]>) rt.call(() -> upgraded.link().producer());
        ObjectNode report = rt.gclassArrived(Revision.next(KafkaOut.SPEC));
        System.out.println("rollback to a revision that refuses the state: " + report);
        assertEquals("out", report.get("rebuilt").get(0).get("service").asText(), report.toString());
        assertTrue(report.get("rebuilt").get(0).get("reason").asText().contains("state version " + (KafkaOut.STATE_VERSION + 1) + " unknown"), report.toString());
        // closed by core through the state's closer, not left running and not closed with an unbounded wait
        assertThrows(IllegalStateException.class,
                () -> producer.send(new ProducerRecord<>("rollback", new byte[1])), "the handed producer is closed");
        awaitDrained(0, 30_000);
        readBack("rollback", 20);
    }
}
