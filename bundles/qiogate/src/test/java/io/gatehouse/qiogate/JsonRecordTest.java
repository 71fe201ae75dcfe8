// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.api.queue.TrQueueFactory;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.MemTrQueueFactory;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A message handed as its record's bytes ({@link Kw#JSON_RECORD}, what C_RELAY sends a gclass that takes records)
 * is stored, sent down and told durable exactly as its dict is: two gates side by side, one given dicts and one
 * given the same messages as bytes, send the same bytes to their bottoms and tell the sender the same.
 */
class JsonRecordTest {
    @TempDir
    Path tmp;

    private final ManualClock clock = new ManualClock();
    private YunoRuntime rt;
    private TrQueueFactoryImpl real;

    @AfterEach
    void close() {
        if (rt != null) rt.close();
        if (real != null) real.close();
    }

    /** A bottom that keeps the bytes it is sent, as a socket would write them. */
    static final class RawBottom implements GObjBehavior {
        final GObj gobj;
        final List<String> wire = new ArrayList<>();

        RawBottom(GObj g) {
            this.gobj = g;
        }

        int acSend(String ev, ObjectNode kw, GObj src) {
            ByteBuf b = Kw.takeGbuffer(kw);
            wire.add(b.toString(StandardCharsets.UTF_8));
            b.release();
            return 0;
        }
    }

    static final GClassSpec<RawBottom> RAW_BOTTOM = GClassSpec.builder("C_RAW_BOTTOM", RawBottom.class)
            .description("keeps the bytes sent to it")
            .fsm(Fsm.<RawBottom>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, RawBottom::acSend)
                    .ignore(Ev.EV_DROP).publishes(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE).build())
            .factory(RawBottom::new).build();

    private void start(TrQueueFactory f) {
        String gate = "{\"gclass\":\"C_QIOGATE\",\"kw\":{\"topic_name\":\"t\",\"fsync_policy\":\"none\"},"
                + "\"children\":[{\"name\":\"b\",\"gclass\":\"C_RAW_BOTTOM\"}]";
        rt = YunoRuntime.builder().name("t").dataDir(tmp).clock(clock)
                .gclass(new QIoGateGClass(f).spec(), RAW_BOTTOM, Recorder.SPEC)
                .config("{\"services\":[{\"name\":\"qd\"," + gate.substring(1) + "},{\"name\":\"qb\","
                        + gate.substring(1) + "}]}")
                .build().start();
        rt.run(() -> {
            for (String q : new String[] {"qd", "qb"}) rt.yuno().service(q).child("b").publish(Ev.EV_ON_OPEN, Kw.create());
        });
    }

    /** What the gate's bottom was sent, its queue's generation (its topic's creation time) written G. */
    private List<String> wire(String q) {
        return rt.call(() -> {
            long gen = ((QIoGate) rt.yuno().service(q).behavior()).queue().generation();
            List<String> out = new ArrayList<>();
            for (String w : ((RawBottom) rt.yuno().service(q).child("b").behavior()).wire) {
                out.add(w.replace("\"__msg_gen__\":" + gen + "}", "\"__msg_gen__\":G}"));
            }
            return out;
        });
    }

    /** Random dicts of the nodes a record holds: strings of every kind, integers, booleans, nulls, nesting. */
    private static ObjectNode random(Random rnd, int depth) {
        ObjectNode o = Kw.create();
        for (int k = rnd.nextInt(5); k > 0; k--) {
            String key = "k" + rnd.nextInt(20);
            switch (depth < 3 ? rnd.nextInt(7) : rnd.nextInt(5)) {
                case 0: o.put(key, rnd.nextLong()); break;
                case 1: o.put(key, rnd.nextBoolean()); break;
                case 2: o.putNull(key); break;
                case 3: o.put(key, rnd.nextInt(100)); break;
                case 4: o.put(key, text(rnd)); break;
                case 5: o.set(key, random(rnd, depth + 1)); break;
                default: o.putArray(key).add(text(rnd)).add(rnd.nextInt()).add(random(rnd, depth + 1));
            }
        }
        return o;
    }

    private static String text(Random rnd) {
        StringBuilder b = new StringBuilder();
        for (int k = rnd.nextInt(10); k > 0; k--) {
            switch (rnd.nextInt(5)) {
                case 0: b.append((char) rnd.nextInt(0x20)); break;
                case 1: b.append((char) (0x80 + rnd.nextInt(0x780))); break;
                case 2: b.append("\"\\/"); break;
                default: b.append((char) (0x20 + rnd.nextInt(0x5f)));
            }
        }
        return b.toString();
    }

    private void sendBoth(Recorder sender, ObjectNode dict, int tag) throws Exception {
        byte[] bytes = Kw.MAPPER.writeValueAsBytes(dict);
        rt.run(() -> {
            ObjectNode d = dict.deepCopy();
            d.putObject(Kw.DURABLE).put("tag", tag);
            assertEquals(0, rt.yuno().service("qd").send(Ev.EV_SEND_MESSAGE, d, sender.gobj()));
            ObjectNode r = Kw.withGbuffer(Unpooled.wrappedBuffer(bytes));
            r.put(Kw.JSON_RECORD, true);
            r.putObject(Kw.DURABLE).put("tag", tag);
            assertEquals(0, rt.yuno().service("qb").send(Ev.EV_SEND_MESSAGE, r, sender.gobj()));
        });
    }

    private void sameBothWays(TrQueueFactory f) throws Exception {
        start(f);
        Recorder sender = Recorder.create(rt, "sender");
        Random rnd = new Random(11);
        int n = 300;
        for (int i = 0; i < n; i++) sendBoth(sender, random(rnd, 0), i);
        sendBoth(sender, Kw.create(), n);
        rt.run(() -> { });
        rt.run(() -> { });
        List<String> dicts = wire("qd");
        assertEquals(n + 1, dicts.size());
        assertEquals(dicts, wire("qb"), "the same bytes on the wire");
        List<Recorder.Event> told = sender.events(Ev.EV_ON_DURABLE);
        assertEquals(2 * (n + 1), told.size());
        List<String> fromDicts = new ArrayList<>();
        List<String> fromBytes = new ArrayList<>();
        for (Recorder.Event e : told) (e.src.equals("qd") ? fromDicts : fromBytes).add(e.kw.toString());
        assertEquals(fromDicts, fromBytes, "durability told alike");
        for (String q : new String[] {"qd", "qb"}) {
            ObjectNode st = (ObjectNode) rt.command("stats-yuno service=" + q).get("data");
            assertEquals(n + 1, st.get("enqueued").asInt(), q);
            assertEquals(0, st.get("enqueue_errors").asInt(), q);
        }
    }

    @Test
    void shouldStoreSendAndTellDurableARecordsBytesAsItsDict() throws Exception {
        real = new TrQueueFactoryImpl();
        sameBothWays(real);
    }

    @Test
    void shouldDoTheSameOverAQueueThatParsesTheBytes() throws Exception {
        sameBothWays(new MemTrQueueFactory());   // TrQueue.appendJson's default: parsed, then appended
    }

    @Test
    void shouldRefuseARecordThatIsNoObject() {
        real = new TrQueueFactoryImpl();
        start(real);
        int r = rt.call(() -> {
            ObjectNode k = Kw.withGbuffer(Unpooled.copiedBuffer("[1,2]", StandardCharsets.UTF_8));
            k.put(Kw.JSON_RECORD, true);
            return rt.yuno().service("qb").send(Ev.EV_SEND_MESSAGE, k, null);
        });
        assertEquals(-1, r);
        assertTrue(wire("qb").isEmpty());
        ObjectNode st = (ObjectNode) rt.command("stats-yuno service=qb").get("data");
        assertEquals(1, st.get("enqueue_errors").asInt());
    }
}
