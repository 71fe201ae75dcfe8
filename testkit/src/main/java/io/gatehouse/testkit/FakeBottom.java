// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.api.queue.TrQueue;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * A stand-in for the C_IOGATE under a C_QIOGATE (gclass C_FAKE_BOTTOM): records what is sent to it, and lets the
 * test publish EV_ON_OPEN, EV_ON_CLOSE and acks to its subscriber (the gate above). Optionally acks by itself.
 */
public final class FakeBottom implements GObjBehavior {
    public static final String GCLASS = "C_FAKE_BOTTOM";

    private static final Fsm<FakeBottom> FSM = Fsm.<FakeBottom>builder()
            .state(St.ST_IDLE)
            .on(Ev.EV_SEND_MESSAGE, FakeBottom::acSend)
            .ignore(Ev.EV_DROP)
            .publishes(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE)
            .build();

    public static final GClassSpec<FakeBottom> SPEC = GClassSpec.builder(GCLASS, FakeBottom.class)
            .description("test bottom")
            .fsm(FSM)
            .factory(FakeBottom::new)
            .build();

    /** The same bottom taking send batches ({@link Kw#BATCH}): it records each message of a batch as one sent. */
    public static final GClassSpec<FakeBottom> SPEC_SEND_BATCHES = GClassSpec.builder(GCLASS, FakeBottom.class)
            .description("test bottom taking send batches")
            .fsm(FSM)
            .takesSendBatches()
            .factory(FakeBottom::new)
            .build();

    private final GObj gobj;
    private final List<ObjectNode> sent = new ArrayList<>();
    /** Ack every message with this result (on a later turn of the loop); null = no automatic ack. */
    public volatile Integer autoAck;
    public volatile int answer;
    /** Keep each message's buffer, unreleased, as a socket's queue would ({@link #keptBuffers}). */
    public volatile boolean keepBuffers;
    private final List<ByteBuf> kept = new ArrayList<>();
    /** Every buffer object sent down, by identity, to tell a buffer reused from one made per message. */
    private int batches;
    private final Set<ByteBuf> buffersSeen = Collections.newSetFromMap(new IdentityHashMap<>());

    private FakeBottom(GObj gobj) {
        this.gobj = gobj;
    }

    public GObj gobj() {
        return gobj;
    }

    private int acSend(String ev, ObjectNode kw, GObj src) {
        int[] batch = Kw.ref(kw, Kw.BATCH, int[].class);
        if (batch != null) return takeBatch(kw, batch);
        ByteBuf b = Kw.takeGbuffer(kw);
        if (b == null) {
            took(Kw.withoutRefs(kw), null);
            return answer;
        }
        synchronized (sent) {
            buffersSeen.add(b);
        }
        try {
            took(parse(b), keepBuffers ? b.retain() : null);
        } finally {
            b.release();
        }
        return answer;
    }

    /** Each message of the batch recorded as if it came alone; under {@link #keepBuffers}, a retained view of it. */
    private int takeBatch(ObjectNode kw, int[] batch) {
        ByteBuf all = Kw.takeGbuffer(kw);
        try {
            synchronized (sent) {
                batches++;
                buffersSeen.add(all);
            }
            for (int i = 0; i + 1 < batch.length; i += 2) {
                ByteBuf one = all.slice(all.readerIndex() + batch[i], batch[i + 1] - batch[i]);
                took(parse(one), keepBuffers ? one.retain() : null);
            }
        } finally {
            all.release();
        }
        return answer;
    }

    private static ObjectNode parse(ByteBuf b) {
        try {
            return Kw.parse(b.duplicate());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Records a message sent (and the buffer kept for it, or null), and acks it later when {@link #autoAck} says. */
    private void took(ObjectNode msg, ByteBuf keptBuffer) {
        synchronized (sent) {
            sent.add(msg);
            if (keptBuffer != null) kept.add(keptBuffer);
            sent.notifyAll();
        }
        Integer r = autoAck;
        if (r != null) {
            ObjectNode ack = TrQueue.answer(msg, r);
            gobj.yuno().eventLoop().execute(() -> ackJson(Kw.toJson(ack)));
        }
    }

    /** How many send batches came (their messages are in {@link #sent}). */
    public int batches() {
        synchronized (sent) {
            return batches;
        }
    }

    public List<ObjectNode> sent() {
        synchronized (sent) {
            return new ArrayList<>(sent);
        }
    }

    /** The buffers kept under {@link #keepBuffers}, in the order they came, still holding what was sent. */
    public List<ByteBuf> keptBuffers() {
        synchronized (sent) {
            return new ArrayList<>(kept);
        }
    }

    /** How many distinct buffer objects the messages came in. */
    public int distinctBuffers() {
        synchronized (sent) {
            return buffersSeen.size();
        }
    }

    public List<Long> sentRowids() {
        List<Long> out = new ArrayList<>();
        for (ObjectNode m : sent()) out.add(m.path("__md_trq__").path("__msg_rowid__").asLong());
        return out;
    }

    public void clear() {
        synchronized (sent) {
            sent.clear();
            batches = 0;
            buffersSeen.clear();
            for (ByteBuf b : kept) b.release();
            kept.clear();
        }
    }

    public boolean awaitSent(int n, long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        synchronized (sent) {
            while (sent.size() < n) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) return false;
                try {
                    sent.wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return true;
        }
    }

    // --- Called on the core thread by tests ---

    public void open() {
        gobj.publish(Ev.EV_ON_OPEN, Kw.create());
    }

    public void close() {
        gobj.publish(Ev.EV_ON_CLOSE, Kw.create());
    }

    /** Acks a message received: its __md_trq__ echoed with result. */
    public int ack(ObjectNode msg, int result) {
        return ackJson(Kw.toJson(TrQueue.answer(msg, result)));
    }

    public int ackJson(String json) {
        ByteBuf b = Unpooled.copiedBuffer(json, StandardCharsets.UTF_8);
        return gobj.publish(Ev.EV_ON_MESSAGE, Kw.withGbuffer(b));
    }

    /**
     * The acks (or any messages) given, in one EV_ON_MESSAGE as the frames of one read ({@link Kw#MESSAGES}): each
     * behind a 4-byte header, in a buffer whose reader index is not 0.
     */
    public int ackJsonBatch(String... jsons) {
        ByteBuf all = Unpooled.buffer().writeZero(3).skipBytes(3);
        int[] ranges = new int[2 * jsons.length];
        for (int i = 0; i < jsons.length; i++) {
            byte[] m = jsons[i].getBytes(StandardCharsets.UTF_8);
            all.writeInt(m.length + 4);
            ranges[2 * i] = all.readableBytes();
            all.writeBytes(m);
            ranges[2 * i + 1] = all.readableBytes();
        }
        ObjectNode kw = Kw.withGbuffer(all);
        Kw.putRef(kw, Kw.MESSAGES, ranges);
        return gobj.publish(Ev.EV_ON_MESSAGE, kw);
    }

    @Override
    public ObjectNode onStats(String filter, ObjectNode kw, GObj src) {
        ObjectNode d = Kw.create();
        d.put("txMsgs", sent().size());
        d.put("rxMsgs", 0);
        return Envelope.ok(d);
    }
}
