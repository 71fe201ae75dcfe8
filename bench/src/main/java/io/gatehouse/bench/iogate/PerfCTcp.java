package io.gatehouse.bench.iogate;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.channel.Channel;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.iogate.IoGate;
import io.gatehouse.support.Glog;
import io.gatehouse.tcp.TcpGClass;
import io.gatehouse.tcp.TcpSGClass;
import io.gatehouse.tcp4h.ProtTcp4hGClass;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;

import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.trqueue.TrQueueFactoryImpl;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Yuneta's {@code performance/c/perf_c_tcp} topology in one yuno with one core thread:
 *
 * <pre>
 *   perf_client  (re-sends every echo)          pepon (echo)
 *        |                                          |
 *   __output_side__ C_IOGATE                   __input_side__ C_IOGATE
 *     └ C_CHANNEL                                ├ C_TCP_S tcp://127.0.0.1:PORT
 *        └ C_PROT_TCP4H                          └ C_CHANNEL (from [^^children^^], 1)
 *           └ C_TCP  ───── loopback TCP ─────────    └ C_PROT_TCP4H └ (clisrv C_TCP)
 * </pre>
 *
 * A 132-byte JSON message in strict ping-pong, one in flight; the client checks each echo is byte-identical
 * and sends it again; timing starts at the first echo; after {@code count} echoes it prints
 * {@code # TIME perf_client (count: N): S seconds, OPS op/sec} (op = one round trip through both stacks).
 * Then the same ping-pong with raw Netty (one event loop, a length-field decoder and nothing else) as the
 * baseline of this machine.
 *
 * <p>Usage: {@code PerfCTcp [count] [runs] [test4|test5|all]} (defaults 180000, 3, test4). test5 = the same
 * with every message appended to a trqueue topic by the echo side before it answers (Yuneta's
 * {@code perf_tcp_test5}), once with fsync policy {@code none} (as Yuneta: no fsync) and once {@code interval}.
 */
public final class PerfCTcp {
    static final byte[] MESSAGE = message132();

    private PerfCTcp() {}

    static byte[] message132() {
        String head = "{\"id\": 1, \"tm\": 1, \"content\": \"";
        String tail = "\"}";
        StringBuilder content = new StringBuilder();
        while (content.length() < 132 - head.length() - tail.length()) content.append("Pepe el alfa. ");
        content.setLength(132 - head.length() - tail.length() - 1);
        content.append('.');
        byte[] b = (head + content + tail).getBytes(StandardCharsets.UTF_8);
        if (b.length != 132) throw new IllegalStateException("message is " + b.length + " bytes");
        return b;
    }

    public static void main(String[] args) throws Exception {
        int count = args.length > 0 ? Integer.parseInt(args[0]) : 180_000;
        int runs = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        String mode = args.length > 2 ? args[2] : "test4";
        System.out.println("# perf_c_tcp topology, " + count + " round trips of " + MESSAGE.length
                + " bytes (" + (MESSAGE.length + 4) + " on the wire), " + runs + " runs, JVM "
                + System.getProperty("java.version") + ", " + Runtime.getRuntime().availableProcessors() + " cpus");
        for (int i = 1; i <= runs; i++) {
            if (mode.equals("test4") || mode.equals("all")) {
                double ops = runGatehouse(count, null);
                System.out.printf(Locale.ROOT, "#   run %d gatehouse test4: %.0f op/sec%n", i, ops);
            }
            if (mode.equals("test5") || mode.equals("all")) {
                for (FsyncPolicy policy : new FsyncPolicy[] {FsyncPolicy.NONE, FsyncPolicy.INTERVAL}) {
                    double ops = runGatehouse(count, policy);
                    System.out.printf(Locale.ROOT, "#   run %d gatehouse test5 (append every message, fsync %s): %.0f op/sec%n",
                            i, policy.name().toLowerCase(Locale.ROOT), ops);
                }
            }
            double raw = runRawNetty(count);
            System.out.printf(Locale.ROOT, "#   run %d raw netty: %.0f op/sec%n", i, raw);
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    // --- Gatehouse ---

    static String config(int port) {
        return config(port, "C_PEPON");
    }

    static String config(int port, String pepon) {
        return "{\"services\": ["
                + "{\"name\": \"pepon\", \"gclass\": \"" + pepon + "\", \"priority\": 1},"
                + "{\"name\": \"perf_client\", \"gclass\": \"C_PERF_CLIENT\", \"priority\": 1},"
                + "{\"name\": \"__input_side__\", \"gclass\": \"C_IOGATE\", \"priority\": 2, \"kw\": {\"subscriber\": \"pepon\"},"
                + " \"children\": [{\"name\": \"server_port\", \"gclass\": \"C_TCP_S\", \"kw\": {\"url\": \"tcp://127.0.0.1:" + port + "\"}}],"
                + " \"[^^children^^]\": {\"__range__\": 1, \"__vars__\": {}, \"__content__\": "
                + "   {\"name\": \"input-(^^__range__^^)\", \"gclass\": \"C_CHANNEL\", \"children\": ["
                + "     {\"name\": \"input-(^^__range__^^)\", \"gclass\": \"C_PROT_TCP4H\", \"kw\": {\"iamServer\": true}}]}}},"
                + "{\"name\": \"__output_side__\", \"gclass\": \"C_IOGATE\", \"priority\": 3, \"kw\": {\"subscriber\": \"perf_client\"},"
                + " \"children\": [{\"name\": \"output\", \"gclass\": \"C_CHANNEL\", \"children\": ["
                + "   {\"name\": \"output\", \"gclass\": \"C_PROT_TCP4H\", \"children\": ["
                + "     {\"name\": \"output\", \"gclass\": \"C_TCP\", \"kw\": {\"url\": \"tcp://127.0.0.1:" + port + "\"}}]}]}]}"
                + "]}";
    }

    static double runGatehouse(int count) throws Exception {
        return runGatehouse(count, null);
    }

    /**
     * test4 ({@code persist} null) or test5: the echo side appends every message it receives to a trqueue topic
     * (parsed to JSON, stored as a checksummed record, like Yuneta's {@code tranger2_append_record}) before it
     * echoes it, with the given fsync policy (NONE is what Yuneta does: no fsync anywhere).
     */
    static double runGatehouse(int count, FsyncPolicy persist) throws Exception {
        PerfClient.target = count;
        PerfClient.done = new CountDownLatch(1);
        Path dir = persist == null ? null : Files.createTempDirectory("perf-c-tcp-test5-");
        TrQueueFactoryImpl factory = persist == null ? null : new TrQueueFactoryImpl();
        try (YunoRuntime rt = YunoRuntime.builder().name("perf_c_tcp")
                .gclass(IoGate.SPEC, Channel.SPEC, new TcpGClass().spec(), new TcpSGClass().spec(),
                        new ProtTcp4hGClass().spec(), Pepon.SPEC, PeponPersist.SPEC, PerfClient.SPEC)
                .config(config(freePort(), persist == null ? "C_PEPON" : "C_PEPON_PERSIST")).build()) {
            if (persist != null) {
                PeponPersist.queue = factory.open(dir, "perf", "test5", "tm", 0, 0,
                        TrQueueOptions.defaults().withFsyncPolicy(persist));
            }
            rt.start();
            if (!PerfClient.done.await(300, TimeUnit.SECONDS)) throw new IllegalStateException("perf run timed out");
            ObjectNode st = rt.command("stats-yuno service=__output_side__");
            if (st.get("data").get("rxMsgs").asLong() < count) throw new IllegalStateException("short run: " + st);
            if (persist != null && PeponPersist.queue.topicSize() < count) {
                throw new IllegalStateException("test5 persisted only " + PeponPersist.queue.topicSize());
            }
            return PerfClient.opsPerSec;
        } finally {
            if (persist != null) {
                PeponPersist.queue.close();
                PeponPersist.queue = null;
                factory.close();
                try (java.util.stream.Stream<Path> s = Files.walk(dir)) {
                    for (Path x : (Iterable<Path>) s.sorted(java.util.Comparator.reverseOrder())::iterator) Files.deleteIfExists(x);
                }
            }
        }
    }

    /** test5's echo: appends the message to the queue, then echoes it (the record is the parsed JSON). */
    public static final class PeponPersist implements GObjBehavior {
        static volatile TrQueue queue;
        static final GClassSpec<PeponPersist> SPEC = GClassSpec.builder("C_PEPON_PERSIST", PeponPersist.class)
                .description("Echo server that persists every message (perf test5)")
                .fsm(Fsm.<PeponPersist>builder().state(St.ST_IDLE)
                        .on(Ev.EV_ON_MESSAGE, PeponPersist::acEcho)
                        .ignore(Ev.EV_ON_OPEN)
                        .ignore(Ev.EV_ON_CLOSE)
                        .build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(PeponPersist::new)
                .build();

        private final GObj gobj;

        PeponPersist(GObj gobj) {
            this.gobj = gobj;
        }

        private int acEcho(String event, ObjectNode kw, GObj src) {
            ByteBuf b = Kw.gbuffer(kw);
            try {
                ObjectNode record = Kw.parse(b);
                if (queue.append(0, record, 0) == null) {
                    Glog.error(gobj, "test5: append failed");
                    return -1;
                }
            } catch (IOException e) {
                Glog.error(gobj, "test5: not JSON");
                return -1;
            }
            return src.send(Ev.EV_SEND_MESSAGE, kw, gobj);
        }
    }

    /** C_PEPON with do_echo: sends every message back on the channel it came from (its {@code __temp__}). */
    public static final class Pepon implements GObjBehavior {
        static final GClassSpec<Pepon> SPEC = GClassSpec.builder("C_PEPON", Pepon.class)
                .description("Echo server (perf)")
                .fsm(Fsm.<Pepon>builder().state(St.ST_IDLE)
                        .on(Ev.EV_ON_MESSAGE, Pepon::acEcho)
                        .ignore(Ev.EV_ON_OPEN)
                        .ignore(Ev.EV_ON_CLOSE)
                        .build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(Pepon::new)
                .build();

        private final GObj gobj;

        Pepon(GObj gobj) {
            this.gobj = gobj;
        }

        private int acEcho(String event, ObjectNode kw, GObj src) {
            return src.send(Ev.EV_SEND_MESSAGE, kw, gobj);
        }
    }

    /** The perf client: on open sends the message; on each echo checks it, counts and sends it again. */
    public static final class PerfClient implements GObjBehavior {
        static volatile int target;
        static volatile CountDownLatch done;
        static volatile double opsPerSec;

        static final GClassSpec<PerfClient> SPEC = GClassSpec.builder("C_PERF_CLIENT", PerfClient.class)
                .description("Ping-pong client (perf)")
                .fsm(Fsm.<PerfClient>builder().state(St.ST_IDLE)
                        .on(Ev.EV_ON_OPEN, PerfClient::acOpen)
                        .on(Ev.EV_ON_MESSAGE, PerfClient::acMessage)
                        .ignore(Ev.EV_ON_CLOSE)
                        .build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(PerfClient::new)
                .build();

        private final GObj gobj;
        private long t0;
        private int received;

        PerfClient(GObj gobj) {
            this.gobj = gobj;
        }

        private static ObjectNode newMessage() {
            ByteBuf b = PooledByteBufAllocator.DEFAULT.buffer(MESSAGE.length);
            b.writeBytes(MESSAGE);
            return Kw.withGbuffer(b);
        }

        private int acOpen(String event, ObjectNode kw, GObj src) {
            Kw.release(kw);
            return src.send(Ev.EV_SEND_MESSAGE, newMessage(), gobj);
        }

        private int acMessage(String event, ObjectNode kw, GObj src) {
            ByteBuf b = Kw.takeGbuffer(kw);
            boolean same = b != null && b.readableBytes() == MESSAGE.length
                    && ByteBufUtil.equals(b, b.readerIndex(), io.netty.buffer.Unpooled.wrappedBuffer(MESSAGE), 0,
                    MESSAGE.length);
            if (b != null) b.release();
            if (!same) {
                Glog.error(gobj, "Message not the same");
                done.countDown();
                return -1;
            }
            if (received == 0) t0 = System.nanoTime();
            received++;
            if (received > target) {
                // timing starts at the first echo: target echoes after it
                double s = (System.nanoTime() - t0) / 1e9;
                opsPerSec = target / s;
                System.out.printf(Locale.ROOT, "# TIME %s (count: %d): %f seconds, %.0f op/sec%n",
                        gobj.name(), target, s, opsPerSec);
                done.countDown();
                return 0;
            }
            return src.send(Ev.EV_SEND_MESSAGE, newMessage(), gobj);
        }
    }

    // --- Raw Netty baseline: same frames, same loopback, one event loop for both ends ---

    static double runRawNetty(int count) throws Exception {
        NioEventLoopGroup loop = new NioEventLoopGroup(1);
        CountDownLatch done = new CountDownLatch(1);
        double[] result = new double[1];
        try {
            int port = freePort();
            new ServerBootstrap().group(loop, loop).channel(NioServerSocketChannel.class)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(16 << 20, 0, 4, -4, 0),
                                    new ChannelInboundHandlerAdapter() {
                                        @Override
                                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                            ctx.writeAndFlush(msg);   // echo the whole frame
                                        }
                                    });
                        }
                    }).bind("127.0.0.1", port).sync();
            new Bootstrap().group(loop).channel(NioSocketChannel.class)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(16 << 20, 0, 4, -4, 4),
                                    new ChannelInboundHandlerAdapter() {
                                        long t0;
                                        int received;

                                        private void ping(ChannelHandlerContext ctx) {
                                            ByteBuf f = ctx.alloc().buffer(MESSAGE.length + 4);
                                            f.writeInt(MESSAGE.length + 4).writeBytes(MESSAGE);
                                            ctx.writeAndFlush(f);
                                        }

                                        @Override
                                        public void channelActive(ChannelHandlerContext ctx) {
                                            ping(ctx);
                                        }

                                        @Override
                                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                            ByteBuf b = (ByteBuf) msg;
                                            boolean same = b.readableBytes() == MESSAGE.length;
                                            b.release();
                                            if (!same) throw new IllegalStateException("echo differs");
                                            if (received == 0) t0 = System.nanoTime();
                                            if (++received > count) {
                                                double s = (System.nanoTime() - t0) / 1e9;
                                                result[0] = count / s;
                                                System.out.printf(Locale.ROOT,
                                                        "# TIME raw_netty (count: %d): %f seconds, %.0f op/sec%n",
                                                        count, s, result[0]);
                                                ctx.close();
                                                done.countDown();
                                                return;
                                            }
                                            ping(ctx);
                                        }
                                    });
                        }
                    }).connect("127.0.0.1", port).sync();
            if (!done.await(300, TimeUnit.SECONDS)) throw new IllegalStateException("raw run timed out");
            return result[0];
        } finally {
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}
