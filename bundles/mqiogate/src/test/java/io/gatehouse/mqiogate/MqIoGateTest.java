// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import io.gatehouse.testkit.MemTrQueueFactory;
import io.gatehouse.testkit.FakeBottom;
import io.gatehouse.testkit.Recorder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Glog;
import io.gatehouse.api.Kw;
import io.gatehouse.api.LogSink;
import io.gatehouse.core.ConfigException;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.qiogate.QIoGateGClass;
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
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** C_MQIOGATE over C_QIOGATE children with fake bottoms and in-memory queues. */
class MqIoGateTest {
    @TempDir
    Path tmp;

    final MemTrQueueFactory qf = new MemTrQueueFactory();
    final List<String> logs = Collections.synchronizedList(new ArrayList<>());
    final LogSink sink = (level, gobj, msg, fields) -> logs.add(level + " " + gobj + " " + msg + " " + fields);
    YunoRuntime rt;

    @BeforeEach
    void addSink() {
        Glog.addSink(sink);
    }

    @AfterEach
    void close() {
        Glog.removeSink(sink);
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
        return YunoRuntime.builder().name("t").dataDir(tmp)
                .gclass(MqIoGate.SPEC, new QIoGateGClass(qf).spec(), FakeBottom.SPEC).config(cfg).build().start();
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

    // --- lastdigits (seeds/000 and check 38) ---

    @Test
    void shouldMapLastDigitsAsTheSeedSays() {
        assertEquals(0, MqIoGate.lastdigits("dev-0042", 1, 2));
        assertEquals(1, MqIoGate.lastdigits("dev-0043", 1, 2));
        assertEquals(3, MqIoGate.lastdigits("a1b2c3", 1, 4));
        assertEquals(1, MqIoGate.lastdigits("1234", 1, 3));
        assertEquals(2, MqIoGate.lastdigits("12ab", 1, 3), "0xb = 11, 11 mod 3 = 2");
        assertEquals(1, MqIoGate.lastdigits("07", 2, 3));
        assertEquals(0xc3 % 7, MqIoGate.lastdigits("a1b2c3", 2, 7), "c3 is read as hexadecimal");
        assertEquals(0, MqIoGate.lastdigits("zz", 2, 3), "no hex digit: 0");
        assertEquals(1, MqIoGate.lastdigits("x1g", 2, 3), "hex prefix of 1g is 1");
        assertEquals(2, MqIoGate.lastdigits("42", 10, 5), "fewer characters than digits: all of them");
        assertEquals(0, MqIoGate.lastdigits("a-5", 2, 3), "negative: first child");
        assertEquals(new java.math.BigInteger("123456789012345678901234567890").mod(java.math.BigInteger.valueOf(7)).intValue(),
                MqIoGate.lastdigits("123456789012345678901234567890", 40, 7), "long keys do not overflow");
    }

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
    void shouldSendToTheFirstChildAndLogWhenTheKeyIsMissingEmptyOrNotAString() {
        givenGate("{\"method\":\"lastdigits\",\"digits\":1,\"key\":\"id\"}", "Q1", "Q2", "Q3");
        openAll("Q1", "Q2", "Q3");
        send("{\"other\":\"5\"}");
        send("{\"id\":5}");
        send("{\"id\":\"\"}");
        assertEquals(3, bottom("Q1").sent().size());
        assertTrue(logs.stream().anyMatch(l -> l.startsWith("ERROR") && l.contains("path NOT FOUND")), logs.toString());
        assertTrue(logs.stream().anyMatch(l -> l.startsWith("ERROR") && l.contains("MUST BE a json str")), logs.toString());
        assertTrue(logs.stream().anyMatch(l -> l.startsWith("ERROR") && l.contains("WITHOUT LENGTH")), logs.toString());
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

    // --- broadcast (check 39) ---

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
    void shouldBroadcastTheFullGbufferToEveryChild() {
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2", "Q3");
        openAll("Q1", "Q2", "Q3");
        sendKw(Kw.withGbuffer(Unpooled.copiedBuffer("{\"id\":\"g\"}", StandardCharsets.UTF_8)));
        for (String q : List.of("Q1", "Q2", "Q3")) assertEquals("g", bottom(q).sent().get(0).get("id").asText(), q);
    }

    /** A message with a durability request, from {@code sender}. */
    private int sendDurable(Recorder sender) {
        ObjectNode kw = Kw.create().put("id", "1");
        kw.putObject(Kw.DURABLE).put("tag", "t1");
        return rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, kw, sender.gobj()));
    }

    @Test
    void shouldTellDurableOnceWhenEveryChildStoredItsCopy() {
        qf.autoDurable = false;
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2", "Q3");
        Recorder sender = Recorder.create(rt, "sender");
        assertEquals(0, sendDurable(sender));
        for (int i = 0; i < 3; i++) {
            rt.run(() -> { });
            assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "not all durable after " + i);
            MemTrQueueFactory.Mem q = qf.opened.get(i);
            rt.run(q::makeDurable);
        }
        Recorder.Event told = sender.await(Ev.EV_ON_DURABLE, 2000);
        assertNotNull(told, "EV_ON_DURABLE once every copy is durable");
        assertEquals("t1", told.kw.path("tag").asText());
        rt.run(() -> { });
        assertEquals(1, sender.count(Ev.EV_ON_DURABLE), "once, not per child");
    }

    @Test
    void shouldNotTellDurableWhenOneChildCannotStore() {
        qf.failingTopics.add("Q2/gate_events");
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2", "Q3");
        Recorder sender = Recorder.create(rt, "sender");
        assertEquals(-1, sendDurable(sender));
        rt.run(() -> { });
        rt.run(() -> { });
        assertEquals(0, sender.count(Ev.EV_ON_DURABLE));
        assertEquals(1, stats().get("Q1").get("msgs_in_queue").asInt());
        assertEquals(1, stats().get("Q3").get("msgs_in_queue").asInt());
    }

    @Test
    void shouldKeepFlowingToOneDestinationWhileTheOtherIsDown() {
        givenGate("{\"method\":\"broadcast\"}", "Q1", "Q2");
        rt.run(() -> bottom("Q1").autoAck = 0);
        openAll("Q1");
        for (int i = 1; i <= 20; i++) send("{\"id\":\"" + i + "\"}");
        assertTrue(bottom("Q1").awaitSent(20, 2000));
        long deadline = System.currentTimeMillis() + 2000;
        while (stats().get("Q1").get("msgs_in_queue").asInt() > 0 && System.currentTimeMillis() < deadline) {
            rt.run(() -> { });
        }
        assertEquals(0, stats().get("Q1").get("msgs_in_queue").asInt());
        assertEquals(20, stats().get("Q2").get("msgs_in_queue").asInt(), "the queue of the down destination grows");
        assertTrue(bottom("Q2").sent().isEmpty());

        openAll("Q2");
        List<ObjectNode> got = bottom("Q2").sent();
        assertEquals(20, got.size());
        for (int i = 0; i < 20; i++) assertEquals(String.valueOf(i + 1), got.get(i).get("id").asText());
    }

    // --- consistent ---

    @Test
    void shouldSpreadConsistentKeysEvenlyAndMoveAboutOneNthWhenAChildIsAdded() {
        List<String> four = List.of("n0", "n1", "n2", "n3");
        List<String> five = List.of("n0", "n1", "n2", "n3", "n4");
        int keys = 20000;
        int[] count = new int[4];
        int moved = 0;
        for (int k = 0; k < keys; k++) {
            String key = "dev-" + k;
            int a = MqIoGate.rendezvous(key, four);
            count[a]++;
            int b = MqIoGate.rendezvous(key, five);
            if (b != a) {
                moved++;
                assertEquals(4, b, "a key moves only to the new child");
            }
        }
        for (int c : count) assertTrue(c > keys / 4 * 0.9 && c < keys / 4 * 1.1, "balanced: " + c);
        double f = moved / (double) keys;
        assertTrue(f > 0.17 && f < 0.23, "about 1/5 moved: " + f);
        // the mapping depends on the children's names, not their order
        List<String> reordered = List.of("n3", "n1", "n0", "n2");
        for (int k = 0; k < 1000; k++) {
            String key = "dev-" + k;
            assertEquals(four.get(MqIoGate.rendezvous(key, four)), reordered.get(MqIoGate.rendezvous(key, reordered)));
        }
    }

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
    void shouldPinTheConsistentMapping() {
        // Documented vectors (docs/GATES.md): a change of the hash would move every key of every deployment.
        List<String> names = List.of("output-0", "output-1", "output-2");
        StringBuilder sb = new StringBuilder();
        for (String key : List.of("dev-0042", "dev-0043", "sensor-17", "a1b2c3")) {
            sb.append(key).append("->").append(names.get(MqIoGate.rendezvous(key, names))).append(' ');
        }
        assertEquals(PINNED, sb.toString().trim());
    }

    static final String PINNED = "dev-0042->output-0 dev-0043->output-1 sensor-17->output-0 a1b2c3->output-2";

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

    static List<String> fieldNames(JsonNode n) {
        List<String> out = new ArrayList<>();
        n.fieldNames().forEachRemaining(out::add);
        return out;
    }
}
