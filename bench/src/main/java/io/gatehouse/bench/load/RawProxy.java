package io.gatehouse.bench.load;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The forwarding baseline ({@code raw-proxy}): the cheapest correct TCP4H hop. Producers connect to it; it passes
 * each frame, header and all, to its one connection to the sink without parsing the JSON, and passes each ack
 * the sink sends back to the producer connection whose frame it acks. Everything (listener, producer
 * connections, the sink connection) runs on <b>one</b> Netty event loop, as a yuno's sockets run on its core
 * loop, so it does a gateway's minimum per message: read, frame, route, write, and the same for the ack.
 *
 * <p>Acks to producers: the proxy keeps, in forwarding order, the producer and the {@code __msg_rowid__} (a byte
 * scan from the end of the frame) of every frame it forwarded. The sink acks in order on its connection, so an
 * ack belongs to the oldest pending frame; its rowid (the same scan) checks that, and finds the frame when a
 * sink acks out of order (the oldest pending frame with that rowid: producers number their rowids each from 1,
 * so the rowid alone does not name a producer). An ack that matches no pending frame is dropped and counted.
 *
 * <p>Flow control and bounded memory: producer reads stop while the sink connection is not writable (its
 * write buffer above 512 KiB) or more than {@link #PENDING_HIGH} frames wait for their ack, and start again
 * below a quarter of it; frames already read when the reads stop still go through (at most one read buffer per
 * producer). Flushes are coalesced: one per loop iteration on each connection written to. Writes are coalesced
 * too, as C_TCP's tx buffer does: the small frames written to one connection between two flushes are copied into
 * one buffer, so Netty keeps one outbound entry per flush instead of one per frame (without it the baseline pays a
 * per-frame cost a gateway does not, {@code raw-proxy-per-frame} keeps that variant for comparison). When the sink
 * connection drops, the producer connections are closed (their pending frames will not be acked) and the proxy
 * connects again every 200 ms; producer reads wait for a sink connection.
 *
 * <p>Main: {@code RawProxy LISTEN_PORT SINK_HOST:SINK_PORT} runs one until killed.
 */
public final class RawProxy implements AutoCloseable {
    /** Frames waiting for their ack above which producer reads stop. */
    static final int PENDING_HIGH = 1 << 19;
    private static final int MAX_FRAME = 16 << 20;

    private final NioEventLoopGroup group = new NioEventLoopGroup(1, new DefaultThreadFactory("raw-proxy"));
    private final EventLoop loop = group.next();
    private final Channel listener;
    private final String sinkHost;
    private final int sinkPort;
    private volatile boolean closing;
    private volatile boolean sinkUp;

    // Touched only on the loop.
    private Channel sink;
    private final List<Producer> open = new ArrayList<>();
    /** Producers written to since the last flush. */
    private final List<Producer> toFlush = new ArrayList<>();
    private boolean sinkDirty;
    private boolean flushScheduled;
    private boolean readsOn;
    /** Pending frames in forwarding order, a ring: who sent each one (null once taken out of order) and its rowid. */
    private Producer[] who = new Producer[1 << 12];
    private long[] rowids = new long[1 << 12];
    private int head;
    private int size;
    private long forwarded;
    private long acked;
    private long unmatched;
    private long outOfOrder;
    private final Runnable flush = this::flushNow;
    private final boolean coalesce;
    /** The frames for the sink since its last flush, when coalescing. */
    private Batch sinkBatch;

    /** The baseline: frames coalesced per flush. */
    public RawProxy(int port, String sinkHost, int sinkPort) throws InterruptedException {
        this(port, sinkHost, sinkPort, true);
    }

    /** {@code coalesce} false: every frame is its own Netty write ({@code raw-proxy-per-frame}). */
    public RawProxy(int port, String sinkHost, int sinkPort, boolean coalesce) throws InterruptedException {
        this.coalesce = coalesce;
        this.sinkHost = sinkHost;
        this.sinkPort = sinkPort;
        listener = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.TCP_NODELAY, true)
                // reads start once the sink is there (channelActive sets autoRead from readsOn)
                .childOption(ChannelOption.AUTO_READ, false)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(decoder(), new Producer());
                    }
                }).bind("127.0.0.1", port).sync().channel();
        loop.execute(this::connectSink);
    }

    /**
     * TCP4H frames whole: the length counts its own 4 bytes, and the header is kept so the frame goes on as is.
     * A frame larger than {@link Batch#COALESCE_MAX} (written as it is, not copied into a batch) is copied out of
     * the read buffer: a slice of it would keep the decoder's cumulation shared while the frame waits in the
     * outbound buffer, Netty then cannot discard the bytes read before it, and the cumulation grew with every read
     * into unpooled multi-MiB direct buffers, each zeroed on allocation (async-profiler, 64 KiB frames: 72 % of the
     * proxy's loop in {@code Unsafe.setMemory}, 367 µs of loop per frame; about 1,700 frames/s, a fifth of what one
     * copy per frame allows). Smaller frames stay slices, as before: they are copied into the batch and released
     * at once ({@code raw-proxy-per-frame} keeps writing them as slices).
     */
    private static LengthFieldBasedFrameDecoder decoder() {
        return new LengthFieldBasedFrameDecoder(MAX_FRAME, 0, 4, -4, 0) {
            @Override
            protected ByteBuf extractFrame(ChannelHandlerContext ctx, ByteBuf buffer, int index, int length) {
                if (length <= Batch.COALESCE_MAX) return super.extractFrame(ctx, buffer, index, length);
                return ctx.alloc().ioBuffer(length).writeBytes(buffer, index, length);
            }
        };
    }

    public int port() {
        return ((InetSocketAddress) listener.localAddress()).getPort();
    }

    /** Waits until the sink connection is up; false if it did not come within {@code ms}. */
    public boolean awaitSink(long ms) throws InterruptedException {
        long deadline = System.currentTimeMillis() + ms;
        while (!sinkUp && System.currentTimeMillis() < deadline) Thread.sleep(10);
        return sinkUp;
    }

    /** The thread of the proxy's event loop (for its CPU time). */
    public Thread thread() throws Exception {
        return loop.submit(Thread::currentThread).get(5, TimeUnit.SECONDS);
    }

    /** {@code forwarded acked unmatched out_of_order pending}, read on the loop. */
    public String stats() throws Exception {
        return loop.submit(() -> "forwarded=" + forwarded + " acked=" + acked + " unmatched=" + unmatched
                + " out_of_order=" + outOfOrder + " pending=" + size).get(5, TimeUnit.SECONDS);
    }

    private void connectSink() {
        if (closing) return;
        new Bootstrap().group(loop).channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(256 * 1024, 512 * 1024))
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(decoder(), new SinkSide());
                    }
                }).connect(sinkHost, sinkPort).addListener(f -> {
                    if (!f.isSuccess()) loop.schedule(this::connectSink, 200, TimeUnit.MILLISECONDS);
                });
    }

    private void scheduleFlush() {
        if (!flushScheduled) {
            flushScheduled = true;
            // a task runs after the loop has handled the ready sockets: one flush for all the reads of an iteration
            loop.execute(flush);
        }
    }

    private void flushNow() {
        flushScheduled = false;
        if (sinkDirty) {
            sinkDirty = false;
            if (sink != null) {
                if (sinkBatch != null) sinkBatch.handOver();
                sink.flush();
            }
        }
        for (Producer p : toFlush) {
            p.dirty = false;
            if (p.batch != null) p.batch.handOver();
            p.ch.flush();
        }
        toFlush.clear();
    }

    /** Producer reads on or off, from the sink's state and the pending frames (with hysteresis). */
    private void updateReads() {
        boolean want = sink != null && sink.isWritable() && (readsOn ? size < PENDING_HIGH : size <= PENDING_HIGH / 4);
        if (want == readsOn) return;
        readsOn = want;
        for (Producer p : open) p.ch.config().setAutoRead(want);
    }

    private void push(Producer p, long rowid) {
        if (size == who.length) {
            // grow in order; only past PENDING_HIGH by what reads already under way bring
            Producer[] w = new Producer[who.length * 2];
            long[] r = new long[w.length];
            for (int k = 0; k < size; k++) {
                int i = (head + k) & (who.length - 1);
                w[k] = who[i];
                r[k] = rowids[i];
            }
            who = w;
            rowids = r;
            head = 0;
        }
        int i = (head + size) & (who.length - 1);
        who[i] = p;
        rowids[i] = rowid;
        size++;
    }

    private void pop() {
        who[head] = null;
        head = (head + 1) & (who.length - 1);
        size--;
    }

    /** The producer of the pending frame {@code rowid} acks, taken out of the pending frames; null if none. */
    private Producer take(long rowid) {
        while (size > 0 && who[head] == null) pop();
        if (size == 0) return null;
        if (rowids[head] == rowid) {
            Producer p = who[head];
            pop();
            return p;
        }
        for (int k = 1; k < size; k++) {
            int i = (head + k) & (who.length - 1);
            if (who[i] != null && rowids[i] == rowid) {
                Producer p = who[i];
                who[i] = null;
                outOfOrder++;
                return p;
            }
        }
        return null;
    }

    /**
     * The frames written to one connection between two flushes: a small one is copied into the batch buffer, a large
     * one goes as it is after the batch. At most {@link #BATCH_MAX} bytes wait here.
     */
    private static final class Batch {
        static final int COALESCE_MAX = 2048;
        static final int BATCH_MAX = 16 * 1024;
        private final Channel ch;
        private ByteBuf buf;

        Batch(Channel ch) {
            this.ch = ch;
        }

        void write(ByteBuf f) {
            int n = f.readableBytes();
            if (n > COALESCE_MAX) {
                handOver();
                ch.write(f, ch.voidPromise());
                return;
            }
            if (buf != null && buf.maxWritableBytes() < n) handOver();
            if (buf == null) buf = ch.alloc().ioBuffer(4096, BATCH_MAX);
            buf.writeBytes(f);
            f.release();
        }

        void handOver() {
            if (buf == null) return;
            ch.write(buf, ch.voidPromise());
            buf = null;
        }

        void discard() {
            if (buf != null) buf.release();
            buf = null;
        }
    }

    /** A producer connection: its frames go to the sink. */
    private final class Producer extends ChannelInboundHandlerAdapter {
        Channel ch;
        boolean dirty;
        Batch batch;

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ch = ctx.channel();
            if (coalesce) batch = new Batch(ch);
            open.add(this);
            ch.config().setAutoRead(readsOn);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            open.remove(this);
            if (batch != null) batch.discard();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf f = (ByteBuf) msg;
            if (sink == null) {
                // the sink went away while this read was under way; the producer connection is being closed
                f.release();
                return;
            }
            long rowid = Scan.rowid(f);
            if (rowid >= 0) push(this, rowid);
            forwarded++;
            if (sinkBatch != null) {
                sinkBatch.write(f);
            } else {
                sink.write(f, sink.voidPromise());
            }
            sinkDirty = true;
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (sinkDirty) scheduleFlush();
            updateReads();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /** The sink connection: its acks go back to the producers. */
    private final class SinkSide extends ChannelInboundHandlerAdapter {
        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            sink = ctx.channel();
            if (coalesce) sinkBatch = new Batch(sink);
            sinkUp = true;
            updateReads();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            sink = null;
            if (sinkBatch != null) sinkBatch.discard();
            sinkBatch = null;
            sinkUp = false;
            for (Producer p : new ArrayList<>(open)) p.ch.close();
            while (size > 0) pop();
            updateReads();
            if (!closing) loop.schedule(RawProxy.this::connectSink, 200, TimeUnit.MILLISECONDS);
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf f = (ByteBuf) msg;
            Producer p = take(Scan.rowid(f));
            if (p == null || !p.ch.isActive()) {
                unmatched++;
                f.release();
                return;
            }
            acked++;
            if (p.batch != null) {
                p.batch.write(f);
            } else {
                p.ch.write(f, p.ch.voidPromise());
            }
            if (!p.dirty) {
                p.dirty = true;
                toFlush.add(p);
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (!toFlush.isEmpty()) scheduleFlush();
            updateReads();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            updateReads();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    @Override
    public void close() throws InterruptedException {
        closing = true;
        listener.close().sync();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !args[1].contains(":")) {
            System.err.println("usage: RawProxy LISTEN_PORT SINK_HOST:SINK_PORT");
            System.exit(64);
        }
        int colon = args[1].lastIndexOf(':');
        RawProxy p = new RawProxy(Integer.parseInt(args[0]), args[1].substring(0, colon),
                Integer.parseInt(args[1].substring(colon + 1)));
        System.out.println("raw proxy listening on 127.0.0.1:" + p.port() + ", forwarding to " + args[1]
                + " (one event loop)");
        Thread.currentThread().join();
    }
}
