// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.iogate;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.channel.Channel;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.FakeTube;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Revision;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A live upgrade of C_IOGATE (and of C_CHANNEL, its children's gclass) keeps the routing and the rates exactly: the
 * sticky channel of send_type 0, the next channel of round robin, the rate windows, the streaks of dropped messages.
 */
@Timeout(30)
class IoGateHandoverTest {
    private static final String CHANNEL = "{\"name\": \"%1$s\", \"gclass\": \"C_CHANNEL\", \"children\": ["
            + "{\"name\": \"%1$s\", \"gclass\": \"C_FAKE_TUBE\"}]}";
    private static final String CONFIG = "{\"services\": [{\"name\": \"gate\", \"gclass\": \"C_IOGATE\", "
            + "\"kw\": {\"send_type\": %s}, \"children\": [" + String.format(CHANNEL, "A") + ", "
            + String.format(CHANNEL, "B") + ", " + String.format(CHANNEL, "C") + "]}]}";

    private final ManualClock clock = new ManualClock();
    private final LogCapture logs = new LogCapture();
    private YunoRuntime rt;
    private Recorder app;

    @AfterEach
    void tearDown() {
        if (rt != null) rt.close();
        logs.close();
    }

    private void start(int sendType) {
        rt = YunoRuntime.builder().name("gwup").role("gw").clock(clock).upgradeGraceMs(60_000)
                .gclass(IoGate.SPEC, Channel.SPEC, FakeTube.SPEC)
                .config(String.format(CONFIG, sendType)).build().start();
        app = Recorder.create(rt, "app");
        rt.run(() -> gate().subscribe(null, app.gobj()));
    }

    private GObj gate() {
        return rt.call(() -> rt.service("gate"));
    }

    private FakeTube tube(String channel) {
        return rt.call(() -> (FakeTube) gate().child(channel).bottom().behavior());
    }

    private void open(String... channels) {
        for (String c : channels) rt.call(tube(c)::open);
    }

    private void close(String... channels) {
        for (String c : channels) rt.call(tube(c)::close);
    }

    private void send(String text) {
        ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8));
        assertEquals(0, rt.call(() -> gate().send(Ev.EV_SEND_MESSAGE, kw, null)));
    }

    private List<String> payloads(String channel) {
        return rt.call(tube(channel)::payloads);
    }

    private ObjectNode stats() {
        ObjectNode env = rt.command("stats-yuno service=gate");
        assertEquals(0, env.get("result").asInt(), env.toString());
        return (ObjectNode) env.get("data");
    }


    @Test
    void shouldStickToTheSameChannelAfterTheUpgrade() {
        start(IoGate.SEND_ONE);
        open("A", "B");
        send("m0");
        close("A");
        send("m1");                // fails over to B, which stays chosen
        open("A");
        GObjBehavior old = rt.call(() -> gate().behavior());
        Revision.handOver(rt, Revision.next(IoGate.SPEC), 1);
        assertNotSame(old, rt.call(() -> gate().behavior()));
        send("m2");
        assertEquals(List.of("m1", "m2"), payloads("B"), "still B: a fresh gate would have taken A, the first open");
        assertEquals(List.of("m0"), payloads("A"));
        assertEquals(3, rt.call(() -> ((IoGate) gate().behavior()).lastStats().get("txMsgs").asLong()));
    }

    @Test
    void shouldGoOnWithTheRoundRobinWhereItWas() {
        start(IoGate.SEND_ROUND_ROBIN);
        open("A", "B", "C");
        send("m0");
        send("m1");
        Revision.handOver(rt, Revision.next(IoGate.SPEC), 1);
        send("m2");
        send("m3");
        assertEquals(List.of("m0", "m3"), payloads("A"));
        assertEquals(List.of("m1"), payloads("B"));
        assertEquals(List.of("m2"), payloads("C"), "the turn of C, as before the upgrade");
    }

    @Test
    void shouldGoOnWithTheRatesOfTheGateAndOfItsChannels() {
        start(IoGate.SEND_ALL);
        open("A", "B");
        stats();                   // t = 0: the windows open
        for (int i = 0; i < 15; i++) send("a" + i);
        clock.advance(1500);
        ObjectNode first = stats();
        assertEquals(20, first.get("txMsgsec").asLong(), "30 copies over 1500 ms");
        for (int i = 0; i < 20; i++) send("b" + i);
        clock.advance(400);
        ObjectNode unread = rt.call(() -> ((IoGate) gate().behavior()).lastStats());

        Revision.handOver(rt, Revision.next(IoGate.SPEC), 1);
        Revision.handOver(rt, Revision.next(Channel.SPEC), 3);

        assertEquals(unread, rt.call(() -> ((IoGate) gate().behavior()).lastStats()),
                "counters, last rates and maxima as they were");
        clock.advance(600);        // t = 2.5 s: the window opened at 1.5 s is 1 s long
        ObjectNode after = stats();
        assertEquals(70, after.get("txMsgs").asLong());
        assertEquals(40, after.get("txMsgsec").asLong(), "40 copies over the 1000 ms since 1.5 s");
        assertEquals(40, after.get("maxtxMsgsec").asLong());
        ObjectNode a = (ObjectNode) after.get("channels").get("A");
        assertEquals(35, a.get("txMsgs").asLong());
        assertEquals(20, a.get("txMsgsec").asLong(), "channel A's window, from 1.5 s too");
        assertEquals(0, after.get("channels").get("C").get("txMsgs").asLong());
    }

    @Test
    void shouldAnswerTheSameStatsAndCommandsAcrossTheUpgrade() {
        start(IoGate.SEND_ONE);
        open("A");
        stats();
        send("m0");
        clock.advance(1200);
        ObjectNode before = stats();
        Revision.handOver(rt, Revision.next(IoGate.SPEC), 1);
        Revision.handOver(rt, Revision.next(Channel.SPEC), 3);
        assertEquals(before, stats(), "a read within the second: the same answer");
        ObjectNode vc = rt.command("view-channels service=gate");
        assertEquals(0, vc.get("result").asInt(), vc.toString());
        assertTrue(vc.get("data").get(2).asText().startsWith("A "), vc.toString());
        assertTrue(vc.get("data").get(2).asText().contains(" Y "), "A opened: " + vc);
    }

    @Test
    void shouldGoOnWithTheStreakOfDroppedMessagesAndSayItsEndOnce() {
        start(IoGate.SEND_ONE);
        send("lost-1");
        send("lost-2");
        String noChannel = "No channel FOUND to send: messages are dropped until a channel takes one";
        assertEquals(1, logs.count(noChannel), logs.all().toString());
        Revision.handOver(rt, Revision.next(IoGate.SPEC), 1);
        send("lost-3");
        assertEquals(1, logs.count(noChannel), "the streak goes on, not said again: " + logs.all());
        open("B");
        send("found");
        assertEquals(1, logs.count("A channel takes messages again"), logs.all().toString());
        assertEquals(3L, logs.with("A channel takes messages again").get(0).fields.get("dropped"));
    }

    @Test
    void shouldHoldWhatIsSentWhileSuspendedAndRouteItInOrder() {
        start(IoGate.SEND_ONE);
        open("C");
        rt.gclassesGone(List.of("C_IOGATE"));
        send("h1");
        send("h2");
        assertTrue(payloads("C").isEmpty(), "held in core");
        Revision.handOver(rt, Revision.next(IoGate.SPEC), 1);
        assertEquals(List.of("h1", "h2"), payloads("C"));
        rt.run(() -> tube("C").receive("up"));
        assertEquals("C", app.await(Ev.EV_ON_MESSAGE, 1000).kw.path(Kw.TEMP).path(Kw.TEMP_CHANNEL).asText(),
                "messages go up with the channel they came from");
    }

    @Test
    void shouldRebuildWhenTheNewRevisionTakesNoState() {
        start(IoGate.SEND_ONE);
        open("A");
        GObj before = gate();
        ObjectNode report = rt.gclassArrived(Revision.of(IoGate.SPEC, 0, IoGate.SPEC.factory()));
        assertEquals(0, report.get("gobjs_migrated").asInt());
        assertEquals("gate", report.get("rebuilt").get(0).get("service").asText(), report.toString());
        assertEquals(1, logs.count("Live upgrade not possible, service rebuilt from its config"), logs.all().toString());
        assertNotSame(before, gate());
        assertEquals(0, stats().get("txMsgs").asLong(), "built again from its config");
        assertEquals(0, rt.call(() -> ((IoGate) gate().behavior()).channelsOpened()), "its channels closed with it");
    }
}
