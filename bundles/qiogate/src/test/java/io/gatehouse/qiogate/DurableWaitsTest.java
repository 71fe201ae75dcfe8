// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.Recorder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The senders waiting for durability, told in one pass per group commit: what a commit covers is told in append
 * order in the turn of the loop that drains it, across senders, across a new topic generation, past a sender that
 * went away or whose action throws. Real gobjs on a yuno, the drain called on its core loop.
 */
@Timeout(30)
class DurableWaitsTest {
    /** A sender whose EV_ON_DURABLE action throws (a bug in it): the waits after its own must still be told. */
    static final class Throwing implements GObjBehavior {
        Throwing(GObj g) {
        }

        int acDurable(String ev, ObjectNode kw, GObj src) {
            throw new IllegalStateException("a bug in the sender, at " + kw.path("tag").asText());
        }
    }

    static final GClassSpec<Throwing> THROWING = GClassSpec.builder("C_THROWING_SENDER", Throwing.class)
            .description("throws at EV_ON_DURABLE")
            .fsm(Fsm.<Throwing>builder().state(St.ST_IDLE).on(Ev.EV_ON_DURABLE, Throwing::acDurable).build())
            .factory(Throwing::new).build();

    /** A sender of tokens: keeps every EV_ON_DURABLE_TOKENS it gets (the tokens, in order, and the result). */
    static final class TokenSender implements GObjBehavior {
        final List<long[]> told = new ArrayList<>();
        final List<Integer> results = new ArrayList<>();

        TokenSender(GObj g) {
        }

        int acTokens(String ev, ObjectNode kw, GObj src) {
            long[] t = Kw.ref(kw, Kw.TOKENS, long[].class);
            told.add(java.util.Arrays.copyOf(t, kw.path(Kw.COUNT).asInt()));
            results.add(kw.path(Kw.RESULT).asInt());
            return 0;
        }

        List<Long> all(int result) {
            List<Long> out = new ArrayList<>();
            for (int i = 0; i < told.size(); i++) {
                if (results.get(i) == result) for (long t : told.get(i)) out.add(t);
            }
            return out;
        }
    }

    static final GClassSpec<TokenSender> TOKEN_SENDER = GClassSpec.builder("C_TOKEN_SENDER", TokenSender.class)
            .description("keeps the tokens told back")
            .fsm(Fsm.<TokenSender>builder().state(St.ST_IDLE).on(Ev.EV_ON_DURABLE_TOKENS, TokenSender::acTokens).build())
            .factory(TokenSender::new).build();

    private final LogCapture log = new LogCapture();
    private YunoRuntime rt;
    private DurableWaits waits;
    private Recorder a;
    private Recorder b;

    @BeforeEach
    void setUp() {
        rt = YunoRuntime.builder().name("waits").gclass(THROWING, TOKEN_SENDER).config("{\"services\": []}").build().start();
        a = Recorder.create(rt, "a");
        b = Recorder.create(rt, "b");
        waits = rt.call(() -> new DurableWaits(rt.yuno().root()));
    }

    @AfterEach
    void tearDown() {
        rt.close();
        log.close();
    }

    private static ObjectNode dict(String tag) {
        return Kw.create().put("tag", tag);
    }

    private static List<String> tags(Recorder r) {
        List<String> out = new ArrayList<>();
        for (Recorder.Event e : r.events(Ev.EV_ON_DURABLE)) out.add(e.kw.path("tag").asText());
        return out;
    }

    @Test
    void shouldTellWhatOneCommitCoversInAppendOrderInOnePass() {
        List<String> all = new ArrayList<>();
        rt.run(() -> {
            for (int i = 1; i <= 1000; i++) {
                Recorder to = i % 3 == 0 ? b : a;
                waits.add(1, i, to.gobj(), dict("r" + i));
            }
            waits.drain(1, 700);
            // told within the drain itself: every sender has its events when the pass returns
            assertEquals(300, waits.size());
        });
        List<String> ta = tags(a);
        List<String> tb = tags(b);
        assertEquals(467, ta.size());
        assertEquals(233, tb.size());
        for (int i = 1, ia = 0, ib = 0; i <= 700; i++) {
            if (i % 3 == 0) assertEquals("r" + i, tb.get(ib++), "b's waits in append order");
            else assertEquals("r" + i, ta.get(ia++), "a's waits in append order");
        }
        rt.run(() -> waits.drain(1, 700));
        assertEquals(467, a.count(Ev.EV_ON_DURABLE), "a commit that covers nothing new tells nobody again");
        rt.run(() -> waits.drain(1, 1000));
        assertEquals(667, a.count(Ev.EV_ON_DURABLE));
        assertEquals(333, b.count(Ev.EV_ON_DURABLE));
        assertTrue(rt.call(() -> waits.isEmpty()));
        assertEquals(0, log.count("Durability waits of another queue generation dropped: their senders are not told"));
    }

    @Test
    void shouldTellTheNewGenerationAndDropTheOlderOnesWhenABatchSpansATopicBackup() {
        rt.run(() -> {
            waits.add(1, 9, a.gobj(), dict("g1-9"));
            waits.add(1, 10, a.gobj(), dict("g1-10"));
            waits.add(2, 1, a.gobj(), dict("g2-1"));
            waits.add(2, 2, b.gobj(), dict("g2-2"));
            waits.add(2, 3, a.gobj(), dict("g2-3"));
            // The first commit of generation 2 covers rows 1 and 2: the waits of generation 1 cannot be told any
            // more (their topic was backed up), those of generation 2 up to its mark are.
            waits.drain(2, 2);
        });
        assertEquals(List.of("g2-1"), tags(a));
        assertEquals(List.of("g2-2"), tags(b));
        assertEquals(1, log.count("Durability waits of another queue generation dropped: their senders are not told"));
        assertEquals(2L, ((Number) log.with("Durability waits of another queue generation dropped: their senders are not told")
                .get(0).fields.get("count")).longValue());
        rt.run(() -> waits.drain(2, 3));
        assertEquals(List.of("g2-1", "g2-3"), tags(a));
        assertTrue(rt.call(() -> waits.isEmpty()));
    }

    @Test
    void shouldKeepTheNewerGenerationWaitingWhenTheMarkIsStillOfTheOlderOne() {
        rt.run(() -> {
            waits.add(1, 5, a.gobj(), dict("g1-5"));
            waits.add(2, 1, a.gobj(), dict("g2-1"));
            waits.drain(1, 5);
        });
        assertEquals(List.of("g1-5"), tags(a));
        // The mark of generation 1 says nothing of generation 2's rows: they wait for a commit of theirs.
        assertEquals(1, (int) rt.call(() -> waits.size()));
    }

    @Test
    void shouldTellTheOthersWhenASenderThrowsOrIsGone() {
        GObj thrower = rt.call(() -> rt.yuno().root().createVolatileChild("thrower", "C_THROWING_SENDER", null));
        Recorder gone = Recorder.create(rt, "gone");
        rt.run(() -> {
            waits.add(1, 1, a.gobj(), dict("1"));
            waits.add(1, 2, thrower, dict("2"));
            waits.add(1, 3, gone.gobj(), dict("3"));
            waits.add(1, 4, b.gobj(), dict("4"));
            waits.add(1, 5, thrower, dict("5"));
            waits.add(1, 6, a.gobj(), dict("6"));
            gone.gobj().destroy();
            waits.drain(1, 6);
        });
        assertEquals(List.of("1", "6"), tags(a));
        assertEquals(List.of("4"), tags(b));
        assertEquals(0, gone.count(Ev.EV_ON_DURABLE));
        assertTrue(rt.call(() -> waits.isEmpty()), "every covered wait leaves, told or not");
        assertEquals(2, log.with("Action failed").size(), "the sender's failure is its own, said by core");
    }

    @Test
    void shouldHandTheWaitsOverInOrderAndTellThemAfterTheImport() {
        ArrayNode state = rt.call(() -> {
            waits.add(1, 1, a.gobj(), dict("1"));
            waits.add(1, 2, b.gobj(), dict("2"));
            waits.add(1, 3, a.gobj(), dict("3"));
            return waits.exportState();
        });
        assertEquals(3, DurableWaits.highestRowid(state));
        DurableWaits next = rt.call(() -> new DurableWaits(rt.yuno().root()));
        rt.run(() -> {
            next.importState(state);
            next.drain(1, 3);
        });
        assertEquals(List.of("1", "3"), tags(a));
        assertEquals(List.of("2"), tags(b));
    }

    private GObj tokenSender(String name) {
        return rt.call(() -> rt.yuno().root().createVolatileChild(name, "C_TOKEN_SENDER", null));
    }

    private TokenSender behaviour(GObj g) {
        return rt.call(() -> (TokenSender) g.behavior());
    }

    private static List<Long> range(long from, long to, long step) {
        List<Long> out = new ArrayList<>();
        for (long t = from; t <= to; t += step) out.add(t);
        return out;
    }

    @Test
    void shouldTellEachSenderItsTokensOfACommitInOneEventInAppendOrder() {
        GObj s1 = tokenSender("s1");
        GObj s2 = tokenSender("s2");
        rt.run(() -> {
            for (int i = 1; i <= 1000; i++) {
                // two senders interleaved, their tokens their own numbers, and a sender of dicts among them
                if (i % 10 == 0) waits.add(1, i, a.gobj(), dict("r" + i));
                else waits.addToken(1, i, i % 2 == 0 ? s2 : s1, 5000 + i);
            }
            waits.drain(1, 700);
        });
        TokenSender t1 = behaviour(s1);
        TokenSender t2 = behaviour(s2);
        assertEquals(1, rt.call(() -> t1.told.size()), "one event per sender per commit");
        assertEquals(1, rt.call(() -> t2.told.size()));
        List<Long> odd = new ArrayList<>();
        List<Long> even = new ArrayList<>();
        for (long i = 1; i <= 700; i++) {
            if (i % 10 == 0) continue;
            (i % 2 == 0 ? even : odd).add(5000 + i);
        }
        assertEquals(odd, rt.call(() -> t1.all(0)));
        assertEquals(even, rt.call(() -> t2.all(0)));
        assertEquals(70, tags(a).size(), "the dicts are told one by one as before");
        rt.run(() -> waits.drain(1, 1000));
        assertEquals(2, rt.call(() -> t1.told.size()));
        assertEquals(500, (int) rt.call(() -> t1.all(0).size()), "every odd rowid's token, told once");
        assertTrue(rt.call(() -> waits.isEmpty()));
    }

    @Test
    void shouldNackTheTokensOfAnOlderGenerationAndOfAClosedQueueAndTellNobodyAtAHandover() {
        GObj s1 = tokenSender("s1");
        rt.run(() -> {
            waits.addToken(1, 9, s1, 19);
            waits.addToken(1, 10, s1, 20);
            waits.add(1, 11, a.gobj(), dict("g1-11"));
            waits.addToken(2, 1, s1, 21);
            waits.addToken(2, 2, s1, 22);
            waits.drain(2, 1);
        });
        TokenSender t1 = behaviour(s1);
        assertEquals(List.of(19L, 20L), rt.call(() -> t1.all(-1)), "an older generation's tokens come back as a nack");
        assertEquals(List.of(21L), rt.call(() -> t1.all(0)));
        assertEquals(List.of(), tags(a), "a dict of an older generation is dropped as before");
        assertEquals(2L, ((Number) log.with("Durability waits of another queue generation dropped: their senders are not told")
                .get(0).fields.get("tokens_nacked")).longValue());
        // the queue closes with one token left: it comes back as a nack too
        int left = rt.call(() -> waits.abandon());
        assertEquals(1, left);
        assertEquals(List.of(19L, 20L, 22L), rt.call(() -> t1.all(-1)));
        // handed to the next revision: nobody is told, the next one tells
        ArrayNode state = rt.call(() -> {
            waits.addToken(3, 1, s1, 31);
            waits.add(3, 2, a.gobj(), dict("g3-2"));
            ArrayNode st = waits.exportState();
            assertEquals(2, waits.clear());
            return st;
        });
        assertEquals(3, rt.call(() -> t1.told.size()), "clear tells nobody");
        DurableWaits next = rt.call(() -> new DurableWaits(rt.yuno().root()));
        rt.run(() -> {
            next.importState(state);
            next.drain(3, 2);
        });
        assertEquals(List.of(21L, 31L), rt.call(() -> t1.all(0)));
        assertEquals(List.of("g3-2"), tags(a));
    }

    @Test
    void shouldRefuseAHandedOverWaitWithNeitherDictNorToken() {
        ArrayNode state = rt.call(() -> {
            waits.addToken(1, 1, a.gobj(), 7);
            ArrayNode st = waits.exportState();
            ((ObjectNode) st.get(0)).remove("token");
            return st;
        });
        DurableWaits next = rt.call(() -> new DurableWaits(rt.yuno().root()));
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> rt.call(() -> {
                    next.importState(state);
                    return null;
                }));
    }

    @Test
    void shouldKeepTheRingToWhatWaitsNotToTheTraffic() {
        GObj s1 = tokenSender("s1");
        rt.run(() -> {
            // 100,000 waits appended before a commit: the ring grows to hold them
            for (int i = 1; i <= 100_000; i++) waits.addToken(1, i, s1, i);
            assertTrue(waits.capacity() >= 100_000);
            int grown = waits.capacity();
            waits.drain(1, 100_000);
            assertEquals(grown, waits.capacity(), "one empty drain is not yet a quiet spell");
            for (int c = 1; c < DurableWaits.SHRINK_AFTER_DRAINS; c++) waits.drain(1, 100_000);
            assertEquals(grown / 2, waits.capacity(), "halved after a spell of quiet commits");
            // a half per spell: quiet commits give the rest back
            for (int c = 0; c < 20 * DurableWaits.SHRINK_AFTER_DRAINS; c++) waits.drain(1, 100_000);
            assertEquals(DurableWaits.MIN_CAPACITY, waits.capacity());
            // then a steady flow of 50 per commit, over a million waits: the ring stays small
            long rowid = 100_000;
            for (int c = 0; c < 20_000; c++) {
                for (int k = 0; k < 50; k++) waits.addToken(1, ++rowid, s1, rowid);
                waits.drain(1, rowid);
                assertTrue(waits.capacity() <= 256, "capacity " + waits.capacity());
            }
        });
        assertEquals(range(1, 1_100_000, 1), rt.call(() -> behaviour(s1).all(0)));
    }

    @Test
    void shouldKeepTheRingOfACommitThatFillsItAndDrainsItEveryTime() {
        GObj s1 = tokenSender("s1");
        rt.run(() -> {
            long rowid = 0;
            for (int k = 0; k < 3_000; k++) waits.addToken(1, ++rowid, s1, rowid);
            int capacity = waits.capacity();
            waits.drain(1, rowid);
            for (int c = 0; c < 200; c++) {
                for (int k = 0; k < 3_000; k++) waits.addToken(1, ++rowid, s1, rowid);
                assertEquals(capacity, waits.capacity(), "commit " + c);
                waits.drain(1, rowid);
                assertEquals(0, waits.size());
            }
        });
        assertEquals(range(1, 603_000, 1), rt.call(() -> behaviour(s1).all(0)));
    }
}
