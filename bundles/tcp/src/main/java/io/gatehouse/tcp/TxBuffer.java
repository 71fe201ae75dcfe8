// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.support.Glog;
import io.gatehouse.support.Streak;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;

import java.util.ArrayDeque;
import java.util.List;

/**
 * What a C_TCP sends: each EV_TX_DATA buffer is written at once while the socket takes it, else queued in arrival
 * order until it does, and bounded by {@code max_tx_queue} / {@code max_tx_bytes} with the {@code tx_overflow}
 * policy. Writes are coalesced: a write does not flush; one flush task runs per event-loop batch, or the flush
 * comes at once when {@code output_threshold_msgs} / {@code _bytes} were written since the last one.
 *
 * <p>It writes through a {@link TxSink}: the socket itself on the core loop, or the {@link WorkerLink} of a socket
 * on a worker loop, whose flush hands the batch over in one task. It reads its limits from the gobj's attributes
 * when it needs them, counts {@code txMsgs} / {@code txBytes}, tells Tcp of each write (traffic, for the inactivity
 * model) and publishes nothing: {@link #drain} tells the caller when EV_TX_READY is due. Core loop only.
 *
 * <p>Small messages written between two flushes are copied into one batch buffer before they reach the socket.
 * Netty keeps an outbound entry per write, and for 128-byte messages the bookkeeping of those entries (adding,
 * gathering them into the iovec, removing them byte by byte after the write) cost about a fifth of the core loop in
 * a relay profile, more than the copy of a few hundred bytes. A message alone until the flush is handed over as it
 * is, without a copy; a large one goes over as it is, after what was batched before it, so the order holds. A batch
 * is at most {@link #BATCH_MAX} bytes, so the bytes held here stay small beside the socket's water mark.
 */
final class TxBuffer {
    private final Tcp tcp;
    private final GObj gobj;
    private final EventLoop loop;
    private final Runnable flushTask = this::flush;
    /** The socket written, and how; null while there is none. */
    private Channel ch;
    private TxSink sink;
    private final ArrayDeque<ByteBuf> queue = new ArrayDeque<>();
    private long queuedBytes;
    /** The socket did not take everything since the queue last emptied: EV_TX_READY is owed. */
    private boolean owesReady;
    private boolean flushScheduled;
    private int unflushedMsgs;
    private long unflushedBytes;
    /** Messages up to this size are copied into the batch; larger ones go to the socket as they are. */
    static final int COALESCE_MAX = 2048;
    static final int BATCH_MIN = 512;
    static final int BATCH_MAX = 16 * 1024;
    /**
     * What was written and not yet handed to the sink: the one message written since the last hand-over, as it was
     * given, or (once a second came) the batch buffer this owns, holding copies of them all.
     */
    private ByteBuf pending;
    private boolean pendingIsBatch;
    /** The size the last batch reached: the next one starts there, so a steady flow does not regrow each time. */
    private int lastBatchBytes = BATCH_MIN;
    /** Messages thrown away by {@code drop_oldest} since the queue last emptied. */
    private final Streak thrownAway = new Streak();

    TxBuffer(Tcp tcp, GObj gobj, EventLoop loop) {
        this.tcp = tcp;
        this.gobj = gobj;
        this.loop = loop;
    }

    /** Writes go to {@code c} through {@code s} from now on. */
    void attach(Channel c, TxSink s) {
        ch = c;
        sink = s;
    }

    /** The socket is gone: nothing is written any more; what is queued stays until {@link #discard}. */
    void detach() {
        if (pending != null) {
            pending.release();   // the socket went before the flush: Netty drops what it holds unflushed the same way
            pending = null;
        }
        ch = null;
        sink = null;
        unflushedMsgs = 0;
        unflushedBytes = 0;
    }

    /** Messages queued, not yet handed to the socket. */
    int size() {
        return queue.size();
    }

    /**
     * A buffer to send on the connected socket: written now when nothing waits before it and the socket takes it,
     * else queued. False when the queue overflowed under the {@code close} policy: the buffer and the queue were
     * released, and the caller drops the connection.
     */
    boolean send(ByteBuf buf) {
        if (queue.isEmpty() && sink.writable(ch)) {
            write(buf);
            return true;
        }
        owesReady = true;
        if (!enqueue(buf)) return false;
        sink.awaitRoom(ch);
        return true;
    }

    /**
     * A buffer to send once connected (the inactivity model reconnects for it): queued with the overflow policy.
     * False as for {@link #send}.
     */
    boolean hold(ByteBuf buf) {
        return enqueue(buf);
    }

    /**
     * Writes what waits while the socket takes it. True when the queue emptied after the socket had not taken
     * everything: EV_TX_READY is due.
     */
    boolean drain() {
        while (!queue.isEmpty() && sink.writable(ch)) {
            ByteBuf b = queue.poll();
            queuedBytes -= b.readableBytes();
            write(b);
        }
        if (queue.isEmpty()) endThrownAway();
        if (queue.isEmpty() && owesReady && sink.writable(ch)) {
            owesReady = false;
            return true;
        }
        if (!queue.isEmpty() || owesReady) {
            // Still owing EV_TX_READY: across a worker hop the queue may have emptied without room left, and with the
            // bytes in the hop Netty may never turn the socket unwritable, so no writability event would come.
            sink.awaitRoom(ch);
        }
        return false;
    }

    /** The socket turned unwritable: EV_TX_READY is owed once the queue has drained. */
    void blocked() {
        owesReady = true;
        sink.awaitRoom(ch);
    }

    /** True while the socket takes more. */
    boolean writable() {
        return sink.writable(ch);
    }

    /** Releases every queued message. */
    void discard() {
        for (ByteBuf b; (b = queue.poll()) != null; ) b.release();
        queuedBytes = 0;
        endThrownAway();
    }

    /** Flushes what was written and not flushed yet (the end of a read burst, or before a close). */
    void flush() {
        flushScheduled = false;
        if (unflushedMsgs == 0) return;
        unflushedMsgs = 0;
        unflushedBytes = 0;
        if (ch == null) return;
        handOver();
        sink.flush(ch);
    }

    /** True when something was written and not flushed yet. */
    boolean unflushed() {
        return unflushedMsgs > 0;
    }

    /**
     * For a live upgrade: what was written goes to the socket now (so the flush task this buffer may have scheduled
     * finds nothing; the caller no longer holds the socket, so the room this makes drains nothing), then the queue
     * (its buffers by reference, in order), whether EV_TX_READY is owed and the drop_oldest streak go into the
     * state. The buffer holds nothing afterwards.
     */
    ObjectNode exportState() {
        // Tcp let go of the socket first: the room this flush makes drains nothing here (the new revision drains the
        // queue after the handover), so one flush leaves nothing unflushed.
        flush();
        ObjectNode s = Kw.create();
        ArrayNode q = s.putArray("queue");
        for (ByteBuf b; (b = queue.poll()) != null; ) q.addPOJO(b);
        queuedBytes = 0;
        s.put("owes_ready", owesReady);
        s.set("thrown_away", Kw.create().put("count", thrownAway.count()));
        return s;
    }

    /**
     * The queue of a state {@link #exportState} gave, checked and not yet taken, so that the caller can refuse the
     * whole state before it takes anything: IllegalArgumentException when it is not a list of buffers.
     */
    static List<ByteBuf> queueOf(JsonNode s) {
        return HandedState.refs(s, "queue", ByteBuf.class);
    }

    /** Takes over a state {@link #exportState} gave, with its queue as {@link #queueOf} read it. */
    void importState(JsonNode s, List<ByteBuf> q) {
        for (ByteBuf b : q) {
            queue.add(b);
            queuedBytes += b.readableBytes();
        }
        owesReady = s != null && s.path("owes_ready").asBoolean(false);
        thrownAway.resume(s == null ? 0 : s.path("thrown_away").path("count").asLong(0), gobj.yuno().clock().monotonicMillis());
    }

    private void write(ByteBuf buf) {
        int n = buf.readableBytes();
        if (n <= COALESCE_MAX) {
            stage(buf, n);
        } else {
            handOver();
            sink.write(ch, buf);
        }
        gobj.inc(Tcp.TX_MSGS);
        gobj.add(Tcp.TX_BYTES, n);
        if (gobj.isTraced(Tcp.TRACE_TRAFFIC)) Glog.info(gobj, "write", "bytes", n);
        tcp.wrote();
        unflushedMsgs++;
        unflushedBytes += n;
        long om = gobj.readLong(Tcp.OUTPUT_THRESHOLD_MSGS);
        long ob = gobj.readLong(Tcp.OUTPUT_THRESHOLD_BYTES);
        if ((om > 0 && unflushedMsgs >= om) || (ob > 0 && unflushedBytes >= ob)) {
            flush();
        } else if (!flushScheduled) {
            flushScheduled = true;
            loop.execute(flushTask);
        }
    }

    /** Keeps a small message for the next hand-over: as it is while it is alone, else copied into the batch. */
    private void stage(ByteBuf buf, int n) {
        if (pending == null) {
            pending = buf;
            pendingIsBatch = false;
            return;
        }
        if (!pendingIsBatch) {
            int first = pending.readableBytes();
            ByteBuf batch = ch.alloc().ioBuffer(Math.min(BATCH_MAX, Math.max(lastBatchBytes, first + n)), BATCH_MAX);
            batch.writeBytes(pending, pending.readerIndex(), first);
            pending.release();
            pending = batch;
            pendingIsBatch = true;
        }
        if (pending.maxWritableBytes() < n) {
            handOver();
            pending = buf;
            pendingIsBatch = false;
            return;
        }
        // The source's own indexes stay as they were: whoever handed it over may hold another view of it.
        pending.writeBytes(buf, buf.readerIndex(), n);
        buf.release();
    }

    /** Gives the sink what was staged, so that what comes next is written after it. */
    private void handOver() {
        if (pending == null) return;
        if (pendingIsBatch) lastBatchBytes = Math.max(BATCH_MIN, pending.readableBytes());
        sink.write(ch, pending);
        pending = null;
    }

    /** Queues with the overflow policy; false when it closes. */
    private boolean enqueue(ByteBuf buf) {
        long maxQ = gobj.readLong(Tcp.MAX_TX_QUEUE);
        long maxB = gobj.readLong(Tcp.MAX_TX_BYTES);
        int n = buf.readableBytes();
        boolean over = (maxQ > 0 && queue.size() >= maxQ) || (maxB > 0 && !queue.isEmpty() && queuedBytes + n > maxB);
        if (over) {
            if (TxOverflow.of(gobj.read(Tcp.TX_OVERFLOW)) == TxOverflow.DROP_OLDEST) {
                dropOldest(maxQ, maxB, n);
            } else {
                buf.release();
                Glog.error(gobj, "tcp tx queue overflow, closing", "msgset", "queue_full",
                        "max_tx_queue", maxQ, "max_tx_bytes", maxB, "cur_tx_queue", queue.size(),
                        "queued_bytes", queuedBytes);
                discard();
                return false;
            }
        }
        queue.add(buf);
        queuedBytes += n;
        return true;
    }

    /** Makes room for {@code n} more bytes by releasing the oldest messages. */
    private void dropOldest(long maxQ, long maxB, int n) {
        while (!queue.isEmpty() && ((maxQ > 0 && queue.size() >= maxQ) || (maxB > 0 && queuedBytes + n > maxB))) {
            ByteBuf old = queue.poll();
            queuedBytes -= old.readableBytes();
            old.release();
            if (thrownAway.hit(gobj.yuno().clock().monotonicMillis())) {
                Glog.error(gobj, "throw away tcp tx message", "msgset", "queue_full",
                        "max_tx_queue", maxQ, "max_tx_bytes", maxB, "dropped", thrownAway.count());
            }
        }
    }

    private void endThrownAway() {
        long n = thrownAway.end();
        if (n > 0) Glog.info(gobj, "tcp tx queue no longer full", "thrown_away", n);
    }
}
