// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.iogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.channel.Channel;
import io.gatehouse.core.ConfigException;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.FakeTube;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Recorder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** C_IOGATE over three C_CHANNELs with fake tubes below them: routing, copies, flow control, commands, logs. */
@Timeout(30)
class IoGateTest {
    private static final String CHANNEL = "{\"name\": \"%1$s\", \"gclass\": \"C_CHANNEL\", \"children\": ["
            + "{\"name\": \"%1$s\", \"gclass\": \"C_FAKE_TUBE\", \"kw\": {\"peername\": \"10.0.0.%2$d:5000\", "
            + "\"sockname\": \"127.0.0.1:7778\"}}]}";
    private static final String CONFIG = "{\"services\": [{\"name\": \"gate\", \"gclass\": \"C_IOGATE\", "
            + "\"kw\": {\"send_type\": %s}, \"children\": [" + String.format(CHANNEL, "A", 1) + ", "
            + String.format(CHANNEL, "B", 2) + ", " + String.format(CHANNEL, "C", 3) + "]}]}";

    private final ManualClock clock = new ManualClock();
    private final List<String> logs = Collections.synchronizedList(new ArrayList<>());
    private final Consumer<LogCapture.Rec> sink = r -> logs.add(r.level + " " + r.gobj + " " + r.msg + " " + r.fields);
    private LogCapture capture;

    private YunoRuntime rt;
    private GObj gate;
    private Recorder app;

    @BeforeEach
    void setUp() {
        capture = new LogCapture(sink);
        start(0);
    }

    private void start(int sendType) {
        if (rt != null) rt.close();
        rt = YunoRuntime.builder().name("gwtest").role("gw").clock(clock)
                .gclass(IoGate.SPEC, Channel.SPEC, FakeTube.SPEC)
                .config(String.format(CONFIG, sendType)).build().start();
        gate = rt.service("gate");
        app = Recorder.create(rt, "app");
        rt.run(() -> gate.subscribe(null, app.gobj()));
    }

    @AfterEach
    void tearDown() {
        rt.close();
        if (capture != null) capture.close();
    }

    // --- given/when helpers ---

    private FakeTube tube(String channel) {
        return rt.call(() -> (FakeTube) gate.child(channel).bottom().behavior());
    }

    private void open(String... channels) {
        for (String c : channels) rt.call(tube(c)::open);
    }

    private void close(String... channels) {
        for (String c : channels) rt.call(tube(c)::close);
    }

    private static ObjectNode msg(String text) {
        return Kw.withGbuffer(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8));
    }

    private int send(ObjectNode kw) {
        return rt.call(() -> gate.send(Ev.EV_SEND_MESSAGE, kw, null));
    }

    private List<String> payloads(String channel) {
        return rt.call(tube(channel)::payloads);
    }

    private ObjectNode statsData() {
        ObjectNode env = rt.command("stats-yuno service=gate");
        assertEquals(0, env.get("result").asInt(), env.toString());
        return (ObjectNode) env.get("data");
    }

    private int count(String text) {
        synchronized (logs) {
            return (int) logs.stream().filter(l -> l.contains(text)).count();
        }
    }

    private long gateTx() {
        return rt.call(() -> ((IoGate) gate.behavior()).lastStats().get("txMsgs").asLong());
    }

    // --- send_type 0 ---

    @Test
    void shouldStickToOneOpenChannelAndFailOverInOrder() {
        open("A", "B");
        for (int i = 0; i < 10; i++) assertEquals(0, send(msg("m" + i)));
        assertEquals(10, payloads("A").size());
        assertEquals(0, payloads("B").size());
        close("A");
        send(msg("after-close"));
        assertEquals(List.of("after-close"), payloads("B"));
        open("A");
        send(msg("still-b"));
        assertEquals(List.of("after-close", "still-b"), payloads("B"));
        close("B");
        send(msg("back-to-a"));
        assertEquals("back-to-a", payloads("A").get(10));
        assertEquals(13, gateTx());
    }

    @Test
    void shouldSkipADisabledChannel() {
        open("A", "B");
        ObjectNode r = rt.command("disable-channel service=gate channel_name=^A$");
        assertEquals(0, r.get("result").asInt(), r.toString());
        send(msg("x"));
        assertEquals(List.of("x"), payloads("B"));
        assertTrue(payloads("A").isEmpty());
    }

    @Test
    void shouldSendToTheChannelOfTemp() {
        open("A", "B", "C");
        ObjectNode kw = msg("to-c");
        kw.putObject(Kw.TEMP).put("channel", "C");
        send(kw);
        assertEquals(List.of("to-c"), payloads("C"));
        ObjectNode byRef = msg("to-b");
        rt.run(() -> Kw.putRef(byRef.putObject(Kw.TEMP), "channel_gobj", gate.child("B")));
        send(byRef);
        assertEquals(List.of("to-b"), payloads("B"));
        assertTrue(payloads("A").isEmpty());
    }

    @Test
    void shouldDropAndLogWhenNoChannelIsOpen() {
        assertEquals(0, send(msg("lost")));
        assertTrue(logs.stream().anyMatch(l -> l.contains("No channel FOUND to send")), logs.toString());
        assertEquals(0, gateTx());
        ObjectNode kw = msg("unknown");
        kw.putObject(Kw.TEMP).put("channel", "Z");
        assertEquals(0, send(kw));
        assertEquals(0, gateTx());
    }

    @Test
    void shouldSayOnceThatNoChannelTakesMessagesAndOnceWhenOneDoesAgain() {
        for (int i = 0; i < 5; i++) assertEquals(0, send(msg("lost-" + i)));
        ObjectNode all = msg("lost-broadcast");
        all.put(Kw.SEND_TYPE, IoGate.SEND_ALL);
        send(all);
        assertEquals(1, count("No channel FOUND to send"), logs.toString());
        open("B");
        send(msg("found"));
        send(msg("found-2"));
        assertEquals(List.of("found", "found-2"), payloads("B"));
        assertEquals(1, count("A channel takes messages again {dropped=6}"), logs.toString());
        close("B");
        send(msg("lost-again"));
        assertEquals(2, count("No channel FOUND to send"), "a new streak is said again: " + logs);
    }

    @Test
    void shouldSayOnceThatANamedChannelIsNotFound() {
        open("A");
        for (int i = 0; i < 3; i++) {
            ObjectNode kw = msg("for-z");
            kw.putObject(Kw.TEMP).put("channel", "Z");
            send(kw);
        }
        assertEquals(1, count("No channel FOUND to send"), logs.toString());
        ObjectNode kw = msg("for-a");
        kw.putObject(Kw.TEMP).put("channel", "A");
        send(kw);
        assertEquals(1, count("Named channels found again {dropped=3}"), logs.toString());
        assertEquals(List.of("for-a"), payloads("A"));
    }

    @Test
    void shouldRefuseAnUnknownSendType() {
        rt.close();
        assertThrows(ConfigException.class, () -> YunoRuntime.builder().name("bad").clock(clock)
                .gclass(IoGate.SPEC, Channel.SPEC, FakeTube.SPEC).config(String.format(CONFIG, 3)).build());
        start(0);
        ObjectNode r = rt.command("write-attr service=gate attr=send_type value=7");
        assertEquals(-1, r.get("result").asInt(), r.toString());
        assertEquals(0L, (long) rt.call(() -> gate.readLong(IoGate.SEND_TYPE)), "the value stays");
    }

    // --- send_type 1 ---

    @Test
    void shouldBroadcastACopyToEveryOpenChannelAndTheOriginalToTheLast() {
        open("A", "B", "C");
        ByteBuf original = Unpooled.copiedBuffer("XXpayload-0123456789", StandardCharsets.UTF_8);
        original.skipBytes(2);                       // only what is left to read is copied
        original.retain();                           // the sender keeps a reference
        ObjectNode kw = Kw.withGbuffer(original);
        kw.put(Kw.SEND_TYPE, 1);
        kw.put("label", "L1");
        assertEquals(0, send(kw));
        for (String c : List.of("A", "B", "C")) {
            assertEquals(List.of("payload-0123456789"), payloads(c), c);
            assertEquals("L1", tube(c).sent.get(0).kw.get("label").asText());
        }
        assertEquals(0, original.readableBytes(), "the sender finds it read out, as after a send to one");
        assertEquals(1, original.refCnt());
        original.release();
        assertEquals(3, gateTx());
    }

    @Test
    void shouldShareAKwWithoutGbufferInBroadcast() {
        start(1);
        open("A", "B", "C");
        ObjectNode kw = Kw.create();
        kw.put("a", 1);
        send(kw);
        for (String c : List.of("A", "B", "C")) assertEquals(1, tube(c).sent.get(0).kw.get("a").asInt());
        assertEquals(3, gateTx());
    }

    @Test
    void shouldBroadcastOnlyToOpenChannels() {
        start(1);
        open("A", "C");
        send(msg("two"));
        assertEquals(List.of("two"), payloads("A"));
        assertTrue(payloads("B").isEmpty());
        assertEquals(List.of("two"), payloads("C"));
        assertEquals(2, gateTx());
    }

    @Test
    void shouldLetSendTypeInTheKwOverrideTheAttribute() {
        start(1);
        open("A", "B");
        ObjectNode kw = msg("one");
        kw.put(Kw.SEND_TYPE, 0);
        send(kw);
        assertEquals(List.of("one"), payloads("A"));
        assertTrue(payloads("B").isEmpty());
    }

    // --- send_type 2 ---

    @Test
    void shouldRoundRobinPerMessageOverOpenChannels() {
        start(2);
        open("A", "B", "C");
        for (int i = 0; i < 6; i++) send(msg("m" + i));
        assertEquals(List.of("m0", "m3"), payloads("A"));
        assertEquals(List.of("m1", "m4"), payloads("B"));
        assertEquals(List.of("m2", "m5"), payloads("C"));
        close("B");
        for (int i = 6; i < 10; i++) send(msg("m" + i));
        assertEquals(List.of("m0", "m3", "m6", "m8"), payloads("A"));
        assertEquals(List.of("m2", "m5", "m7", "m9"), payloads("C"));
        assertEquals(10, gateTx());
    }

    // --- up ---

    @Test
    void shouldPublishUpWithTempAndReplyOnTheSameChannel() {
        open("A", "B", "C");
        rt.call(() -> tube("B").receive("question"));
        Recorder.Event e = app.await(Ev.EV_ON_MESSAGE, 1000);
        assertNotNull(e);
        assertEquals("question", e.payloadText());
        assertEquals("B", e.kw.get(Kw.TEMP).get("channel").asText());
        ObjectNode reply = msg("answer");
        reply.set(Kw.TEMP, e.kw.get(Kw.TEMP).deepCopy());
        send(reply);
        assertEquals(List.of("answer"), payloads("B"));
        assertEquals(1, statsData().get("rxMsgs").asLong());
    }

    @Test
    void shouldGiveEachMessageOfAChannelItsTempAndNotAChangeAReceiverMadeToIt() {
        open("A", "B");
        IoGate behavior = rt.call(() -> (IoGate) gate.behavior());
        ObjectNode a1 = rt.call(() -> behavior.temp(gate.child("A")));
        assertEquals("A", a1.get(Kw.TEMP_CHANNEL).asText());
        assertSame(gate.child("A"), Kw.ref(a1, Kw.TEMP_CHANNEL_GOBJ, GObj.class));
        assertSame(a1, rt.call(() -> behavior.temp(gate.child("A"))), "an unchanged __temp__ is made once");
        ObjectNode b1 = rt.call(() -> behavior.temp(gate.child("B")));
        assertEquals("B", b1.get(Kw.TEMP_CHANNEL).asText());
        // a receiver that writes into the __temp__ it got must not change the next message's
        rt.run(() -> a1.put("seen_by", "app"));
        ObjectNode a2 = rt.call(() -> behavior.temp(gate.child("A")));
        assertFalse(a2.has("seen_by"), a2.toString());
        assertEquals("A", a2.get(Kw.TEMP_CHANNEL).asText());
        rt.run(() -> a2.put(Kw.TEMP_CHANNEL, "B"));
        assertEquals("A", rt.call(() -> behavior.temp(gate.child("A"))).get(Kw.TEMP_CHANNEL).asText());
        // the messages going up carry it, and a reply routed by it reaches that channel
        rt.call(() -> tube("A").receive("question"));
        Recorder.Event e = app.await(Ev.EV_ON_MESSAGE, 1000);
        assertEquals("A", e.kw.get(Kw.TEMP).get("channel").asText());
        ObjectNode reply = msg("back");
        reply.set(Kw.TEMP, rt.call(() -> behavior.temp(gate.child("A"))));
        send(reply);
        assertEquals(List.of("back"), payloads("A"));
    }

    @Test
    void shouldPublishOpenAndCloseWithTemp() {
        open("C");
        Recorder.Event e = app.await(Ev.EV_ON_OPEN, 1000);
        assertEquals("C", e.kw.get(Kw.TEMP).get("channel").asText());
        assertEquals("10.0.0.3:5000", e.kw.get("peername").asText());
        close("C");
        assertEquals("C", app.await(Ev.EV_ON_CLOSE, 1000).kw.get(Kw.TEMP).get("channel").asText());
        assertEquals(0, statsData().get("rxMsgs").asLong());
    }

    @Test
    void shouldPublishTheInnerEventOfAnIevMessage() {
        open("A");
        rt.run(() -> {
            ObjectNode kw = Kw.create();
            kw.put("__iev_event__", Ev.EV_ON_ID);
            kw.put("id", "x");
            gate.child("A").bottom().publish(Ev.EV_ON_IEV_MESSAGE, kw);
        });
        Recorder.Event e = app.await(Ev.EV_ON_ID, 1000);
        assertNotNull(e);
        assertEquals("A", e.kw.get(Kw.TEMP).get("channel").asText());
        assertFalse(e.kw.has("__iev_event__"));
    }

    // --- EV_DROP ---

    @Test
    void shouldDropOnlyTheChannelOfTemp() {
        open("A", "B");
        ObjectNode kw = Kw.create();
        kw.putObject(Kw.TEMP).put("channel", "A");
        rt.call(() -> gate.send(Ev.EV_DROP, kw, null));
        assertEquals(1, tube("A").drops);
        assertEquals(0, tube("B").drops);
        assertEquals(1, rt.call(() -> ((IoGate) gate.behavior()).channelsOpened()));
    }

    @Test
    void shouldDropEveryOpenChannelWithoutTemp() {
        open("A", "B");
        rt.call(() -> gate.send(Ev.EV_DROP, null, null));
        assertEquals(1, tube("A").drops);
        assertEquals(1, tube("B").drops);
        assertEquals(0, tube("C").drops);     // closed: not dropped
        assertEquals(0, rt.call(() -> ((IoGate) gate.behavior()).channelsOpened()));
    }

    @Test
    void shouldAnswerAnErrorWhenDroppingAnUnknownChannel() {
        ObjectNode kw = Kw.create();
        kw.putObject(Kw.TEMP).put("channel", "nope");
        assertEquals(-1, (int) rt.call(() -> gate.send(Ev.EV_DROP, kw, null)));
        assertTrue(logs.stream().anyMatch(l -> l.contains("channel NOT FOUND")));
    }

    // --- flow control ---

    @Test
    void shouldPassResumeInputToTheChannelOfTempOrToEveryOpenChannel() {
        open("A", "B");
        ObjectNode kw = Kw.create();
        kw.putObject(Kw.TEMP).put("channel", "B");
        rt.call(() -> gate.send(Ev.EV_RESUME_INPUT, kw, null));
        assertEquals(1, tube("B").sent.size());
        assertEquals(Ev.EV_RESUME_INPUT, tube("B").sent.get(0).event);
        assertEquals(0, tube("A").sent.size());
        rt.call(() -> gate.send(Ev.EV_RESUME_INPUT, null, null));
        assertEquals(1, tube("A").sent.size());
        assertEquals(2, tube("B").sent.size());
        assertEquals(0, tube("C").sent.size());      // closed: not told
        assertEquals(0, (int) rt.call(() -> gate.child("C").send(Ev.EV_RESUME_INPUT, null, null)));
        assertEquals(0, gateTx(), "flow control is not a message");
    }

    // --- stats ---

    @Test
    void shouldAnswerTheStatsEnvelopeWithCountersRatesAndChannels() {
        open("A", "B");
        send(msg("1"));
        rt.call(() -> tube("B").receive("r"));
        ObjectNode env = rt.command("stats-yuno service=gate");
        assertEquals(0, env.get("result").asInt());
        assertEquals("", env.get("comment").asText());
        assertTrue(env.get("schema").isNull());
        JsonNode data = env.get("data");
        for (String k : List.of("txMsgs", "rxMsgs", "txMsgsec", "rxMsgsec", "maxtxMsgsec", "maxrxMsgsec")) {
            assertTrue(data.has(k), k);
        }
        assertEquals(1, data.get("txMsgs").asLong());
        assertEquals(1, data.get("rxMsgs").asLong());
        JsonNode channels = data.get("channels");
        assertEquals(3, channels.size());
        assertEquals(1, channels.get("A").get("txMsgs").asLong());
        assertEquals(1, channels.get("B").get("rxMsgs").asLong());
        assertEquals(6, channels.get("C").size(), "bare counters only");
    }

    @Test
    void shouldComputeGateRatesWhenReadWithTheSeedRule() {
        open("A");
        statsData();                                       // opens the window
        for (int i = 0; i < 19; i++) send(msg("m"));
        clock.advance(1900);
        ObjectNode d = statsData();
        assertEquals(10, d.get("txMsgsec").asLong());     // 19 / 1.9 s
        assertEquals(10, d.get("maxtxMsgsec").asLong());
        assertEquals(10, d.get("channels").get("A").get("txMsgsec").asLong());
        for (int i = 0; i < 30; i++) send(msg("m"));
        clock.advance(500);
        // a second reader (a parent reading the gate directly) 0.5 s later: last rates, window kept
        ObjectNode other = rt.call(() -> gate.stats("", null, null));
        assertEquals(10, other.get("data").get("txMsgsec").asLong());
        clock.advance(1000);
        d = statsData();                                   // 30 msgs over 1.5 s since the first reader
        assertEquals(20, d.get("txMsgsec").asLong());
        assertEquals(20, d.get("maxtxMsgsec").asLong());
        clock.advance(10_000);
        d = statsData();
        assertEquals(0, d.get("txMsgsec").asLong());
        assertEquals(20, d.get("maxtxMsgsec").asLong());
    }

    @Test
    void shouldResetGateAndChannelCountersWithTheResetFilter() {
        open("A");
        send(msg("m"));
        ObjectNode env = rt.command("stats-yuno service=gate stats=__reset__");
        assertEquals(0, env.get("data").get("txMsgs").asLong());
        assertEquals(0, env.get("data").get("channels").get("A").get("txMsgs").asLong());
    }

    // --- commands ---

    @Test
    void shouldViewChannelsAsRowsWithHeaderAndSeparator() {
        open("B");
        send(msg("m"));
        ObjectNode r = rt.command("view-channels service=gate");
        assertEquals(0, r.get("result").asInt(), r.toString());
        assertTrue(r.get("comment").asText().endsWith(": 3 channels"), r.get("comment").asText());
        assertEquals("gw^gwtest: 3 channels", r.get("comment").asText());
        JsonNode rows = r.get("data");
        assertEquals(5, rows.size());
        assertTrue(rows.get(0).asText().startsWith("  Channel name"));
        assertTrue(rows.get(1).asText().startsWith("=========="));
        String b = rows.get(3).asText();
        assertTrue(b.startsWith("B "), b);
        assertTrue(b.contains("10.0.0.2:5000"), b);
        assertTrue(b.contains("127.0.0.1:7778"), b);
        String[] cols = b.trim().split("\\s+");
        assertEquals("Y", cols[1]);      // opened
        assertEquals("1", cols[2]);      // tx

        ObjectNode opened = rt.command("view-channels service=gate opened=1");
        assertEquals(3, opened.get("data").size());
        assertTrue(opened.get("comment").asText().endsWith(": 1 channels"));
    }

    @Test
    void shouldSelectChannelsByRegularExpression() {
        ObjectNode r = rt.command("view-channels service=gate channel_name=A|C");
        assertEquals(4, r.get("data").size());
        ObjectNode none = rt.command("view-channels service=gate channel_name=^zz");
        assertEquals(-1, none.get("result").asInt());
        assertTrue(none.get("comment").asText().contains("matches no channel"));
        ObjectNode bad = rt.command("enable-channel service=gate channel_name=(");
        assertEquals(-1, bad.get("result").asInt());
        assertEquals("regcomp() failed", bad.get("comment").asText());
    }

    @Test
    void shouldEnableAndDisableChannels() {
        ObjectNode r = rt.command("disable-channel service=gate channel_name=B");
        assertEquals(0, r.get("result").asInt());
        assertEquals(3, r.get("data").size());
        assertTrue(rt.call(() -> gate.child("B").isDisabled()));
        assertFalse(rt.call(() -> gate.child("B").isRunning()));
        assertFalse(rt.call(() -> gate.child("B").bottom().isRunning()));
        r = rt.command("enable-channel service=gate channel_name=B");
        assertEquals(0, r.get("result").asInt());
        assertFalse(rt.call(() -> gate.child("B").isDisabled()));
        assertTrue(rt.call(() -> gate.child("B").isRunning()));
        assertTrue(rt.call(() -> gate.child("B").bottom().isRunning()));
    }

    @Test
    void shouldTraceChannelsOnAndOff() {
        rt.command("trace-on-channel service=gate channel_name=C");
        assertTrue(rt.call(() -> gate.child("C").isTraced("messages")));
        assertTrue(rt.call(() -> gate.child("C").isTraced("connection")));
        ObjectNode v = rt.command("view-channels service=gate channel_name=C");
        assertTrue(v.get("data").get(2).asText().contains(" Y "), v.toString());
        rt.command("trace-off-channel service=gate");
        assertFalse(rt.call(() -> gate.child("C").isTraced("messages")));
    }

    @Test
    void shouldResetChannelStatsByCommand() {
        open("A");
        send(msg("m"));
        rt.call(() -> tube("A").receive("r"));
        ObjectNode r = rt.command("reset-stats-channel service=gate channel_name=A");
        assertEquals(0, r.get("result").asInt());
        String[] cols = r.get("data").get(2).asText().trim().split("\\s+");
        assertEquals("0", cols[2]);
        assertEquals("0", cols[3]);
        assertEquals(0, statsData().get("channels").get("A").get("txMsgs").asLong());
        assertEquals(1, statsData().get("txMsgs").asLong(), "the gate's own counters stay");
    }

    @Test
    void shouldListItsCommandsInHelp() {
        ObjectNode h = rt.command("help service=gate");
        String text = h.get("data").toString();
        for (String c : List.of("view-channels", "enable-channel", "disable-channel", "trace-on-channel",
                "trace-off-channel", "reset-stats-channel")) {
            assertTrue(text.contains(c), c);
        }
    }

    @Test
    void shouldLogAChildThatIsNotAChannel() {
        rt.close();
        rt = YunoRuntime.builder().name("bad").gclass(IoGate.SPEC, Channel.SPEC, FakeTube.SPEC)
                .config("{\"services\": [{\"name\": \"gate\", \"gclass\": \"C_IOGATE\", \"children\": ["
                        + "{\"name\": \"t\", \"gclass\": \"C_FAKE_TUBE\"}, " + String.format(CHANNEL, "A", 1) + "]}]}")
                .build().start();
        assertTrue(logs.stream().anyMatch(l -> l.contains("IOGate child must be a C_CHANNEL gclass")));
        assertNull(rt.service("gate").bottom());
    }
}
