// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.channel;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.FakeTube;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Recorder;
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
import static org.junit.jupiter.api.Assertions.assertTrue;

@Timeout(30)
class ChannelTest {
    private static final String CONFIG = "{\"services\": [{\"name\": \"up\", \"gclass\": \"C_RECORDER\", \"children\": ["
            + "  {\"name\": \"ch\", \"gclass\": \"C_CHANNEL\", \"children\": ["
            + "     {\"name\": \"tube\", \"gclass\": \"%s\", \"kw\": {\"peername\": \"127.0.0.1:9\", \"sockname\": \"127.0.0.1:7\"}}]}"
            + "]}]}";

    private final ManualClock clock = new ManualClock();
    private final List<String> logs = Collections.synchronizedList(new ArrayList<>());
    private final Consumer<LogCapture.Rec> sink = r -> logs.add(r.level + " " + r.gobj + " " + r.msg);
    private LogCapture capture;

    private YunoRuntime rt;
    private Recorder up;
    private GObj ch;
    private FakeTube tube;

    @BeforeEach
    void setUp() {
        capture = new LogCapture(sink);
        start(FakeTube.GCLASS);
    }

    private void start(String tubeGclass) {
        if (rt != null) rt.close();
        rt = YunoRuntime.builder().name("chtest").clock(clock)
                .gclass(Channel.SPEC, FakeTube.SPEC, FakeTube.SPEC_TX_ONLY, Recorder.SPEC)
                .config(String.format(CONFIG, tubeGclass)).build().start();
        up = (Recorder) rt.service("up").behavior();
        ch = rt.call(() -> rt.service("up").child("ch"));
        tube = (FakeTube) rt.call(() -> ch.bottom().behavior());
    }

    @AfterEach
    void tearDown() {
        rt.close();
        if (capture != null) capture.close();
    }

    private ObjectNode gbufferKw(String text) {
        return Kw.withGbuffer(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8));
    }

    private ObjectNode statsAsParent(String filter) {
        return rt.call(() -> ch.stats(filter, null, ch.parent()));
    }

    @Test
    void shouldTrackOpenedAndPublishWhenTheBottomOpensAndCloses() {
        assertFalse(rt.call(() -> ch.readBool(Channel.OPENED)));
        assertEquals(St.ST_CLOSED, rt.call(ch::state));
        rt.call(tube::open);
        assertTrue(rt.call(() -> ch.readBool(Channel.OPENED)));
        assertEquals(St.ST_OPENED, rt.call(ch::state));
        Recorder.Event open = up.await(Ev.EV_ON_OPEN, 1000);
        assertNotNull(open);
        assertEquals("ch", open.src);
        assertEquals("127.0.0.1:9", open.kw.get("peername").asText());
        rt.call(tube::open);   // a second open is ignored
        assertEquals(1, up.count(Ev.EV_ON_OPEN));
        rt.call(tube::close);
        assertFalse(rt.call(() -> ch.readBool(Channel.OPENED)));
        assertNotNull(up.await(Ev.EV_ON_CLOSE, 1000));
    }

    @Test
    void shouldRefuseSendWhenClosed() {
        int r = rt.call(() -> ch.send(Ev.EV_SEND_MESSAGE, gbufferKw("x"), null));
        assertEquals(-1, r);
        assertTrue(logs.stream().anyMatch(l -> l.contains("Event NOT DEFINED in state")), logs.toString());
        assertEquals(0, tube.sent.size());
        assertEquals(0, statsAsParent("").get("txMsgs").asLong());
    }

    @Test
    void shouldForwardSendMessageToTheBottomAndCountAttempts() {
        rt.call(tube::open);
        assertEquals(0, (int) rt.call(() -> ch.send(Ev.EV_SEND_MESSAGE, gbufferKw("hello"), null)));
        assertEquals(0, (int) rt.call(() -> ch.send(Ev.EV_SEND_MESSAGE, gbufferKw("world"), null)));
        assertEquals(List.of("hello", "world"), rt.call(tube::payloads));
        assertEquals(Ev.EV_SEND_MESSAGE, tube.sent.get(0).event);
        assertEquals(2, statsAsParent("").get("txMsgs").asLong());
    }

    @Test
    void shouldSendTxDataWhenTheBottomIsABareTransport() {
        start(FakeTube.GCLASS_TX_ONLY);
        rt.call(tube::open);
        rt.call(() -> ch.send(Ev.EV_SEND_MESSAGE, gbufferKw("raw"), null));
        assertEquals(Ev.EV_TX_DATA, tube.sent.get(0).event);
        assertEquals("raw", tube.sent.get(0).payload);
    }

    @Test
    void shouldSendASendBatchMessageByMessageToABottomWithoutSendBatches() {
        for (String gclass : List.of(FakeTube.GCLASS, FakeTube.GCLASS_TX_ONLY)) {
            start(gclass);
            rt.call(tube::open);
            ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer("one|two|three", StandardCharsets.UTF_8));
            Kw.putRef(kw, Kw.BATCH, new int[] {0, 3, 4, 7, 8, 13});
            kw.put("tag", 5);
            assertEquals(0, (int) rt.call(() -> ch.send(Ev.EV_SEND_MESSAGE, kw, null)));
            assertEquals(List.of("one", "two", "three"), rt.call(tube::payloads), gclass);
            for (int i = 0; i < 3; i++) {
                assertEquals(5, tube.sent.get(i).kw.path("tag").asInt(), "each keeps the batch's other keys");
                assertFalse(tube.sent.get(i).kw.has(Kw.BATCH));
            }
            assertEquals(3, statsAsParent("").get("txMsgs").asLong());
        }
    }

    @Test
    void shouldSendTheInnerEventOfSendIev() {
        rt.call(tube::open);
        ObjectNode kw = Kw.create();
        kw.put("__iev_event__", "EV_MY_IEV");
        kw.put("a", 1);
        assertEquals(0, (int) rt.call(() -> ch.send(Ev.EV_SEND_IEV, kw, null)));
        assertEquals("EV_MY_IEV", tube.sent.get(0).event);
        assertFalse(tube.sent.get(0).kw.has("__iev_event__"));
        assertEquals(1, statsAsParent("").get("txMsgs").asLong());
    }

    @Test
    void shouldCountRxAndRepublishMessagesAsTheyCame() {
        rt.call(tube::open);
        rt.call(() -> tube.receive("one"));
        rt.call(() -> tube.receive("two"));
        assertEquals("one", up.await(Ev.EV_ON_MESSAGE, 1000).payloadText());
        assertEquals("two", up.await(Ev.EV_ON_MESSAGE, 1000).payloadText());
        assertEquals(2, statsAsParent("").get("rxMsgs").asLong());
    }

    @Test
    void shouldPassDropDownAndCloseWhenTheBottomCloses() {
        rt.call(tube::open);
        rt.call(() -> ch.send(Ev.EV_DROP, null, null));
        assertEquals(1, tube.drops);
        assertFalse(rt.call(() -> ch.readBool(Channel.OPENED)));
        assertNotNull(up.await(Ev.EV_ON_CLOSE, 1000));
    }

    @Test
    void shouldAnswerBareCountersToItsParentAndTheBottomStatsToOthers() {
        rt.call(tube::open);
        rt.call(() -> ch.send(Ev.EV_SEND_MESSAGE, gbufferKw("12345"), null));
        ObjectNode bare = statsAsParent("");
        List<String> keys = new ArrayList<>();
        bare.fieldNames().forEachRemaining(keys::add);
        assertEquals(List.of("txMsgs", "rxMsgs", "txMsgsec", "rxMsgsec", "maxtxMsgsec", "maxrxMsgsec"), keys);
        ObjectNode other = rt.call(() -> ch.stats("", null, null));
        assertEquals(0, other.get("result").asInt());
        assertEquals(5, other.get("data").get("txBytes").asLong());
        assertEquals("127.0.0.1:9", other.get("data").get("peername").asText());
        assertFalse(other.get("data").has("txMsgs"));
        // stats-yuno on the channel's service path reads it as "someone else", too
        ObjectNode viaYuno = rt.command("stats-yuno service=up");
        assertEquals(0, viaYuno.get("result").asInt());
    }

    @Test
    void shouldComputeRatesByTheSeedRuleWhenReadByItsParent() {
        rt.call(tube::open);
        statsAsParent("");                                   // t=0: opens the window
        for (int i = 0; i < 100; i++) rt.call(() -> tube.receive("m"));
        clock.advance(2500);
        ObjectNode s = statsAsParent("");
        assertEquals(40, s.get("rxMsgsec").asLong());       // 100 * 1000 / 2500
        assertEquals(40, s.get("maxrxMsgsec").asLong());
        for (int i = 0; i < 10; i++) rt.call(() -> tube.receive("m"));
        clock.advance(300);
        assertEquals(40, statsAsParent("").get("rxMsgsec").asLong());   // < 1 s: unchanged, window kept
        for (int i = 0; i < 20; i++) rt.call(() -> tube.receive("m"));
        clock.advance(1100);
        s = statsAsParent("");
        assertEquals(21, s.get("rxMsgsec").asLong());       // 30 * 1000 / 1400
        assertEquals(40, s.get("maxrxMsgsec").asLong());
        for (int i = 0; i < 19; i++) rt.call(() -> ch.send(Ev.EV_SEND_MESSAGE, gbufferKw("t"), null));
        clock.advance(1900);
        s = statsAsParent("");
        assertEquals(10, s.get("txMsgsec").asLong());       // 19 / 1.9 s
        assertEquals(0, s.get("rxMsgsec").asLong());
    }

    @Test
    void shouldResetCountersWithTheResetFilter() {
        rt.call(tube::open);
        rt.call(() -> tube.receive("m"));
        rt.call(() -> ch.send(Ev.EV_SEND_MESSAGE, gbufferKw("t"), null));
        ObjectNode s = statsAsParent("__reset__");
        assertEquals(0, s.get("txMsgs").asLong());
        assertEquals(0, s.get("rxMsgs").asLong());
    }

    @Test
    void shouldProxyCommandsToTheBottom() {
        ObjectNode r = rt.command("command-yuno service=up gobj=ch command=ping");
        assertEquals(0, r.get("result").asInt(), r.toString());
        assertEquals("pong tube", r.get("comment").asText());
    }
}
