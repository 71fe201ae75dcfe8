// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The credit window of one open queue: which messages are in flight on the current link (sent, waiting for their
 * ack), how many bytes they hold, where the next send starts, and when each is due to go again. It knows the
 * queue and nothing of gobjs, links or attributes: the limits and timeouts come in as arguments, read by
 * {@link QIoGate} from its attributes at the moment they are needed.
 *
 * <p>Order: messages are taken in rowid order from the <em>frontier</em>, the highest rowid sent since the window
 * was last rewound. Every message of the queue below the frontier is in flight or acked; a message above it has
 * not been sent on this link. A rewind (a new link, rows marked pending again, a new queue generation) makes the
 * next walk start from the oldest message.
 *
 * <p>Marks: a message in flight carries {@link #MARK_INFLIGHT} in the queue (memory only), so a backup is refused
 * while anything is in flight; one whose record could not be read carries {@link #MARK_UNREADABLE} and is skipped
 * until the queue is loaded again.
 */
final class InFlightWindow {
    /** Soft mark of a message in flight (sent, waiting for its ack). */
    static final long MARK_INFLIGHT = 0x0001;
    /** Soft mark of a message whose record cannot be read: it stays pending on disk and is skipped. */
    static final long MARK_UNREADABLE = 0x0100;

    /** Retries back off up to this many times {@code timeout_ack}. */
    static final int BACKOFF_CAP_FACTOR = 8;

    /** One message in flight: sent on the current link, waiting for its ack. */
    static final class InFlight {
        final QueueMessage msg;
        long sentAtMs;
        long dueMs;
        int retries;
        /** Size of the message on the wire, counted in the byte window while it is in flight. */
        long bytes;
        /** Nacked: sent again at dueMs because of the nack, not because the ack timed out. */
        boolean nacked;
        /** Its neighbours in the send order of the {@link InFlightTable} that holds it. */
        InFlight older;
        InFlight newer;

        InFlight(QueueMessage msg) {
            this.msg = msg;
        }

        long rowid() {
            return msg.rowid();
        }
    }

    private final TrQueue queue;
    /** By rowid, in send order. Bounded by max_pending_acks. */
    private final InFlightTable inflight = new InFlightTable();
    private long bytes;
    private long frontier = -1;
    /**
     * No rowid above it is in flight (the highest taken since the window was last empty): the walk past the
     * frontier asks the table only below it. The table lookup of every fresh message was 3 % of a Kafka edge's
     * core loop.
     */
    private long highestInFlight;
    /**
     * Whether a message may carry {@link #MARK_UNREADABLE}: set by {@link #unreadable} and by a restored window
     * (the marks of the queue it takes over are not known), so a queue with none is walked without reading marks.
     */
    private boolean marksUnreadable;

    InFlightWindow(TrQueue queue) {
        this.queue = queue;
    }

    int size() {
        return inflight.size();
    }

    boolean isEmpty() {
        return inflight.isEmpty();
    }

    /** Bytes on the wire of the messages in flight. */
    long bytes() {
        return bytes;
    }

    /**
     * Full when {@code maxMsgs} messages are in flight, or when they hold {@code maxBytes} bytes; 0 = no limit. The
     * byte limit never stops the first message: one larger than the window still goes, alone.
     */
    boolean isFull(long maxMsgs, long maxBytes) {
        if (maxMsgs > 0 && inflight.size() >= maxMsgs) return true;
        return maxBytes > 0 && bytes >= maxBytes && !inflight.isEmpty();
    }

    /**
     * Takes the next message to send into flight: the oldest one after the frontier that is neither in flight nor
     * unreadable. Null when there is none.
     */
    InFlight takeNext() {
        QueueMessage m = nextUnsent();
        if (m == null) return null;
        frontier = m.rowid();
        InFlight f = new InFlight(m);
        add(f);
        queue.setSoftMark(m, MARK_INFLIGHT, true);
        return f;
    }

    private void add(InFlight f) {
        inflight.add(f);
        if (f.rowid() > highestInFlight) highestInFlight = f.rowid();
    }

    private QueueMessage nextUnsent() {
        QueueMessage m;
        if (frontier < 0) {
            m = queue.first();
        } else {
            // the frontier is usually the last message sent, still in flight (a lookup in the queue made a handle
            // per message sent only to step from it)
            QueueMessage at = message(frontier);
            if (at != null) {
                m = queue.next(at);
            } else {
                // The frontier message left the queue (acked, unloaded): the next one is the first row after it
                // that is still in the queue.
                m = null;
                long last = queue.lastRowid();
                for (long r = frontier + 1; r <= last && m == null; r++) m = queue.getByRowid(r);
            }
        }
        while (m != null && ((m.rowid() <= highestInFlight && inflight.contains(m.rowid()))
                || (marksUnreadable && (m.softMark() & MARK_UNREADABLE) != 0))) {
            m = queue.next(m);
        }
        return m;
    }

    /**
     * The message went down at {@code nowMs}, {@code wireBytes} long: its bytes count in the window from its first
     * send, and its ack is due after {@code timeout_ack} backed off by its retries.
     */
    void sent(InFlight f, long wireBytes, long nowMs, long timeoutAckMs) {
        if (f.bytes == 0) {
            f.bytes = wireBytes;
            bytes += wireBytes;
        }
        f.sentAtMs = nowMs;
        f.dueMs = nowMs + backoff(timeoutAckMs, f.retries, timeoutAckMs);
    }

    /** Its record could not be read: out of flight, marked so that no walk picks it again until a reload. */
    void unreadable(InFlight f) {
        drop(f.rowid());
        queue.setSoftMark(f.msg, MARK_INFLIGHT, false);
        queue.setSoftMark(f.msg, MARK_UNREADABLE, true);
        marksUnreadable = true;
    }

    /** The message in flight with that rowid, or null. */
    InFlight get(long rowid) {
        return inflight.get(rowid);
    }

    /**
     * The queue's message of that rowid, or null when the queue no longer lists it: the handle the window holds
     * while it is in flight (the queue's, of its generation: the window is emptied before a new one begins), with no
     * lookup in the queue and no handle made; any other rowid is looked up in the queue.
     */
    QueueMessage message(long rowid) {
        InFlight f = inflight.get(rowid);
        return f != null && f.msg.generation() == queue.generation() ? f.msg : queue.getByRowid(rowid);
    }

    /** True while {@code f} is still the one in flight for its rowid (not acked, dropped or cleared since). */
    boolean holds(InFlight f) {
        return inflight.get(f.rowid()) == f;
    }

    /** Takes a message out of flight (acked, gone, unloaded), giving its bytes back to the window. */
    void drop(long rowid) {
        InFlight f = inflight.remove(rowid);
        if (f != null) bytes -= f.bytes;
        if (inflight.isEmpty()) highestInFlight = 0;
    }

    /**
     * A nack: the message stays in flight and goes again after {@code retryDelayMs}, doubled per retry. Answers
     * the message, or null when it is not in flight.
     */
    InFlight nack(long rowid, long nowMs, long retryDelayMs, long timeoutAckMs) {
        InFlight f = inflight.get(rowid);
        if (f == null) return null;
        f.retries++;
        f.nacked = true;
        f.dueMs = nowMs + backoff(retryDelayMs, f.retries - 1, timeoutAckMs);
        return f;
    }

    /** The messages due to go again at {@code nowMs} (ack timed out, or nack delay over), in send order. */
    List<InFlight> due(long nowMs) {
        List<InFlight> out = null;
        for (InFlight f : inflight) {
            if (f.dueMs <= nowMs) {
                if (out == null) out = new ArrayList<>();
                out.add(f);
            }
        }
        return out == null ? Collections.emptyList() : out;
    }

    /**
     * A due message is about to go again: a timeout counts a retry (a nack counted its own). Answers true when it
     * is a resend after an ack timeout, false after a nack.
     */
    boolean retry(InFlight f) {
        boolean timedOut = !f.nacked;
        if (timedOut) f.retries++;
        f.nacked = false;
        return timedOut;
    }

    /** The next walk starts from the oldest message; what is in flight stays. */
    void rewind() {
        frontier = -1;
    }

    /** The link is gone: nothing is in flight any more, and the next walk starts from the oldest message. */
    void clear() {
        for (InFlight f : inflight) queue.setSoftMark(f.msg, MARK_INFLIGHT, false);
        inflight.clear();
        bytes = 0;
        frontier = -1;
        highestInFlight = 0;
    }

    /** The messages in flight, in send order; the window must not change while they are walked. */
    Iterable<InFlight> inOrder() {
        return inflight;
    }

    // --- Live upgrade ---

    /**
     * The window as JSON, for the next revision of the gate: the frontier and, in send order, one array per field
     * of the messages in flight (rowid, send and due times on the yuno's monotonic clock, retries, bytes on the
     * wire, nacked). The messages themselves stay in the queue; {@link #restore} finds them there by rowid.
     */
    ObjectNode exportState() {
        ObjectNode s = JsonNodeFactory.instance.objectNode();
        s.put("frontier", frontier);
        ArrayNode rowid = s.putArray("rowid");
        ArrayNode sent = s.putArray("sent_ms");
        ArrayNode due = s.putArray("due_ms");
        ArrayNode retries = s.putArray("retries");
        ArrayNode wire = s.putArray("bytes");
        ArrayNode nacked = s.putArray("nacked");
        for (InFlight f : inflight) {
            rowid.add(f.rowid());
            sent.add(f.sentAtMs);
            due.add(f.dueMs);
            retries.add(f.retries);
            wire.add(f.bytes);
            nacked.add(f.nacked);
        }
        return s;
    }

    /**
     * The window {@link #exportState} gave, over {@code queue} (the same handle, or the topic opened again through
     * another trqueue): each message is in flight again with its times, retries and bytes, marked in the queue. A
     * rowid the queue no longer holds (acked meanwhile) is left out. {@code state} null: an empty window.
     *
     * @throws IllegalArgumentException when {@code state} is not such a window
     */
    static InFlightWindow restore(TrQueue queue, JsonNode state) {
        InFlightWindow w = new InFlightWindow(queue);
        w.marksUnreadable = true;
        if (state == null || state.isNull()) return w;
        JsonNode rowid = state.path("rowid");
        int n = rowid.size();
        for (String field : List.of("sent_ms", "due_ms", "retries", "bytes", "nacked")) {
            if (!rowid.isArray() || !state.path(field).isArray() || state.path(field).size() != n) {
                throw new IllegalArgumentException("not an in-flight window: " + field);
            }
        }
        w.frontier = state.path("frontier").asLong(-1);
        for (int i = 0; i < n; i++) {
            QueueMessage m = queue.getByRowid(rowid.get(i).asLong());
            if (m == null) continue;
            InFlight f = new InFlight(m);
            f.sentAtMs = state.get("sent_ms").get(i).asLong();
            f.dueMs = state.get("due_ms").get(i).asLong();
            f.retries = state.get("retries").get(i).asInt();
            f.bytes = state.get("bytes").get(i).asLong();
            f.nacked = state.get("nacked").get(i).asBoolean();
            w.add(f);
            w.bytes += f.bytes;
            queue.setSoftMark(m, MARK_INFLIGHT, true);
        }
        return w;
    }

    /**
     * The window for the next revision of the gate in its compact form (state version 2): the frontier, the count
     * and the highest rowid as JSON in {@code json}, and, answered, the messages in flight in send order with their
     * send and due times, retries, bytes and nacked flags as arrays: {@code {QueueMessage[], long[], long[], int[],
     * long[], boolean[]}}, api and JDK types only. No node per message: a window of 10,000 is six arrays.
     */
    Object[] exportCompact(ObjectNode json) {
        int n = inflight.size();
        QueueMessage[] msgs = new QueueMessage[n];
        long[] sent = new long[n];
        long[] due = new long[n];
        int[] retries = new int[n];
        long[] wire = new long[n];
        boolean[] nacked = new boolean[n];
        long highest = Math.max(0, frontier);
        int i = 0;
        for (InFlight f : inflight) {
            msgs[i] = f.msg;
            sent[i] = f.sentAtMs;
            due[i] = f.dueMs;
            retries[i] = f.retries;
            wire[i] = f.bytes;
            nacked[i] = f.nacked;
            highest = Math.max(highest, f.rowid());
            i++;
        }
        json.put("frontier", frontier);
        json.put("count", n);
        json.put("highest", highest);
        return new Object[] {msgs, sent, due, retries, wire, nacked};
    }

    /**
     * The window {@link #exportCompact} gave, over {@code queue}. With {@code sameHandle} the messages are the
     * queue's own, still listed and still marked, and are taken as they are; otherwise (the topic taken over or
     * opened again through another trqueue) each is found again by rowid, left out when the queue no longer holds
     * it, and marked in flight unless {@code marksKept} (a takeover hands the soft marks over with the files).
     *
     * @throws IllegalArgumentException when the arrays are not such a window
     */
    static InFlightWindow restoreCompact(TrQueue queue, JsonNode json, Object[] arrays, boolean sameHandle,
                                         boolean marksKept) {
        InFlightWindow w = new InFlightWindow(queue);
        w.marksUnreadable = true;
        if (arrays == null || arrays.length != 6 || !(arrays[0] instanceof QueueMessage[])
                || !(arrays[1] instanceof long[]) || !(arrays[2] instanceof long[]) || !(arrays[3] instanceof int[])
                || !(arrays[4] instanceof long[]) || !(arrays[5] instanceof boolean[])) {
            throw new IllegalArgumentException("not an in-flight window");
        }
        QueueMessage[] msgs = (QueueMessage[]) arrays[0];
        long[] sent = (long[]) arrays[1];
        long[] due = (long[]) arrays[2];
        int[] retries = (int[]) arrays[3];
        long[] wire = (long[]) arrays[4];
        boolean[] nacked = (boolean[]) arrays[5];
        int n = msgs.length;
        if (sent.length != n || due.length != n || retries.length != n || wire.length != n || nacked.length != n) {
            throw new IllegalArgumentException("not an in-flight window: arrays of different lengths");
        }
        w.frontier = json == null ? -1 : json.path("frontier").asLong(-1);
        for (int i = 0; i < n; i++) {
            QueueMessage m = sameHandle ? msgs[i] : queue.getByRowid(msgs[i].rowid());
            if (m == null) continue;
            InFlight f = new InFlight(m);
            f.sentAtMs = sent[i];
            f.dueMs = due[i];
            f.retries = retries[i];
            f.bytes = wire[i];
            f.nacked = nacked[i];
            w.add(f);
            w.bytes += f.bytes;
            if (!sameHandle && !marksKept) queue.setSoftMark(m, MARK_INFLIGHT, true);
        }
        return w;
    }

    /** The highest rowid a window state names (its frontier or a message in flight); 0 for none. */
    static long highestRowid(JsonNode state) {
        if (state == null) return 0;
        if (state.has("highest")) return state.path("highest").asLong(0);
        long h = Math.max(0, state.path("frontier").asLong(0));
        for (JsonNode r : state.path("rowid")) h = Math.max(h, r.asLong());
        return h;
    }

    /**
     * The wait before the n-th resend: {@code baseMs} doubled per retry, capped at
     * {@value #BACKOFF_CAP_FACTOR} x {@code timeout_ack} (or at the base when that is larger), at least 1 ms.
     */
    static long backoff(long baseMs, int retries, long timeoutAckMs) {
        long cap = Math.max(baseMs, BACKOFF_CAP_FACTOR * timeoutAckMs);
        long d = baseMs;
        for (int i = 0; i < retries && d < cap; i++) d *= 2;
        return Math.min(Math.max(1, d), cap);
    }
}
