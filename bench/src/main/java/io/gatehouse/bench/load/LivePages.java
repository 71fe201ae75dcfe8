package io.gatehouse.bench.load;

import io.gatehouse.core.MetricsServer;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The forwarding bench with and without open live pages, side by side: the demo's shape (SideBySide {@code mq2}:
 * producer → C_IOGATE → C_RELAY → C_MQIOGATE over two C_QIOGATE, interval fsync → two raw sinks, acks on), with
 * the container's HTTP server and its 1 s sampler running in every configuration, and
 * <ul>
 *   <li>{@code pages=0}: nobody looking;</li>
 *   <li>{@code pages=N}: N pages open, each having loaded what a browser loads ({@code /}, {@code app.js},
 *       {@code app.css}, {@code /api/history}, {@code /api/view}) and then reading {@code /api/events}, one view a
 *       second, for the whole run.</li>
 * </ul>
 * Configurations are interleaved in rounds (each round runs each once, back to back) so that the neighbours' load
 * hits both alike; medians and the ratio are printed. The pages are plain sockets on one event loop of their own:
 * what is measured is the gateway's cost of serving them, not a browser's cost of drawing them.
 *
 * <p>Throughput on a shared 2-vCPU machine moves with the neighbours, so each run also reports CPU time, which
 * does not: the core thread's CPU microseconds per forwarded message, and the HTTP thread's CPU milliseconds per
 * second (serving the pages), from {@link java.lang.management.ThreadMXBean} over the measuring window; and, before
 * the load starts, the same two threads' CPU per second with no traffic at all, which is the cost of the sampler
 * and of the pages alone.
 *
 * <pre>LivePages [--rounds 5] [--pages 50] [--duration 4] [--warmup 2] [--connections 4] [--window 2000]</pre>
 */
public final class LivePages {
    /** The idle measurement before each run: long enough for several sampler ticks. */
    static final long IDLE_MS = 5_000;

    private LivePages() {}

    public static void main(String[] args) throws Exception {
        int rounds = 5;
        int pages = 50;
        LoadGen.Options base = new LoadGen.Options();
        base.connections = 4;
        base.mode = LoadGen.Mode.BURST;   // its published figures are of the acked rate, pipelined (no sinks here)
        base.window = 2000;
        base.warmup = 2;
        base.duration = 4;
        for (int i = 0; i < args.length; i += 2) {
            switch (args[i]) {
                case "--rounds": rounds = Integer.parseInt(args[i + 1]); break;
                case "--pages": pages = Integer.parseInt(args[i + 1]); break;
                case "--duration": base.duration = Double.parseDouble(args[i + 1]); break;
                case "--warmup": base.warmup = Double.parseDouble(args[i + 1]); break;
                case "--connections": base.connections = Integer.parseInt(args[i + 1]); break;
                case "--window": base.window = Integer.parseInt(args[i + 1]); break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        System.out.printf(Locale.ROOT, "# live pages: %d rounds, mq2 pipelined %d connections x window %d, warmup %.0f s,"
                        + " window %.0f s; JVM %s, %d cpus, load average %s%n", rounds, base.connections, base.window,
                base.warmup, base.duration, System.getProperty("java.version"), Runtime.getRuntime().availableProcessors(),
                SideBySide.loadAverage());
        int[] configs = {0, pages};
        Map<Integer, List<LoadGen.Result>> results = new LinkedHashMap<>();
        for (int r = 1; r <= rounds; r++) {
            for (int n : configs) {
                LoadGen.Options o = base.copy();
                o.label = "mq2/pages=" + n;
                LoadGen.Result res = runOne(n, o);
                System.out.println(res.line() + " round=" + r);
                results.computeIfAbsent(n, k -> new ArrayList<>()).add(res);
            }
        }
        System.out.println();
        System.out.println("| open pages | msgs/s median (min-max) | ratio to 0 pages | p50 us | p99 us |");
        System.out.println("|---|---|---|---|---|");
        double zero = SideBySide.median(results.get(0), x -> x.msgsPerSec);
        for (int n : configs) {
            List<LoadGen.Result> rs = results.get(n);
            double m = SideBySide.median(rs, x -> x.msgsPerSec);
            System.out.printf(Locale.ROOT, "| %d | %,.0f (%,.0f-%,.0f) | %.3f | %.0f | %.0f |%n", n, m,
                    rs.stream().mapToDouble(x -> x.msgsPerSec).min().orElse(0),
                    rs.stream().mapToDouble(x -> x.msgsPerSec).max().orElse(0), m / zero,
                    SideBySide.median(rs, x -> x.p(50)), SideBySide.median(rs, x -> x.p(99)));
        }
        System.out.println("load average at the end: " + SideBySide.loadAverage());
    }

    static LoadGen.Result runOne(int pages, LoadGen.Options o) throws Exception {
        List<RawSink> sinks = new ArrayList<>();
        Path data = Files.createTempDirectory("gatehouse-bench-pages-");
        NioEventLoopGroup browsers = new NioEventLoopGroup(1);
        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl()) {
            for (int i = 0; i < 2; i++) sinks.add(new RawSink(0));
            int input = SideBySide.freePort();
            String json = SideBySide.gatewayConfig("mq2", input, sinks.stream().mapToInt(RawSink::port).toArray());
            try (YunoRuntime rt = YunoRuntime.builder().name("bench").dataDir(data).gclasses(SideBySide.gclasses(queues))
                    .config(json).build().start();
                 MetricsServer http = new MetricsServer(rt)) {
                int port = http.start("127.0.0.1", 0);
                SideBySide.awaitListening(input, 20_000);
                long deadline = System.currentTimeMillis() + 20_000;
                while (sinks.stream().anyMatch(s -> s.connections.get() == 0) && System.currentTimeMillis() < deadline) {
                    Thread.sleep(20);
                }
                AtomicLong frames = new AtomicLong();
                List<Channel> open = new ArrayList<>();
                for (int i = 0; i < pages; i++) {
                    for (String asset : new String[] {"/", "/app.js", "/app.css", "/api/history", "/api/view"}) {
                        fetch(browsers, port, asset, null).closeFuture().sync();
                    }
                    open.add(fetch(browsers, port, "/api/events", frames));
                }
                // Idle first: with no traffic, what the core and HTTP threads spend on the sampler and the pages alone.
                Map<String, Long> idle0 = cpu();
                long i0 = System.nanoTime();
                Thread.sleep(IDLE_MS);
                Map<String, Long> idle1 = cpu();
                double idleSecs = (System.nanoTime() - i0) / 1e9;
                System.out.printf(Locale.ROOT, "IDLE pages=%d core_ms_per_s=%.3f http_ms_per_s=%.3f%n", pages,
                        delta(idle0, idle1, "gatehouse-core-") / 1e6 / idleSecs,
                        delta(idle0, idle1, "gatehouse-http-") / 1e6 / idleSecs);
                LoadGen.Options x = o.copy();
                x.port = input;
                long before = frames.get();
                Map<String, Long> cpu0 = cpu();
                long in0 = received(rt);
                long t0 = System.nanoTime();
                LoadGen.Result res = LoadGen.run(x);
                double secs = (System.nanoTime() - t0) / 1e9;
                Map<String, Long> cpu1 = cpu();
                long forwarded = received(rt) - in0;
                long got = frames.get() - before;
                long core = delta(cpu0, cpu1, "gatehouse-core-");
                long web = delta(cpu0, cpu1, "gatehouse-http-");
                System.out.printf(Locale.ROOT, "CPU pages=%d core_us_per_msg=%.2f http_ms_per_s=%.2f frames=%d%n", pages,
                        forwarded == 0 ? Double.NaN : core / 1e3 / forwarded, web / 1e6 / secs, got);
                if (pages > 0 && got < pages * (long) Math.floor(x.warmup + x.duration - 1)) {
                    System.out.printf("# warning: %d pages got only %d frames in %.0f s%n", pages, got, x.warmup + x.duration);
                }
                for (Channel c : open) c.close().sync();
                return res;
            }
        } finally {
            browsers.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
            for (RawSink s : sinks) s.close();
            SideBySide.deleteTree(data);
        }
    }

    /** Messages the gateway's input has received so far. */
    private static long received(YunoRuntime rt) {
        return rt.command("stats-yuno service=__input_side__").path("data").path("rxMsgs").asLong();
    }

    /** CPU nanoseconds of every live thread, by name. */
    private static Map<String, Long> cpu() {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        Map<String, Long> out = new LinkedHashMap<>();
        for (java.lang.management.ThreadInfo t : mx.getThreadInfo(mx.getAllThreadIds())) {
            if (t == null) continue;
            long c = mx.getThreadCpuTime(t.getThreadId());
            if (c >= 0) out.merge(t.getThreadName(), c, Long::sum);
        }
        return out;
    }

    /** CPU nanoseconds spent between two snapshots by the threads whose name starts with {@code prefix}. */
    private static long delta(Map<String, Long> a, Map<String, Long> b, String prefix) {
        long d = 0;
        for (Map.Entry<String, Long> e : b.entrySet()) {
            if (e.getKey().startsWith(prefix)) d += e.getValue() - a.getOrDefault(e.getKey(), 0L);
        }
        return d;
    }

    /** A GET the way a page does it; counts the SSE frames ({@code data:} lines) of an event stream. */
    private static Channel fetch(NioEventLoopGroup group, int port, String path, AtomicLong frames) throws InterruptedException {
        Channel ch = new Bootstrap().group(group).channel(NioSocketChannel.class)
                .handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel c) {
                        c.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                            @Override
                            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                ByteBuf b = (ByteBuf) msg;
                                if (frames != null) {
                                    for (int i = b.readerIndex(); i < b.writerIndex() - 1; i++) {
                                        if (b.getByte(i) == '\n' && b.getByte(i + 1) == '\n') frames.incrementAndGet();
                                    }
                                }
                                b.release();
                            }
                        });
                    }
                }).connect("127.0.0.1", port).sync().channel();
        ch.writeAndFlush(Unpooled.copiedBuffer("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", StandardCharsets.ISO_8859_1));
        return ch;
    }
}
