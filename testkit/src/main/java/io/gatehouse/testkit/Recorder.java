// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.netty.buffer.ByteBuf;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A gobj that records every event sent to it (gclass C_RECORDER), for tests and demos. It keeps a JSON copy
 * of each kw (references removed) and the bytes of its gbuffer, then releases the buffer. Thread-safe reads.
 * Bounded: it keeps the last {@value #MAX_EVENTS} events.
 */
public final class Recorder implements GObjBehavior {
    public static final String GCLASS = "C_RECORDER";
    static final int MAX_EVENTS = 100_000;

    /** One recorded event. */
    public static final class Event {
        public final String event;
        public final ObjectNode kw;
        public final byte[] payload;
        public final String src;
        /** The ranges of a message batch ({@link Kw#MESSAGES}) in {@link #payload}, or null. */
        public final int[] messageRanges;

        Event(String event, ObjectNode kw, byte[] payload, String src, int[] messageRanges) {
            this.event = event;
            this.kw = kw;
            this.payload = payload;
            this.src = src;
            this.messageRanges = messageRanges;
        }

        public String payloadText() {
            return payload == null ? null : new String(payload, StandardCharsets.UTF_8);
        }

        /** The text of each message this event carried: those of a message batch, else its payload alone. */
        public List<String> messageTexts() {
            if (messageRanges == null) return payload == null ? List.of() : List.of(payloadText());
            List<String> out = new ArrayList<>();
            for (int i = 0; i + 1 < messageRanges.length; i += 2) {
                out.add(new String(payload, messageRanges[i], messageRanges[i + 1] - messageRanges[i],
                        StandardCharsets.UTF_8));
            }
            return out;
        }

        @Override
        public String toString() {
            return event + " from " + src + " " + kw + (payload == null ? "" : " payload=" + payloadText());
        }
    }

    public static final GClassSpec<Recorder> SPEC = buildSpec(GCLASS, false);

    /** A recorder (gclass {@value #GCLASS_MESSAGE_BATCHES}) that takes message batches ({@link Kw#MESSAGES}). */
    public static final String GCLASS_MESSAGE_BATCHES = "C_RECORDER_MB";
    public static final GClassSpec<Recorder> SPEC_MESSAGE_BATCHES = buildSpec(GCLASS_MESSAGE_BATCHES, true);

    private static GClassSpec<Recorder> buildSpec(String name, boolean messageBatches) {
        Fsm.StateBuilder<Recorder> st = Fsm.<Recorder>builder().state(St.ST_IDLE);
        for (Field f : Ev.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == String.class) {
                try {
                    st.on((String) f.get(null), Recorder::acRecord);
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        GClassSpec.Builder<Recorder> b = GClassSpec.builder(name, Recorder.class)
                .description("Records the events it receives (tests)")
                .fsm(st.build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(Recorder::new);
        if (messageBatches) b.takesMessageBatches();
        return b.build();
    }

    private final GObj gobj;
    private final List<Event> events = new ArrayList<>();

    private Recorder(GObj gobj) {
        this.gobj = gobj;
    }

    /**
     * A recorder gobj under the yuno's root, to subscribe to what a test wants to see. The gclass is registered
     * the first time (a config may also name it, when the runtime was built with {@link #SPEC}).
     */
    public static Recorder create(YunoRuntime rt, String name) {
        if (rt.yuno().gclass(GCLASS) == null) rt.gclassArrived(SPEC);
        return rt.call(() -> (Recorder) rt.yuno().root().createVolatileChild(name, GCLASS, null).behavior());
    }

    /** {@link #create} of a recorder that takes message batches ({@link #SPEC_MESSAGE_BATCHES}). */
    public static Recorder createTakingMessageBatches(YunoRuntime rt, String name) {
        if (rt.yuno().gclass(GCLASS_MESSAGE_BATCHES) == null) rt.gclassArrived(SPEC_MESSAGE_BATCHES);
        return rt.call(() -> (Recorder) rt.yuno().root().createVolatileChild(name, GCLASS_MESSAGE_BATCHES, null)
                .behavior());
    }

    public GObj gobj() {
        return gobj;
    }

    private int acRecord(String event, ObjectNode kw, GObj src) {
        int[] ranges = Kw.ref(kw, Kw.MESSAGES, int[].class);
        ByteBuf b = Kw.takeGbuffer(kw);
        byte[] payload = null;
        if (b != null) {
            payload = new byte[b.readableBytes()];
            b.getBytes(b.readerIndex(), payload);
            b.release();
        }
        Event e = new Event(event, Kw.withoutRefs(kw), payload, src == null ? "" : src.name(),
                ranges == null ? null : ranges.clone());
        synchronized (events) {
            if (events.size() >= MAX_EVENTS) events.remove(0);
            events.add(e);
            events.notifyAll();
        }
        return 0;
    }

    public List<Event> events() {
        synchronized (events) {
            return new ArrayList<>(events);
        }
    }

    public List<Event> events(String event) {
        List<Event> out = new ArrayList<>();
        for (Event e : events()) {
            if (e.event.equals(event)) out.add(e);
        }
        return out;
    }

    public int count(String event) {
        return events(event).size();
    }

    public void clear() {
        synchronized (events) {
            events.clear();
        }
    }

    /** Waits for the first recorded {@code event} not yet consumed by a previous await; null on timeout. */
    public Event await(String event, long timeoutMs) {
        return awaitCount(event, consumed(event) + 1, timeoutMs) ? nextUnconsumed(event) : null;
    }

    /** Waits until at least {@code n} events of that name were recorded. */
    public boolean awaitCount(String event, int n, long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        synchronized (events) {
            while (true) {
                int c = 0;
                for (Event e : events) if (e.event.equals(event)) c++;
                if (c >= n) return true;
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) return false;
                try {
                    events.wait(left);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
        }
    }

    private final java.util.Map<String, Integer> consumedByEvent = new java.util.HashMap<>();

    private synchronized int consumed(String event) {
        return consumedByEvent.getOrDefault(event, 0);
    }

    private synchronized Event nextUnconsumed(String event) {
        int c = consumedByEvent.getOrDefault(event, 0);
        List<Event> list = events(event);
        if (c >= list.size()) return null;
        consumedByEvent.put(event, c + 1);
        return list.get(c);
    }
}
