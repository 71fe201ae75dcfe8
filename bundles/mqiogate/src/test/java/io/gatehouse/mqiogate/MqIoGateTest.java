// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.core.ConfigException;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.qiogate.QIoGateGClass;
import io.gatehouse.testkit.FakeBottom;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
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
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** C_MQIOGATE over C_QIOGATE children with fake bottoms, in-memory queues and a manual clock. */
class MqIoGateTest {
    /** A sender of tokens (C_RELAY does): keeps what it is told, by event, with the source. */
    static final class TokenSender implements io.gatehouse.api.GObjBehavior {
        final List<String> told = new ArrayList<>();

        TokenSender(GObj g) {
        }

        int acTokens(String ev, ObjectNode kw, GObj src) {
            long[] t = Kw.ref(kw, Kw.TOKENS, long[].class);
            told.add(src.name() + " " + kw.path(Kw.RESULT).asInt() + " "
                    + java.util.Arrays.toString(java.util.Arrays.copyOf(t, kw.path(Kw.COUNT).asInt())));
            return 0;
        }

        int acDict(String ev, ObjectNode kw, GObj src) {
            told.add(src.name() + " dict " + Kw.toJson(Kw.withoutRefs(kw)));
            return 0;
        }
    }

    static final io.gatehouse.api.GClassSpec<TokenSender> TOKEN_SENDER =
            io.gatehouse.api.GClassSpec.builder("C_TOKEN_SENDER", TokenSender.class)
                    .description("keeps the durability it is told")
                    .fsm(io.gatehouse.api.Fsm.<TokenSender>builder().state(io.gatehouse.api.St.ST_IDLE)
                            .on(Ev.EV_ON_DURABLE_TOKENS, TokenSender::acTokens)
                            .on(Ev.EV_ON_DURABLE, TokenSender::acDict).build())
                    .factory(TokenSender::new).build();

    @TempDir
    Path tmp;

    final MemTrQueueFactory qf = new MemTrQueueFactory();
    /** The children's gclass (a test may put a revision of it that does not answer tokens). */
    io.gatehouse.api.GClassSpec<?> childSpec = new QIoGateGClass(qf).spec();
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

    static String child(String name) {
        return "{\"name\":\"" + name + "\",\"gclass\":\"C_QIOGATE\",\"kw\":{\"topic_name\":\"gate_events\",\"tkey\":\"tm\"},"
                + "\"children\":[{\"name\":\"" + name + "\",\"gclass\":\"C_FAKE_BOTTOM\"}]}";
    }

    YunoRuntime givenGate(String kw, String... children) {
        rt = build(kw, children);
        return rt;
    }

    YunoRuntime build(String kw, String... children) {
        List<String> c = new ArrayList<>();
        for (String n : children) c.add(child(n));
        String cfg = "{\"services\":[{\"name\":\"__output_side__\",\"gclass\":\"C_MQIOGATE\",\"kw\":" + kw
                + ",\"children\":[" + String.join(",", c) + "]}]}";
        return YunoRuntime.builder().name("t").dataDir(tmp).clock(clock)
                .gclass(MqIoGate.SPEC, childSpec, FakeBottom.SPEC, TOKEN_SENDER).config(cfg).build().start();
    }

    GObj gate() {
        return rt.call(() -> rt.yuno().service("__output_side__"));
    }

    FakeBottom bottom(String child) {
        return rt.call(() -> (FakeBottom) gate().child(child).child(child).behavior());
    }

    int send(String json) {
        return rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, Kw.parse(json), null));
    }

    int sendKw(ObjectNode kw) {
        return rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, kw, null));
    }

    /** A message with a durability request tagged {@code "t-" + id}, from {@code sender}. */
    int sendDurable(Recorder sender, String id) {
        ObjectNode kw = Kw.create().put("id", id);
        kw.putObject(Kw.DURABLE).put("tag", "t-" + id);
        return rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, kw, sender.gobj()));
    }

    JsonNode stats() {
        ObjectNode env = rt.command("stats-yuno service=__output_side__");
        assertEquals(0, env.get("result").asInt(), env.toString());
        return env.get("data");
    }

    void openAll(String... children) {
        rt.run(() -> {
            for (String c : children) bottom(c).open();
        });
    }

    int count(String text) {
        synchronized (logs) {
            return (int) logs.stream().filter(l -> l.contains(text)).count();
        }
    }

    /** Lets the tasks already handed to the core loop run (durability and fake acks come on a later turn). */
    void drainLoop() {
        rt.run(() -> { });
        rt.run(() -> { });
    }

    // --- lastdigits ---

    @Test
    void shouldRouteByLastDigitsThroughTheChildren() {
        givenGate("{\"method\":\"lastdigits\",\"digits\":1,\"key\":\"id\"}", "output-0", "output-1");
        openAll("output-0", "output-1");
        assertEquals(0, send("{\"id\":\"dev-0042\"}"));
        assertEquals(0, send("{\"id\":\"dev-0043\"}"));
        assertEquals(1, bottom("output-0").sent().size());
        assertEquals("dev-0042", bottom("output-0").sent().get(0).get("id").asText());
        assertEquals(1, bottom("output-1").sent().size());
        assertEquals("dev-0043", bottom("output-1").sent().get(0).get("id").asText());
    }

    @Test
    void shouldSendToTheFirstChildAndSayWhyWhenTheKeyIsMissingNotAStringOrEmpty() {
        givenGate("{\"method\":\"lastdigits\",\"digits\":1,\"key\":\"id\"}", "Q1", "Q2", "Q3");
        openAll("Q1", "Q2", "Q3");
        for (String bad : List.of("{\"other\":\"5\"}", "{\"id\":5}", "{\"id\":\"\"}")) {
            send(bad);
            send(bad);
            send("{\"id\":\"2\"}");
        }
        assertEquals(6, bottom("Q1").sent().size());
        assertEquals(3, bottom("Q3").sent().size());
        for (String text : List.of("path NOT FOUND", "path MUST BE a json str", "key value WITHOUT LENGTH")) {
            assertEquals(1, count("ERROR C_MQIOGATE^__output_side__ " + text), text + " " + logs);
        }
        assertEquals(3, count("Messages carry their key again"), logs.toString());
        assertEquals(3, count("sent_to_first_child=2"), logs.toString());
    }

    @Test
    void shouldSayABadKeyOnceForAStreakOfMessages() {
        givenGate("{\"method\":\"lastdigits\",\"digits\":1,\"key\":\"id\"}", "Q1", "Q2");
        for (int i = 0; i < 50; i++) send("{\"other\":\"" + i + "\"}");
        send("{\"id\":5}");
        assertEquals(1, count("ERROR C_MQIOGATE"), logs.toString());
        assertEquals(51, stats().get("Q1").get("msgs_in_queue").asInt());
        ObjectNode r = rt.command("command-yuno service=__output_side__ command=which-child key=\"\"");
        assertEquals(1, count("ERROR C_MQIOGATE"), "which-child answers, it does not log: " + logs);
        assertEquals("key value WITHOUT LENGTH", r.path("data").path("fault").asText(), r.toString());
    }

    @Test
    void shouldFollowANestedKeyPath() {
        givenGate("{\"digits\":1,\"key\":\"dev`id\"}", "Q1", "Q2");
        openAll("Q1", "Q2");
        send("{\"dev\":{\"id\":\"7\"}}");
        assertEquals(1, bottom("Q2").sent().size());
    }

    // --- Config ---

    @Test
    void shouldRefuseAChildThatIsNotCQiogate() {
        String cfg = "{\"services\":[{\"name\":\"m\",\"gclass\":\"C_MQIOGATE\",\"children\":["
                + child("Q1") + ",{\"name\":\"x\",\"gclass\":\"C_FAKE_BOTTOM\"}]}]}";
        ConfigException e = assertThrows(ConfigException.class, () -> YunoRuntime.builder().name("t").dataDir(tmp)
                .gclass(MqIoGate.SPEC, new QIoGateGClass(qf).spec(), FakeBottom.SPEC).config(cfg).build());
        assertTrue(e.getMessage().contains("must be C_QIOGATE") && e.getMessage().contains("C_FAKE_BOTTOM"),
                e.getMessage());
    }

    @Test
    void shouldRefuseAnUnknownMethod() {
        ConfigException e = assertThrows(ConfigException.class, () -> build("{\"method\":\"lastdigit\"}", "Q1"));
        assertTrue(e.getMessage().contains("lastdigit"), e.getMessage());
    }

    @Test
    void shouldTakeTheMethodInAnyCaseAndShowItsCanonicalName() {
        givenGate("{\"method\":\" Broadcast \"}", "Q1", "Q2");
        assertEquals(0, send("{\"id\":\"1\"}"));
        assertEquals(1, stats().get("Q2").get("msgs_in_queue").asInt(), "broadcast");
        ObjectNode attrs = rt.command("read-attrs service=__output_side__");
        assertTrue(attrs.toString().contains("\"method\":\"broadcast\""), attrs.toString());
    }

    // --- broadcast ---

    @Test
    void shouldBroadcastACopyToEveryChildAndAnswerStatsPerChild() {
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2", "Q3");
        assertEquals(0, send("{\"id\":\"1\"}"));
        ObjectNode env = rt.command("stats-yuno service=__output_side__");
        assertEquals(0, env.get("result").asInt());
        assertEquals("", env.get("comment").asText());
        assertTrue(env.get("schema").isNull());
        JsonNode d = env.get("data");
        assertEquals(List.of("Q1", "Q2", "Q3"), fieldNames(d));
        for (String q : List.of("Q1", "Q2", "Q3")) {
            assertEquals(1, d.get(q).get("msgs_in_queue").asInt(), q);
            assertEquals(0, d.get(q).get("pending_acks").asInt(), q);
            assertTrue(d.get(q).has("txMsgs"), "the child's bottom counters: " + d.get(q));
            assertTrue(d.get(q).has("oldest_pending_age_ms"));
        }
        openAll("Q1", "Q2", "Q3");
        for (String q : List.of("Q1", "Q2", "Q3")) {
            assertEquals(1, bottom(q).sent().size());
            assertEquals(1, stats().get(q).get("pending_acks").asInt());
        }
    }

    @Test
    void shouldSendToAChildCreatedOrNotToADestroyedOneOnceMessagesHaveFlowed() {
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2");
        assertEquals(0, send("{\"id\":\"1\"}"));
        rt.run(() -> gate().createChild("Q3", "C_QIOGATE", Kw.create().put("topic_name", "gate_events").put("tkey", "tm")));
        assertEquals(0, send("{\"id\":\"2\"}"));
        assertEquals(List.of("Q1", "Q2", "Q3"), fieldNames(stats()));
        assertEquals(2, stats().get("Q1").get("msgs_in_queue").asInt());
        assertEquals(1, stats().get("Q3").get("msgs_in_queue").asInt(), "the child created after the first message");
        rt.run(() -> gate().child("Q2").destroy());
        assertEquals(0, send("{\"id\":\"3\"}"));
        assertEquals(List.of("Q1", "Q3"), fieldNames(stats()), "the destroyed child is not a destination");
        assertEquals(3, stats().get("Q1").get("msgs_in_queue").asInt());
        assertEquals(2, stats().get("Q3").get("msgs_in_queue").asInt());
    }

    @Test
    void shouldBroadcastTheFullGbufferToEveryChild() {
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2", "Q3");
        openAll("Q1", "Q2", "Q3");
        sendKw(Kw.withGbuffer(Unpooled.copiedBuffer("{\"id\":\"g\"}", StandardCharsets.UTF_8)));
        for (String q : List.of("Q1", "Q2", "Q3")) assertEquals("g", bottom(q).sent().get(0).get("id").asText(), q);
    }

    @Test
    void shouldSayOnceThatAChildCannotStoreItsCopyAndOnceWhenEveryChildStoresAgain() {
        qf.failingTopics.add("Q2/gate_events");
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2", "Q3");
        for (int i = 0; i < 4; i++) assertEquals(-1, send("{\"id\":\"" + i + "\"}"));
        assertEquals(1, count("Broadcast: a child could not store its copy"), logs.toString());
        qf.failingTopics.clear();
        assertEquals(0, send("{\"id\":\"ok\"}"));
        assertEquals(1, count("Broadcast: every child stores its copy again"), logs.toString());
        assertEquals(1, count("C_MQIOGATE^__output_side__ Broadcast: every child stores its copy again {refused=4}"),
                logs.toString());
        assertEquals(5, stats().get("Q1").get("msgs_in_queue").asInt(), "the other destinations kept every copy");
    }

    @Test
    void shouldKeepFlowingToOneDestinationWhileTheOtherIsDown() {
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2");
        rt.run(() -> bottom("Q1").autoAck = 0);
        openAll("Q1");
        for (int i = 1; i <= 20; i++) send("{\"id\":\"" + i + "\"}");
        assertEquals(20, bottom("Q1").sent().size());
        drainLoop();
        assertEquals(0, stats().get("Q1").get("msgs_in_queue").asInt());
        assertEquals(20, stats().get("Q2").get("msgs_in_queue").asInt(), "the queue of the down destination grows");
        assertTrue(bottom("Q2").sent().isEmpty());

        openAll("Q2");
        List<ObjectNode> got = bottom("Q2").sent();
        assertEquals(20, got.size());
        for (int i = 0; i < 20; i++) assertEquals(String.valueOf(i + 1), got.get(i).get("id").asText());
    }

    // --- durability ---

    @Test
    void shouldLetTheChildAnswerTheSenderOfARoutedMessage() {
        qf.autoDurable = false;
        givenGate("{\"method\":\"lastdigits\",\"digits\":1}", "output-0", "output-1");
        Recorder sender = Recorder.create(rt, "sender");
        assertEquals(0, sendDurable(sender, "dev-0043"));
        drainLoop();
        assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "not durable yet");
        rt.run(() -> qf.opened.get(1).makeDurable());
        Recorder.Event told = sender.await(Ev.EV_ON_DURABLE, 5000);
        assertNotNull(told);
        assertEquals("output-1", told.src, "the child that stored it answers, not the C_MQIOGATE");
        assertEquals("t-dev-0043", told.kw.path("tag").asText());
        drainLoop();
        assertEquals(1, sender.count(Ev.EV_ON_DURABLE));
    }

    @Test
    void shouldNotAnswerARoutedMessageThatTheChildCannotStore() {
        qf.failingTopics.add("output-0/gate_events");
        givenGate("{\"method\":\"lastdigits\",\"digits\":1}", "output-0", "output-1");
        Recorder sender = Recorder.create(rt, "sender");
        assertEquals(-1, sendDurable(sender, "dev-0042"));
        drainLoop();
        assertEquals(0, sender.count(Ev.EV_ON_DURABLE));
    }

    @Test
    void shouldTellDurableOnceWhenEveryChildStoredItsCopy() {
        qf.autoDurable = false;
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2", "Q3");
        Recorder sender = Recorder.create(rt, "sender");
        assertEquals(0, sendDurable(sender, "1"));
        for (int i = 0; i < 3; i++) {
            drainLoop();
            assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "not all durable after " + i);
            MemTrQueueFactory.Mem q = qf.opened.get(i);
            rt.run(q::makeDurable);
        }
        Recorder.Event told = sender.await(Ev.EV_ON_DURABLE, 5000);
        assertNotNull(told, "EV_ON_DURABLE once every copy is durable");
        assertEquals("t-1", told.kw.path("tag").asText());
        assertEquals("__output_side__", told.src, "the C_MQIOGATE answers for its children");
        drainLoop();
        assertEquals(1, sender.count(Ev.EV_ON_DURABLE), "once, not per child");
    }

    @Test
    void shouldTellDurableOnceAfterTheSendWhenEveryCopyIsDurableAtOnce() {
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2");
        Recorder sender = Recorder.create(rt, "sender");
        rt.run(() -> {
            ObjectNode kw = Kw.create().put("id", "1");
            kw.putObject(Kw.DURABLE).put("tag", "t-1");
            assertEquals(0, gate().send(Ev.EV_SEND_MESSAGE, kw, sender.gobj()));
            assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "never inside the send");
        });
        assertNotNull(sender.await(Ev.EV_ON_DURABLE, 5000));
        drainLoop();
        assertEquals(1, sender.count(Ev.EV_ON_DURABLE));
    }

    @Test
    void shouldNotTellDurableWhenOneChildCannotStore() {
        qf.failingTopics.add("Q2/gate_events");
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2", "Q3");
        Recorder sender = Recorder.create(rt, "sender");
        assertEquals(-1, sendDurable(sender, "1"));
        drainLoop();
        assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "Q1 and Q3 stored theirs, Q2 did not");
        assertEquals(1, stats().get("Q1").get("msgs_in_queue").asInt());
        assertEquals(1, stats().get("Q3").get("msgs_in_queue").asInt());
    }

    // --- durability by token ---

    /** The same tables, declaring durability by dict only (what a revision from before tokens declares). */
    private static <B extends io.gatehouse.api.GObjBehavior> io.gatehouse.api.GClassSpec<B> withoutTokens(
            io.gatehouse.api.GClassSpec<B> spec) {
        return io.gatehouse.testkit.Revision.withoutDurableTokens(spec);
    }

    private GObj tokenSender() {
        return rt.call(() -> rt.yuno().root().createVolatileChild("sender", "C_TOKEN_SENDER", null));
    }

    private List<String> told(GObj sender) {
        return rt.call(() -> new ArrayList<>(((TokenSender) sender.behavior()).told));
    }

    private int sendToken(GObj sender, String id, long token) {
        ObjectNode kw = Kw.create().put("id", id).put(Kw.DURABLE_TOKEN, token);
        return rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, kw, sender));
    }

    @Test
    void shouldLetEachChildTellTheSenderTheTokensOneCommitCovers() {
        qf.autoDurable = false;
        givenGate("{\"method\":\"lastdigits\",\"digits\":1}", "output-0", "output-1");
        GObj sender = tokenSender();
        for (int i = 0; i < 10; i++) assertEquals(0, sendToken(sender, "dev-" + i, 100 + i));
        drainLoop();
        assertTrue(told(sender).isEmpty(), "not durable yet");
        rt.run(() -> qf.opened.get(1).makeDurable());
        drainLoop();
        assertEquals(List.of("output-1 0 [101, 103, 105, 107, 109]"), told(sender), "one event, the child's own tokens");
        rt.run(() -> qf.opened.get(0).makeDurable());
        drainLoop();
        assertEquals(List.of("output-1 0 [101, 103, 105, 107, 109]", "output-0 0 [100, 102, 104, 106, 108]"),
                told(sender));
        for (String child : List.of("output-0", "output-1")) {
            rt.run(() -> bottom(child).open());
            for (JsonNode m : rt.call(() -> bottom(child).sent())) {
                assertTrue(m.get(Kw.DURABLE_TOKEN) == null, "the token is not stored: " + m);
            }
        }
    }

    @Test
    void shouldTellABroadcastTokenOnceEveryCopyIsDurable() {
        qf.autoDurable = false;
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2");
        GObj sender = tokenSender();
        assertEquals(0, sendToken(sender, "1", 41));
        rt.run(() -> qf.opened.get(0).makeDurable());
        drainLoop();
        assertTrue(told(sender).isEmpty(), "one copy of two");
        rt.run(() -> qf.opened.get(1).makeDurable());
        drainLoop();
        assertEquals(List.of("__output_side__ 0 [41]"), told(sender));
    }

    @Test
    void shouldHandAChildThatDoesNotAnswerTokensTheTokenInADict() {
        // a child revision from before tokens (a live upgrade half done): it answers dicts only
        childSpec = withoutTokens(new QIoGateGClass(qf).spec());
        assertTrue(!childSpec.answersDurableTokens());
        givenGate("{\"method\":\"lastdigits\",\"digits\":1}", "output-0", "output-1");
        GObj sender = tokenSender();
        assertEquals(0, sendToken(sender, "dev-3", 7));
        drainLoop();
        assertEquals(List.of("output-1 dict {\"" + Kw.DURABLE_TOKEN + "\":7}"), told(sender));
    }

    // --- consistent, which-child, view-channels ---

    @Test
    void shouldRouteConsistentlyAndAnswerWhichChild() {
        givenGate("{\"method\":\"consistent\",\"key\":\"id\"}", "output-0", "output-1", "output-2");
        openAll("output-0", "output-1", "output-2");
        for (String key : List.of("dev-0042", "dev-0043", "sensor-17", "a1b2c3")) {
            ObjectNode r = rt.command("command-yuno service=__output_side__ command=which-child key=" + key);
            assertEquals(0, r.get("result").asInt(), r.toString());
            String child = r.get("data").get("child").asText();
            int before = bottom(child).sent().size();
            send("{\"id\":\"" + key + "\"}");
            assertEquals(before + 1, bottom(child).sent().size(), key + " -> " + child);
        }
        send("{\"id\":12345}");
        ObjectNode r = rt.command("command-yuno service=__output_side__ command=which-child key=12345");
        String child = r.get("data").get("child").asText();
        assertEquals("12345", bottom(child).sent().get(bottom(child).sent().size() - 1).get("id").asText());
    }

    @Test
    void shouldAnswerWhichChildForLastdigitsAndBroadcast() {
        givenGate("{\"method\":\"lastdigits\",\"digits\":1}", "output-0", "output-1");
        ObjectNode r = rt.command("command-yuno service=__output_side__ command=which-child key=dev-0043");
        assertEquals("output-1", r.get("data").get("child").asText(), r.toString());
        rt.close();
        rt = build("{\"method\":\"broadcast\"}", "Q1", "Q2");
        r = rt.command("command-yuno service=__output_side__ command=which-child key=x");
        assertEquals(2, r.get("data").get("children").size(), r.toString());
    }

    @Test
    void shouldAnswerViewChannelsWithoutGates() {
        givenGate("{\"method\":\"broadcast\"}", "Q1");
        ObjectNode r = rt.command("view-channels service=__output_side__");
        assertEquals(0, r.get("result").asInt(), r.toString());
        assertTrue(r.get("comment").asText().endsWith(": 0 channels"), r.toString());
    }

    @Test
    void shouldTraceWhereEachMessageGoes() {
        givenGate("{\"method\":\"lastdigits\",\"digits\":1}", "output-0", "output-1");
        rt.command("trace-on service=__output_side__ level=messages");
        send("{\"id\":\"dev-0043\"}");
        assertEquals(1, count("message routed {child=output-1"), logs.toString());
    }

    static List<String> fieldNames(JsonNode n) {
        List<String> out = new ArrayList<>();
        n.fieldNames().forEachRemaining(out::add);
        return out;
    }
}
