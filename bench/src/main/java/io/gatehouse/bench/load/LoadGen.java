package io.gatehouse.bench.load;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
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
import org.HdrHistogram.Histogram;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The load generator: N TCP4H connections to any running container (or raw sink or proxy), each sending JSON
 * messages of {@code --size} bytes that speak the queue protocol ({@code __md_trq__} with a rowid per
 * connection), so the receiver acks each one. Each message also carries its id
 * ({@code "id":"<prefix><connection>-<rowid>"}) and its send time ({@code "ts"}, {@link System#nanoTime()}), so
 * that a destination in this JVM ({@link Delivery}) counts what it received and how long it took. Modes:
 * <ul>
 *   <li>{@code sustained} (the default): each connection keeps at most {@code --max-backlog} messages (20,000)
 *       that the destinations have not received yet (acks are not waited for). The producer learns what
 *       was received from the destinations' {@link Delivery} counts (same JVM), so it sends at the rate the
 *       path delivers and the backlog stays bounded: the figure is what a store-and-forward path sustains;</li>
 *   <li>{@code burst} (formerly {@code pipelined}, still accepted): up to {@code --window} unacked messages per
 *       connection, whatever the destinations received (with {@code --acks false}: written as fast as the
 *       socket takes them). It measures ingest; a queue may ack much faster than it delivers;</li>
 *   <li>{@code pingpong}: one message in flight per connection, the next one sent when its ack arrives.</li>
 * </ul>
 * Throughput ({@code msgs_per_s}) = first copies the destinations received in the measuring window / its
 * length; without destinations in this JVM, acks (or writes without acks) in the window. {@code acked_per_s},
 * {@code sent_per_s} and {@code end_backlog} (sent − received at the end of the window) go beside it. Latency:
 * end to end (producer send → destination receipt of the first copy), and the ack round trip ({@code ack_p*});
 * both HdrHistogram, µs, recorded after {@code --warmup}. {@code --rate} (msgs/s over all connections, 0 = as
 * fast as possible) paces the sends.
 *
 * <p>Against a gateway in another process, the destinations must be in this one: {@code --sinks PORT[,PORT]}
 * starts a raw sink ({@link RawSink}, acking unless {@code --sink-acks false}) on each port, waits for the
 * gateway to connect to all of them and counts there; the gateway's outputs must point at those ports. Without
 * {@code --sinks} only {@code burst} and {@code pingpong} run, and they count acks.
 *
 * <pre>
 * LoadGen --host 127.0.0.1 --port 2000 --connections 4 --mode sustained|burst|pingpong --size 128 --rate 0
 *         --duration 5 --warmup 2 --max-backlog 20000 --window 1000 --acks true [--sinks 2001,2002]
 *         [--sink-acks true] [--threads 1] [--label name]
 * </pre>
 * Prints one {@code RESULT ...} line (key=value, easy to grep).
 */
public final class LoadGen {
    /** How a connection decides to send its next message. */
    public enum Mode {
        /** At most {@code maxBacklog} messages not yet received by the destinations. */
        SUSTAINED,
        /** At most {@code window} messages not yet acked: ingest, whatever was delivered. */
        BURST,
        /** One message in flight, the next one sent when its ack arrives. */
        PINGPONG;

        public static Mode parse(String v) {
            switch (v) {
                case "sustained": return SUSTAINED;
                case "burst": case "pipelined": return BURST;
                case "pingpong": return PINGPONG;
                default: throw new IllegalArgumentException("--mode sustained|burst|pingpong, not " + v);
            }
        }

        @Override
        public String toString() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** Options of one run. */
    public static final class Options {
        public String host = "127.0.0.1";
        public int port = 2000;
        public int connections = 1;
        public Mode mode = Mode.SUSTAINED;
        public int size = 128;
        public long rate;
        public double duration = 5;
        public double warmup = 2;
        /** burst: unacked messages per connection. */
        public int window = 1000;
        /** sustained: messages per connection sent and not yet received by the destinations. */
        public int maxBacklog = 20_000;
        public boolean acks = true;
        public int threads = 1;
        public String label = "loadgen";
        public String prefix = "m";
        /** Ports of raw sinks to run in this JVM as the destinations (main only). */
        public List<Integer> sinks = List.of();
        public boolean sinkAcks = true;

        public Options copy() {
            Options o = new Options();
            o.host = host; o.port = port; o.connections = connections; o.mode = mode; o.size = size;
            o.rate = rate; o.duration = duration; o.warmup = warmup; o.window = window; o.maxBacklog = maxBacklog;
            o.acks = acks; o.threads = threads; o.label = label; o.prefix = prefix; o.sinks = sinks;
            o.sinkAcks = sinkAcks;
            return o;
        }

        /**
         * The window that sizes a connection's ack-timing ring (four times it or more): the unacked messages in
         * burst and ping-pong; in sustained mode, the undelivered ones (unacked ones are bounded by the ring).
         */
        int ackWindow() {
            return mode == Mode.PINGPONG ? 1 : mode == Mode.BURST ? window : maxBacklog;
        }

        public static Options parse(String[] args) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                String v = i + 1 < args.length ? args[i + 1] : null;
                switch (a) {
                    case "--host": o.host = v; i++; break;
                    case "--port": o.port = Integer.parseInt(v); i++; break;
                    case "--connections": o.connections = Integer.parseInt(v); i++; break;
                    case "--mode": o.mode = Mode.parse(v); i++; break;
                    case "--size": o.size = Integer.parseInt(v); i++; break;
                    case "--rate": o.rate = Long.parseLong(v); i++; break;
                    case "--duration": o.duration = Double.parseDouble(v); i++; break;
                    case "--warmup": o.warmup = Double.parseDouble(v); i++; break;
                    case "--window": o.window = Integer.parseInt(v); i++; break;
                    case "--max-backlog": o.maxBacklog = Integer.parseInt(v); i++; break;
                    case "--acks": o.acks = Boolean.parseBoolean(v); i++; break;
                    case "--threads": o.threads = Integer.parseInt(v); i++; break;
                    case "--label": o.label = v; i++; break;
                    case "--prefix": o.prefix = v; i++; break;
                    case "--sinks":
                        o.sinks = java.util.Arrays.stream(v.split(",")).map(Integer::valueOf).collect(
                                java.util.stream.Collectors.toList());
                        i++;
                        break;
                    case "--sink-acks": o.sinkAcks = Boolean.parseBoolean(v); i++; break;
                    default: throw new IllegalArgumentException("unknown option " + a);
                }
            }
            if (o.mode == Mode.PINGPONG) { o.acks = true; o.window = 1; }
            if (o.mode == Mode.SUSTAINED && o.sinks.isEmpty()) {
                throw new IllegalArgumentException("--mode sustained counts what the destinations received: give"
                        + " their ports with --sinks (the gateway's outputs connect to them), or use --mode burst");
            }
            if (o.maxBacklog < 1 || o.window < 1) throw new IllegalArgumentException("--max-backlog and --window >= 1");
            return o;
        }
    }

    /** What a run measured. */
    public static final class Result {
        public String label;
        public Options opts;
        /** The count behind {@link #msgsPerSec}. */
        public long messages;
        public double seconds;
        /** First copies delivered per second; without destinations in the JVM, acks (or writes) per second. */
        public double msgsPerSec;
        /** First copies the destinations received per second in the window; NaN without a {@link Delivery}. */
        public double deliveredPerSec = Double.NaN;
        /** Acks received per second in the window; NaN when acks are off. */
        public double ackedPerSec = Double.NaN;
        /** Messages written per second in the window. */
        public double sentPerSec;
        /** Sent and not received by the destinations at the end of the window, all connections; -1 if unknown. */
        public long endBacklog = -1;
        /** End to end, µs: producer send → first copy at a destination; null without a {@link Delivery}. */
        public Histogram latency;
        /** Ack round trip, µs: producer send → its ack; null when acks are off. */
        public Histogram ackLatency;
        /** CPU µs per first copy over the whole run, of the hop's event loop and of the process (SideBySide). */
        public double loopCpuUs = Double.NaN;
        public double processCpuUs = Double.NaN;
        /** CPU µs per first copy of the gateway's io_threads worker loops (SideBySide with io_threads > 0). */
        public double ioCpuUs = Double.NaN;
        /** CPU µs per first copy of the load generator's and the sinks' threads (SideBySide). */
        public double loadgenCpuUs = Double.NaN;
        public double sinkCpuUs = Double.NaN;
        /** The load generator's CPU over the whole run, ns (its loops are gone when SideBySide divides it). */
        public long loadgenCpuNs = -1;
        /** Frames per socket read at the sinks (SideBySide). */
        public double sinkFramesPerRead = Double.NaN;
        public long duplicates;
        public long skipped;
        public long unknown;
        public long errors;

        /** End-to-end latency percentile, µs. */
        public double p(double q) {
            return pct(latency, q);
        }

        /** Ack round-trip percentile, µs. */
        public double ackP(double q) {
            return pct(ackLatency, q);
        }

        private static double pct(Histogram h, double q) {
            return h == null || h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(q);
        }

        public String line() {
            return String.format(Locale.ROOT,
                    "RESULT label=%s mode=%s connections=%d size=%d %s=%d acks=%s rate=%d msgs=%d secs=%.2f"
                            + " msgs_per_s=%.0f acked_per_s=%.0f sent_per_s=%.0f end_backlog=%d"
                            + " p50_us=%.0f p90_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%.0f"
                            + " ack_p50_us=%.0f ack_p99_us=%.0f loop_cpu_us=%.2f process_cpu_us=%.2f"
                            + " duplicates=%d skipped=%d unknown=%d errors=%d",
                    label, opts.mode, opts.connections, opts.size,
                    opts.mode == Mode.SUSTAINED ? "max_backlog" : "window", opts.ackWindow(), opts.acks, opts.rate,
                    messages, seconds, msgsPerSec, ackedPerSec, sentPerSec, endBacklog, p(50), p(90), p(99), p(99.9),
                    latency == null ? Double.NaN : (double) latency.getMaxValue(), ackP(50), ackP(99), loopCpuUs,
                    processCpuUs, duplicates, skipped, unknown, errors)
                    + (Double.isNaN(ioCpuUs) ? "" : String.format(Locale.ROOT, " io_cpu_us=%.2f", ioCpuUs))
                    + (Double.isNaN(sinkCpuUs) ? "" : String.format(Locale.ROOT,
                            " loadgen_cpu_us=%.2f sink_cpu_us=%.2f sink_frames_per_read=%.1f",
                            loadgenCpuUs, sinkCpuUs, sinkFramesPerRead));
        }
    }

    private LoadGen() {}

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = Options.parse(args);
        } catch (RuntimeException e) {
            System.err.println("loadgen: " + e.getMessage());
            System.err.println("usage: LoadGen --host H --port P --connections N --mode sustained|burst|pingpong"
                    + " --size B --rate MSGS_PER_S(0=max) --duration S [--warmup S] [--max-backlog N] [--window W]"
                    + " [--acks true|false] [--sinks PORT,...] [--sink-acks true|false] [--threads T] [--label L]");
            System.exit(64);
            return;
        }
        Delivery d = null;
        List<RawSink> sinks = new ArrayList<>();
        try {
            if (!o.sinks.isEmpty()) {
                d = new Delivery(o.prefix, o.connections, Delivery.spanFor(o.maxBacklog));
                for (int port : o.sinks) {
                    RawSink s = new RawSink(port);
                    s.setAck(o.sinkAcks);
                    s.setDelivery(d);
                    sinks.add(s);
                }
                System.err.println("loadgen: sinks on " + o.sinks + ", waiting for the gateway to connect to each");
                long deadline = System.currentTimeMillis() + 60_000;
                while (sinks.stream().anyMatch(s -> s.connections.get() == 0)) {
                    if (System.currentTimeMillis() > deadline) throw new IllegalStateException("nothing connected to"
                            + " every sink of " + o.sinks + " within 60 s");
                    Thread.sleep(20);
                }
            }
            System.out.println(run(o, d).line());
        } finally {
            for (RawSink s : sinks) s.close();
        }
    }

    /** One connection's state; touched only on its event loop, but for the volatile {@link #sentV}. */
    private static final class Conn extends ChannelInboundHandlerAdapter {
        final int index;
        final Options o;
        final Run run;
        /** What the destinations received of this connection's messages; null without a Delivery. */
        final Delivery.Track track;
        final long[] sentAt;
        final int mask;
        final byte[] head;
        Channel ch;
        long next = 1;        // next rowid to send
        long acked;           // acks received
        /** Messages sent (next - 1), published before each flush for the end-of-window backlog. */
        volatile long sentV;
        long perConnRate;     // msgs/s for this connection, 0 = max
        long startNs;

        Conn(int index, Options o, Run run, Delivery.Track track) {
            this.index = index;
            this.o = o;
            this.run = run;
            this.track = track;
            // send times for the ack latency, by rowid: the ack window bounds the rowids in flight
            int ring = Integer.highestOneBit(Math.max(2, o.ackWindow()) * 4 - 1) << 1;
            sentAt = new long[ring];
            mask = ring - 1;
            head = ("{\"id\":\"" + o.prefix + index + "-").getBytes(StandardCharsets.US_ASCII);
            if (o.rate > 0) perConnRate = Math.max(1, o.rate / o.connections);
        }

        long inFlight() {
            return (next - 1) - acked;
        }

        /** Sends as many as the mode's window, the rate and the socket allow. */
        void pump() {
            if (ch == null || !ch.isActive() || run.stopping) return;
            long allowed = Long.MAX_VALUE;
            if (perConnRate > 0) {
                long due = (System.nanoTime() - startNs) * perConnRate / 1_000_000_000L + 1;
                allowed = due - (next - 1);
            }
            int n = 0;
            while (allowed-- > 0 && ch.isWritable() && mayPass()) {
                long now = System.nanoTime();
                ch.write(frame(ch.alloc(), head, o.size, next, now), ch.voidPromise());
                sentAt[(int) (next & mask)] = now;
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

        /** Whether the mode lets the next message go. */
        private boolean mayPass() {
            switch (o.mode) {
                case PINGPONG: return inFlight() < 1;
                case BURST: return !o.acks || inFlight() < o.window;
                // unacked messages are bounded only by the ring that times their acks: under CPU starvation
                // acks lag deliveries (one more hop and the producer's own loop), and a tighter bound would make
                // this mode measure the ack path instead of what the destinations receive
                default: return (!o.acks || inFlight() < sentAt.length) && deliveryRoom();
            }
        }

        /** Room under the undelivered bound; if there is none, the destinations wake this connection up. */
        private boolean deliveryRoom() {
            if (undeliveredBelowMax()) return true;
            track.park();
            // a delivery may have come between the check and the park: look again so that no wake-up is lost
            if (!undeliveredBelowMax()) return false;
            track.unpark();
            return true;
        }

        private boolean undeliveredBelowMax() {
            // the span bound keeps the destinations' id tracking exact (and bounded) when a message is stuck
            return (next - 1) - track.received() < o.maxBacklog && next - track.low() < track.span();
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            if (ch == null) {
                ch = ctx.channel();
                startNs = System.nanoTime();
            }
            pump();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (ctx.channel().isWritable()) pump();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            try {
                long rowid = Scan.rowid(b);
                if (rowid <= 0) return;
                acked++;
                long now = System.nanoTime();
                run.countAck((now - sentAt[(int) (rowid & mask)]) / 1000);
            } finally {
                b.release();
            }
            if (o.mode == Mode.PINGPONG) pump();
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (o.mode != Mode.PINGPONG) pump();
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

    /**
     * One message in its TCP4H frame, {@code size} bytes of JSON when the fields leave room for padding:
     * {@code {"id":"<head's prefix><conn>-<rowid>","ts":<now>,"tm":<n>,"pad":"xx..","__md_trq__":{"__msg_rowid__":
     * <rowid>,"__msg_t__":1}}}. Written digit by digit into the buffer, with no String per message: the producer
     * shares the two vCPUs with the path it measures, so its own cost per message must stay small.
     */
    static ByteBuf frame(ByteBufAllocator alloc, byte[] head, int size, long rowid, long now) {
        long tm = rowid & 0xffff;
        int fixed = head.length + TS.length + TM.length + PAD.length + TAIL_ROWID.length + TAIL_END.length;
        int digits = 2 * digits(rowid) + digits(now) + digits(tm);
        int pad = Math.max(0, size - fixed - digits);
        int len = fixed + digits + pad;
        ByteBuf b = alloc.buffer(4 + len);
        b.writeInt(len + 4);
        b.writeBytes(head);
        writeDigits(b, rowid);
        b.writeBytes(TS);
        writeDigits(b, now);
        b.writeBytes(TM);
        writeDigits(b, tm);
        b.writeBytes(PAD);
        for (int left = pad; left > 0; left -= XS.length) b.writeBytes(XS, 0, Math.min(left, XS.length));
        b.writeBytes(TAIL_ROWID);
        writeDigits(b, rowid);
        b.writeBytes(TAIL_END);
        return b;
    }

    private static final byte[] TS = ascii("\",\"ts\":");
    private static final byte[] TM = ascii(",\"tm\":");
    private static final byte[] PAD = ascii(",\"pad\":\"");
    private static final byte[] TAIL_ROWID = ascii("\",\"__md_trq__\":{\"__msg_rowid__\":");
    private static final byte[] TAIL_END = ascii(",\"__msg_t__\":1}}");
    private static final byte[] XS = ascii("x".repeat(256));

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    /** Decimal digits of a non-negative number. */
    static int digits(long v) {
        int n = 1;
        while (v >= 10) {
            v /= 10;
            n++;
        }
        return n;
    }

    /** Writes a non-negative number in decimal. */
    static void writeDigits(ByteBuf b, long v) {
        int n = digits(v);
        int at = b.writerIndex();
        b.ensureWritable(n);
        for (int i = n - 1; i >= 0; i--) {
            b.setByte(at + i, (int) ('0' + v % 10));
            v /= 10;
        }
        b.writerIndex(at + n);
    }

    /** Counters of a run; updated on the event loop(s) under a lock when there are several threads. */
    private static final class Run {
        volatile boolean stopping;
        volatile boolean measuring;
        long acks;
        long errors;
        final Histogram hist = new Histogram(3_600_000_000L, 3);

        synchronized void countAck(long micros) {
            if (!measuring) return;
            acks++;
            hist.recordValue(Math.max(0, Math.min(micros, 3_600_000_000L)));
        }
    }

    /** The CPU time the event loops of {@code group} have spent so far, ns (each asked on its own thread). */
    static long cpuOf(NioEventLoopGroup group) throws Exception {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        long sum = 0;
        for (io.netty.util.concurrent.EventExecutor e : group) {
            sum += e.submit(threads::getCurrentThreadCpuTime).get(5, TimeUnit.SECONDS);
        }
        return sum;
    }

    /** A run without destinations in this JVM: burst or ping-pong, counting acks. */
    public static Result run(Options o) throws Exception {
        return run(o, null);
    }

    /**
     * A run whose destinations mark what they receive in {@code d} (sized for {@code o.connections} and made with
     * {@code o.prefix}); {@code d} may be null except in sustained mode.
     */
    public static Result run(Options o, Delivery d) throws Exception {
        if (o.mode == Mode.SUSTAINED && d == null) {
            throw new IllegalArgumentException("sustained mode needs the destinations' Delivery (LoadGen --sinks)");
        }
        NioEventLoopGroup group = new NioEventLoopGroup(o.threads, new DefaultThreadFactory("loadgen"));
        Run run = new Run();
        List<Conn> conns = new ArrayList<>();
        List<ScheduledFuture<?>> tickers = new ArrayList<>();
        try {
            Bootstrap b = new Bootstrap().group(group).channel(NioSocketChannel.class)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, 10_000)
                    .option(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(256 * 1024, 512 * 1024));
            List<ChannelFuture> futures = new ArrayList<>();
            for (int i = 0; i < o.connections; i++) {
                Conn c = new Conn(i, o, run, d == null ? null : d.track(i));
                conns.add(c);
                futures.add(b.clone().handler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(16 << 20, 0, 4, -4, 4), c);
                    }
                }).connect(o.host, o.port));
                if (o.connections > 256 && i % 256 == 255) Thread.sleep(5);
            }
            for (int i = 0; i < futures.size(); i++) {
                ChannelFuture f = futures.get(i);
                if (!f.await(15, TimeUnit.SECONDS) || !f.isSuccess()) {
                    throw new IllegalStateException("cannot connect to " + o.host + ":" + o.port + ": " + f.cause());
                }
            }
            for (int i = 0; i < futures.size(); i++) {
                Conn c = conns.get(i);
                Channel ch = futures.get(i).channel();
                ch.eventLoop().submit(() -> {
                    if (c.ch == null) {
                        c.ch = ch;
                        c.startNs = System.nanoTime();
                    }
                }).sync();
                if (c.track != null) {
                    // woken by a destination after a sixteenth of the backlog (at most 256 messages) was received
                    c.track.onWake(() -> ch.eventLoop().execute(c::pump), Math.min(256, o.maxBacklog / 16));
                }
            }
            // paced or window-refilling sends also run on a 1 ms tick (rate pacing, resumption after stalls)
            for (Conn c : conns) {
                tickers.add(c.ch.eventLoop().scheduleAtFixedRate(c::pump, 1, 1, TimeUnit.MILLISECONDS));
            }
            Thread.sleep((long) (o.warmup * 1000));
            long t0 = System.nanoTime();
            long delivered0 = d == null ? 0 : d.firstCopies();
            long sent0 = conns.stream().mapToLong(c -> c.sentV).sum();
            if (d != null) d.takeLatency();
            run.measuring = true;
            Thread.sleep((long) (o.duration * 1000));
            run.measuring = false;
            long t1 = System.nanoTime();
            long delivered1 = d == null ? 0 : d.firstCopies();
            long sent1 = conns.stream().mapToLong(c -> c.sentV).sum();
            Result r = new Result();
            if (d != null) {
                r.latency = d.takeLatency();
                long backlog = 0;
                for (Conn c : conns) backlog += c.sentV - c.track.received();
                r.endBacklog = backlog;
            }
            run.stopping = true;
            r.label = o.label;
            r.opts = o;
            r.seconds = (t1 - t0) / 1e9;
            synchronized (run) {
                if (o.acks) {
                    r.ackLatency = run.hist.copy();
                    r.ackedPerSec = run.acks / r.seconds;
                }
                r.errors = run.errors;
            }
            r.sentPerSec = (sent1 - sent0) / r.seconds;
            r.loadgenCpuNs = cpuOf(group);
            if (d != null) {
                r.messages = delivered1 - delivered0;
                r.deliveredPerSec = r.messages / r.seconds;
                r.duplicates = d.duplicates();
                r.skipped = d.skipped();
                r.unknown = d.unknown();
            } else {
                r.messages = o.acks ? run.acks : sent1 - sent0;
            }
            r.msgsPerSec = r.messages / r.seconds;
            return r;
        } finally {
            run.stopping = true;
            for (ScheduledFuture<?> t : tickers) t.cancel(false);
            for (Conn c : conns) {
                if (c.track != null) c.track.onWake(null, 1);
                if (c.ch != null) c.ch.close();
            }
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }
}
