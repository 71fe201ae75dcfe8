// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;
import io.gatehouse.core.ConfigException;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.FakeBottom;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.testkit.MemTrQueueFactory;
import io.gatehouse.testkit.Recorder;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * C_QIOGATE over a fake bottom and an in-memory queue: send protocol, acks, retries, durability, logs, commands.
 * Time is a {@link ManualClock}: the poll tick, ack timeouts and backoff move only when a test advances it.
 */
class QIoGateTest {
    @TempDir
    Path tmp;

    final MemTrQueueFactory qf = new MemTrQueueFactory();
    final ManualClock clock = new ManualClock();
    final List<String> logs = Collections.synchronizedList(new ArrayList<>());
    final Consumer<LogCapture.Rec> sink = r -> logs.add(r.level + " " + r.gobj + " " + r.msg + " " + r.fields);
    private LogCapture capture;
    YunoRuntime rt;

    @BeforeEach
    void addSink() {
        capture = new LogCapture(sink);
    }

    @AfterEach
    void close() {
        if (capture != null) capture.close();
        if (rt != null) rt.close();
    }

    // --- given/when/then helpers ---

    YunoRuntime givenGate(String kw) {
        rt = build(kw);
        return rt;
    }

    /** The bottom under the gate: {@link QIoGateSendBatchTest} runs every test again over one taking send batches. */
    GClassSpec<FakeBottom> bottomSpec() {
        return FakeBottom.SPEC;
    }

    YunoRuntime build(String kw) {
        String cfg = "{\"services\":[{\"name\":\"q\",\"gclass\":\"C_QIOGATE\",\"kw\":" + kw
                + ",\"children\":[{\"name\":\"b\",\"gclass\":\"C_FAKE_BOTTOM\"}]}]}";
        return YunoRuntime.builder().name("t").dataDir(tmp).clock(clock)
                .gclass(new QIoGateGClass(qf).spec(), bottomSpec()).config(cfg).build().start();
    }

    GObj gate() {
        return rt.call(() -> rt.yuno().service("q"));
    }

    List<Long> bottomRowids() {
        return bottom().sentRowids();
    }

    FakeBottom bottom() {
        return rt.call(() -> (FakeBottom) rt.yuno().service("q").child("b").behavior());
    }

    int send(String json) {
        return settled(rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, Kw.parse(json), null)));
    }

    int sendKw(ObjectNode kw) {
        return settled(rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, kw, null)));
    }

    /**
     * {@code result}, once the loop has run what the event queued: the gate sends after the event that enqueued, in
     * the same turn of the loop (one pass per burst), and a test reading the bottom or moving the clock comes after.
     */
    int settled(int result) {
        rt.run(() -> { });
        return result;
    }

    JsonNode stats() {
        ObjectNode env = rt.command("stats-yuno service=q");
        assertEquals(0, env.get("result").asInt(), env.toString());
        return env.get("data");
    }

    boolean logged(String text) {
        return count(text) > 0;
    }

    /** How many log lines contain {@code text}. */
    int count(String text) {
        synchronized (logs) {
            int n = 0;
            for (String l : logs) if (l.contains(text)) n++;
            return n;
        }
    }

    /** A message with a durability request tagged {@code tag}. */
    static ObjectNode durable(String id, String tag) {
        ObjectNode kw = Kw.create().put("id", id);
        kw.putObject(Kw.DURABLE).put("tag", tag);
        return kw;
    }

    int sendFrom(Recorder sender, ObjectNode kw) {
        return settled(rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, kw, sender.gobj())));
    }

    MemTrQueueFactory.Mem queue() {
        return rt.call(() -> (MemTrQueueFactory.Mem) ((QIoGate) gate().behavior()).queue());
    }

    /** Lets the tasks already handed to the core loop run (durability is told on a later turn of the loop). */
    void drainLoop() {
        rt.run(() -> { });
        rt.run(() -> { });
    }

    // --- Send protocol ---

    @Test
    void shouldOpenItsQueueWithTheGroupCommitOfItsAttributes() {
        TrQueueOptions defaults = queueOptionsOf("{\"topic_name\":\"t\"}");
        assertEquals(QIoGate.DEFAULT_FSYNC_MAX_RECORDS, defaults.fsyncMaxRecords());
        assertEquals(FsyncPolicy.INTERVAL, defaults.fsyncPolicy());

        TrQueueOptions set = queueOptionsOf("{\"topic_name\":\"t\",\"fsync_interval_ms\":9,\"fsync_max_records\":500}");
        assertEquals(9, set.fsyncIntervalMs());
        assertEquals(500, set.fsyncMaxRecords());

        // out of range: the nearest meaning (0 = the period only), as fsync_interval_ms below 1 is 1
        TrQueueOptions clamped = queueOptionsOf(
                "{\"topic_name\":\"t\",\"fsync_interval_ms\":0,\"fsync_max_records\":-5}");
        assertEquals(1, clamped.fsyncIntervalMs());
        assertEquals(0, clamped.fsyncMaxRecords());
    }

    /** The options a gate of {@code kw} opened its queue with; the gate and its queue are closed again. */
    TrQueueOptions queueOptionsOf(String kw) {
        givenGate(kw);
        TrQueueOptions o = rt.call(() -> qf.opened.get(qf.opened.size() - 1).options());
        rt.close();
        qf.close();
        return o;
    }

    @Test
    void shouldQueueWhileClosedAndSendInOrderWhenOpened() {
        givenGate("{\"topic_name\":\"t\"}");
        for (int i = 1; i <= 3; i++) assertEquals(0, send("{\"id\":\"" + i + "\"}"));
        assertEquals(3, stats().get("msgs_in_queue").asInt());
        assertEquals(0, stats().get("pending_acks").asInt());
        assertTrue(bottom().sent().isEmpty());

        rt.run(() -> bottom().open());

        List<ObjectNode> sent = bottom().sent();
        assertEquals(3, sent.size());
        for (int i = 0; i < 3; i++) {
            JsonNode md = sent.get(i).get("__md_trq__");
            assertEquals(i + 1, md.get("__msg_rowid__").asLong());
            assertTrue(md.has("__msg_t__"));
            assertTrue(md.has("__msg_gen__"));
            assertEquals(String.valueOf(i + 1), sent.get(i).get("id").asText());
        }
        assertEquals(3, stats().get("pending_acks").asInt());
        assertEquals(3, stats().get("msgs_in_queue").asInt());
    }

    @Test
    void shouldSendOneMoreForEachAckWhenTheWindowIsFull() {
        givenGate("{\"topic_name\":\"t\",\"max_pending_acks\":2}");
        rt.run(() -> bottom().open());
        for (int i = 1; i <= 5; i++) send("{\"id\":\"" + i + "\"}");
        assertEquals(List.of(1L, 2L), bottom().sentRowids());
        assertEquals(2, stats().get("pending_acks").asInt());

        for (int k = 0; k < 5; k++) {
            ObjectNode m = bottom().sent().get(k);
            rt.run(() -> bottom().ack(m, 0));
            int expectSent = Math.min(5, k + 3);
            assertEquals(expectSent, bottom().sent().size(), "after ack " + (k + 1));
        }
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), bottom().sentRowids());
        assertEquals(0, stats().get("msgs_in_queue").asInt());
        assertEquals(0, stats().get("pending_acks").asInt());
        assertEquals(5, stats().get("acks").asInt());
    }

    @Test
    void shouldLimitTheBytesInFlightAndAlwaysSendAtLeastOne() {
        // Each message is ~1 KB on the wire: a 2,500-byte window holds 3 (the third crosses it), never 0.
        givenGate("{\"topic_name\":\"t\",\"max_pending_bytes\":2500}");
        rt.run(() -> bottom().open());
        String pad = "x".repeat(1000);
        for (int i = 1; i <= 6; i++) send("{\"id\":\"" + i + "\",\"pad\":\"" + pad + "\"}");
        assertEquals(List.of(1L, 2L, 3L), bottom().sentRowids());
        ObjectNode first = bottom().sent().get(0);
        rt.run(() -> bottom().ack(first, 0));
        assertEquals(List.of(1L, 2L, 3L, 4L), bottom().sentRowids(), "an ack gives its bytes back");
        rt.run(() -> bottom().close());
        rt.run(() -> bottom().open());
        assertEquals(7, bottom().sent().size(), "after a reconnect the window starts empty: 2, 3, 4 sent again");
        rt.close();

        givenGate("{\"topic_name\":\"u\",\"max_pending_bytes\":10}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"big\",\"pad\":\"" + pad + "\"}");
        send("{\"id\":\"next\"}");
        assertEquals(1, bottom().sent().size(), "a message larger than the window still goes, alone");
    }

    @Test
    void shouldReuseTheWireBufferOnlyWhenNothingBelowHoldsIt() throws Exception {
        givenGate("{\"topic_name\":\"t\",\"max_pending_acks\":1000}");
        rt.run(() -> bottom().open());
        // growing messages: the buffer grows under them
        for (int i = 1; i <= 40; i++) send("{\"id\":\"" + i + "\",\"pad\":\"" + "y".repeat(i * 20) + "\"}");
        assertEquals(40, bottom().sent().size());
        for (int i = 0; i < 40; i++) assertEquals(String.valueOf(i + 1), bottom().sent().get(i).path("id").asText());
        assertEquals(1, bottom().distinctBuffers(), "a bottom that lets go of each buffer is given the same one again");

        // a bottom that holds them (a socket's queue): each message keeps its own bytes
        bottom().clear();
        bottom().keepBuffers = true;
        for (int i = 41; i <= 80; i++) send("{\"id\":\"" + i + "\"}");
        List<ByteBuf> kept = bottom().keptBuffers();
        assertEquals(40, kept.size());
        assertEquals(40, bottom().distinctBuffers());
        for (int k = 0; k < 40; k++) {
            ObjectNode m = Kw.parse(kept.get(k).duplicate());
            assertEquals(String.valueOf(41 + k), m.path("id").asText(), "buffer " + k + " still holds its message");
            assertEquals(41 + k, m.path("__md_trq__").path("__msg_rowid__").asLong());
        }
        bottom().clear();
    }

    @Test
    void shouldSendImmediatelyWhenOpenAndNothingOlderWaits() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"a\"}");
        assertEquals(1, bottom().sent().size());
        ObjectNode m = bottom().sent().get(0);
        rt.run(() -> bottom().ack(m, 0));
        send("{\"id\":\"b\"}");
        assertEquals(List.of(1L, 2L), bottom().sentRowids());
    }

    // --- Acks and nacks ---

    @Test
    void shouldClearOnAckAndIgnoreDuplicateAck() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        for (int i = 1; i <= 3; i++) send("{\"id\":\"" + i + "\"}");
        ObjectNode second = bottom().sent().get(1);
        rt.run(() -> bottom().ack(second, 0));
        assertEquals(2, stats().get("msgs_in_queue").asInt());
        assertEquals(2, stats().get("pending_acks").asInt());
        logs.clear();

        rt.run(() -> bottom().ack(second, 0));
        assertEquals(2, stats().get("msgs_in_queue").asInt());
        assertEquals(2, stats().get("pending_acks").asInt());
        assertFalse(logged("ERROR"), logs.toString());
        assertEquals(1, stats().get("ignored_acks").asInt());
        assertEquals(2, qf.topic("t").pendingOnDisk(), "rows 1 and 3 pending on disk");
    }

    @Test
    void shouldAcceptTopLevelResult() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        ObjectNode m = bottom().sent().get(0);
        JsonNode md = m.get("__md_trq__");
        String ack = "{\"__md_trq__\":" + md + ",\"result\":0}";
        rt.run(() -> bottom().ackJson(ack));
        assertEquals(0, stats().get("msgs_in_queue").asInt());
    }

    @Test
    void shouldLogAndIgnoreStaleOrUnknownAck() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        rt.run(() -> bottom().ackJson("{\"__md_trq__\":{\"__msg_rowid__\":99,\"__msg_t__\":1,\"result\":0}}"));
        rt.run(() -> bottom().ackJson("{\"__md_trq__\":{\"__msg_rowid__\":1,\"__msg_t__\":1,\"__msg_gen__\":77,\"result\":0}}"));
        assertTrue(logged("Stale or unknown ack ignored"), logs.toString());
        assertEquals(1, stats().get("msgs_in_queue").asInt());
        assertEquals(1, stats().get("pending_acks").asInt());
        assertEquals(2, stats().get("ignored_acks").asInt());
    }

    @Test
    void shouldMatchAnAckOfAMessageInFlightByItsTimeAndOneThatCameAfterTheWindowWasCleared() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        send("{\"id\":\"2\"}");
        List<ObjectNode> sent = bottom().sent();
        long t1 = sent.get(0).path("__md_trq__").path("__msg_t__").asLong();
        // in flight, same rowid and generation, another time: not this message
        rt.run(() -> bottom().ackJson("{\"__md_trq__\":{\"__msg_rowid__\":1,\"__msg_t__\":" + (t1 + 1)
                + ",\"result\":0}}"));
        assertEquals(1, stats().get("ignored_acks").asInt());
        assertEquals(2, stats().get("pending_acks").asInt());
        rt.run(() -> bottom().ack(sent.get(0), 0));
        assertEquals(1, stats().get("msgs_in_queue").asInt());
        // the link drops (the window is cleared) and the ack of the second comes late: still its message
        rt.run(() -> bottom().close());
        assertEquals(0, stats().get("pending_acks").asInt());
        rt.run(() -> bottom().ack(sent.get(1), 0));
        assertEquals(0, stats().get("msgs_in_queue").asInt());
        assertEquals(2, stats().get("acks").asInt());
    }

    @Test
    void shouldTakeTheAcksOfOneReadInOrderAsIfEachHadComeAlone() {
        givenGate("{\"topic_name\":\"t\",\"max_pending_acks\":3}");
        rt.run(() -> bottom().open());
        for (int i = 1; i <= 5; i++) send("{\"id\":\"" + i + "\"}");
        List<ObjectNode> sent = bottom().sent();
        assertEquals(3, sent.size(), "the window");
        String a1 = Kw.toJson(TrQueue.answer(sent.get(0), 0));
        String a3 = Kw.toJson(TrQueue.answer(sent.get(2), 0));
        // an ack, one that is not JSON, a stale one, and another ack: the bad ones are counted, the good ones taken
        int r = rt.call(() -> bottom().ackJsonBatch(a1, "{not json",
                "{\"__md_trq__\":{\"__msg_rowid__\":99,\"__msg_t__\":1,\"result\":0}}", a3));
        assertEquals(-1, r, "one of them was not an ack");
        assertTrue(logged("Bad ack: not a JSON object"), logs.toString());
        assertEquals(2, stats().get("acks").asInt());
        assertEquals(2, stats().get("ignored_acks").asInt());
        assertEquals(3, stats().get("msgs_in_queue").asInt());
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), bottom().sentRowids(), "one pass after the read filled the window");
        ObjectNode second = bottom().sent().get(1);
        rt.run(() -> bottom().ack(second, 0));
        assertEquals(2, stats().get("msgs_in_queue").asInt());
    }

    @Test
    void shouldKeepTheLinkAndTheMessagesWhenAnAckIsNotJson() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        int r = rt.call(() -> bottom().ackJson("{not json"));
        assertEquals(-1, r);
        assertTrue(logged("Bad ack: not a JSON object"), logs.toString());
        assertEquals(1, stats().get("msgs_in_queue").asInt());
        ObjectNode m = bottom().sent().get(0);
        rt.run(() -> bottom().ack(m, 0));
        assertEquals(0, stats().get("msgs_in_queue").asInt());
    }

    @Test
    void shouldSendANackedMessageAgainAfterTheRetryDelayDoublingPerNack() {
        givenGate("{\"topic_name\":\"t\",\"timeout_poll\":20,\"retry_delay\":100}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        send("{\"id\":\"2\"}");
        ObjectNode first = bottom().sent().get(0);
        rt.run(() -> bottom().ack(first, -1));
        assertEquals(2, stats().get("msgs_in_queue").asInt(), "a nack does not drop the message");
        assertEquals(1, stats().get("nacks").asInt());
        clock.advance(99);
        assertEquals(2, bottom().sent().size(), "not before retry_delay");
        clock.advance(1);
        assertEquals(List.of(1L, 2L, 1L), bottomRowids(), "nacked message sent again");
        assertEquals(1, stats().get("retries").asInt());

        ObjectNode again = bottom().sent().get(2);
        rt.run(() -> bottom().ack(again, -5));
        clock.advance(199);
        assertEquals(3, bottom().sent().size(), "the second wait is twice retry_delay");
        clock.advance(1);
        assertEquals(4, bottom().sent().size(), "nacked twice, sent a third time");
        ObjectNode third = bottom().sent().get(3);
        rt.run(() -> bottom().ack(third, 0));
        assertEquals(1, stats().get("msgs_in_queue").asInt());
        assertEquals(2, stats().get("retries").asInt());
        assertEquals(2, stats().get("nacks").asInt());
    }

    @Test
    void shouldResendWhenTheAckTimesOutWithADoublingBackoff() {
        givenGate("{\"topic_name\":\"t\",\"timeout_poll\":100,\"timeout_ack\":1}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        clock.advance(999);
        assertEquals(1, bottom().sent().size(), "not before timeout_ack");
        clock.advance(1);
        assertEquals(2, bottom().sent().size(), "sent again after timeout_ack");
        clock.advance(1999);
        assertEquals(2, bottom().sent().size(), "the second wait is twice timeout_ack");
        clock.advance(1);
        assertEquals(List.of(1L, 1L, 1L), bottomRowids());
        assertEquals(2, stats().get("retries").asInt());
        assertEquals(1, stats().get("pending_acks").asInt());
        ObjectNode m = bottom().sent().get(2);
        rt.run(() -> bottom().ack(m, 0));
        assertEquals(0, stats().get("msgs_in_queue").asInt());
        clock.advance(60_000);
        assertEquals(3, bottom().sent().size(), "nothing is sent again once acked");
    }

    @Test
    void shouldCapTheBackoffAtEightTimesTimeoutAck() {
        givenGate("{\"topic_name\":\"t\",\"timeout_poll\":100,\"timeout_ack\":1}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        clock.advance(1000 + 2000 + 4000 + 8000);
        assertEquals(5, bottom().sent().size(), "sent at 0, 1 s, 3 s, 7 s and 15 s");
        clock.advance(7999);
        assertEquals(5, bottom().sent().size());
        clock.advance(1);
        assertEquals(6, bottom().sent().size(), "then every 8 s");
    }

    @Test
    void shouldResendEverythingUnackedAfterReconnect() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        send("{\"id\":\"2\"}");
        send("{\"id\":\"3\"}");
        ObjectNode second = bottom().sent().get(1);
        rt.run(() -> bottom().ack(second, 0));
        rt.run(() -> bottom().close());
        assertEquals(0, stats().get("pending_acks").asInt());
        send("{\"id\":\"4\"}");
        assertEquals(3, bottom().sent().size(), "nothing is sent while closed");
        rt.run(() -> bottom().open());
        assertEquals(List.of(1L, 2L, 3L, 1L, 3L, 4L), bottom().sentRowids());
        assertEquals(3, stats().get("pending_acks").asInt());
    }

    @Test
    void shouldResendAtOnceOverAnotherOpenChannelWhenOneCloses() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        send("{\"id\":\"2\"}");
        rt.run(() -> bottom().close());
        assertEquals(List.of(1L, 2L, 1L, 2L), bottom().sentRowids(), "in flight on the closed channel: sent again");
        assertEquals(2, stats().get("pending_acks").asInt());
        rt.run(() -> bottom().close());
        assertEquals(0, stats().get("pending_acks").asInt());
    }

    @Test
    void shouldResendUnackedAfterRestart() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        for (int i = 1; i <= 3; i++) send("{\"id\":\"" + i + "\"}");
        ObjectNode first = bottom().sent().get(0);
        rt.run(() -> bottom().ack(first, 0));
        rt.close();

        rt = build("{\"topic_name\":\"t\"}");
        assertEquals(2, stats().get("msgs_in_queue").asInt());
        rt.run(() -> bottom().open());
        assertEquals(List.of(2L, 3L), bottom().sentRowids());
        assertEquals("2", bottom().sent().get(0).get("id").asText());
    }

    @Test
    void shouldStoreWithoutMetadataKeysUnlessWithMetadata() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\",\"__x__\":1,\"_y\":2,\"___z\":3,\"d\":{\"__w__\":4},\"__md_trq__\":{\"__msg_rowid__\":555}}");
        ObjectNode m = bottom().sent().get(0);
        assertEquals("1", m.get("id").asText());
        assertEquals(2, m.get("_y").asInt());
        assertEquals(3, m.get("___z").asInt());
        assertEquals(0, m.get("d").size());
        assertFalse(m.has("__x__"));
        assertEquals(1, m.get("__md_trq__").get("__msg_rowid__").asLong(), "an upstream __md_trq__ is never stored");
        rt.close();

        rt = build("{\"topic_name\":\"t2\",\"with_metadata\":true}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\",\"__x__\":1,\"d\":{\"__w__\":4}}");
        ObjectNode m2 = bottom().sent().get(0);
        assertEquals(1, m2.get("__x__").asInt());
        assertEquals(4, m2.get("d").get("__w__").asInt());
    }

    @Test
    void shouldStoreTheJsonOfAGbuffer() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        ObjectNode kw = Kw.withGbuffer(io.netty.buffer.Unpooled.copiedBuffer("{\"id\":\"g\",\"v\":[1,2]}",
                java.nio.charset.StandardCharsets.UTF_8));
        assertEquals(0, sendKw(kw));
        assertEquals("g", bottom().sent().get(0).get("id").asText());
        ObjectNode bad = Kw.withGbuffer(io.netty.buffer.Unpooled.copiedBuffer("nope", java.nio.charset.StandardCharsets.UTF_8));
        assertEquals(-1, sendKw(bad));
        assertEquals(1, stats().get("enqueue_errors").asInt());
    }

    // --- Durability: EV_ON_DURABLE to the sender ---

    @Test
    void shouldAnswerOnDurableOnlyOnceTheRecordIsDurable() {
        qf.autoDurable = false;
        givenGate("{\"topic_name\":\"t\"}");
        Recorder sender = Recorder.create(rt, "sender");
        assertEquals(0, (int) rt.call(() -> {
            int r = gate().send(Ev.EV_SEND_MESSAGE, durable("1", "t1"), sender.gobj());
            assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "never inside the send");
            return r;
        }));
        drainLoop();
        assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "not durable yet");
        rt.run(() -> queue().makeDurable());
        Recorder.Event told = sender.await(Ev.EV_ON_DURABLE, 5000);
        assertNotNull(told, "EV_ON_DURABLE");
        assertEquals("t1", told.kw.path("tag").asText(), "the sender's own dict comes back");
        assertEquals("q", told.src);
        assertFalse(rt.call(() -> Kw.toJson(qf.opened.get(0).msgJson(qf.opened.get(0).first())).contains(Kw.DURABLE)),
                "the durability request is not stored");
    }

    @Test
    void shouldAnswerOnDurableAfterTheSendWhenTheRecordIsDurableAtOnce() {
        givenGate("{\"topic_name\":\"t\"}");
        Recorder sender = Recorder.create(rt, "sender");
        rt.run(() -> {
            assertEquals(0, gate().send(Ev.EV_SEND_MESSAGE, durable("1", "t1"), sender.gobj()));
            assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "never inside the send, even when already durable");
        });
        assertNotNull(sender.await(Ev.EV_ON_DURABLE, 5000));
        drainLoop();
        assertEquals(1, sender.count(Ev.EV_ON_DURABLE), "once");
    }

    @Test
    void shouldAnswerOnDurableInAppendOrderForTheRecordsTheFsyncCovered() {
        qf.autoDurable = false;
        givenGate("{\"topic_name\":\"t\"}");
        Recorder sender = Recorder.create(rt, "sender");
        for (int i = 1; i <= 3; i++) assertEquals(0, sendFrom(sender, durable(String.valueOf(i), "t" + i)));
        rt.run(() -> queue().makeDurable(2));
        assertTrue(sender.awaitCount(Ev.EV_ON_DURABLE, 2, 5000));
        drainLoop();
        List<String> tags = new ArrayList<>();
        for (Recorder.Event e : sender.events(Ev.EV_ON_DURABLE)) tags.add(e.kw.path("tag").asText());
        assertEquals(List.of("t1", "t2"), tags, "the third record is not durable yet");
        rt.run(() -> queue().makeDurable());
        assertTrue(sender.awaitCount(Ev.EV_ON_DURABLE, 3, 5000));
    }

    @Test
    void shouldNotAnswerOnDurableAndAnswerMinusOneWhenTheAppendFails() {
        givenGate("{\"topic_name\":\"t\"}");
        qf.failAppends = true;
        Recorder sender = Recorder.create(rt, "sender");
        assertEquals(-1, sendFrom(sender, durable("1", "t1")));
        drainLoop();
        assertEquals(0, sender.count(Ev.EV_ON_DURABLE));
        assertTrue(logged("Message NOT SAVED in the queue"), logs.toString());
        assertEquals(1, stats().get("enqueue_errors").asInt());
        assertEquals(0, stats().get("msgs_in_queue").asInt());
        qf.failAppends = false;
        assertEquals(0, sendFrom(sender, durable("2", "t2")));
        Recorder.Event told = sender.await(Ev.EV_ON_DURABLE, 5000);
        assertNotNull(told);
        assertEquals("t2", told.kw.path("tag").asText(), "only the message that was stored is answered");
    }

    @Test
    void shouldNotAnswerOnDurableWhenTheMessageIsRefused() {
        givenGate("{\"topic_name\":\"t\"}");
        Recorder sender = Recorder.create(rt, "sender");
        ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer("not json", StandardCharsets.UTF_8));
        kw.putObject(Kw.DURABLE).put("tag", "t1");
        assertEquals(-1, sendFrom(sender, kw));
        drainLoop();
        assertEquals(0, sender.count(Ev.EV_ON_DURABLE));
        assertEquals(0, stats().get("enqueued").asInt());
    }

    @Test
    void shouldNotAnswerASenderThatIsGone() {
        qf.autoDurable = false;
        givenGate("{\"topic_name\":\"t\"}");
        Recorder gone = Recorder.create(rt, "gone");
        Recorder stays = Recorder.create(rt, "stays");
        assertEquals(0, sendFrom(gone, durable("1", "t1")));
        assertEquals(0, sendFrom(stays, durable("2", "t2")));
        rt.run(() -> gone.gobj().destroy());
        rt.run(() -> queue().makeDurable());
        Recorder.Event told = stays.await(Ev.EV_ON_DURABLE, 5000);
        assertNotNull(told, "the waits after a destroyed sender are still told");
        assertEquals("t2", told.kw.path("tag").asText());
    }

    // --- Stats, alert, backup ---

    @Test
    void shouldAnswerEnvelopeWithBottomStatsAndQueueCounters() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        ObjectNode env = rt.command("stats-yuno service=q");
        assertEquals(0, env.get("result").asInt());
        assertEquals("", env.get("comment").asText());
        assertTrue(env.get("schema").isNull());
        JsonNode d = env.get("data");
        assertEquals(1, d.get("txMsgs").asInt(), "the bottom's stats are merged");
        for (String k : List.of("msgs_in_queue", "pending_acks", "oldest_pending_age_ms", "alert", "retries")) {
            assertTrue(d.has(k), k + " in " + d);
        }
        assertTrue(d.get("alert").isBoolean());
    }

    @Test
    void shouldSayTheAlertOnceWhenTheQueueCrossesAlertQueueSizeAndOnceWhenBackUnder() {
        givenGate("{\"topic_name\":\"t\",\"alert_queue_size\":3}");
        send("{\"id\":\"1\"}");
        send("{\"id\":\"2\"}");
        assertFalse(stats().get("alert").asBoolean());
        for (int i = 3; i <= 10; i++) send("{\"id\":\"" + i + "\"}");
        assertTrue(stats().get("alert").asBoolean());
        assertEquals(1, count("ALERT Queuing"), "once, not at every multiple of alert_queue_size: " + logs);
        assertTrue(logged("WARN C_QIOGATE^q ALERT Queuing 3 msgs"), logs.toString());
        rt.run(() -> bottom().open());
        for (ObjectNode m : bottom().sent()) rt.run(() -> bottom().ack(m, 0));
        assertFalse(stats().get("alert").asBoolean());
        assertEquals(1, count("Queue back under alert_queue_size"), logs.toString());
        assertTrue(logged("peak=10"), logs.toString());
        assertEquals(1, count("ALERT Queuing"));
    }

    @Test
    void shouldKeepTheAlertWhileTheQueueHoversAroundAlertQueueSize() {
        givenGate("{\"topic_name\":\"t\",\"alert_queue_size\":4}");
        for (int i = 1; i <= 4; i++) send("{\"id\":\"" + i + "\"}");
        assertTrue(stats().get("alert").asBoolean());
        rt.run(() -> bottom().open());
        // Acked down to 2 (half of 4) and up to 4 again, twice: the alert stays on, said once.
        for (int round = 0; round < 2; round++) {
            List<ObjectNode> sent = bottom().sent();
            rt.run(() -> bottom().ack(sent.get(sent.size() - 4), 0));
            rt.run(() -> bottom().ack(sent.get(sent.size() - 3), 0));
            assertTrue(stats().get("alert").asBoolean(), "2 queued: not under half of 4 yet");
            send("{\"id\":\"a" + round + "\"}");
            send("{\"id\":\"b" + round + "\"}");
        }
        assertEquals(1, count("ALERT Queuing"), logs.toString());
        assertEquals(0, count("Queue back under alert_queue_size"), logs.toString());
        for (ObjectNode m : bottom().sent()) rt.run(() -> bottom().ack(m, 0));
        assertFalse(stats().get("alert").asBoolean());
        assertEquals(1, count("Queue back under alert_queue_size"), logs.toString());
    }

    @Test
    void shouldBackUpAnEmptyQueueAndIgnoreAcksOfTheOldGeneration() {
        givenGate("{\"topic_name\":\"t\",\"backup_queue_size\":2,\"timeout_poll\":20,\"timeout_backup\":1}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        send("{\"id\":\"2\"}");
        List<ObjectNode> sent = bottom().sent();
        rt.run(() -> bottom().ack(sent.get(0), 0));
        clock.advance(1200);
        assertEquals(0, (int) rt.call(() -> qf.topic("t").backups()), "no backup while a message is queued");
        rt.run(() -> bottom().ack(sent.get(1), 0));
        clock.advance(1000);
        assertEquals(1, (int) rt.call(() -> qf.topic("t").backups()), "backup of the empty queue");
        send("{\"id\":\"3\"}");
        ObjectNode m3 = bottom().sent().get(2);
        assertEquals(1, m3.get("__md_trq__").get("__msg_rowid__").asLong(), "a new generation starts at 1");
        rt.run(() -> bottom().ack(sent.get(0), 0));
        assertEquals(1, stats().get("msgs_in_queue").asInt(), "an ack of the old generation does not clear rowid 1");
    }

    // --- Faults said once per streak ---

    @Test
    void shouldSayOnceThatAppendsAreRefusedAndOnceWhenTheyWorkAgain() {
        givenGate("{\"topic_name\":\"t\"}");
        qf.failAppends = true;
        for (int i = 0; i < 5; i++) assertEquals(-1, send("{\"id\":\"" + i + "\"}"));
        assertEquals(1, count("Message NOT SAVED in the queue"), logs.toString());
        qf.failAppends = false;
        assertEquals(0, send("{\"id\":\"ok\"}"));
        assertEquals(0, send("{\"id\":\"ok2\"}"));
        assertEquals(1, count("Messages saved in the queue again"), logs.toString());
        assertTrue(logged("refused=5"), logs.toString());
        assertEquals(5, stats().get("enqueue_errors").asInt());
    }

    @Test
    void shouldSayOnceThatMessagesAreNotJsonAndOnceWhenTheyAreAgain() {
        givenGate("{\"topic_name\":\"t\"}");
        for (int i = 0; i < 3; i++) {
            assertEquals(-1, sendKw(Kw.withGbuffer(Unpooled.copiedBuffer("nope", StandardCharsets.UTF_8))));
        }
        assertEquals(1, count("its gbuffer is not a JSON object"), logs.toString());
        assertEquals(0, sendKw(Kw.withGbuffer(Unpooled.copiedBuffer("{\"id\":1}", StandardCharsets.UTF_8))));
        assertEquals(1, count("Messages are JSON objects again"), logs.toString());
        assertTrue(logged("refused=3"), logs.toString());
    }

    @Test
    void shouldSayOnceThatTheBottomRefusesAndOnceWhenItTakesMessagesAgain() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        bottom().answer = -1;
        for (int i = 1; i <= 5; i++) send("{\"id\":\"" + i + "\"}");
        assertEquals(5, bottom().sent().size(), "each was tried and stays in flight");
        assertEquals(1, count("Bottom refused the message"), logs.toString());
        bottom().answer = 0;
        send("{\"id\":\"6\"}");
        assertEquals(1, count("Bottom takes messages again"), logs.toString());
        assertTrue(logged("refused=5"), logs.toString());
    }

    @Test
    void shouldSayNacksOnceUntilAMessageIsAcked() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        for (int i = 1; i <= 3; i++) send("{\"id\":\"" + i + "\"}");
        for (ObjectNode m : bottom().sent()) rt.run(() -> bottom().ack(m, -1));
        assertEquals(1, count("Nack: the message is sent again"), logs.toString());
        assertEquals(3, stats().get("nacks").asInt());
        ObjectNode first = bottom().sent().get(0);
        rt.run(() -> bottom().ack(first, 0));
        assertEquals(1, count("Messages acked again after nacks"), logs.toString());
        assertTrue(logged("nacks=3"), logs.toString());
    }

    @Test
    void shouldTraceEveryNackWithTraceQueueProt() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.command("trace-on service=q level=trace_queue_prot");
        rt.run(() -> bottom().open());
        for (int i = 1; i <= 3; i++) send("{\"id\":\"" + i + "\"}");
        for (ObjectNode m : bottom().sent()) rt.run(() -> bottom().ack(m, -1));
        assertEquals(3, count("INFO C_QIOGATE^q nack"), logs.toString());
    }

    @Test
    void shouldSayAcksWithoutResultOnceAndTakeThemAsZero() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        for (int i = 1; i <= 4; i++) send("{\"id\":\"" + i + "\"}");
        for (int i = 0; i < 3; i++) {
            JsonNode md = bottom().sent().get(i).get("__md_trq__");
            rt.run(() -> bottom().ackJson("{\"__md_trq__\":" + md + "}"));
        }
        assertEquals(1, stats().get("msgs_in_queue").asInt(), "taken as acks");
        assertEquals(1, count("Ack without result, taken as 0"), logs.toString());
        ObjectNode last = bottom().sent().get(3);
        rt.run(() -> bottom().ack(last, 0));
        assertEquals(1, count("Acks carry a result again"), logs.toString());
        assertTrue(logged("without_result=3"), logs.toString());
    }

    @Test
    void shouldSayStrayAcksOnceUntilAnAckMatches() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        for (int g = 70; g < 75; g++) {
            String stale = "{\"__md_trq__\":{\"__msg_rowid__\":1,\"__msg_t__\":1,\"__msg_gen__\":" + g + ",\"result\":0}}";
            rt.run(() -> bottom().ackJson(stale));
        }
        assertEquals(1, count("Stale or unknown ack ignored"), logs.toString());
        assertEquals(5, stats().get("ignored_acks").asInt());
        ObjectNode m = bottom().sent().get(0);
        rt.run(() -> bottom().ack(m, 0));
        assertEquals(1, count("Acks match the queue again"), logs.toString());
        assertTrue(logged("ignored=5"), logs.toString());
    }

    @Test
    void shouldSayBadAcksOnceUntilAValidAckComes() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        for (int i = 0; i < 3; i++) rt.call(() -> bottom().ackJson("{not json"));
        rt.call(() -> bottom().ackJson("{\"no\":\"rowid\"}"));
        assertEquals(1, count("ERROR C_QIOGATE^q Bad ack"), logs.toString());
        assertEquals(0, count("Ack without __md_trq__"), "the same streak: " + logs);
        ObjectNode m = bottom().sent().get(0);
        rt.run(() -> bottom().ack(m, 0));
        assertEquals(1, count("Valid acks again"), logs.toString());
        assertTrue(logged("bad_acks=4"), logs.toString());
    }

    // --- Commands ---

    @Test
    void shouldMarkNotPendingAndPendingChangingWhatIsSentNext() {
        givenGate("{\"topic_name\":\"t\",\"max_pending_acks\":1}");
        for (int i = 1; i <= 4; i++) send("{\"id\":\"" + i + "\"}");
        ObjectNode r = rt.command("command-yuno service=q command=queue_mark_notpending from-rowid=2 to-rowid=3");
        assertEquals(0, r.get("result").asInt(), r.toString());
        assertEquals("2 messages marked as NOT-PENDING", r.get("comment").asText());
        assertEquals(2, stats().get("msgs_in_queue").asInt());
        rt.run(() -> bottom().open());
        rt.run(() -> bottom().ack(bottom().sent().get(0), 0));
        assertEquals(List.of(1L, 4L), bottom().sentRowids());

        rt.run(() -> bottom().ack(bottom().sent().get(1), 0));
        r = rt.command("command-yuno service=q command=queue_mark_pending from-rowid=1 to-rowid=2");
        assertEquals("2 messages marked as PENDING", r.get("comment").asText());
        assertEquals(List.of(1L, 4L, 1L), bottom().sentRowids());
        rt.run(() -> bottom().ack(bottom().sent().get(2), 0));
        assertEquals(List.of(1L, 4L, 1L, 2L), bottom().sentRowids());

        r = rt.command("command-yuno service=q command=queue_mark_pending");
        assertEquals(-1, r.get("result").asInt());
    }

    @Test
    void shouldViewTheQueueWithWhatIsInFlight() {
        givenGate("{\"topic_name\":\"t\"}");
        rt.run(() -> bottom().open());
        send("{\"id\":\"1\"}");
        ObjectNode r = rt.command("command-yuno service=q command=view-queue");
        assertEquals(1, r.get("data").get("inflight").size(), r.toString());
        assertNotNull(r.get("data").get("path"));
    }

    // --- Config ---

    @Test
    void shouldRefuseConfigWithoutTopicName() {
        ConfigException e = assertThrows(ConfigException.class, () -> build("{}"));
        assertTrue(e.getMessage().contains("topic_name"), e.getMessage());
    }

    @Test
    void shouldRefuseUnknownAttributeAndAcceptYunetaKeys() {
        assertThrows(ConfigException.class, () -> build("{\"topic_name\":\"t\",\"max_pending_ack\":3}"));
        rt = build("{\"topic_name\":\"t\",\"on_critical_error\":16,\"alert_to\":\"x@y\"}");
        assertNotNull(gate());
    }

    @Test
    void shouldKeepTwoGatesWithTheSameTopicApart() {
        String cfg = "{\"services\":["
                + "{\"name\":\"a\",\"gclass\":\"C_QIOGATE\",\"kw\":{\"topic_name\":\"same\"},"
                + "\"children\":[{\"name\":\"b\",\"gclass\":\"C_FAKE_BOTTOM\"}]},"
                + "{\"name\":\"c\",\"gclass\":\"C_QIOGATE\",\"kw\":{\"topic_name\":\"same\"},"
                + "\"children\":[{\"name\":\"b\",\"gclass\":\"C_FAKE_BOTTOM\"}]}]}";
        rt = YunoRuntime.builder().name("t").dataDir(tmp).clock(clock)
                .gclass(new QIoGateGClass(qf).spec(), bottomSpec()).config(cfg).build().start();
        assertEquals(2, qf.topics().size(), qf.topics().keySet().toString());
        assertTrue(qf.topics().keySet().stream().anyMatch(k -> k.endsWith("queues/a/same")), qf.topics().keySet().toString());
    }

    @Test
    void shouldFindTheFactoryThroughTheYunoOutsideOsgi() {
        String cfg = "{\"services\":[{\"name\":\"q\",\"gclass\":\"C_QIOGATE\",\"kw\":{\"topic_name\":\"t\"},"
                + "\"children\":[{\"name\":\"b\",\"gclass\":\"C_FAKE_BOTTOM\"}]}]}";
        rt = YunoRuntime.builder().name("t").dataDir(tmp).clock(clock)
                .gclass(new QIoGateGClass(null).spec(), bottomSpec())
                .extension(io.gatehouse.api.queue.TrQueueFactory.class, qf).config(cfg).build().start();
        rt.run(() -> bottom().open());
        assertEquals(0, send("{\"id\":\"1\"}"));
        assertEquals(1, bottom().sent().size());
    }
}
