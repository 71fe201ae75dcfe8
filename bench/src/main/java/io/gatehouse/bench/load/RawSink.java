package io.gatehouse.bench.load;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Baseline (a) and the destination of the gateways under test: a raw Netty TCP4H server (one event loop, a
 * {@code LengthFieldBasedFrameDecoder} and one handler) that counts frames and, for a frame carrying
 * {@code __md_trq__}, writes back the queue-protocol ack {@code {"__md_trq__":{<the same fields>,"result":0}}}
 * (flushed once per read batch). Nothing else: the cheapest receiver that honours the protocol. Given a
 * {@link Delivery}, it also marks every frame there (first copies by message id, end-to-end latency): the
 * destination side of the sustained mode.
 *
 * <p>Main: {@code RawSink PORT} runs one until killed.
 */
public final class RawSink implements AutoCloseable {
    private static final byte[] MD_KEY = "\"__md_trq__\":".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ACK_HEAD = "{\"__md_trq__\":".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ACK_TAIL = ",\"result\":0}}".getBytes(StandardCharsets.US_ASCII);

    private final NioEventLoopGroup group;
    private final Channel listener;
    public final AtomicLong received = new AtomicLong();
    /** Read batches (a socket read and the frames it completed): frames per batch say how the hop writes. */
    public final AtomicLong reads = new AtomicLong();
    private volatile boolean ack = true;
    /** Where frames are marked, or null; one receiver per sink, as a sink is one event loop. */
    private volatile Delivery.Receiver delivery;
    public final java.util.concurrent.atomic.AtomicInteger connections = new java.util.concurrent.atomic.AtomicInteger();

    public RawSink(int port) throws InterruptedException {
        group = new NioEventLoopGroup(1, new DefaultThreadFactory("raw-sink"));
        listener = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(16 << 20, 0, 4, -4, 4), new Handler());
                    }
                }).bind("127.0.0.1", port).sync().channel();
    }

    public int port() {
        return ((java.net.InetSocketAddress) listener.localAddress()).getPort();
    }

    public void setAck(boolean ack) {
        this.ack = ack;
    }

    /** Marks the frames received from now on in {@code d} (null: stop). */
    public void setDelivery(Delivery d) {
        delivery = d == null ? null : d.receiver();
    }

    private final class Handler extends ChannelInboundHandlerAdapter {
        boolean wrote;

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            children.add(ctx.channel());
            connections.incrementAndGet();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            children.remove(ctx.channel());
            connections.decrementAndGet();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            try {
                received.incrementAndGet();
                Delivery.Receiver rx = delivery;
                if (rx != null) rx.onFrame(b);
                if (!ack) return;
                int at = Scan.lastIndexOf(b, MD_KEY);
                if (at < 0) return;
                int open = at + MD_KEY.length;
                int close = open;
                while (close < b.writerIndex() && b.getByte(close) != '}') close++;
                if (close >= b.writerIndex()) return;
                int mdLen = close - open;                     // "{...fields" without the closing brace
                int len = ACK_HEAD.length + mdLen + ACK_TAIL.length;
                ByteBuf out = ctx.alloc().buffer(4 + len);
                out.writeInt(len + 4).writeBytes(ACK_HEAD).writeBytes(b, open, mdLen).writeBytes(ACK_TAIL);
                ctx.write(out, ctx.voidPromise());
                wrote = true;
            } finally {
                b.release();
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            reads.incrementAndGet();
            if (wrote) {
                wrote = false;
                ctx.flush();
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }

    /** The connections accepted, for {@link #hold}. */
    private final java.util.Set<Channel> children = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * Stops reading (true) or reads again (false): a destination that stalls, so that a gateway's queue fills
     * whatever the gateway's core loop does (Drain's burst).
     */
    public void hold(boolean stop) {
        for (Channel c : children) c.config().setAutoRead(!stop);
    }

    @Override
    public void close() throws InterruptedException {
        listener.close().sync();
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
    }

    public static void main(String[] args) throws Exception {
        RawSink s = new RawSink(Integer.parseInt(args[0]));
        System.out.println("raw sink listening on 127.0.0.1:" + s.port());
        Thread.currentThread().join();
    }
}
