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
import io.netty.util.concurrent.ScheduledFuture;
import org.HdrHistogram.Histogram;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The load generator: N TCP4H connections to any running container (or raw sink), each sending JSON messages
 * of {@code --size} bytes that speak the queue protocol ({@code __md_trq__} with a rowid per connection), so
 * the receiver acks each one. Modes:
 * <ul>
 *   <li>{@code pipelined}: up to {@code --window} unacked messages per connection (with {@code --acks false}:
 *       written as fast as the socket takes them, nothing waited for);</li>
 *   <li>{@code pingpong}: one message in flight per connection, the next one sent when its ack arrives.</li>
 * </ul>
 * {@code --rate} (msgs/s over all connections, 0 = as fast as possible) paces the sends; latency is the time
 * from the write of a message to the arrival of its ack (HdrHistogram, µs), recorded after {@code --warmup}.
 * Throughput = acks (or writes without acks) counted in the measuring window / its length.
 *
 * <pre>
 * LoadGen --host 127.0.0.1 --port 2000 --connections 4 --mode pipelined --size 128 --rate 0 --duration 5
 *         --warmup 2 --window 1000 --acks true [--threads 1] [--label name]
 * </pre>
 * Prints one {@code RESULT ...} line (key=value, easy to grep).
 */
public final class LoadGen {
    /** Options of one run. */
    public static final class Options {
        public String host = "127.0.0.1";
        public int port = 2000;
        public int connections = 1;
        public boolean pingpong;
        public int size = 128;
        public long rate;
        public double duration = 5;
        public double warmup = 2;
        public int window = 1000;
        public boolean acks = true;
        public int threads = 1;
        public String label = "loadgen";
        public String prefix = "m";

        public Options copy() {
            Options o = new Options();
            o.host = host; o.port = port; o.connections = connections; o.pingpong = pingpong; o.size = size;
            o.rate = rate; o.duration = duration; o.warmup = warmup; o.window = window; o.acks = acks;
            o.threads = threads; o.label = label; o.prefix = prefix;
            return o;
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
                    case "--mode":
                        if (!v.equals("pipelined") && !v.equals("pingpong")) throw new IllegalArgumentException("--mode pipelined|pingpong");
                        o.pingpong = v.equals("pingpong"); i++; break;
                    case "--size": o.size = Integer.parseInt(v); i++; break;
                    case "--rate": o.rate = Long.parseLong(v); i++; break;
                    case "--duration": o.duration = Double.parseDouble(v); i++; break;
                    case "--warmup": o.warmup = Double.parseDouble(v); i++; break;
                    case "--window": o.window = Integer.parseInt(v); i++; break;
                    case "--acks": o.acks = Boolean.parseBoolean(v); i++; break;
                    case "--threads": o.threads = Integer.parseInt(v); i++; break;
                    case "--label": o.label = v; i++; break;
                    case "--prefix": o.prefix = v; i++; break;
                    default: throw new IllegalArgumentException("unknown option " + a);
                }
            }
            if (o.pingpong) { o.acks = true; o.window = 1; }
            return o;
        }
    }

    /** What a run measured. */
    public static final class Result {
        public String label;
        public Options opts;
        public long messages;
        public double seconds;
        public double msgsPerSec;
        public Histogram latency;
        public long errors;

        public double p(double q) {
            return latency == null || latency.getTotalCount() == 0 ? Double.NaN : latency.getValueAtPercentile(q);
        }

        public String line() {
            return String.format(Locale.ROOT,
                    "RESULT label=%s mode=%s connections=%d size=%d acks=%s rate=%d msgs=%d secs=%.2f msgs_per_s=%.0f"
                            + " p50_us=%.0f p90_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%.0f errors=%d",
                    label, opts.pingpong ? "pingpong" : "pipelined", opts.connections, opts.size, opts.acks, opts.rate,
                    messages, seconds, msgsPerSec, p(50), p(90), p(99), p(99.9),
                    latency == null ? Double.NaN : (double) latency.getMaxValue(), errors);
        }
    }

    private LoadGen() {}

    public static void main(String[] args) throws Exception {
        Options o;
        try {
            o = Options.parse(args);
        } catch (RuntimeException e) {
            System.err.println("loadgen: " + e.getMessage());
            System.err.println("usage: LoadGen --host H --port P --connections N --mode pipelined|pingpong --size B"
                    + " --rate MSGS_PER_S(0=max) --duration S [--warmup S] [--window W] [--acks true|false]"
                    + " [--threads T] [--label L]");
            System.exit(64);
            return;
        }
        Result r = run(o);
        System.out.println(r.line());
    }

    /** One connection's state; touched only on its event loop. */
    private static final class Conn extends ChannelInboundHandlerAdapter {
        final int index;
        final Options o;
        final Run run;
        final long[] sentAt;
        final int mask;
        final byte[] head;
        Channel ch;
        long next = 1;        // next rowid to send
        long acked;           // acks received
        long perConnRate;     // msgs/s for this connection, 0 = max
        long startNs;

        Conn(int index, Options o, Run run) {
            this.index = index;
            this.o = o;
            this.run = run;
            int ring = Integer.highestOneBit(Math.max(2, o.window) * 4 - 1) << 1;
            sentAt = new long[ring];
            mask = ring - 1;
            head = ("{\"id\":\"" + o.prefix + index + "-").getBytes(StandardCharsets.US_ASCII);
            if (o.rate > 0) perConnRate = Math.max(1, o.rate / o.connections);
        }

        long inFlight() {
            return (next - 1) - acked;
        }

        /** Sends as many as the window, the rate and the socket allow. */
        void pump() {
            if (ch == null || !ch.isActive() || run.stopping) return;
            long allowed = Long.MAX_VALUE;
            if (perConnRate > 0) {
                long due = (System.nanoTime() - startNs) * perConnRate / 1_000_000_000L + 1;
                allowed = due - (next - 1);
            }
            int n = 0;
            while (allowed-- > 0 && ch.isWritable() && (!o.acks || inFlight() < o.window)) {
                ch.write(frame(next), ch.voidPromise());
                if (!o.acks) run.countSent(o);
                sentAt[(int) (next & mask)] = System.nanoTime();
                next++;
                if (++n >= 256) { ch.flush(); n = 0; }
            }
            if (n > 0) ch.flush();
        }

        ByteBuf frame(long rowid) {
            // {"id":"m<conn>-<rowid>","tm":<ms>,"pad":"xx..","__md_trq__":{"__msg_rowid__":R,"__msg_t__":1}}
            String mid = rowid + "\",\"tm\":" + (rowid & 0xffff) + ",\"pad\":\"";
            String tail = "\",\"__md_trq__\":{\"__msg_rowid__\":" + rowid + ",\"__msg_t__\":1}}";
            int pad = Math.max(0, o.size - head.length - mid.length() - tail.length());
            int len = head.length + mid.length() + pad + tail.length();
            ByteBuf b = ch.alloc().buffer(4 + len);
            b.writeInt(len + 4);
            b.writeBytes(head);
            b.writeCharSequence(mid, StandardCharsets.US_ASCII);
            for (int i = 0; i < pad; i++) b.writeByte('x');
            b.writeCharSequence(tail, StandardCharsets.US_ASCII);
            return b;
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
                long rowid = rowidOf(b);
                if (rowid <= 0) return;
                acked++;
                long now = System.nanoTime();
                run.countAck(o, (now - sentAt[(int) (rowid & mask)]) / 1000);
            } finally {
                b.release();
            }
            if (o.pingpong) pump();
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (!o.pingpong) pump();
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

    static final byte[] ROWID_KEY = "\"__msg_rowid__\":".getBytes(StandardCharsets.US_ASCII);

    /** The {@code __msg_rowid__} number in an ack, or -1. */
    static long rowidOf(ByteBuf b) {
        int end = b.writerIndex() - ROWID_KEY.length;
        outer:
        for (int i = b.readerIndex(); i <= end; i++) {
            for (int j = 0; j < ROWID_KEY.length; j++) {
                if (b.getByte(i + j) != ROWID_KEY[j]) continue outer;
            }
            long v = 0;
            int k = i + ROWID_KEY.length;
            while (k < b.writerIndex() && b.getByte(k) == ' ') k++;
            boolean any = false;
            while (k < b.writerIndex()) {
                byte c = b.getByte(k++);
                if (c < '0' || c > '9') break;
                v = v * 10 + (c - '0');
                any = true;
            }
            return any ? v : -1;
        }
        return -1;
    }

    /** Counters of a run; updated on the event loop(s) under a lock when there are several threads. */
    private static final class Run {
        volatile boolean stopping;
        volatile boolean measuring;
        long count;
        long errors;
        final Histogram hist = new Histogram(3_600_000_000L, 3);

        synchronized void countAck(Options o, long micros) {
            if (!measuring) return;
            count++;
            hist.recordValue(Math.max(0, Math.min(micros, 3_600_000_000L)));
        }

        synchronized void countSent(Options o) {
            if (measuring) count++;
        }
    }

    public static Result run(Options o) throws Exception {
        NioEventLoopGroup group = new NioEventLoopGroup(o.threads);
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
                Conn c = new Conn(i, o, run);
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
            }
            // paced or window-refilling sends also run on a 1 ms tick (rate pacing, resumption after stalls)
            for (Conn c : conns) {
                tickers.add(c.ch.eventLoop().scheduleAtFixedRate(c::pump, 1, 1, TimeUnit.MILLISECONDS));
            }
            Thread.sleep((long) (o.warmup * 1000));
            long t0 = System.nanoTime();
            run.measuring = true;
            Thread.sleep((long) (o.duration * 1000));
            run.measuring = false;
            long t1 = System.nanoTime();
            run.stopping = true;
            Result r = new Result();
            r.label = o.label;
            r.opts = o;
            synchronized (run) {
                r.messages = run.count;
                r.latency = o.acks ? run.hist.copy() : null;
                r.errors = run.errors;
            }
            r.seconds = (t1 - t0) / 1e9;
            r.msgsPerSec = r.messages / r.seconds;
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
}
