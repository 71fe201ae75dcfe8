package io.gatehouse.bench.scale;

import io.gatehouse.bench.load.LoadGen;
import io.gatehouse.bench.load.SideBySide;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Scale: N concurrent client connections (default 10,000) to one C_TCP_S in dynamic mode ({@code channel_template}
 * C_CHANNEL → C_PROT_TCP4H, {@code max_connections} 20,000) under a C_IOGATE whose messages go to a C_SINK that
 * acks. The clients run in a child JVM (one process may hold at most {@code ulimit -n} descriptors, 20,000 here, and
 * both ends of 10,000 loopback connections would need 20,000); each sends one message and waits for its ack. The
 * gateway's process memory (RSS, heap live after a full GC, direct buffers) is measured before and with the
 * connections open: the difference divided by N is the memory per connection.
 *
 * <pre>Connections [N]</pre>
 */
public final class Connections {
    private Connections() {}

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--clients")) {
            clients(Integer.parseInt(args[1]), Integer.parseInt(args[2]));
            return;
        }
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 10_000;
        int port = SideBySide.freePortPublic();
        String cfg = "{\"services\":["
                + "{\"name\":\"sink\",\"gclass\":\"C_SINK\",\"priority\":1,\"kw\":{\"input\":\"__input_side__\",\"id_prefix\":\"c\"}},"
                + "{\"name\":\"__input_side__\",\"gclass\":\"C_IOGATE\",\"priority\":5,\"children\":["
                + "{\"name\":\"listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port + "\","
                + "\"max_connections\":20000,\"backlog\":4096,\"channel_template\":{\"gclass\":\"C_CHANNEL\",\"children\":"
                + "[{\"gclass\":\"C_PROT_TCP4H\"}]}}}]}]}";
        Path data = Files.createTempDirectory("gatehouse-scale-");
        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl();
             YunoRuntime rt = YunoRuntime.builder().name("scale").dataDir(data)
                     .gclasses(SideBySide.gclasses(queues)).config(cfg).build().start()) {
            Thread.sleep(1000);
            long rss0 = Mem.rssKb();
            long heap0 = Mem.liveHeapKb();
            long direct0 = Mem.directKb();
            System.out.printf(Locale.ROOT, "# before: RSS %d MiB, live heap %d MiB, direct %d KiB%n", rss0 / 1024, heap0 / 1024, direct0);
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            Process child = new ProcessBuilder(java, "-Xmx512m", "-cp", System.getProperty("java.class.path"),
                    Connections.class.getName(), "--clients", "" + port, "" + n)
                    .redirectErrorStream(true).start();
            long t0 = System.nanoTime();
            BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            String line;
            String ready = null;
            while ((line = r.readLine()) != null) {
                System.out.println("#   clients: " + line);
                if (line.startsWith("READY") || line.startsWith("FAILED")) {
                    ready = line;
                    break;
                }
            }
            double connectS = (System.nanoTime() - t0) / 1e9;
            long connxs = rt.command("stats-yuno service=__input_side__").path("data").path("channels").size();
            long rss1 = Mem.rssKb();
            long heap1 = Mem.liveHeapKb();
            long direct1 = Mem.directKb();
            long sinkRx = rt.command("stats-yuno service=sink").path("data").path("rxMsgs").asLong();
            System.out.printf(Locale.ROOT, "# with %d connections (%s; %.1f s to connect and get every ack; gate channels %d,"
                            + " sink received %d): RSS %d MiB, live heap %d MiB, direct %d KiB%n", n, ready, connectS,
                    connxs, sinkRx, rss1 / 1024, heap1 / 1024, direct1);
            System.out.printf(Locale.ROOT, "RESULT connections=%d rss_per_conn_kb=%.1f heap_per_conn_kb=%.1f"
                            + " direct_per_conn_kb=%.2f connect_s=%.1f%n", n, (rss1 - rss0) / (double) n,
                    (heap1 - heap0) / (double) n, (direct1 - direct0) / (double) n, connectS);
            OutputStream o = child.getOutputStream();
            o.close();                       // the clients close their connections and exit
            if (!child.waitFor(60, TimeUnit.SECONDS)) child.destroyForcibly();
            Thread.sleep(2000);
            System.out.printf(Locale.ROOT, "# after the clients left: gate channels %d, RSS %d MiB, live heap %d MiB%n",
                    rt.command("stats-yuno service=__input_side__").path("data").path("channels").size(),
                    Mem.rssKb() / 1024, Mem.liveHeapKb() / 1024);
        } finally {
            SideBySide.deleteTree(data);
        }
    }

    /** Child: opens n connections, sends one message on each, waits for every ack, prints READY, waits for EOF. */
    static void clients(int port, int n) throws Exception {
        NioEventLoopGroup group = new NioEventLoopGroup(1);
        CountDownLatch acks = new CountDownLatch(n);
        AtomicLong failed = new AtomicLong();
        List<Channel> chans = new ArrayList<>();
        try {
            Bootstrap b = new Bootstrap().group(group).channel(NioSocketChannel.class)
                    .option(ChannelOption.TCP_NODELAY, true).option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 30_000)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(1 << 20, 0, 4, -4, 4),
                                    new ChannelInboundHandlerAdapter() {
                                        @Override
                                        public void channelRead(ChannelHandlerContext ctx, Object msg) {
                                            ((ByteBuf) msg).release();
                                            acks.countDown();
                                        }
                                    });
                        }
                    });
            List<ChannelFuture> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                fs.add(b.connect("127.0.0.1", port));
                if (i % 500 == 499) {
                    for (ChannelFuture f : fs.subList(fs.size() - 500, fs.size())) f.awaitUninterruptibly(30_000);
                }
            }
            for (int i = 0; i < n; i++) {
                ChannelFuture f = fs.get(i);
                f.awaitUninterruptibly(30_000);
                if (!f.isSuccess()) {
                    failed.incrementAndGet();
                    acks.countDown();
                    continue;
                }
                Channel ch = f.channel();
                chans.add(ch);
                byte[] body = ("{\"id\":\"c" + i + "\",\"__md_trq__\":{\"__msg_rowid__\":1,\"__msg_t__\":1}}")
                        .getBytes(StandardCharsets.US_ASCII);
                ByteBuf m = ch.alloc().buffer(body.length + 4).writeInt(body.length + 4).writeBytes(body);
                ch.writeAndFlush(m);
            }
            boolean all = acks.await(120, TimeUnit.SECONDS);
            System.out.println((all && failed.get() == 0 ? "READY " : "FAILED ") + chans.size() + " connected, "
                    + (n - acks.getCount() - failed.get()) + " acked, " + failed.get() + " failed");
            System.out.flush();
            while (System.in.read() >= 0) {
                // wait for EOF
            }
        } finally {
            for (Channel c : chans) c.close();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}
