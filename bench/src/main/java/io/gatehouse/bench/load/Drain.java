package io.gatehouse.bench.load;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.util.concurrent.DefaultThreadFactory;
import io.netty.util.concurrent.ScheduledFuture;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Issue 17's drain measurement: does a backlog drain while producers keep sending? Per config, in the same JVM
 * run and each on a fresh gateway:
 * <ol>
 *   <li><b>sustained</b>: {@link LoadGen}'s sustained mode ({@link SideBySide#runOne}), the rate S the path delivers
 *       with a bounded backlog;</li>
 *   <li><b>burst</b>: {@code --burst-check} seconds of {@link LoadGen}'s burst mode (each connection keeps
 *       {@code --window} unacked messages, whatever was delivered): its acked and delivered rates side by side say
 *       whether the input outruns the output on the core loop;</li>
 *   <li><b>fill</b>, then <b>drain</b>: the burst load for {@code --burst} seconds while the destinations stop
 *       reading ({@code --hold-sinks true}, the default: a stalled destination, so that a backlog builds up in the
 *       queue whatever the loop's fairness; {@code false}: only as far as the input outruns the output), then the
 *       destinations read again and the same connections go on sending, paced at {@code --fraction} (0.5) of S over
 *       all of them, until the backlog (sent − received by the destinations) is back under
 *       {@code max(2000, S / 20)} (50 ms of S) or {@code --drain-max} seconds passed. The figure: the destinations'
 *       rate over the drain, and its ratio to S (issue 17's goal: ≥ 0.8).</li>
 * </ol>
 * Every {@code --sample} seconds a line gives the phase, the rates sent / acked / delivered since the previous line
 * and the backlog: the backlog over time.
 *
 * <pre>Drain [--configs qiogate-interval,mq2] [--rounds 1] [--size 128] [--connections 4] [--window 2000]
 *       [--burst 20] [--hold-sinks true] [--fraction 0.5] [--drain-max 180] [--sustained 6] [--burst-check 6]
 *       [--warmup 2] [--sample 1]</pre>
 */
public final class Drain {
    private Drain() {}

    /** What one burst-and-drain run measured. */
    static final class Outcome {
        double sustained;
        double burstAcked;
        double burstDelivered;
        double fillAcked;
        double fillDelivered;
        long backlogAtSwitch;
        long backlogPeak;
        double drainSeconds;
        double drainDelivered;
        double drainSent;
        boolean drained;
        long endBacklog;

        double ratio() {
            return drainDelivered / sustained;
        }

        String line(String cfg) {
            return String.format(Locale.ROOT, "DRAIN config=%s sustained_per_s=%.0f burst_acked_per_s=%.0f"
                            + " burst_delivered_per_s=%.0f fill_acked_per_s=%.0f fill_delivered_per_s=%.0f"
                            + " backlog_at_switch=%d backlog_peak=%d drain_secs=%.1f drained=%s drain_sent_per_s=%.0f"
                            + " drain_delivered_per_s=%.0f ratio_to_sustained=%.2f end_backlog=%d",
                    cfg, sustained, burstAcked, burstDelivered, fillAcked, fillDelivered, backlogAtSwitch, backlogPeak,
                    drainSeconds, drained, drainSent, drainDelivered, ratio(), endBacklog);
        }
    }

    public static void main(String[] args) throws Exception {
        int rounds = 1;
        double burst = 20;
        double fraction = 0.5;
        double drainMax = 180;
        double sample = 1;
        double burstCheck = 6;
        boolean hold = true;
        LoadGen.Options base = new LoadGen.Options();
        base.connections = 4;
        base.window = 2000;
        base.warmup = 2;
        base.duration = 6;
        List<String> configs = List.of("qiogate-interval", "mq2");
        for (int i = 0; i < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
                case "--configs": configs = List.of(v.split(",")); break;
                case "--rounds": rounds = Integer.parseInt(v); break;
                case "--size": base.size = Integer.parseInt(v); break;
                case "--connections": base.connections = Integer.parseInt(v); break;
                case "--window": base.window = Integer.parseInt(v); break;
                case "--burst": burst = Double.parseDouble(v); break;
                case "--fraction": fraction = Double.parseDouble(v); break;
                case "--drain-max": drainMax = Double.parseDouble(v); break;
                case "--sustained": base.duration = Double.parseDouble(v); break;
                case "--warmup": base.warmup = Double.parseDouble(v); break;
                case "--sample": sample = Double.parseDouble(v); break;
                case "--burst-check": burstCheck = Double.parseDouble(v); break;
                case "--hold-sinks": hold = Boolean.parseBoolean(v); break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        for (String c : configs) {
            if (!SideBySide.ALL.contains(c) || c.equals("raw")) throw new IllegalArgumentException("unknown config " + c);
        }
        System.out.printf(Locale.ROOT, "# drain: %d rounds, configs %s, size %d, %d connections, burst window %d for"
                        + " %.0f s, then %.2f of the sustained rate (sustained run %.0f s after %.0f s warm-up);"
                        + " JVM %s, %d cpus, load average %s%n", rounds, configs, base.size, base.connections,
                base.window, burst, fraction, base.duration, base.warmup, System.getProperty("java.version"),
                Runtime.getRuntime().availableProcessors(), SideBySide.loadAverage());
        LoadGen.Options warm = base.copy();
        warm.warmup = 1;
        warm.duration = 1;
        warm.label = "jit-warmup";
        System.out.println(SideBySide.runOne(SideBySide.BASELINE, warm).line() + " (not counted)");
        List<String> summary = new ArrayList<>();
        for (int r = 1; r <= rounds; r++) {
            for (String cfg : configs) {
                if (r == 1) {
                    // the gateway's code is interpreted in its first run: a throwaway one, so that S is not that
                    LoadGen.Options w = warm.copy();
                    w.duration = 3;
                    w.label = cfg + "/jit-warmup";
                    System.out.println(SideBySide.runOne(cfg, w).line() + " (not counted)");
                }
                LoadGen.Options s = base.copy();
                s.mode = LoadGen.Mode.SUSTAINED;
                s.label = cfg + "/sustained";
                LoadGen.Result sr = SideBySide.runOne(cfg, s);
                System.out.println(sr.line() + " round=" + r + " load=" + SideBySide.loadAverage().split(" ")[0]);
                Outcome out = new Outcome();
                out.sustained = sr.msgsPerSec;
                LoadGen.Options d = base.copy();
                d.mode = LoadGen.Mode.BURST;
                d.label = cfg + "/drain";
                // the destinations' id tracking must span the whole backlog (ids of one connection split over
                // two queues arrive far apart): 2^24 ids per connection, 2 MiB of bits each
                d.maxBacklog = 1 << 22;
                double b = burst;
                double f = fraction;
                double dm = drainMax;
                double sm = sample;
                LoadGen.Options bc = base.copy();
                bc.mode = LoadGen.Mode.BURST;
                bc.duration = burstCheck;
                bc.label = cfg + "/burst";
                LoadGen.Result br = SideBySide.runOne(cfg, bc);
                System.out.println(br.line() + " round=" + r + " load=" + SideBySide.loadAverage().split(" ")[0]);
                out.burstAcked = br.ackedPerSec;
                out.burstDelivered = br.msgsPerSec;
                boolean h = hold;
                SideBySide.runOne(cfg, d, (x, delivery, sinks) -> run(x, delivery, sinks, h, out, b, f, dm, sm));
                String line = out.line(cfg) + " round=" + r + " load=" + SideBySide.loadAverage();
                System.out.println(line);
                summary.add(line);
            }
        }
        System.out.println();
        for (String l : summary) System.out.println(l);
        System.out.println("load average at the end: " + SideBySide.loadAverage());
    }

    /** One producer connection: a window of unacked messages, optionally paced; its state on its event loop. */
    private static final class Conn extends ChannelInboundHandlerAdapter {
        final byte[] head;
        final int size;
        final Run run;
        Channel ch;
        long next = 1;
        volatile long acked;
        volatile long sentV;
        /** Unacked messages allowed. */
        volatile long window;
        /** msgs/s of this connection; 0 = as fast as the window allows. */
        volatile long rate;
        long paceStartNs;
        long paceBase;

        Conn(int index, LoadGen.Options o, Run run) {
            head = ("{\"id\":\"" + o.prefix + index + "-").getBytes(StandardCharsets.US_ASCII);
            size = o.size;
            window = o.window;
            this.run = run;
        }

        void pace(long perSecond) {
            paceStartNs = System.nanoTime();
            paceBase = next - 1;
            window = Long.MAX_VALUE;
            rate = perSecond;
        }

        void pump() {
            if (ch == null || !ch.isActive() || run.stopping) return;
            long allowed = Long.MAX_VALUE;
            long r = rate;
            if (r > 0) allowed = paceBase + (System.nanoTime() - paceStartNs) * r / 1_000_000_000L + 1 - (next - 1);
            int n = 0;
            long w = window;
            while (allowed-- > 0 && ch.isWritable() && (next - 1) - acked < w) {
                ch.write(LoadGen.frame(ch.alloc(), head, size, next, System.nanoTime()), ch.voidPromise());
                next++;
                if (++n >= 256) {
                    sentV = next - 1;
                    ch.flush();
                    n = 0;
                }
            }
            sentV = next - 1;
            if (n > 0) ch.flush();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) pump();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            try {
                if (Scan.rowid(b) > 0) acked = acked + 1;   // only this loop writes it
            } finally {
                b.release();
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            pump();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            if (!run.stopping) run.errors++;
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            run.errors++;
            ctx.close();
        }
    }

    private static final class Run {
        volatile boolean stopping;
        volatile long errors;
    }

    /** Totals at one instant. */
    private static final class Point {
        final long ns = System.nanoTime();
        final long sent;
        final long acked;
        final long delivered;

        Point(List<Conn> conns, Delivery d) {
            long s = 0;
            long a = 0;
            for (Conn c : conns) {
                s += c.sentV;
                a += c.acked;
            }
            sent = s;
            acked = a;
            delivered = d.firstCopies();
        }

        long backlog() {
            return sent - delivered;
        }

        double secs(Point from) {
            return (ns - from.ns) / 1e9;
        }
    }

    static LoadGen.Result run(LoadGen.Options o, Delivery d, List<RawSink> sinks, boolean hold, Outcome out,
                              double burst, double fraction,
                              double drainMax, double sample) throws Exception {
        NioEventLoopGroup group = new NioEventLoopGroup(1, new DefaultThreadFactory("drain-load"));
        Run run = new Run();
        List<Conn> conns = new ArrayList<>();
        List<ScheduledFuture<?>> tickers = new ArrayList<>();
        try {
            Bootstrap b = new Bootstrap().group(group).channel(NioSocketChannel.class)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
                    .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(256 * 1024, 512 * 1024));
            for (int i = 0; i < o.connections; i++) {
                Conn c = new Conn(i, o, run);
                conns.add(c);
                ChannelFuture f = b.clone().handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(16 << 20, 0, 4, -4, 4), c);
                    }
                }).connect(o.host, o.port);
                if (!f.await(15, TimeUnit.SECONDS) || !f.isSuccess()) {
                    throw new IllegalStateException("cannot connect to " + o.host + ":" + o.port + ": " + f.cause());
                }
                c.ch = f.channel();
            }
            for (Conn c : conns) {
                tickers.add(c.ch.eventLoop().scheduleAtFixedRate(c::pump, 1, 1, TimeUnit.MILLISECONDS));
            }
            if (hold) {
                for (RawSink s : sinks) s.hold(true);
            }
            Point start = new Point(conns, d);
            Point prev = start;
            long peak = 0;
            long sampleMs = (long) (sample * 1000);
            long burstEnd = start.ns + (long) (burst * 1e9);
            while (System.nanoTime() < burstEnd) {
                Thread.sleep(Math.max(1, Math.min(sampleMs, (burstEnd - System.nanoTime()) / 1_000_000)));
                Point p = new Point(conns, d);
                peak = Math.max(peak, p.backlog());
                print(hold ? "held" : "burst", start, prev, p);
                prev = p;
            }
            Point sw = new Point(conns, d);
            double secs = sw.secs(start);
            out.fillAcked = (sw.acked - start.acked) / secs;
            out.fillDelivered = (sw.delivered - start.delivered) / secs;
            out.backlogAtSwitch = sw.backlog();
            long perConn = Math.max(1, Math.round(out.sustained * fraction / o.connections));
            for (Conn c : conns) c.ch.eventLoop().submit(() -> c.pace(perConn)).sync();
            for (RawSink s : sinks) s.hold(false);
            long settled = (long) Math.max(2000, out.sustained / 20);
            long drainEnd = sw.ns + (long) (drainMax * 1e9);
            Point p = sw;
            prev = sw;
            while (System.nanoTime() < drainEnd) {
                Thread.sleep(sampleMs);
                p = new Point(conns, d);
                peak = Math.max(peak, p.backlog());
                print("drain", start, prev, p);
                prev = p;
                if (p.backlog() <= settled) {
                    out.drained = true;
                    break;
                }
            }
            out.backlogPeak = peak;
            out.drainSeconds = p.secs(sw);
            out.drainDelivered = (p.delivered - sw.delivered) / out.drainSeconds;
            out.drainSent = (p.sent - sw.sent) / out.drainSeconds;
            out.endBacklog = p.backlog();
            run.stopping = true;
            LoadGen.Result r = new LoadGen.Result();
            r.label = o.label;
            r.opts = o;
            r.seconds = out.drainSeconds;
            r.messages = p.delivered - sw.delivered;
            r.msgsPerSec = out.drainDelivered;
            r.deliveredPerSec = out.drainDelivered;
            r.ackedPerSec = out.burstAcked;
            r.endBacklog = out.endBacklog;
            r.errors = run.errors;
            r.duplicates = d.duplicates();
            r.skipped = d.skipped();
            r.unknown = d.unknown();
            if (r.errors + r.skipped + r.unknown > 0) {
                System.out.println("# " + o.label + ": errors=" + r.errors + " skipped=" + r.skipped + " unknown="
                        + r.unknown + " duplicates=" + r.duplicates);
            }
            return r;
        } finally {
            run.stopping = true;
            for (ScheduledFuture<?> t : tickers) t.cancel(false);
            for (Conn c : conns) {
                if (c.ch != null) c.ch.close();
            }
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    private static void print(String phase, Point start, Point prev, Point p) {
        double s = p.secs(prev);
        if (s <= 0) return;
        System.out.printf(Locale.ROOT, "  t=%5.1f %s sent/s=%,.0f acked/s=%,.0f delivered/s=%,.0f backlog=%,d%n",
                p.secs(start), phase, (p.sent - prev.sent) / s, (p.acked - prev.acked) / s,
                (p.delivered - prev.delivered) / s, p.backlog());
    }
}
