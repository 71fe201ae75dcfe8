// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.bench.tcp4h;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.support.Gbuffers;
import io.gatehouse.tcp.TcpGClass;
import io.gatehouse.tcp.TcpSGClass;
import io.gatehouse.tcp4h.ProtTcp4hGClass;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.LengthFieldPrepender;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * TCP4H through C_TCP + C_PROT_TCP4H (a yuno, client and server in one core loop) against raw Netty
 * (LengthFieldBasedFrameDecoder / LengthFieldPrepender, client and server on one NIO loop), same run,
 * interleaved rounds. Two tests: pipelined 100-byte messages into a counting sink (msgs/s) and a 132-byte
 * echo ping-pong, one message in flight (round trips/s).
 *
 * <p>{@code ioThreads} is a comma-separated list of the yuno's {@code io_threads} to measure, each in every round:
 * 0 (the default) keeps the sockets on the core loop; N > 0 puts them on N worker loops, so every message
 * crosses between the worker and the core thread (the raw Netty baseline stays on one loop).
 *
 * <pre>java -cp ... io.gatehouse.bench.tcp4h.Tcp4hBench [rounds=3] [warmupMs=1000] [measureMs=3000] [ioThreads=0]</pre>
 */
public final class Tcp4hBench {

    static final AtomicLong COUNT = new AtomicLong();

    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 3;
        long warm = args.length > 1 ? Long.parseLong(args[1]) : 1000;
        long measure = args.length > 2 ? Long.parseLong(args[2]) : 3000;
        int[] ios = java.util.Arrays.stream((args.length > 3 ? args[3] : "0").split(",")).mapToInt(x -> Integer.parseInt(x.trim())).toArray();
        List<Double> nPipe = new ArrayList<>(), nPong = new ArrayList<>();
        List<List<Double>> gPipe = new ArrayList<>(), gPong = new ArrayList<>();
        for (int i = 0; i < ios.length; i++) {
            gPipe.add(new ArrayList<>());
            gPong.add(new ArrayList<>());
        }
        for (int r = 0; r < rounds; r++) {
            nPipe.add(raw(false, 100, warm, measure));
            for (int i = 0; i < ios.length; i++) gPipe.get(i).add(gatehouse(false, 100, warm, measure, ios[i]));
            nPong.add(raw(true, 132, warm, measure));
            for (int i = 0; i < ios.length; i++) gPong.get(i).add(gatehouse(true, 132, warm, measure, ios[i]));
            StringBuilder line = new StringBuilder(String.format("round %d: pipelined raw %.0f", r + 1, nPipe.get(r)));
            for (int i = 0; i < ios.length; i++) line.append(String.format(" / gatehouse io_threads %d %.0f", ios[i], gPipe.get(i).get(r)));
            line.append(String.format(" msgs/s; ping-pong raw %.0f", nPong.get(r)));
            for (int i = 0; i < ios.length; i++) line.append(String.format(" / gatehouse io_threads %d %.0f", ios[i], gPong.get(i).get(r)));
            System.out.println(line.append(" rt/s"));
        }
        System.out.printf("%nmedian of %d rounds%n", rounds);
        for (int i = 0; i < ios.length; i++) {
            report("pipelined 100 B, msgs/s", ios[i], nPipe, gPipe.get(i));
            report("ping-pong 132 B, rt/s   ", ios[i], nPong, gPong.get(i));
        }
    }

    private static void report(String name, int io, List<Double> raw, List<Double> gh) {
        double r = median(raw), g = median(gh);
        System.out.printf("%s  raw Netty %,12.0f (%,.0f-%,.0f)   Gatehouse io_threads %d %,12.0f (%,.0f-%,.0f)   ratio %.2f%n",
                name, r, Collections.min(raw), Collections.max(raw), io, g, Collections.min(gh), Collections.max(gh), g / r);
    }

    private static double median(List<Double> l) {
        List<Double> s = new ArrayList<>(l);
        Collections.sort(s);
        int n = s.size();
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static double window(long warm, long measure) throws InterruptedException {
        Thread.sleep(warm);
        long c0 = COUNT.get();
        long t0 = System.nanoTime();
        Thread.sleep(measure);
        long c1 = COUNT.get();
        long t1 = System.nanoTime();
        return (c1 - c0) * 1e9 / (t1 - t0);
    }

    // --- Raw Netty ---

    private static double raw(boolean pong, int size, long warm, long measure) throws Exception {
        EventLoopGroup g = new NioEventLoopGroup(1);
        try {
            int port = freePort();
            COUNT.set(0);
            new ServerBootstrap().group(g, g).channel(NioServerSocketChannel.class)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel c) {
                            c.pipeline().addLast(new LengthFieldPrepender(4, true));
                            c.pipeline().addLast(new LengthFieldBasedFrameDecoder(16 * 1024 * 1024 + 4, 0, 4, -4, 4));
                            c.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                                @Override
                                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                    if (pong) {
                                        ctx.write(msg);
                                    } else {
                                        ((ByteBuf) msg).release();
                                        COUNT.incrementAndGet();
                                    }
                                }

                                @Override
                                public void channelReadComplete(ChannelHandlerContext ctx) {
                                    if (pong) ctx.flush();
                                }
                            });
                        }
                    }).bind(port).sync();
            Channel cli = new Bootstrap().group(g).channel(NioSocketChannel.class)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel c) {
                            c.pipeline().addLast(new LengthFieldBasedFrameDecoder(16 * 1024 * 1024 + 4, 0, 4, -4, 4));
                            c.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                                @Override
                                public void channelActive(ChannelHandlerContext ctx) {
                                    if (pong) sendOne(ctx.channel(), size, true);
                                    else pump(ctx.channel(), size);
                                }

                                @Override
                                public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                    ((ByteBuf) msg).release();
                                    COUNT.incrementAndGet();
                                    sendOne(ctx.channel(), size, true);
                                }

                                @Override
                                public void channelWritabilityChanged(ChannelHandlerContext ctx) {
                                    if (!pong && ctx.channel().isWritable()) pump(ctx.channel(), size);
                                }
                            });
                        }
                    }).connect(new InetSocketAddress("127.0.0.1", port)).sync().channel();
            double rate = window(warm, measure);
            cli.close().sync();
            return rate;
        } finally {
            g.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).sync();
        }
    }

    private static void sendOne(Channel c, int size, boolean flush) {
        ByteBuf b = c.alloc().directBuffer(4 + size);
        b.writeInt(size + 4);
        b.writerIndex(4 + size);
        if (flush) c.writeAndFlush(b, c.voidPromise());
        else c.write(b, c.voidPromise());
    }

    /** Writes while writable, flushing every 64 messages; comes back through the loop's task queue. */
    private static void pump(Channel c, int size) {
        if (!c.isActive()) return;
        for (int i = 0; i < 64 && c.isWritable(); i++) sendOne(c, size, false);
        c.flush();
        if (c.isWritable()) c.eventLoop().execute(() -> pump(c, size));
    }

    // --- Gatehouse ---

    /** Server side parent: counts (sink) or sends each message back on the connection it came from (echo). */
    static final class Server implements GObjBehavior {
        static boolean echo;
        final GObj gobj;

        Server(GObj g) {
            gobj = g;
        }

        private int acMessage(String ev, ObjectNode kw, GObj src) {
            if (echo) {
                return src.send(Ev.EV_SEND_MESSAGE, kw, gobj);
            }
            Kw.release(kw);
            COUNT.incrementAndGet();
            return 0;
        }

        static final GClassSpec<Server> SPEC = GClassSpec.builder("C_BENCH_SERVER", Server.class)
            .description("test stand-in C_BENCH_SERVER (Server)")
                .fsm(Fsm.<Server>builder().state(St.ST_IDLE)
                        .on(Ev.EV_ON_MESSAGE, Server::acMessage).ignore(Ev.EV_ON_OPEN).ignore(Ev.EV_ON_CLOSE).build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(Server::new).build();
    }

    /** Client side parent: ping-pong (send the next on each answer) or a producer pumping while writable. */
    static final class Client implements GObjBehavior {
        static boolean pong;
        static int size;
        final GObj gobj;
        GObj prot;
        boolean open;
        boolean waitingTxReady;

        Client(GObj g) {
            gobj = g;
        }

        private void send() {
            // Room for the header in front, as the raw producer writes header and payload in one buffer.
            ByteBuf b = Gbuffers.allocate(ByteBufAllocator.DEFAULT, size);
            b.writerIndex(b.writerIndex() + size);
            prot.send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(b), gobj);
        }

        /**
         * Sends 64 while C_TCP holds nothing back, then comes back through the loop's task queue; once C_TCP
         * queues (the socket is not writable), waits for its EV_TX_READY, as the raw producer waits for
         * channelWritabilityChanged.
         */
        private void pump() {
            if (!open || gobj.isDestroyed()) return;
            if (prot.bottom().readAttr("cur_tx_queue").asLong() != 0) {
                waitingTxReady = true;
                return;
            }
            for (int i = 0; i < 64; i++) send();
            gobj.yuno().eventLoop().execute(this::pump);
        }

        private int acTxReady(String ev, ObjectNode kw, GObj src) {
            if (waitingTxReady) {
                waitingTxReady = false;
                pump();
            }
            return 0;
        }

        private int acOpen(String ev, ObjectNode kw, GObj src) {
            prot = src;
            open = true;
            prot.bottom().subscribe(Ev.EV_TX_READY, gobj);
            if (pong) send();
            else gobj.yuno().eventLoop().execute(this::pump);
            return 0;
        }

        private int acClose(String ev, ObjectNode kw, GObj src) {
            open = false;
            return 0;
        }

        private int acMessage(String ev, ObjectNode kw, GObj src) {
            Kw.release(kw);
            COUNT.incrementAndGet();
            send();
            return 0;
        }

        static final GClassSpec<Client> SPEC = GClassSpec.builder("C_BENCH_CLIENT", Client.class)
            .description("test stand-in C_BENCH_CLIENT (Client)")
                .fsm(Fsm.<Client>builder().state(St.ST_IDLE)
                        .on(Ev.EV_ON_OPEN, Client::acOpen).on(Ev.EV_ON_CLOSE, Client::acClose)
                        .on(Ev.EV_ON_MESSAGE, Client::acMessage).on(Ev.EV_TX_READY, Client::acTxReady).build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(Client::new).build();
    }

    /** io_threads 0; perf.HotPath calls this one by reflection. */
    private static double gatehouse(boolean pong, int size, long warm, long measure) throws Exception {
        return gatehouse(pong, size, warm, measure, 0);
    }

    private static double gatehouse(boolean pong, int size, long warm, long measure, int ioThreads) throws Exception {
        int port = freePort();
        COUNT.set(0);
        Server.echo = pong;
        Client.pong = pong;
        Client.size = size;
        String cfg = "{\"services\":["
                + "{\"name\":\"srv\",\"gclass\":\"C_BENCH_SERVER\",\"autostart\":true,\"priority\":1,\"children\":["
                + "{\"name\":\"listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port + "\","
                + "\"channel_template\":{\"gclass\":\"C_PROT_TCP4H\"}}}]},"
                + "{\"name\":\"cli\",\"gclass\":\"C_BENCH_CLIENT\",\"autostart\":true,\"priority\":2,\"children\":["
                + "{\"name\":\"c\",\"gclass\":\"C_PROT_TCP4H\",\"kw\":{\"url\":\"tcp4h://127.0.0.1:" + port + "\"}}]}]}";
        try (YunoRuntime rt = YunoRuntime.builder().name("bench").ioThreads(ioThreads)
                .gclass(new TcpGClass().spec(), new TcpSGClass().spec(), new ProtTcp4hGClass().spec(), Server.SPEC, Client.SPEC)
                .config(cfg).build()) {
            rt.start();
            return window(warm, measure);
        }
    }
}
