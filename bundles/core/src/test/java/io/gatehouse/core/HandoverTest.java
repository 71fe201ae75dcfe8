// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.Cancellable;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Recorder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A live upgrade keeps the gobj and hands its behaviour's state to a behaviour of the new revision: the attributes,
 * the FSM state, the subscriptions and children stay, the state moves, timers are re-armed from their deadlines,
 * events sent while the gobj waited for its revision are delivered in order, and a gobj that cannot be handed over
 * has its service rebuilt instead.
 */
@Timeout(30)
class HandoverTest {
    static final String ST_COUNTING = "ST_COUNTING";
    static final String ST_DONE = "ST_DONE";

    /** Two revisions of one gclass, told apart by their tag; each counts the events it handles. */
    static class Counter implements GObjBehavior {
        static final List<String> LOG = new ArrayList<>();
        final GObj gobj;
        final String tag;
        long count;
        long deadline = -1;
        Cancellable timer = Cancellable.NONE;
        ByteBuf held;
        boolean suspended;

        Counter(GObj gobj, String tag) {
            this.gobj = gobj;
            this.tag = tag;
        }

        @Override
        public int onStart() {
            deadline = gobj.yuno().clock().monotonicMillis() + 10_000;
            timer = gobj.setTimeout(10_000, Ev.EV_TIMEOUT, null);
            return 0;
        }

        @Override
        public void onSuspend() {
            suspended = true;
        }

        @Override
        public ObjectNode onExport() {
            LOG.add(tag + " export");
            ObjectNode s = Kw.create().put("count", count).put("deadline", deadline);
            if (held != null) Kw.putRef(s, "held", held);
            return s;
        }

        @Override
        public void onImport(ObjectNode state, int stateVersion) {
            if (state.path("refuse").asBoolean()) throw new IllegalArgumentException("refused on purpose");
            LOG.add(tag + " import v" + stateVersion);
            count = state.get("count").asLong();
            deadline = state.get("deadline").asLong();
            held = Kw.ref(state, "held", ByteBuf.class);
            long left = deadline - gobj.yuno().clock().monotonicMillis();
            if (deadline >= 0) timer = gobj.setTimeout(Math.max(0, left), Ev.EV_TIMEOUT, null);
        }

        int acCount(String ev, ObjectNode kw, GObj src) {
            count++;
            LOG.add(tag + " " + kw.path("n").asInt());
            gobj.inc(HANDLED);
            return 0;
        }

        int acTimeout(String ev, ObjectNode kw, GObj src) {
            LOG.add(tag + " timeout");
            return 0;
        }
    }

    static final Attr<Long> HANDLED = Attr.counter("handled", AttrFlag.RSTATS, "events handled");
    static final Attr<Long> LIMIT = Attr.integer("limit", 1, AttrFlag.WR, "a writable setting");

    static final Fsm<Counter> FSM = Fsm.<Counter>builder()
            .state(ST_COUNTING)
                .on(Ev.EV_SEND_MESSAGE, Counter::acCount)
                .on(Ev.EV_TIMEOUT,      Counter::acTimeout)
                .goTo(Ev.EV_DROP, ST_DONE)
            .state(ST_DONE)
                .on(Ev.EV_SEND_MESSAGE, Counter::acCount)
            .build();

    static GClassSpec<Counter> revision(String tag, int stateVersion, Function<GObj, Counter> factory) {
        return GClassSpec.builder("C_COUNTER", Counter.class)
                .description("counts, revision " + tag)
                .attrs(HANDLED, LIMIT)
                .fsm(FSM)
                .stateVersion(stateVersion)
                .factory(factory)
                .build();
    }

    static final GClassSpec<Counter> V1 = revision("v1", 1, g -> new Counter(g, "v1"));
    static final GClassSpec<Counter> V2 = revision("v2", 2, g -> new Counter(g, "v2"));
    static final GClassSpec<Counter> NO_STATE = revision("v3", 0, g -> new Counter(g, "v3"));

    private final ManualClock clock = new ManualClock();
    private YunoRuntime rt;

    @AfterEach
    void tearDown() {
        if (rt != null) rt.close();
        Counter.LOG.clear();
    }

    private void start() {
        rt = YunoRuntime.builder().name("upgrade").clock(clock).upgradeGraceMs(5_000).gclass(V1, Recorder.SPEC)
                .config("{\"services\": [{\"name\": \"top\", \"gclass\": \"C_RECORDER\", \"children\": ["
                        + "{\"name\": \"c\", \"gclass\": \"C_COUNTER\", \"kw\": {\"limit\": 7}}]}]}")
                .build().start();
        rt.run(() -> counterGobj().start());
    }

    private GObj counterGobj() {
        return rt.yuno().service("top").child("c");
    }

    private Counter counter() {
        return rt.call(() -> (Counter) counterGobj().behavior());
    }

    private void send(int n) {
        rt.run(() -> counterGobj().send(Ev.EV_SEND_MESSAGE, Kw.create().put("n", n), null));
    }

    @Test
    void shouldKeepTheGobjAndHandTheStateToTheNewRevision() {
        start();
        send(1);
        send(2);
        GObj before = rt.call(this::counterGobj);
        ObjectNode report = rt.gclassArrived(V2);
        assertEquals(1, report.get("gobjs_migrated").asInt(), report.toString());
        assertEquals(0, report.get("gobjs_resumed").asInt(), "it ran until the handover: " + report);
        assertEquals(0, report.get("rebuilt").size());
        assertSame(before, rt.call(this::counterGobj), "the same gobj");
        assertEquals("v2", counter().tag);
        assertEquals(2, counter().count, "the state moved");
        assertEquals(List.of("v1 1", "v1 2", "v1 export", "v2 import v1"), Counter.LOG);
        assertEquals(2, rt.call(() -> counterGobj().readLong(HANDLED)), "attributes stay, counters included");
        assertEquals(7, rt.call(() -> counterGobj().readLong(LIMIT)));
        assertSame(V2, rt.call(() -> counterGobj().gclass()));
        send(3);
        assertEquals(List.of("v1 1", "v1 2", "v1 export", "v2 import v1", "v2 3"), Counter.LOG);
    }

    @Test
    void shouldKeepTheFsmStateSubscriptionsAndParent() {
        start();
        rt.run(() -> counterGobj().send(Ev.EV_DROP, null, null));
        GObj parent = rt.call(() -> counterGobj().parent());
        List<GObj> subscribers = rt.call(() -> counterGobj().subscribers());
        rt.gclassArrived(V2);
        assertEquals(ST_DONE, rt.call(() -> counterGobj().state()));
        assertSame(parent, rt.call(() -> counterGobj().parent()));
        assertEquals(subscribers, rt.call(() -> counterGobj().subscribers()));
    }

    @Test
    void shouldRearmTimersFromTheirDeadlinesAndDropTheOldOnes() {
        start();
        clock.advance(4_000);
        rt.gclassArrived(V2);
        clock.advance(5_999);
        assertFalse(Counter.LOG.contains("v1 timeout") || Counter.LOG.contains("v2 timeout"), Counter.LOG.toString());
        clock.advance(1);
        assertEquals(List.of("v1 export", "v2 import v1", "v2 timeout"), Counter.LOG,
                "the new revision's timer fires at the old deadline, the old one never");
    }

    @Test
    void shouldHoldEventsWhileSuspendedAndDeliverThemInOrderToTheNewRevision() {
        start();
        send(1);
        assertEquals(List.of("C_COUNTER"), rt.gclassesGone(List.of("C_COUNTER")));
        assertTrue(counter().suspended, "the old behaviour was told to stop taking input");
        send(2);
        send(3);
        assertEquals(List.of("v1 1"), Counter.LOG, "held, not handled");
        assertEquals(java.util.Set.of("C_COUNTER"), rt.suspendedGclasses());
        ObjectNode report = rt.gclassArrived(V2);
        assertEquals(1, report.get("gobjs_resumed").asInt(), report.toString());
        assertEquals(List.of("v1 1", "v1 export", "v2 import v1", "v2 2", "v2 3"), Counter.LOG);
        assertTrue(rt.suspendedGclasses().isEmpty());
    }

    @Test
    void shouldRebuildTheServiceWhenNoRevisionComesWithinTheGrace() {
        start();
        GObj top = rt.service("top");
        rt.gclassesGone(List.of("C_COUNTER"));
        clock.advance(4_999);
        assertSame(top, rt.service("top"), "still waiting");
        clock.advance(1);
        assertEquals(null, rt.service("top"), "given up: the service is down until its gclass returns");
        assertTrue(rt.waiting().get("top").contains("C_COUNTER"));
        rt.gclassArrived(V2);
        assertNotSame(top, rt.service("top"), "built again from its config");
        assertEquals("v2", counter().tag);
    }

    @Test
    void shouldRebuildTheServiceWhenTheNewRevisionTakesNoState() {
        start();
        send(1);
        GObj top = rt.service("top");
        ObjectNode report = rt.gclassArrived(NO_STATE);
        assertEquals(0, report.get("gobjs_migrated").asInt());
        assertEquals("top", report.get("rebuilt").get(0).get("service").asText());
        assertTrue(report.get("rebuilt").get(0).get("reason").asText().contains("does not take state"), report.toString());
        assertNotSame(top, rt.service("top"));
        assertEquals("v3", counter().tag);
        assertEquals(0, counter().count, "a rebuilt gobj starts fresh (its config node, its queue on disk)");
    }

    @Test
    void shouldRebuildAndReleaseTheStateWhenTheImportThrows() {
        GClassSpec<Counter> refusing = revision("v4", 2, g -> new Counter(g, "v4") {
            @Override
            public void onImport(ObjectNode state, int stateVersion) {
                super.onImport(state.put("refuse", true), stateVersion);
            }
        });
        start();
        ByteBuf b = Unpooled.buffer().writeInt(1);
        rt.run(() -> ((Counter) counterGobj().behavior()).held = b);
        ObjectNode report = rt.gclassArrived(refusing);
        assertTrue(report.get("rebuilt").get(0).get("reason").asText().contains("refused on purpose"), report.toString());
        assertEquals(0, b.refCnt(), "a buffer of a state nobody took is released");
    }

    @Test
    void shouldReleaseEveryBufferOfARefusedStateThoughTheirBytesAreEqual() {
        ByteBuf a = Unpooled.buffer().writeInt(7);
        ByteBuf b = Unpooled.buffer().writeInt(7);
        ObjectNode state = Kw.create();
        state.putArray("queue").addPOJO(a).addPOJO(b).addPOJO(a);
        Handover.releaseRefs(state);
        assertEquals(0, a.refCnt(), "equal as JSON nodes, two buffers all the same");
        assertEquals(0, b.refCnt());
    }

    @Test
    void shouldLeaveGobjsAlreadyOnTheRevisionAlone() {
        start();
        rt.gclassArrived(V2);
        Counter.LOG.clear();
        ObjectNode again = rt.gclassArrived(V2);
        assertEquals(0, again.get("gobjs_migrated").asInt());
        assertTrue(Counter.LOG.isEmpty());
    }
}
