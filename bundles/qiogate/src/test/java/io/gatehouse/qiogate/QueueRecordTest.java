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
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueFactory;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.MemTrQueueFactory;
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

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A bottom that {@link GClassSpec#takesQueueRecords() takes queue records} (C_KAFKA) gets each message as its
 * stored bytes and its queue handle; the bytes with the handle's numbers as {@code __md_trq__} are what a bottom
 * given JSON gets, its acks by those numbers clear the queue, and a record the queue cannot hand so comes as JSON.
 */
class QueueRecordTest {
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

    /** Keeps what it is sent as the JSON a bottom given JSON would see: the record plus the handle's numbers. */
    static final class RecordBottom implements GObjBehavior {
        final GObj gobj;
        final List<String> wire = new ArrayList<>();
        final List<long[]> numbers = new ArrayList<>();
        int asRecords;

        RecordBottom(GObj g) {
            this.gobj = g;
        }

        int acSend(String ev, ObjectNode kw, GObj src) {
            QueueMessage m = Kw.ref(kw, Kw.QUEUE_MESSAGE, QueueMessage.class);
            ByteBuf b = Kw.takeGbuffer(kw);
            try {
                String bytes = b.toString(StandardCharsets.UTF_8);
                if (m == null) {
                    wire.add(bytes);
                    ObjectNode md = (ObjectNode) Kw.parse(bytes).get(TrQueue.MD_TRQ);
                    numbers.add(new long[] {md.get(TrQueue.MSG_ROWID).asLong(), md.get(TrQueue.MSG_T).asLong(),
                            md.get(TrQueue.MSG_GEN).asLong()});
                } else {
                    asRecords++;
                    ObjectNode whole = Kw.parse(bytes);
                    whole.putObject(TrQueue.MD_TRQ).put(TrQueue.MSG_ROWID, m.rowid()).put(TrQueue.MSG_T, m.t())
                            .put(TrQueue.MSG_GEN, m.generation());
                    wire.add(Kw.toJson(whole));
                    numbers.add(new long[] {m.rowid(), m.t(), m.generation()});
                }
            } catch (java.io.IOException e) {
                throw new AssertionError(e);
            } finally {
                b.release();
            }
            return 0;
        }

        /** All the sent records answered in one {@link Kw#QUEUE_ACKS}, with {@code result}. */
        void answerAll(int result, long... extra) {
            long[] a = new long[4 * numbers.size() + extra.length];
            int i = 0;
            for (long[] n : numbers) {
                a[i++] = n[0];
                a[i++] = n[1];
                a[i++] = n[2];
                a[i++] = result;
            }
            System.arraycopy(extra, 0, a, i, extra.length);
            numbers.clear();
            ObjectNode kw = Kw.create();
            Kw.putRef(kw, Kw.QUEUE_ACKS, a);
            gobj.publish(Ev.EV_ON_MESSAGE, kw);
        }

        void ackAll() {
            for (long[] n : numbers) {
                String ack = "{\"" + Kw.MD_TRQ + "\":{\"" + TrQueue.MSG_ROWID + "\":" + n[0] + ",\"" + TrQueue.MSG_T
                        + "\":" + n[1] + ",\"" + TrQueue.MSG_GEN + "\":" + n[2] + ",\"result\":0}}";
                gobj.publish(Ev.EV_ON_MESSAGE, Kw.withGbuffer(Unpooled.copiedBuffer(ack, StandardCharsets.UTF_8)));
            }
            numbers.clear();
        }
    }

    static final GClassSpec<RecordBottom> RECORD_BOTTOM = GClassSpec.builder("C_RECORD_BOTTOM", RecordBottom.class)
            .description("takes queue records")
            .takesQueueRecords()
            .fsm(Fsm.<RecordBottom>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, RecordBottom::acSend)
                    .ignore(Ev.EV_DROP).publishes(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE).build())
            .factory(RecordBottom::new).build();

    private void start(TrQueueFactory f) {
        String gate = "{\"gclass\":\"C_QIOGATE\",\"kw\":{\"topic_name\":\"t\",\"fsync_policy\":\"none\"},\"children\":[";
        rt = YunoRuntime.builder().name("t").dataDir(tmp).clock(clock)
                .gclass(new QIoGateGClass(f).spec(), RECORD_BOTTOM, JsonRecordTest.RAW_BOTTOM)
                .config("{\"services\":[{\"name\":\"qr\"," + gate.substring(1)
                        + "{\"name\":\"b\",\"gclass\":\"C_RECORD_BOTTOM\"}]},{\"name\":\"qj\"," + gate.substring(1)
                        + "{\"name\":\"b\",\"gclass\":\"C_RAW_BOTTOM\"}]}]}")
                .build().start();
        rt.run(() -> {
            for (String q : new String[] {"qr", "qj"}) rt.yuno().service(q).child("b").publish(Ev.EV_ON_OPEN, Kw.create());
        });
    }

    private RecordBottom recordBottom() {
        return (RecordBottom) rt.yuno().service("qr").child("b").behavior();
    }

    private List<String> sameGeneration(String q, List<String> wire) {
        return rt.call(() -> {
            long gen = ((QIoGate) rt.yuno().service(q).behavior()).queue().generation();
            List<String> out = new ArrayList<>();
            for (String w : wire) out.add(w.replace("\"__msg_gen__\":" + gen + "}", "\"__msg_gen__\":G}"));
            return out;
        });
    }

    private void sendBoth(String msg) {
        rt.run(() -> {
            for (String q : new String[] {"qr", "qj"}) {
                try {
                    assertEquals(0, rt.yuno().service(q).send(Ev.EV_SEND_MESSAGE, Kw.parse(msg), null));
                } catch (java.io.IOException e) {
                    throw new AssertionError(e);
                }
            }
        });
    }

    private List<String> messages() {
        return List.of("{}", "{\"id\":\"r-1\",\"n\":17}", "{\"s\":\"\\u00e9\\\"q\\\" \\\\ \\n\",\"a\":[1,{\"b\":null}]}",
                "{\"s\":\"__md_trq__\"}", "{\"id\":\"r-5\"}");
    }

    @Test
    void shouldHandRecordsThatSayWhatTheJsonSaysAndClearThemByTheirAcks() {
        real = new TrQueueFactoryImpl();
        start(real);
        for (String m : messages()) sendBoth(m);
        List<String> asRecords = rt.call(() -> new ArrayList<>(recordBottom().wire));
        List<String> asJson = rt.call(() -> new ArrayList<>(
                ((JsonRecordTest.RawBottom) rt.yuno().service("qj").child("b").behavior()).wire));
        assertEquals(sameGeneration("qj", asJson), sameGeneration("qr", asRecords));
        assertEquals(4, (int) rt.call(() -> recordBottom().asRecords),
                "all but the one whose bytes hold \"__md_trq__\", which goes as JSON");
        ObjectNode before = (ObjectNode) rt.command("stats-yuno service=qr").get("data");
        assertEquals(5, before.get("pending_acks").asInt());
        rt.run(() -> recordBottom().ackAll());
        ObjectNode after = (ObjectNode) rt.command("stats-yuno service=qr").get("data");
        assertEquals(0, after.get("pending_acks").asInt());
        assertEquals(0, after.get("msgs_in_queue").asInt());
        assertEquals(5, after.get("acks").asInt());
    }

    @Test
    void shouldSendJsonWhenTheQueueCannotHandItsRecords() {
        start(new MemTrQueueFactory());   // TrQueue.recordBytes's default: null
        for (String m : messages()) sendBoth(m);
        assertEquals(0, (int) rt.call(() -> recordBottom().asRecords));
        assertEquals(5, (int) rt.call(() -> recordBottom().wire.size()));
        rt.run(() -> recordBottom().ackAll());
        ObjectNode after = (ObjectNode) rt.command("stats-yuno service=qr").get("data");
        assertEquals(0, after.get("msgs_in_queue").asInt());
    }

    @Test
    void shouldTakeTheAnswersOfABurstInOneEventAndSendWhatTheWindowThenHoldsRoomFor() {
        real = new TrQueueFactoryImpl();
        rt = YunoRuntime.builder().name("t").dataDir(tmp).clock(clock)
                .gclass(new QIoGateGClass(real).spec(), RECORD_BOTTOM)
                .config("{\"services\":[{\"name\":\"qr\",\"gclass\":\"C_QIOGATE\",\"kw\":{\"topic_name\":\"t\","
                        + "\"fsync_policy\":\"none\",\"max_pending_acks\":3},"
                        + "\"children\":[{\"name\":\"b\",\"gclass\":\"C_RECORD_BOTTOM\"}]}]}")
                .build().start();
        rt.run(() -> rt.yuno().service("qr").child("b").publish(Ev.EV_ON_OPEN, Kw.create()));
        rt.run(() -> {
            for (int i = 1; i <= 7; i++) {
                ObjectNode m = Kw.create().put("id", "r-" + i);
                assertEquals(0, rt.yuno().service("qr").send(Ev.EV_SEND_MESSAGE, m, null));
            }
        });
        assertEquals(3, (int) rt.call(() -> recordBottom().asRecords), "the window");
        // the three answered at once, with a stray rowid after them: the next three go in the same turn
        rt.run(() -> recordBottom().answerAll(0, 999, 1, 1, 0));
        ObjectNode st = (ObjectNode) rt.command("stats-yuno service=qr").get("data");
        assertEquals(3, st.get("acks").asInt());
        assertEquals(1, st.get("ignored_acks").asInt(), "the stray one");
        assertEquals(6, (int) rt.call(() -> recordBottom().asRecords));
        // a nack in a burst: sent again after retry_delay, not cleared
        rt.run(() -> recordBottom().answerAll(-1));
        st = (ObjectNode) rt.command("stats-yuno service=qr").get("data");
        assertEquals(3, st.get("nacks").asInt());
        assertEquals(4, st.get("msgs_in_queue").asInt());
        // answers that are not fours are refused whole and clear nothing
        int r = rt.call(() -> {
            ObjectNode kw = Kw.create();
            Kw.putRef(kw, Kw.QUEUE_ACKS, new long[] {4, 1, 1});
            return rt.yuno().service("qr").send(Ev.EV_ON_MESSAGE, kw, rt.yuno().service("qr").child("b"));
        });
        assertEquals(-1, r);
        st = (ObjectNode) rt.command("stats-yuno service=qr").get("data");
        assertEquals(2, st.get("ignored_acks").asInt());
        assertEquals(4, st.get("msgs_in_queue").asInt());
    }
}
