// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.api.GObj;
import io.gatehouse.support.Glog;
import io.gatehouse.support.Streak;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;

import java.util.ArrayDeque;

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
        if (ch != null) sink.flush(ch);
    }

    /** True when something was written and not flushed yet. */
    boolean unflushed() {
        return unflushedMsgs > 0;
    }

    private void write(ByteBuf buf) {
        int n = buf.readableBytes();
        sink.write(ch, buf);
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
