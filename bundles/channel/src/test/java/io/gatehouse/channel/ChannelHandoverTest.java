// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.channel;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.FakeTube;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Revision;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A live upgrade of C_CHANNEL keeps the channel open, its tube and its rate window: the first read after the upgrade
 * closes the window the old revision opened, at the same time and with the same counts.
 */
@Timeout(30)
class ChannelHandoverTest {
    private static final String CONFIG = "{\"services\": [{\"name\": \"up\", \"gclass\": \"C_RECORDER\", \"children\": ["
            + "  {\"name\": \"ch\", \"gclass\": \"C_CHANNEL\", \"children\": ["
            + "     {\"name\": \"tube\", \"gclass\": \"C_FAKE_TUBE\"}]}]}]}";

    private final ManualClock clock = new ManualClock();
    private final LogCapture logs = new LogCapture();
    private YunoRuntime rt;

    @BeforeEach
    void setUp() {
        rt = YunoRuntime.builder().name("chup").clock(clock).upgradeGraceMs(60_000)
                .gclass(Channel.SPEC, FakeTube.SPEC, Recorder.SPEC).config(CONFIG).build().start();
    }

    @AfterEach
    void tearDown() {
        rt.close();
        logs.close();
    }

    private GObj ch() {
        return rt.call(() -> rt.service("up").child("ch"));
    }

    private FakeTube tube() {
        return rt.call(() -> (FakeTube) ch().bottom().behavior());
    }

    private Recorder up() {
        return rt.call(() -> (Recorder) rt.service("up").behavior());
    }

    private ObjectNode statsAsParent() {
        return rt.call(() -> ch().stats("", null, ch().parent()));
    }

    private void sendDown(int n) {
        for (int i = 0; i < n; i++) {
            ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer("m" + i, StandardCharsets.UTF_8));
            assertEquals(0, rt.call(() -> ch().send(Ev.EV_SEND_MESSAGE, kw, null)));
        }
    }

    private void receive(int n) {
        for (int i = 0; i < n; i++) {
            String text = "r" + i;
            rt.run(() -> tube().receive(text));
        }
    }

    @Test
    void shouldStayOpenAndGoOnWithTheRatesOfTheOldRevision() {
        rt.run(() -> tube().open());
        statsAsParent();                       // t = 0: the window opens
        sendDown(30);
        receive(10);
        clock.advance(1500);
        ObjectNode first = statsAsParent();    // t = 1.5 s: 30 tx, 10 rx over 1500 ms
        assertEquals(20, first.get("txMsgsec").asLong());
        sendDown(40);
        receive(20);
        clock.advance(500);                    // t = 2 s, the window opened at 1.5 s
        GObjBehavior old = rt.call(() -> ch().behavior());
        FakeTube tubeBefore = tube();

        Revision.handOver(rt, Revision.next(Channel.SPEC), 1);

        assertNotSame(old, rt.call(() -> ch().behavior()));
        assertEquals(St.ST_OPENED, rt.call(() -> ch().state()), "still open");
        assertSame(tubeBefore, tube(), "the same tube below");
        ObjectNode kept = rt.call(() -> ((Channel) ch().behavior()).lastStats());
        assertEquals(70, kept.get("txMsgs").asLong(), "the counters as they were");
        for (String rate : List.of("txMsgsec", "rxMsgsec", "maxtxMsgsec", "maxrxMsgsec")) {
            assertEquals(first.get(rate), kept.get(rate), "the last rates and maxima as they were: " + rate);
        }
        clock.advance(500);                    // t = 2.5 s: the old window closes at 1 s long
        ObjectNode after = statsAsParent();
        assertEquals(70, after.get("txMsgs").asLong());
        assertEquals(30, after.get("rxMsgs").asLong());
        assertEquals(40, after.get("txMsgsec").asLong(), "40 tx over the 1000 ms since 1.5 s");
        assertEquals(20, after.get("rxMsgsec").asLong());
        assertEquals(40, after.get("maxtxMsgsec").asLong());

        sendDown(1);
        assertEquals(71, rt.call(tube()::payloads).size(), "sends go on through the same tube");
        receive(1);
        assertEquals(31, up().count(Ev.EV_ON_MESSAGE), "messages go on up");
    }

    @Test
    void shouldKeepAClosedChannelClosed() {
        Revision.handOver(rt, Revision.next(Channel.SPEC), 1);
        assertEquals(St.ST_CLOSED, rt.call(() -> ch().state()));
        assertEquals(-1, rt.call(() -> ch().send(Ev.EV_SEND_MESSAGE, Kw.create(), null)));
        rt.run(() -> tube().open());
        assertEquals(St.ST_OPENED, rt.call(() -> ch().state()));
    }

    @Test
    void shouldHoldWhatComesUpWhileSuspendedAndDeliverItInOrder() {
        rt.run(() -> tube().open());
        rt.gclassesGone(List.of("C_CHANNEL"));
        receive(3);
        assertEquals(0, up().count(Ev.EV_ON_MESSAGE), "held in core");
        Revision.handOver(rt, Revision.next(Channel.SPEC), 1);
        List<String> got = new ArrayList<>();
        for (Recorder.Event e : up().events(Ev.EV_ON_MESSAGE)) got.add(e.payloadText());
        assertEquals(List.of("r0", "r1", "r2"), got);
        assertEquals(3, statsAsParent().get("rxMsgs").asLong());
    }

    @Test
    void shouldRebuildWhenTheNewRevisionTakesNoState() {
        rt.run(() -> tube().open());
        sendDown(2);
        ObjectNode report = rt.gclassArrived(Revision.of(Channel.SPEC, 0, Channel.SPEC.factory()));
        assertEquals(0, report.get("gobjs_migrated").asInt());
        assertEquals("up", report.get("rebuilt").get(0).get("service").asText(), report.toString());
        assertEquals(1, logs.count("Live upgrade not possible, service rebuilt from its config"), logs.all().toString());
        assertEquals(St.ST_CLOSED, rt.call(() -> ch().state()), "built again from its config: closed, counters at 0");
        assertEquals(0, statsAsParent().get("txMsgs").asLong());
    }

    @Test
    void shouldRefuseAStateOfAnotherVersion() {
        Channel fresh = rt.call(() -> (Channel) Channel.SPEC.factory().apply(ch()));
        ObjectNode state = rt.call(() -> ((Channel) ch().behavior()).onExport());
        IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> fresh.onImport(state, 2));
        assertTrue(e.getMessage().contains("takes state version 1, not 2"), e.getMessage());
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> fresh.onImport(Kw.create(), 1), "a state without its rate window");
    }
}
