// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.relay;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.testkit.RecordFields;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** C_RELAY between a stand-in input gate and a stand-in output, on a manual clock. */
class RelayTest {
    /** Stands for an input C_IOGATE: records what is sent back to it (the acks). */
    static final class FakeGate implements GObjBehavior {
        final List<ObjectNode> sent = new ArrayList<>();
        final GObj gobj;

        FakeGate(GObj g) { this.gobj = g; }

        /** Send batches that came ({@link Kw#BATCH}); their messages are recorded one by one in {@link #sent}. */
        int batches;

        int acSend(String ev, ObjectNode kw, GObj src) {
            int[] batch = Kw.ref(kw, Kw.BATCH, int[].class);
            if (batch != null) {
                batches++;
                ByteBuf all = Kw.takeGbuffer(kw);
                for (int i = 0; i < batch.length; i += 2) {
                    ObjectNode copy = Kw.withoutRefs(kw);
                    copy.remove(Kw.BATCH);
                    copy.put("payload", all.toString(all.readerIndex() + batch[i], batch[i + 1] - batch[i],
                            StandardCharsets.UTF_8));
                    copy.put("has_temp", kw.has(Kw.TEMP));
                    copy.put("channel", Kw.ref(kw.get(Kw.TEMP), Kw.TEMP_CHANNEL_GOBJ, GObj.class).name());
                    sent.add(copy);
                }
                all.release();
                return 0;
            }
            ByteBuf b = Kw.takeGbuffer(kw);
            ObjectNode copy = Kw.withoutRefs(kw);
            if (b != null) {
                copy.put("payload", b.toString(StandardCharsets.UTF_8));
                b.release();
            }
            copy.put("has_temp", kw.has(Kw.TEMP));
            sent.add(copy);
            return 0;
        }
    }

    /**
     * Any output that confirms durability (a queue, a Kafka producer): keeps the messages and who waits for their
     * EV_ON_DURABLE, refuses when told to, and confirms when the test says so.
     */
    static final class FakeDurableOutput implements GObjBehavior {
        final GObj gobj;
        final List<ObjectNode> stored = new ArrayList<>();
        final List<GObj> waiting = new ArrayList<>();
        final List<ObjectNode> pendingDurable = new ArrayList<>();
        /** The tokens given ({@link Kw#DURABLE_TOKEN}), in the order sent, and their senders. */
        final List<Long> tokens = new ArrayList<>();
        final List<GObj> tokenSenders = new ArrayList<>();
        boolean refuse;
        /** Refuses every message once this many are stored (-1: no limit). */
        int refuseAfter = -1;

        FakeDurableOutput(GObj g) {
            this.gobj = g;
        }

        int acSend(String ev, ObjectNode kw, GObj src) {
            if (refuse || stored.size() == refuseAfter) return -1;
            JsonNode d = kw.remove(Kw.DURABLE);
            JsonNode t = kw.remove(Kw.DURABLE_TOKEN);
            if (t != null) {
                tokens.add(t.asLong());
                tokenSenders.add(src);
            }
            stored.add(kw);
            if (d instanceof ObjectNode) {
                waiting.add(src);
                pendingDurable.add((ObjectNode) d);
            }
            return 0;
        }

        /** Tells {@code which} tokens, in that order, to their sender in one event, as a queue's commit does. */
        void confirmTokens(List<Long> which, int result) {
            long[] told = new long[which.size() + 3];   // longer than count: the relay reads count entries only
            for (int i = 0; i < which.size(); i++) told[i] = which.get(i);
            ObjectNode kw = Kw.create();
            Kw.putRef(kw, Kw.TOKENS, told);
            kw.put(Kw.COUNT, which.size());
            kw.put(Kw.RESULT, result);
            tokenSenders.get(0).send(Ev.EV_ON_DURABLE_TOKENS, kw, gobj);
        }

        /** Tells every waiting sender, as a queue does after the fsync. */
        void confirmAll() {
            for (int i = 0; i < waiting.size(); i++) waiting.get(i).send(Ev.EV_ON_DURABLE, pendingDurable.get(i), gobj);
            waiting.clear();
            pendingDurable.clear();
        }
    }

    static final GClassSpec<FakeGate> GATE = GClassSpec.builder("C_IOGATE", FakeGate.class)
            .description("a plain gate: takes messages, confirms nothing")
            .fsm(Fsm.<FakeGate>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, FakeGate::acSend)
                    .publishes(Ev.EV_ON_MESSAGE).build())
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(FakeGate::new).build();
    /** The same gate taking send batches, over channels ({@link #LEVEL_BATCHES}, {@link #LEVEL_ALONE}). */
    static final GClassSpec<FakeGate> BATCH_GATE = GClassSpec.builder("C_IOGATE", FakeGate.class)
            .description("a gate taking send batches")
            .fsm(Fsm.<FakeGate>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, FakeGate::acSend)
                    .publishes(Ev.EV_ON_MESSAGE).build())
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .takesSendBatches()
            .factory(FakeGate::new).build();

    /** A channel or a protocol under {@link #BATCH_GATE}: only its declaration matters (the gate records the sends). */
    static final class FakeLevel implements GObjBehavior {
        FakeLevel(GObj g) { }

        int acSend(String ev, ObjectNode kw, GObj src) {
            Kw.release(kw);
            return 0;
        }
    }

    static final GClassSpec<FakeLevel> LEVEL_BATCHES = GClassSpec.builder("C_LEVEL_BATCHES", FakeLevel.class)
            .description("a channel or protocol taking send batches")
            .fsm(Fsm.<FakeLevel>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, FakeLevel::acSend).build())
            .takesSendBatches()
            .factory(FakeLevel::new).build();
    static final GClassSpec<FakeLevel> LEVEL_ALONE = GClassSpec.builder("C_LEVEL_ALONE", FakeLevel.class)
            .description("a protocol without send batches")
            .fsm(Fsm.<FakeLevel>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, FakeLevel::acSend).build())
            .factory(FakeLevel::new).build();

    /** Named like no gclass the relay could know: the relay goes by the spec's declaration alone. */
    static final GClassSpec<FakeDurableOutput> DURABLE_OUTPUT =
            GClassSpec.builder("C_SOME_DURABLE_OUTPUT", FakeDurableOutput.class)
                    .description("an output that stores and confirms durability")
                    .fsm(Fsm.<FakeDurableOutput>builder().state(St.ST_IDLE)
                            .on(Ev.EV_SEND_MESSAGE, FakeDurableOutput::acSend).build())
                    .confirmsDurability()
                    .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                    .factory(FakeDurableOutput::new).build();

    /** The same output, declaring that it takes a message as its record's bytes (a queue does). */
    static final GClassSpec<FakeDurableOutput> RECORD_OUTPUT =
            GClassSpec.builder("C_SOME_RECORD_OUTPUT", FakeDurableOutput.class)
                    .description("an output that stores JSON records and confirms durability")
                    .fsm(Fsm.<FakeDurableOutput>builder().state(St.ST_IDLE)
                            .on(Ev.EV_SEND_MESSAGE, FakeDurableOutput::acSend).build())
                    .confirmsDurability()
                    .takesJsonRecords()
                    .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                    .factory(FakeDurableOutput::new).build();

    /** The same output, answering tokens too (a queue does since api 2.2). */
    static final GClassSpec<FakeDurableOutput> TOKEN_OUTPUT =
            GClassSpec.builder("C_SOME_TOKEN_OUTPUT", FakeDurableOutput.class)
                    .description("an output that stores JSON records and answers durable tokens")
                    .fsm(Fsm.<FakeDurableOutput>builder().state(St.ST_IDLE)
                            .on(Ev.EV_SEND_MESSAGE, FakeDurableOutput::acSend).build())
                    .answersDurableTokens()
                    .takesJsonRecords()
                    .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                    .factory(FakeDurableOutput::new).build();

    /** How long a gclass that left may take to come back before its services go down (the test's upgrade grace). */
    private static final long GRACE_MS = 100;

    private final ManualClock clock = new ManualClock();
    private final List<String> logs = Collections.synchronizedList(new ArrayList<>());
    private final Consumer<LogCapture.Rec> sink = r -> logs.add(r.level + " " + r.gobj + " " + r.msg + " " + r.fields);
    private LogCapture capture;
    private YunoRuntime rt;

    @BeforeEach
    void setUp() {
        capture = new LogCapture(sink);
    }

    @AfterEach
    void tearDown() {
        if (capture != null) capture.close();
        if (rt != null) rt.close();
    }

    private void start(String outputGclass) {
        rt = YunoRuntime.builder().name("relay").clock(clock).upgradeGraceMs(GRACE_MS).gclass(Relay.SPEC, GATE, DURABLE_OUTPUT, RECORD_OUTPUT, TOKEN_OUTPUT)
                .config("{\"services\": ["
                        + "{\"name\": \"in\", \"gclass\": \"C_IOGATE\"},"
                        + "{\"name\": \"out\", \"gclass\": \"" + outputGclass + "\"},"
                        + "{\"name\": \"relay\", \"gclass\": \"C_RELAY\", \"kw\": {\"input\": \"in\", \"output\": \"out\"}}]}")
                .build().start();
    }

    private void receive(String json) {
        rt.run(() -> {
            GObj in = rt.service("in");
            ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer(json, StandardCharsets.UTF_8));
            ObjectNode temp = kw.putObject(Kw.TEMP);
            temp.put("channel", "in-1");
            in.publish(Ev.EV_ON_MESSAGE, kw);
        });
    }

    private void receiveWithMd(String id, int rowid) {
        receive("{\"id\": \"" + id + "\", \"__md_trq__\": {\"__msg_rowid__\": " + rowid + ", \"__msg_t__\": 9}}");
    }

    private FakeDurableOutput output() {
        return rt.call(() -> (FakeDurableOutput) rt.service("out").behavior());
    }

    private FakeGate input() {
        return rt.call(() -> (FakeGate) rt.service("in").behavior());
    }

    private JsonNode stats() {
        return rt.command("stats-yuno service=relay").get("data");
    }

    private int count(String text) {
        synchronized (logs) {
            return (int) logs.stream().filter(l -> l.contains(text)).count();
        }
    }

    @Test
    void shouldAckUpstreamOnlyAfterTheOutputSaysDurable() {
        start("C_SOME_DURABLE_OUTPUT");
        receiveWithMd("msg-1", 5);
        assertEquals(1, rt.call(() -> output().stored.size()));
        ObjectNode stored = rt.call(() -> output().stored.get(0));
        assertEquals("msg-1", stored.get("id").asText());
        assertNull(stored.get("__md_trq__"), "the upstream metadata is not stored downstream");
        assertNull(stored.get(Kw.DURABLE), "the durability request is the output's, not part of the message");
        assertTrue(rt.call(() -> input().sent.isEmpty()), "no ack before durability");
        rt.run(() -> output().confirmAll());
        List<ObjectNode> acks = rt.call(() -> input().sent);
        assertEquals(1, acks.size());
        assertTrue(acks.get(0).get("payload").asText().contains("\"__msg_rowid__\":5"), acks.toString());
        assertTrue(acks.get(0).get("payload").asText().contains("\"result\":0"), acks.toString());
        assertTrue(acks.get(0).get("has_temp").asBoolean(), "the ack goes back on the same connection");
        assertEquals(1, stats().get("acks_sent").asInt());
    }

    @Test
    void shouldAckABatchOfDurableMessagesInOrderWithTheBytesJacksonWrites() {
        start("C_SOME_DURABLE_OUTPUT");
        for (int i = 1; i <= 50; i++) {
            receive("{\"id\": \"msg-" + i + "\", \"__md_trq__\": {\"__msg_rowid__\": " + i
                    + ", \"__msg_t__\": 9, \"k\": \"v w\"}}");
        }
        // What the relay keeps for the ack: its bytes up to the result, beside the metadata's dict.
        ObjectNode d0 = rt.call(() -> output().pendingDurable.get(0));
        assertTrue(d0.get("ack").isBinary(), d0.toString());
        assertEquals(9, d0.get("md").get("__msg_t__").asInt());
        rt.run(() -> output().confirmAll());   // one group commit: every EV_ON_DURABLE in one turn of the loop
        List<ObjectNode> acks = rt.call(() -> input().sent);
        assertEquals(50, acks.size());
        for (int i = 1; i <= 50; i++) {
            assertEquals("{\"__md_trq__\":{\"__msg_rowid__\":" + i + ",\"__msg_t__\":9,\"k\":\"v w\",\"result\":0}}",
                    acks.get(i - 1).get("payload").asText(), "ack " + i + " in append order");
            assertTrue(acks.get(i - 1).get("has_temp").asBoolean());
        }
        assertEquals(50, stats().get("acks_sent").asInt());
    }

    private static String ackOf(int rowid, int result) {
        return "{\"__md_trq__\":{\"__msg_rowid__\":" + rowid + ",\"__msg_t__\":9,\"k\":\"v w\",\"result\":" + result + "}}";
    }

    private void receiveForAck(int rowid) {
        receive("{\"id\": \"msg-" + rowid + "\", \"__md_trq__\": {\"__msg_rowid__\": " + rowid
                + ", \"__msg_t__\": 9, \"k\": \"v w\"}}");
    }

    private List<String> ackPayloads() {
        List<String> out = new ArrayList<>();
        for (ObjectNode a : rt.call(() -> input().sent)) {
            assertTrue(a.get("has_temp").asBoolean(), "an ack goes back on the connection it came from");
            out.add(a.get("payload").asText());
        }
        return out;
    }

    /** A producer's batch ({@link Kw#BATCH}): the objects of {@code body} at the ranges given, and the batch's md. */
    private void receiveBatch(String body, int[] ranges, int conn, int req) {
        receiveBatch(body, ranges, null, conn, req);
    }

    /** {@link #receiveBatch(String, int[], int, int)} with the producer's {@link Kw#BATCH_RECORDS}, when not null. */
    private void receiveBatch(String body, int[] ranges, int[][] records, int conn, int req) {
        rt.run(() -> {
            ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer("xx" + body, StandardCharsets.UTF_8).skipBytes(2));
            kw.putObject(Kw.MD_TRQ).put("conn", conn).put("req", req);
            Kw.putRef(kw, Kw.BATCH, ranges);
            if (records != null) Kw.putRef(kw, Kw.BATCH_RECORDS, records);
            kw.putObject(Kw.TEMP).put("channel", "in-1");
            rt.service("in").publish(Ev.EV_ON_MESSAGE, kw);
        });
    }

    private static final String BATCH_BODY = "{\"id\":1}\n{ \"id\" : 2, \"f\": 1.5 }\n{\"id\":3,\"__md_trq__\":{\"x\":1}}";
    /** The three objects of {@link #BATCH_BODY}, from its first byte. */
    private static final int[] BATCH_RANGES = {0, 8, 9, 31, 32, 61};

    @Test
    void shouldSendABatchWithOneTokenAndAckItOnceWhenTheOutputToldEveryMessage() throws IOException {
        start("C_SOME_TOKEN_OUTPUT");
        receiveBatch(BATCH_BODY, BATCH_RANGES, 7, 3);
        FakeDurableOutput out = output();
        List<Long> tokens = rt.call(() -> new ArrayList<>(out.tokens));
        assertEquals(List.of(1L, 1L, 1L), tokens, "one token for the batch");
        rt.run(() -> {
            assertEquals("{\"id\":1}", Kw.gbuffer(out.stored.get(0)).toString(StandardCharsets.UTF_8));
            assertTrue(out.stored.get(0).path(Kw.JSON_RECORD).asBoolean(), "a record as the queue stores it");
            assertEquals(1.5, out.stored.get(1).path("f").asDouble(), "a float goes as its dict");
            assertFalse(out.stored.get(1).has(Kw.MD_TRQ));
            assertEquals("{\"id\":3}", Kw.gbuffer(out.stored.get(2)).toString(StandardCharsets.UTF_8),
                    "a producer's own __md_trq__ is not stored");
        });
        assertEquals(3, stats().get("rxMsgs").asInt());
        assertEquals(3, stats().get("txMsgs").asInt());
        assertEquals(1, stats().get("pending_acks").asInt());
        rt.run(() -> out.confirmTokens(List.of(1L, 1L), 0));
        assertTrue(ackPayloads().isEmpty(), "no ack before the last message of the batch is durable");
        rt.run(() -> out.confirmTokens(List.of(1L), 0));
        assertEquals(List.of("{\"__md_trq__\":{\"conn\":7,\"req\":3,\"result\":0}}"), ackPayloads());
        assertEquals(0, stats().get("pending_acks").asInt());
        rt.run(() -> out.confirmTokens(List.of(1L), 0));
        assertEquals(1, count("Durable token not known here"), "a fourth tell is a stranger");
    }

    @Test
    void shouldTakeTheRecordsAProducerVouchedForAsTheyStandAndWalkTheOthers() {
        start("C_SOME_TOKEN_OUTPUT");
        String body = "{\"id\":\"a-1\",\"tm\":5}\n{\"id\":\"a-2\"}\n{\"id\" : 3}";
        int[] ranges = {0, 19, 20, 32, 33, 43};
        int[] first = RecordFields.of(utf8(body.substring(0, 19)));
        // the second is a record too, but its producer did not say so: walked, and indexed by the relay's own walk
        receiveBatch(body, ranges, new int[][] {first, null, null}, 7, 3);
        FakeDurableOutput out = output();
        rt.run(() -> {
            assertEquals(3, out.stored.size());
            assertEquals("{\"id\":\"a-1\",\"tm\":5}", Kw.gbuffer(out.stored.get(0)).toString(StandardCharsets.UTF_8));
            assertTrue(out.stored.get(0).path(Kw.JSON_RECORD).asBoolean());
            assertSame(first, Kw.ref(out.stored.get(0), Kw.RECORD_FIELDS, int[].class), "the producer's index, not a walk's");
            assertEquals("{\"id\":\"a-2\"}", Kw.gbuffer(out.stored.get(1)).toString(StandardCharsets.UTF_8));
            assertArrayEquals(RecordFields.of(utf8("{\"id\":\"a-2\"}")),
                    Kw.ref(out.stored.get(1), Kw.RECORD_FIELDS, int[].class), "the relay's walk indexes it");
            assertEquals("{\"id\":3}", Kw.gbuffer(out.stored.get(2)).toString(StandardCharsets.UTF_8),
                    "spaced bytes made into the record by the walk");
        });
        rt.run(() -> out.confirmTokens(List.of(1L, 1L, 1L), 0));
        assertEquals(List.of("{\"__md_trq__\":{\"conn\":7,\"req\":3,\"result\":0}}"), ackPayloads());
    }

    @Test
    void shouldWalkEveryMessageOfABatchWhoseRecordsDoNotMatchItsRanges() {
        start("C_SOME_TOKEN_OUTPUT");
        String body = "{\"id\":1,\"x\":2}\n{\"id\":2,\"x\":3}";
        // one entry for two ranges, and it leaves a member out: not the producer's word on each, so none is taken
        receiveBatch(body, new int[] {0, 14, 15, 29}, new int[][] {{1}}, 7, 3);
        FakeDurableOutput out = output();
        rt.run(() -> {
            assertEquals(2, out.stored.size());
            for (int i = 0; i < 2; i++) {
                assertArrayEquals(new int[] {1, 8}, Kw.ref(out.stored.get(i), Kw.RECORD_FIELDS, int[].class),
                        "indexed by the relay's walk");
            }
        });
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void shouldSendTheAcksOfOneTellAsOneBatchPerConnectionWhoseLevelsAllTakeThem() {
        rt = YunoRuntime.builder().name("relay").clock(clock).upgradeGraceMs(GRACE_MS)
                .gclass(Relay.SPEC, BATCH_GATE, TOKEN_OUTPUT, LEVEL_BATCHES, LEVEL_ALONE)
                .config("{\"services\": ["
                        + "{\"name\": \"in\", \"gclass\": \"C_IOGATE\", \"children\": ["
                        + "  {\"name\": \"a\", \"gclass\": \"C_LEVEL_BATCHES\", \"children\": [{\"name\": \"pa\", \"gclass\": \"C_LEVEL_BATCHES\"}]},"
                        + "  {\"name\": \"b\", \"gclass\": \"C_LEVEL_BATCHES\", \"children\": [{\"name\": \"pb\", \"gclass\": \"C_LEVEL_BATCHES\"}]},"
                        + "  {\"name\": \"c\", \"gclass\": \"C_LEVEL_BATCHES\", \"children\": [{\"name\": \"pc\", \"gclass\": \"C_LEVEL_ALONE\"}]}]},"
                        + "{\"name\": \"out\", \"gclass\": \"C_SOME_TOKEN_OUTPUT\"},"
                        + "{\"name\": \"relay\", \"gclass\": \"C_RELAY\", \"kw\": {\"input\": \"in\", \"output\": \"out\"}}]}")
                .build().start();
        String[] from = {"a", "b", "a", "c", "b", "a", "c"};
        for (int i = 0; i < from.length; i++) {
            String channel = from[i];
            int rowid = i + 1;
            rt.run(() -> {
                GObj in = rt.service("in");
                ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer("{\"id\":" + rowid
                        + ",\"__md_trq__\":{\"__msg_rowid__\":" + rowid + "}}", StandardCharsets.UTF_8));
                ObjectNode temp = kw.putObject(Kw.TEMP);
                temp.put(Kw.TEMP_CHANNEL, channel);
                Kw.putRef(temp, Kw.TEMP_CHANNEL_GOBJ, in.child(channel));
                in.publish(Ev.EV_ON_MESSAGE, kw);
            });
        }
        FakeDurableOutput out = output();
        List<Long> tokens = rt.call(() -> new ArrayList<>(out.tokens));
        assertEquals(7, tokens.size());
        // all but the last told in one commit, the last with a refusal
        rt.run(() -> out.confirmTokens(tokens.subList(0, 6), 0));
        FakeGate gate = input();
        assertEquals(2, rt.call(() -> gate.batches), "one batch for a, one for b; c's protocol takes none");
        List<String> got = new ArrayList<>();
        for (ObjectNode a : rt.call(() -> new ArrayList<>(gate.sent))) {
            assertTrue(a.get("has_temp").asBoolean());
            got.add(a.path("channel").asText("alone") + " " + a.get("payload").asText());
        }
        assertEquals(List.of(
                "alone {\"__md_trq__\":{\"__msg_rowid__\":4,\"result\":0}}",
                "a {\"__md_trq__\":{\"__msg_rowid__\":1,\"result\":0}}",
                "a {\"__md_trq__\":{\"__msg_rowid__\":3,\"result\":0}}",
                "a {\"__md_trq__\":{\"__msg_rowid__\":6,\"result\":0}}",
                "b {\"__md_trq__\":{\"__msg_rowid__\":2,\"result\":0}}",
                "b {\"__md_trq__\":{\"__msg_rowid__\":5,\"result\":0}}"), got,
                "each connection's acks in the order told; c's alone, at once");
        assertEquals(6, stats().get("acks_sent").asInt());
        rt.run(() -> out.confirmTokens(tokens.subList(6, 7), -1));
        assertEquals(1, stats().get("nacks_sent").asInt());
        assertEquals(0, stats().get("pending_acks").asInt());
    }

    @Test
    void shouldNackABatchOnceAtTheFirstRefusalAndSendNothingAfterIt() {
        start("C_SOME_TOKEN_OUTPUT");
        FakeDurableOutput out = output();
        rt.run(() -> out.refuseAfter = 1);
        receiveBatch(BATCH_BODY, BATCH_RANGES, 7, 4);
        assertEquals(1, rt.call(() -> out.stored.size()), "nothing of the batch is sent after the refusal");
        assertEquals(List.of("{\"__md_trq__\":{\"conn\":7,\"req\":4,\"result\":-1}}"), ackPayloads());
        assertEquals(2, stats().get("refused").asInt());
        assertEquals(1, stats().get("pending_acks").asInt(), "the message sent before is still to be told");
        rt.run(() -> out.confirmTokens(List.of(1L), 0));
        assertEquals(1, ackPayloads().size(), "answered once");
        assertEquals(0, stats().get("pending_acks").asInt());
        assertEquals(0, count("Durable token not known here"));
    }

    @Test
    void shouldNackABatchOnceWhenAQueueTellsOneOfItsMessagesWillNeverBeDurable() {
        start("C_SOME_TOKEN_OUTPUT");
        receiveBatch(BATCH_BODY, BATCH_RANGES, 7, 5);
        FakeDurableOutput out = output();
        rt.run(() -> out.confirmTokens(List.of(1L), -1));
        rt.run(() -> out.confirmTokens(List.of(1L, 1L), 0));
        assertEquals(List.of("{\"__md_trq__\":{\"conn\":7,\"req\":5,\"result\":-1}}"), ackPayloads());
        assertEquals(0, stats().get("pending_acks").asInt());
    }

    @Test
    void shouldSendABatchMessageByMessageWithItsIndexToAnOutputThatDoesNotAnswerTokens() {
        start("C_SOME_DURABLE_OUTPUT");
        receiveBatch(BATCH_BODY, BATCH_RANGES, 7, 6);
        FakeDurableOutput out = output();
        assertEquals(3, rt.call(() -> out.stored.size()));
        assertTrue(rt.call(() -> out.tokens.isEmpty()));
        rt.run(out::confirmAll);
        assertEquals(List.of("{\"__md_trq__\":{\"conn\":7,\"req\":6,\"msg\":0,\"result\":0}}",
                "{\"__md_trq__\":{\"conn\":7,\"req\":6,\"msg\":1,\"result\":0}}",
                "{\"__md_trq__\":{\"conn\":7,\"req\":6,\"msg\":2,\"result\":0}}"), ackPayloads());
        rt.run(() -> assertEquals(2, out.stored.get(1).path("id").asInt()));
    }

    /**
     * The frames of one read ({@link Kw#MESSAGES}): each message's bytes behind a 4-byte header, as C_PROT_TCP4H hands
     * them up, in a buffer whose reader index is not 0.
     */
    private void receiveMessages(String... messages) {
        rt.run(() -> {
            ByteBuf all = Unpooled.buffer().writeBytes("xx".getBytes(StandardCharsets.US_ASCII));
            all.skipBytes(2);
            int[] ranges = new int[messages.length * 2];
            for (int i = 0; i < messages.length; i++) {
                byte[] m = messages[i].getBytes(StandardCharsets.UTF_8);
                all.writeInt(m.length + 4);
                ranges[2 * i] = all.writerIndex() - all.readerIndex();
                all.writeBytes(m);
                ranges[2 * i + 1] = all.writerIndex() - all.readerIndex();
            }
            ObjectNode kw = Kw.withGbuffer(all);
            Kw.putRef(kw, Kw.MESSAGES, ranges);
            kw.putObject(Kw.TEMP).put("channel", "in-1");
            rt.service("in").publish(Ev.EV_ON_MESSAGE, kw);
        });
    }

    private static String withMd(int rowid) {
        return "{\"id\": \"msg-" + rowid + "\", \"__md_trq__\": {\"__msg_rowid__\": " + rowid
                + ", \"__msg_t__\": 9, \"k\": \"v w\"}}";
    }

    @Test
    void shouldForwardEachMessageOfAReadAsIfItCameAloneAndAckEachWhenTold() {
        assertTrue(Relay.SPEC.takesMessageBatches());
        start("C_SOME_TOKEN_OUTPUT");
        receiveMessages(withMd(1), "not json", "{\"plain\":true}", withMd(2));
        FakeDurableOutput out = output();
        assertEquals(3, rt.call(() -> out.stored.size()), "the message that is not JSON is not forwarded");
        assertEquals(1, stats().get("bad_json").asInt());
        assertEquals(4, stats().get("rxMsgs").asInt());
        assertEquals(1, count("Message is not a JSON object"), logs.toString());
        rt.run(() -> {
            assertEquals("{\"id\":\"msg-1\"}",
                    Kw.gbuffer(out.stored.get(0)).toString(StandardCharsets.UTF_8), "the record, without its metadata");
            assertEquals("{\"plain\":true}", Kw.gbuffer(out.stored.get(1)).toString(StandardCharsets.UTF_8));
            assertEquals("{\"id\":\"msg-2\"}", Kw.gbuffer(out.stored.get(2)).toString(StandardCharsets.UTF_8));
        });
        List<Long> tokens = rt.call(() -> new ArrayList<>(out.tokens));
        assertEquals(2, tokens.size(), "a token for each message with metadata");
        assertTrue(ackPayloads().isEmpty(), "no ack before durability");
        rt.run(() -> out.confirmTokens(tokens, 0));
        assertEquals(List.of(ackOf(1, 0), ackOf(2, 0)), ackPayloads());
    }

    @Test
    void shouldForwardEachMessageOfAReadToAPlainGateInASliceOfItsOwnAndAckEach() {
        start("C_IOGATE");
        receiveMessages(withMd(1), withMd(2), withMd(3));
        List<ObjectNode> sent = rt.call(() -> ((FakeGate) rt.service("out").behavior()).sent);
        assertEquals(List.of(withMd(1), withMd(2), withMd(3)),
                sent.stream().map(o -> o.get("payload").asText()).toList());
        assertEquals(List.of(ackOf(1, 0), ackOf(2, 0), ackOf(3, 0)), ackPayloads());
    }

    @Test
    void shouldNackEachMessageOfAReadWhenTheOutputIsMissingOrRefuses() {
        start("C_SOME_TOKEN_OUTPUT");
        rt.run(() -> output().refuseAfter = 1);
        receiveMessages(withMd(1), withMd(2), withMd(3));
        assertEquals(List.of(ackOf(2, -1), ackOf(3, -1)), ackPayloads(), "each refused message is nacked alone");
        rt.gclassesGone(List.of("C_SOME_TOKEN_OUTPUT"));
        clock.advance(GRACE_MS);
        receiveMessages(withMd(4), withMd(5));
        assertEquals(List.of(ackOf(2, -1), ackOf(3, -1), ackOf(4, -1), ackOf(5, -1)), ackPayloads());
    }

    @Test
    void shouldRefuseMessagesWhoseRangesAreOutsideTheirBuffer() {
        start("C_SOME_TOKEN_OUTPUT");
        rt.run(() -> {
            ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer("{\"a\":1}", StandardCharsets.UTF_8));
            Kw.putRef(kw, Kw.MESSAGES, new int[] {0, 7, 7, 90});
            kw.putObject(Kw.TEMP).put("channel", "in-1");
            rt.service("in").publish(Ev.EV_ON_MESSAGE, kw);
        });
        assertEquals(0, rt.call(() -> output().stored.size()));
        assertEquals(1, count("Messages refused: a range is outside it"), logs.toString());
        assertEquals(2, stats().get("bad_json").asInt());
    }

    @Test
    void shouldForwardABatchToAPlainGateMessageByMessageAndAckEachAtOnce() {
        start("C_IOGATE");
        receiveBatch("{}\n{\"a\":1}", new int[] {0, 2, 3, 10}, 1, 2);
        List<ObjectNode> sent = rt.call(() -> ((FakeGate) rt.service("out").behavior()).sent);
        assertEquals(2, sent.size());
        assertEquals("{\"__md_trq__\":{\"conn\":1,\"req\":2,\"msg\":0}}", sent.get(0).get("payload").asText());
        assertEquals("{\"a\":1,\"__md_trq__\":{\"conn\":1,\"req\":2,\"msg\":1}}",
                sent.get(1).get("payload").asText());
        assertEquals(2, rt.call(() -> input().sent.size()));
    }

    @Test
    void shouldRefuseABatchWhoseRangesAreOutsideItsBufferAndNackIt() {
        start("C_SOME_TOKEN_OUTPUT");
        receiveBatch("{\"a\":1}", new int[] {0, 7, 7, 90}, 1, 9);
        assertEquals(0, rt.call(() -> output().stored.size()));
        assertEquals(List.of("{\"__md_trq__\":{\"conn\":1,\"req\":9,\"result\":-1}}"), ackPayloads());
        assertEquals(1, count("Batch refused: a range is outside it"), logs.toString());
        assertEquals(2, stats().get("bad_json").asInt());
    }

    @Test
    void shouldSendTokensToAnOutputThatAnswersThemAndAckEveryProducerWhenACommitTellsThem() {
        start("C_SOME_TOKEN_OUTPUT");
        for (int i = 1; i <= 50; i++) receiveForAck(i);
        FakeDurableOutput out = output();
        assertEquals(50, rt.call(() -> out.stored.size()));
        List<Long> tokens = rt.call(() -> new ArrayList<>(out.tokens));
        for (int i = 0; i < 50; i++) assertEquals(i + 1, tokens.get(i), "consecutive tokens from 1");
        rt.run(() -> {
            for (ObjectNode kw : out.stored) {
                assertNull(kw.get(Kw.DURABLE), "no dict is made for a message sent by token");
                assertTrue(kw.path(Kw.JSON_RECORD).asBoolean(), "the producer's bytes go as the record");
            }
        });
        assertTrue(ackPayloads().isEmpty(), "no ack before durability");
        assertEquals(50, stats().get("pending_acks").asInt());
        rt.run(() -> out.confirmTokens(tokens, 0));   // one commit, one event
        List<String> acks = ackPayloads();
        assertEquals(50, acks.size());
        for (int i = 1; i <= 50; i++) assertEquals(ackOf(i, 0), acks.get(i - 1), "the bytes Jackson writes, in order");
        assertEquals(50, stats().get("acks_sent").asInt());
        assertEquals(0, stats().get("pending_acks").asInt());
    }

    @Test
    void shouldAckInTheOrderOutputsTellAndNackWhatTheyCannotConfirm() {
        start("C_SOME_TOKEN_OUTPUT");
        for (int i = 1; i <= 6; i++) receiveForAck(i);
        FakeDurableOutput out = output();
        // two queues behind one gate: the even ones first, then the odd ones, of which the queue closed on two
        rt.run(() -> out.confirmTokens(List.of(2L, 4L, 6L), 0));
        rt.run(() -> out.confirmTokens(List.of(1L), 0));
        rt.run(() -> out.confirmTokens(List.of(3L, 5L), -1));
        assertEquals(List.of(ackOf(2, 0), ackOf(4, 0), ackOf(6, 0), ackOf(1, 0), ackOf(3, -1), ackOf(5, -1)),
                ackPayloads());
        assertEquals(4, stats().get("acks_sent").asInt());
        assertEquals(2, stats().get("nacks_sent").asInt());
        assertEquals(0, stats().get("pending_acks").asInt());
    }

    @Test
    void shouldNackAtOnceAMessageSentByTokenThatTheOutputRefuses() {
        start("C_SOME_TOKEN_OUTPUT");
        rt.run(() -> output().refuse = true);
        receiveForAck(7);
        assertEquals(List.of(ackOf(7, -1)), ackPayloads());
        assertEquals(1, stats().get("refused").asInt());
        assertEquals(0, stats().get("pending_acks").asInt(), "nothing is owed for a refused message");
    }

    @Test
    void shouldSayOnceATokenItDoesNotHoldAndAckATokenHandedBackInADict() {
        start("C_SOME_TOKEN_OUTPUT");
        receiveForAck(1);
        receiveForAck(2);
        FakeDurableOutput out = output();
        rt.run(() -> out.confirmTokens(List.of(1L), 0));
        rt.run(() -> out.confirmTokens(List.of(1L, 99L), 0));   // told twice, and one never given
        assertEquals(List.of(ackOf(1, 0)), ackPayloads());
        assertEquals(1, count("Durable token not known here"), "said once per streak");
        // a gate put the token in a dict for an older child, which answers EV_ON_DURABLE with it
        rt.run(() -> {
            ObjectNode d = Kw.create().put(Kw.DURABLE_TOKEN, 2L);
            rt.service("relay").send(Ev.EV_ON_DURABLE, d, out.gobj);
        });
        assertEquals(List.of(ackOf(1, 0), ackOf(2, 0)), ackPayloads());
        assertEquals(1, count("Durable tokens known again"));
        assertEquals(0, stats().get("pending_acks").asInt());
    }

    @Test
    void shouldUseTheDictWhenTracedOrWhenTheMetadataCannotBeEchoed() {
        start("C_SOME_TOKEN_OUTPUT");
        // an escaped string in the metadata: the ack comes from the dict, as for any durable output
        receive("{\"id\": \"m\", \"__md_trq__\": {\"__msg_rowid__\": 3, \"s\": \"a\\u0041\"}}");
        rt.command("trace-on service=relay level=messages");
        receiveForAck(4);
        FakeDurableOutput out = output();
        assertEquals(2, rt.call(() -> out.pendingDurable.size()));
        assertTrue(rt.call(() -> out.tokens.isEmpty()));
        rt.run(() -> out.confirmAll());
        assertEquals(List.of("{\"__md_trq__\":{\"__msg_rowid__\":3,\"s\":\"aA\",\"result\":0}}", ackOf(4, 0)),
                ackPayloads());
    }

    @Test
    void shouldAckADurabilityDictOfAnEarlierRevisionFromItsMetadata() {
        start("C_SOME_DURABLE_OUTPUT");
        receiveWithMd("msg-1", 5);
        // A dict made before the ack's bytes were kept (an output that took it over in a live upgrade holds it):
        // only the metadata's dict, the route and the gate.
        rt.run(() -> output().pendingDurable.get(0).remove("ack"));
        rt.run(() -> output().confirmAll());
        List<ObjectNode> acks = rt.call(() -> input().sent);
        assertEquals(1, acks.size());
        assertEquals("{\"__md_trq__\":{\"__msg_rowid__\":5,\"__msg_t__\":9,\"result\":0}}",
                acks.get(0).get("payload").asText());
        assertEquals(1, stats().get("acks_sent").asInt());
    }

    @Test
    void shouldKeepNoAckBytesForMetadataTheScanCannotEcho() {
        start("C_SOME_DURABLE_OUTPUT");
        // An escaped string in the metadata: Jackson writes it its own way, so the ack comes from the dict.
        receive("{\"id\": \"m\", \"__md_trq__\": {\"__msg_rowid__\": 3, \"s\": \"a\\u0041\"}}");
        assertNull(rt.call(() -> output().pendingDurable.get(0).get("ack")));
        rt.run(() -> output().confirmAll());
        List<ObjectNode> acks = rt.call(() -> input().sent);
        assertEquals("{\"__md_trq__\":{\"__msg_rowid__\":3,\"s\":\"aA\",\"result\":0}}",
                acks.get(0).get("payload").asText());
    }

    /** What an output got, as text: the record's bytes (marked) or the dict; and the durability dict's data. */
    private static String got(ObjectNode kw, ObjectNode durable) {
        ByteBuf b = Kw.gbuffer(kw);
        String msg = b == null ? Kw.toJson(Kw.withoutRefs(kw))
                : (kw.path(Kw.JSON_RECORD).asBoolean() ? "record " : "bytes ") + b.toString(StandardCharsets.UTF_8);
        return msg + " durable=" + (durable == null ? null : Kw.toJson(Kw.withoutRefs(durable)));
    }

    private List<String> outputGot() {
        return rt.call(() -> {
            List<String> out = new ArrayList<>();
            FakeDurableOutput o = output();
            for (int i = 0; i < o.stored.size(); i++) {
                out.add(got(o.stored.get(i), i < o.pendingDurable.size() ? o.pendingDurable.get(i) : null));
            }
            return out;
        });
    }

    @Test
    void shouldHandAnOutputThatTakesRecordsTheProducersBytesWithTheSameDurabilityDictAndAck() throws IOException {
        String[] msgs = {
            "{\"id\": \"msg-1\", \"__md_trq__\": {\"__msg_rowid__\": 1, \"__msg_t__\": 9}, \"n\": [1, {\"a\": null}]}",
            "{\"__md_trq__\":{\"__msg_rowid__\":2,\"s\":\"a\\u0041\"},\"id\":\"msg-2\"}",   // metadata not simple
            "{\"id\":\"msg-3\",\"f\":1.5,\"__md_trq__\":{\"__msg_rowid__\":3}}",          // a double: the dict
            "{\"id\":\"msg-4\",\"__x\":1,\"__md_trq__\":{\"__msg_rowid__\":4}}",          // a metadata key: the dict
            "{\"id\":\"msg-5\"}",                                                     // nothing to ack
        };
        start("C_SOME_DURABLE_OUTPUT");
        for (String m : msgs) receive(m);
        List<String> dicts = outputGot();
        rt.run(() -> output().confirmAll());
        List<ObjectNode> dictAcks = rt.call(() -> input().sent);
        rt.close();
        start("C_SOME_RECORD_OUTPUT");
        for (String m : msgs) receive(m);
        List<String> records = outputGot();
        assertEquals("record {\"id\":\"msg-1\",\"n\":[1,{\"a\":null}]}", records.get(0).split(" durable=")[0]);
        assertEquals("record {\"id\":\"msg-2\"}", records.get(1).split(" durable=")[0]);
        assertEquals("record {\"id\":\"msg-5\"}", records.get(4).split(" durable=")[0]);
        for (int i = 0; i < msgs.length; i++) {
            String[] d = dicts.get(i).split(" durable=");
            String[] r = records.get(i).split(" durable=");
            if (r[0].startsWith("record ") && d[1].contains("\"ack\":")) {
                // the ack's bytes are kept: the md's dict is not built (a revision since those bytes acks from them)
                ObjectNode dd = Kw.parse(d[1]);
                dd.remove("md");
                assertEquals(Kw.toJson(dd), r[1], "the durability dict without the md: " + msgs[i]);
            } else {
                assertEquals(d[1], r[1], "the same durability dict: " + msgs[i]);
            }
            if (r[0].startsWith("record ")) {
                assertEquals(d[0], Kw.toJson(Kw.parse(r[0].substring(7))), "the record is the dict's JSON: " + msgs[i]);
                assertEquals(d[0], r[0].substring(7), "byte for byte: " + msgs[i]);
            } else {
                assertEquals(d[0], r[0], msgs[i]);
            }
        }
        assertTrue(records.get(2).startsWith("{"), records.get(2));
        assertTrue(records.get(3).startsWith("{"), records.get(3));
        rt.run(() -> output().confirmAll());
        assertEquals(dictAcks, rt.call(() -> input().sent), "the same acks");
        assertEquals(4, stats().get("acks_sent").asInt());
    }

    @Test
    void shouldNackWhatTheOutputRefuses() {
        start("C_SOME_DURABLE_OUTPUT");
        rt.run(() -> output().refuse = true);
        receiveWithMd("msg-2", 6);
        List<ObjectNode> answers = rt.call(() -> input().sent);
        assertEquals(1, answers.size(), "a nack, so the producer resends without waiting for its ack timeout");
        assertTrue(answers.get(0).get("payload").asText().contains("\"result\":-1"), answers.toString());
        assertEquals(1, stats().get("nacks_sent").asInt());
        assertEquals(1, stats().get("refused").asInt());
    }

    @Test
    void shouldCountButNotForwardBadJsonToADurableOutputAndSayItOnce() {
        start("C_SOME_DURABLE_OUTPUT");
        for (int i = 0; i < 3; i++) receive("not json");
        assertEquals(0, rt.call(() -> output().stored.size()));
        assertEquals(3, stats().get("bad_json").asInt());
        assertEquals(1, count("Message is not a JSON object"), logs.toString());
        receiveWithMd("msg-ok", 1);
        assertEquals(1, count("Messages are JSON objects again {not_forwarded=3}"), logs.toString());
    }

    @Test
    void shouldForwardRawBytesToAPlainGateAndAckAtOnce() {
        start("C_IOGATE");
        receiveWithMd("msg-3", 7);
        List<ObjectNode> out = rt.call(() -> ((FakeGate) rt.service("out").behavior()).sent);
        assertEquals(1, out.size());
        assertTrue(out.get(0).get("payload").asText().startsWith("{\"id\": \"msg-3\""));
        assertFalse(out.get(0).get("has_temp").asBoolean(), "the input route is not sent to the output");
        assertEquals(1, rt.call(() -> input().sent.size()));
    }

    @Test
    void shouldSayOnceThatTheOutputIsMissingAndOnceWhenItIsBack() {
        start("C_SOME_DURABLE_OUTPUT");
        rt.gclassesGone(List.of("C_SOME_DURABLE_OUTPUT"));
        clock.advance(GRACE_MS);   // no revision came: the output's service goes down until the gclass is back
        for (int i = 1; i <= 3; i++) receiveWithMd("lost-" + i, i);
        assertEquals(1, count("Output gate NOT FOUND"), logs.toString());
        assertEquals(3, stats().get("refused").asInt());
        assertEquals(3, stats().get("nacks_sent").asInt(), "each refused message is nacked: the producer sends again");
        assertEquals(0, stats().get("acks_sent").asInt());
        rt.gclassArrived(DURABLE_OUTPUT);
        receiveWithMd("back", 4);
        assertEquals(1, count("Output gate back"), logs.toString());
        assertEquals(1, count("refused=3"), logs.toString());
        assertEquals(1, rt.call(() -> output().stored.size()));
    }

    @Test
    void shouldSubscribeAgainToAnInputGateThatWasRebuilt() {
        start("C_SOME_DURABLE_OUTPUT");
        rt.gclassesGone(List.of("C_IOGATE"));
        rt.gclassArrived(GATE);   // it hands over no state: the input gate's service is rebuilt
        receiveWithMd("before", 1);
        assertEquals(0, rt.call(() -> output().stored.size()), "the rebuilt gate has no subscriber yet");
        clock.advance(499);
        receiveWithMd("still-before", 2);
        assertEquals(0, rt.call(() -> output().stored.size()), "not before timeout_check_gates");
        clock.advance(1);
        receiveWithMd("after", 3);
        assertEquals(1, rt.call(() -> output().stored.size()), "subscribed again after timeout_check_gates");
        assertEquals("after", rt.call(() -> output().stored.get(0).get("id").asText()));
    }

    @Test
    void shouldTraceForwardsAndAcks() {
        start("C_SOME_DURABLE_OUTPUT");
        rt.command("trace-on service=relay level=messages");
        receiveWithMd("msg-t", 8);
        rt.run(() -> output().confirmAll());
        assertEquals(1, count("message forwarded, ack when durable"), logs.toString());
        assertEquals(1, count("ack sent upstream"), logs.toString());
    }

    /** The relay works with any output by its spec: its sources name no gclass but its own. */
    @Test
    void shouldNameNoOtherGclassInItsSources() throws IOException {
        Pattern gclassName = Pattern.compile("\\bC_[A-Z][A-Z0-9_]*\\b");
        Set<String> named = new TreeSet<>();
        try (Stream<Path> files = Files.walk(Path.of("src/main/java"))) {
            for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java"))::iterator) {
                Matcher m = gclassName.matcher(Files.readString(f));
                while (m.find()) named.add(m.group());
            }
        }
        assertEquals(Set.of("C_RELAY"), named);
    }
}
