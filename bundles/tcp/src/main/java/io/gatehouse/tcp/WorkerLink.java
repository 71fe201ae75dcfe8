// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.api.Yuno;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.ReferenceCountUtil;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bridge between one C_TCP socket registered on a worker loop ({@code io_threads} > 0) and the {@link Tcp}
 * gobj, whose state only the core loop touches. It is the socket's last handler on the worker side and keeps the
 * core side's buffers of that socket; every field is owned by one side, except the two atomics that carry
 * the tx accounting across. On the core side it is the socket's {@link TxSink}: the tx buffer writes into it.
 *
 * <p>Why batches: every task handed to another loop costs a queue insert and often a selector wakeup, which on a
 * small machine is more than the work of a message. So the reads of one burst cross in one task (posted at
 * {@code channelReadComplete}), and the writes of one core batch cross in one task (posted where the core-loop
 * socket would flush), where the worker writes them all and flushes once. Events keep their order: anything
 * posted from the worker first posts the reads collected before it.
 *
 * <p>Flow control across the hop: the core never hands over more than Netty would take before turning the socket
 * unwritable ({@code bytesBeforeUnwritable}), counting what sits in its unposted batch and what the worker has
 * not yet moved into the socket's outbound buffer, so the tx queue and EV_TX_READY keep bounding memory as on the
 * core loop. Reads that arrive while the input is paused (they were already in flight when autoRead went off)
 * wait here, not in the consumer, until the input resumes; the socket reads again only once they have all gone
 * up, so what waits here is at most what a worker reads before it sees autoRead off (a burst or two: up to 16
 * reads of at most 64 KiB each).
 */
final class WorkerLink extends TcpBridge implements TxSink {
    private final Yuno yuno;

    // --- worker side (the socket's loop) ---
    private ArrayList<ByteBuf> rx = new ArrayList<>();
    private boolean inactiveSeen;

    // --- shared ---
    /** Bytes posted to the worker and not yet written into the socket's outbound buffer. */
    private final AtomicLong inHop = new AtomicLong();
    /** The core left messages in its tx queue for lack of room and waits to be told there may be room again. */
    private final AtomicBoolean coreWaiting = new AtomicBoolean();

    // --- core side ---
    private ArrayList<ByteBuf> out = new ArrayList<>();
    private long outBytes;
    private final ArrayDeque<ByteBuf> held = new ArrayDeque<>();
    private boolean drainScheduled;
    /** Tcp let go of this socket: whatever still arrives for it is released. */
    private boolean discarded;
    private final Runnable drainTask = this::drainHeld;

    WorkerLink(Tcp tcp, Yuno yuno) {
        super(tcp);
        this.yuno = yuno;
    }

    // --- Worker side: Netty callbacks ---

    /** Every other event goes after the reads collected before it, so the core sees the socket's order. */
    @Override
    void toCore(Channel c, Runnable call) {
        postReads(c);
        post(call);
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        Channel c = ctx.channel();
        if (!c.isActive() && c.isRegistered() && !c.isOpen()) {
            // An accepted socket that closed before Tcp attached to it: its channelInactive went by unseen.
            channelInactive(ctx);
            return;
        }
        super.handlerAdded(ctx);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ByteBuf) {
            rx.add((ByteBuf) msg);
        } else {
            ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        postReads(ctx.channel());
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (inactiveSeen) {
            postReads(ctx.channel());
            return;
        }
        inactiveSeen = true;
        super.channelInactive(ctx);
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        releaseAll(rx);
    }

    private void postReads(Channel c) {
        if (rx.isEmpty()) return;
        ArrayList<ByteBuf> batch = rx;
        rx = new ArrayList<>(Math.max(4, batch.size()));
        try {
            yuno.execute(() -> deliver(c, batch));
        } catch (RejectedExecutionException e) {
            releaseAll(batch);   // the yuno stopped: nobody will read them
        }
    }

    private void post(Runnable r) {
        try {
            yuno.execute(r);
        } catch (RejectedExecutionException e) {
            // the yuno stopped; its gobjs are gone
        }
    }

    /** Writes a batch the core handed over, flushes once, and tells a waiting core there may be room again. */
    private void writeBatch(Channel c, List<ByteBuf> batch, long bytes) {
        for (int i = 0, n = batch.size(); i < n; i++) c.write(batch.get(i), c.voidPromise());
        c.flush();
        inHop.addAndGet(-bytes);
        if (coreWaiting.get() && coreWaiting.compareAndSet(true, false)) post(() -> tcp.onWritabilityChanged(c));
    }

    // --- Core side ---

    /** A burst of reads: handed up in order, or held while the input is paused. */
    private void deliver(Channel c, List<ByteBuf> batch) {
        boolean heldSome = false;
        for (int i = 0, n = batch.size(); i < n; i++) {
            ByteBuf b = batch.get(i);
            if (discarded) {
                b.release();
            } else if (!held.isEmpty() || tcp.inputPaused()) {
                held.add(b);
                heldSome = true;
            } else {
                tcp.onRead(c, b);
            }
        }
        if (discarded) return;
        if (heldSome) tcp.inputHeldChanged();
        tcp.onReadComplete(c);
    }

    boolean holding() {
        return !held.isEmpty();
    }

    /** The input may read again: what waited here goes up first, from its own task (not inside the resume). */
    void inputResumed() {
        if (held.isEmpty() || drainScheduled || discarded) return;
        drainScheduled = true;
        yuno.eventLoop().execute(drainTask);
    }

    private void drainHeld() {
        drainScheduled = false;
        Channel c = tcp.channelOf(this);
        if (c == null) return;
        while (!discarded && !held.isEmpty() && !tcp.inputPaused()) tcp.onRead(c, held.poll());
        if (discarded) return;
        tcp.onReadComplete(c);
        if (held.isEmpty()) tcp.inputHeldChanged();   // all went up: the socket may read again
    }

    /**
     * Room across the hop: what Netty would still take before turning the socket unwritable. With nothing in
     * flight it is exactly Netty's writability, whose change event then wakes the core; with something in flight
     * the batch that carries it wakes a waiting core when it is done.
     */
    @Override
    public boolean writable(Channel c) {
        long inFlight = outBytes + inHop.get();
        return inFlight == 0 ? c.isWritable() : inFlight < c.bytesBeforeUnwritable();
    }

    /** Takes a buffer to write (the core-loop socket's {@code write} without flush). */
    @Override
    public void write(Channel c, ByteBuf b) {
        out.add(b);
        outBytes += b.readableBytes();
    }

    /** Hands the batch to the worker in one task (the core-loop socket's {@code flush}). */
    @Override
    public void flush(Channel c) {
        if (out.isEmpty()) return;
        ArrayList<ByteBuf> batch = out;
        long bytes = outBytes;
        out = new ArrayList<>(Math.max(4, batch.size()));
        outBytes = 0;
        inHop.addAndGet(bytes);
        try {
            c.eventLoop().execute(() -> writeBatch(c, batch, bytes));
        } catch (RejectedExecutionException e) {
            inHop.addAndGet(-bytes);
            releaseAll(batch);
        }
    }

    /**
     * The tx queue holds messages for lack of room: ask the worker to say when a batch has gone into the socket.
     * Armed before the check again, so a batch finishing in between is not missed.
     */
    @Override
    public void awaitRoom(Channel c) {
        if (coreWaiting.get()) return;
        coreWaiting.set(true);
        if (writable(c) && coreWaiting.compareAndSet(true, false)) {
            yuno.eventLoop().execute(() -> tcp.onWritabilityChanged(c));
        }
    }

    /** Tcp lets go of the socket: release what waits here; whatever still arrives is released too. */
    void discard() {
        discarded = true;
        releaseAll(out);
        outBytes = 0;
        for (ByteBuf b; (b = held.poll()) != null; ) b.release();
    }

    private static void releaseAll(List<ByteBuf> l) {
        for (int i = 0, n = l.size(); i < n; i++) ReferenceCountUtil.safeRelease(l.get(i));
        l.clear();
    }
}
