package io.gatehouse.systests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.group.ChannelGroup;
import io.netty.channel.group.DefaultChannelGroup;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.util.concurrent.GlobalEventExecutor;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.BitSet;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the reliability scenarios share: the profile (short in CI, {@code -Dgatehouse.reliability=long} on
 * demand), the gateway config (the demo gateway without its sinks), sinks and a producer that live in the test
 * JVM and count every id end to end, the control endpoint, the RSS of the gateway process, and the report line.
 */
final class Reliability {
    private Reliability() {}

    static final ObjectMapper JSON = new ObjectMapper();

    static boolean longProfile() {
        return "long".equalsIgnoreCase(System.getProperty("gatehouse.reliability", "short"));
    }

    static int pick(int shortValue, int longValue) {
        return longProfile() ? longValue : shortValue;
    }

    /** A fresh work folder under target/reliability. */
    static Path work(String name) throws IOException {
        Path dir = Files.createDirectories(Path.of("target/reliability"));
        return Files.createTempDirectory(dir, name + "-");
    }

    /** Ports: input, sink0, sink1, control, http, mqtt. */
    static final class Ports {
        final int input, sink0, sink1, control, http, mqtt;

        Ports() {
            int[] p = Gateways.freePorts(6);
            input = p[0];
            sink0 = p[1];
            sink1 = p[2];
            control = p[3];
            http = p[4];
            mqtt = p[5];
        }
    }

    /** The demo gateway without its sinks (they run in the test JVM as {@link IdSink}s). */
    static ObjectNode gatewayConfig(Ports p) {
        ObjectNode cfg = demo();
        ObjectNode v = (ObjectNode) cfg.get("__json_config_variables__");
        Map.of("__host__", "127.0.0.1", "__input_port__", "" + p.input, "__sink0_port__", "" + p.sink0,
                "__sink1_port__", "" + p.sink1).forEach(v::put);
        if (v.has("__http_port__")) v.put("__http_port__", "" + p.http);
        if (v.has("__mqtt_port__")) v.put("__mqtt_port__", "" + p.mqtt);
        ArrayNode services = (ArrayNode) cfg.get("services");
        for (int i = services.size() - 1; i >= 0; i--) {
            String name = services.get(i).get("name").asText();
            if (name.startsWith("sink") || name.startsWith("__sink")) services.remove(i);
        }
        return cfg;
    }

    /**
     * The demo gateway: the runtime's default config when it is the demo gateway, else (until it becomes the
     * default) docs/examples/demo-gateway.json.
     */
    static ObjectNode demo() {
        try {
            for (String f : new String[] {System.getProperty("gatehouse.demo.config",
                    "../runtime/felix/src/main/dist/conf/gatehouse.json"), "../docs/examples/demo-gateway.json"}) {
                Path path = Path.of(f);
                if (!Files.isRegularFile(path)) continue;
                ObjectNode cfg = (ObjectNode) JSON.readTree(Files.readString(path));
                if (cfg.has("__json_config_variables__")) return cfg;
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        throw new IllegalStateException("no demo gateway config found");
    }

    /** The kw of the C_QIOGATE named {@code output-k} in a gateway config. */
    static ObjectNode queueKw(ObjectNode cfg, int k) {
        for (JsonNode s : cfg.get("services")) {
            if (!s.get("name").asText().equals("__output_side__")) continue;
            for (JsonNode c : s.get("children")) {
                if (c.get("name").asText().equals("output-" + k)) return (ObjectNode) c.get("kw");
            }
        }
        throw new IllegalStateException("no output-" + k);
    }

    static Path writeConfig(Path work, ObjectNode cfg) throws IOException {
        Path f = work.resolve("gateway.json");
        Files.writeString(f, cfg.toPrettyString());
        return f;
    }

    // --- what the sinks saw ---

    /** Ids delivered to any sink (shared by the sinks of a scenario). */
    static final class Ledger {
        private final BitSet seen = new BitSet();
        private long duplicates;
        private long frames;
        private long badFrames;

        synchronized void delivered(long id) {
            frames++;
            if (id < 0 || id >= Integer.MAX_VALUE) {
                badFrames++;
                return;
            }
            if (seen.get((int) id)) duplicates++;
            else seen.set((int) id);
        }

        synchronized long distinct() {
            return seen.cardinality();
        }

        synchronized long duplicates() {
            return duplicates;
        }

        synchronized long frames() {
            return frames;
        }

        synchronized boolean has(long id) {
            return seen.get((int) id);
        }

        /** Acked ids that never arrived. */
        synchronized long lost(BitSet acked) {
            BitSet missing = (BitSet) acked.clone();
            missing.andNot(seen);
            return missing.cardinality();
        }

        synchronized BitSet snapshot() {
            return (BitSet) seen.clone();
        }
    }

    /**
     * A destination: a TCP4H server that records the id of every message ({@code "id":"msg-N"}) in a {@link
     * Ledger} and acks it with the queue protocol. {@code pauseEvery}/{@code pauseMs} make it a slow consumer
     * (its event loop sleeps, so it stops reading and TCP pushes back).
     */
    static final class IdSink implements AutoCloseable {
        private static final byte[] ID_KEY = "\"id\":\"msg-".getBytes(StandardCharsets.US_ASCII);
        private static final byte[] MD_KEY = "\"__md_trq__\":".getBytes(StandardCharsets.US_ASCII);
        private static final byte[] ACK_HEAD = "{\"__md_trq__\":".getBytes(StandardCharsets.US_ASCII);
        private static final byte[] ACK_TAIL = ",\"result\":0}}".getBytes(StandardCharsets.US_ASCII);
        private final NioEventLoopGroup group = new NioEventLoopGroup(1);
        private final ChannelGroup open = new DefaultChannelGroup(GlobalEventExecutor.INSTANCE);
        private final Channel listener;
        final Ledger ledger;
        final AtomicLong received = new AtomicLong();
        volatile int pauseEvery;
        volatile int pauseMs;

        IdSink(int port, Ledger ledger) throws InterruptedException {
            this.ledger = ledger;
            listener = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                    .option(ChannelOption.SO_REUSEADDR, true)
                    .childOption(ChannelOption.TCP_NODELAY, true)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            open.add(ch);
                            ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(16 << 20, 0, 4, -4, 4), new Handler());
                        }
                    }).bind("127.0.0.1", port).sync().channel();
        }

        private final class Handler extends ChannelInboundHandlerAdapter {
            boolean wrote;

            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                ByteBuf b = (ByteBuf) msg;
                try {
                    long n = received.incrementAndGet();
                    // One copy per frame, scanned as an array: the test JVMs run Netty's paranoid leak detector,
                    // which records a stack trace at every ByteBuf.getByte, and a byte-by-byte scan of the buffer
                    // made this sink, not the gateway, the bottleneck at a few thousand messages per second.
                    byte[] frame = ByteBufUtil.getBytes(b);
                    ledger.delivered(number(frame, indexOf(frame, ID_KEY) + ID_KEY.length));
                    int at = indexOf(frame, MD_KEY);
                    if (at >= 0) {
                        int open = at + MD_KEY.length;
                        int close = open;
                        while (close < frame.length && frame[close] != '}') close++;
                        int len = ACK_HEAD.length + (close - open) + ACK_TAIL.length;
                        ByteBuf out = ctx.alloc().buffer(4 + len);
                        out.writeInt(len + 4).writeBytes(ACK_HEAD).writeBytes(frame, open, close - open).writeBytes(ACK_TAIL);
                        ctx.write(out, ctx.voidPromise());
                        wrote = true;
                    }
                    int every = pauseEvery;
                    if (every > 0 && n % every == 0) {
                        ctx.flush();
                        wrote = false;
                        Thread.sleep(pauseMs);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    b.release();
                }
            }

            @Override
            public void channelReadComplete(ChannelHandlerContext ctx) {
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

        @Override
        public void close() throws InterruptedException {
            listener.close().sync();
            open.close().awaitUninterruptibly(5, TimeUnit.SECONDS);
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /** Where {@code key} starts in {@code bytes}, or {@code -1 - key.length} (so that adding the length stays negative). */
    static int indexOf(byte[] bytes, byte[] key) {
        outer:
        for (int i = 0; i <= bytes.length - key.length; i++) {
            for (int j = 0; j < key.length; j++) {
                if (bytes[i + j] != key[j]) continue outer;
            }
            return i;
        }
        return -1 - key.length;
    }

    static long number(byte[] bytes, int at) {
        if (at < 0) return -1;
        long v = 0;
        boolean any = false;
        for (int k = at; k < bytes.length; k++) {
            byte c = bytes[k];
            if (c < '0' || c > '9') break;
            v = v * 10 + (c - '0');
            any = true;
        }
        return any ? v : -1;
    }

    // --- the producer ---

    /**
     * Sends ids {@code [from, from+count)} as {@code msg-N} with the queue protocol, at most {@code window}
     * unacked, optionally paced to {@code rate} msgs/s; reconnects and resends what is not acked (after a
     * reconnect, or when acks stop for {@code resendAfterMs}); stops when all are acked, at the deadline, or when
     * {@link #stop} is called. Remembers exactly which ids were acked.
     */
    static final class Producer {
        final long from;
        final int count;
        int window = 2000;
        int size = 128;
        volatile long rate;
        long resendAfterMs = 5000;
        final BitSet acked;
        private long ackedCount;
        private long lastAckAt;
        volatile boolean stopped;
        final AtomicLong sent = new AtomicLong();
        final AtomicLong reconnects = new AtomicLong();
        /** Ids written at least once, and those written more than once (a resend after a reconnect or a stall). */
        private final BitSet written = new BitSet();
        private final BitSet rewritten = new BitSet();
        private final String host = "127.0.0.1";
        private final int port;

        Producer(int port, long from, int count) {
            this.port = port;
            this.from = from;
            this.count = count;
            this.acked = new BitSet(count);
        }

        private volatile Socket socket;

        /** Stops the producer, closing its connection (a write blocked by TCP backpressure ends too). */
        void stop() {
            stopped = true;
            Socket s = socket;
            if (s != null) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // closing anyway
                }
            }
        }

        synchronized long ackedCount() {
            return ackedCount;
        }

        private synchronized void noteWritten(int i) {
            if (written.get(i)) rewritten.set(i);
            else written.set(i);
        }

        /**
         * The ids this producer sent more than once, as absolute ids: a downstream copy of one of them under two
         * queue identities is the producer's resend, not the gateway's.
         */
        synchronized BitSet resentIds() {
            BitSet b = new BitSet();
            for (int i = rewritten.nextSetBit(0); i >= 0; i = rewritten.nextSetBit(i + 1)) b.set((int) (from + i));
            return b;
        }

        /** The acked ids, as absolute ids. */
        synchronized BitSet ackedIds() {
            BitSet b = new BitSet();
            for (int i = acked.nextSetBit(0); i >= 0; i = acked.nextSetBit(i + 1)) b.set((int) (from + i));
            return b;
        }

        byte[] frame(int i) {
            long id = from + i;
            String head = "{\"id\":\"msg-" + id + "\",\"seq\":" + id + ",\"tm\":" + System.currentTimeMillis() + ",\"pad\":\"";
            String tail = "\",\"__md_trq__\":{\"__msg_rowid__\":" + (i + 1) + ",\"__msg_t__\":1}}";
            int pad = Math.max(0, size - head.length() - tail.length());
            byte[] body = (head + "x".repeat(pad) + tail).getBytes(StandardCharsets.US_ASCII);
            byte[] f = new byte[body.length + 4];
            int l = body.length + 4;
            f[0] = (byte) (l >>> 24);
            f[1] = (byte) (l >>> 16);
            f[2] = (byte) (l >>> 8);
            f[3] = (byte) l;
            System.arraycopy(body, 0, f, 4, body.length);
            return f;
        }

        /** Runs until every id is acked, the deadline or stop; answers true when all were acked. */
        boolean run(long timeoutMs) {
            long deadline = System.currentTimeMillis() + timeoutMs;
            long t0 = System.nanoTime();
            long paced = 0;
            while (!stopped && System.currentTimeMillis() < deadline && ackedCount() < count) {
                try (Socket s = new Socket()) {
                    socket = s;
                    if (stopped) break;
                    s.connect(new InetSocketAddress(host, port), 2000);
                    s.setTcpNoDelay(true);
                    Semaphore credit = new Semaphore(window);
                    Thread reader = startReader(s, credit);
                    OutputStream o = new BufferedOutputStream(s.getOutputStream(), 64 * 1024);
                    synchronized (this) {
                        lastAckAt = System.currentTimeMillis();
                    }
                    boolean again = true;
                    while (again && !stopped && System.currentTimeMillis() < deadline) {
                        again = false;
                        for (int i = nextUnacked(0); i >= 0 && i < count && !stopped; i = nextUnacked(i + 1)) {
                            while (!credit.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                                o.flush();
                                if (!reader.isAlive()) throw new IOException("connection lost");
                                if (stopped || System.currentTimeMillis() > deadline) break;
                                if (stalled()) break;
                            }
                            if (stalled() || stopped || System.currentTimeMillis() > deadline) break;
                            if (rate > 0) {
                                paced++;
                                long due = t0 + paced * 1_000_000_000L / rate;
                                long wait = due - System.nanoTime();
                                if (wait > 0) {
                                    o.flush();
                                    TimeUnit.NANOSECONDS.sleep(wait);
                                }
                            }
                            o.write(frame(i));
                            sent.incrementAndGet();
                            noteWritten(i);
                        }
                        o.flush();
                        // wait for the acks; resend what stays unacked
                        while (!stopped && System.currentTimeMillis() < deadline && ackedCount() < count) {
                            if (!reader.isAlive()) throw new IOException("connection lost");
                            if (stalled()) {
                                again = true;
                                credit.drainPermits();
                                credit.release(window);
                                synchronized (this) {
                                    lastAckAt = System.currentTimeMillis();
                                }
                                break;
                            }
                            Thread.sleep(20);
                        }
                    }
                } catch (IOException e) {
                    reconnects.incrementAndGet();
                    sleep(200);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return ackedCount() >= count;
        }

        private synchronized boolean stalled() {
            return System.currentTimeMillis() - lastAckAt > resendAfterMs;
        }

        private synchronized int nextUnacked(int i) {
            int n = acked.nextClearBit(i);
            return n >= count ? -1 : n;
        }

        private Thread startReader(Socket s, Semaphore credit) throws IOException {
            // buffered: a read call per frame header and per body cost this box's CPU that the gateway needs
            DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 65536));
            Thread t = new Thread(() -> {
                byte[] buf = new byte[4096];
                try {
                    while (true) {
                        int len = in.readInt() - 4;
                        if (len < 0 || len > buf.length) return;
                        in.readFully(buf, 0, len);
                        String ack = new String(buf, 0, len, StandardCharsets.US_ASCII);
                        int at = ack.indexOf("\"__msg_rowid__\":");
                        if (at < 0) continue;
                        // A nack (result < 0: the gateway could not store it) is no ack: the message is sent again.
                        if (ack.contains("\"result\":-")) continue;
                        int k = at + 16;
                        long rowid = 0;
                        while (k < len && Character.isDigit(ack.charAt(k))) rowid = rowid * 10 + (ack.charAt(k++) - '0');
                        int i = (int) rowid - 1;
                        if (i < 0 || i >= count) continue;
                        synchronized (Producer.this) {
                            lastAckAt = System.currentTimeMillis();
                            if (!acked.get(i)) {
                                acked.set(i);
                                ackedCount++;
                            }
                        }
                        credit.release();
                    }
                } catch (IOException closed) {
                    // the connection ended
                }
            }, "producer-acks");
            t.setDaemon(true);
            t.start();
            return t;
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // --- control endpoint, process memory ---

    /** One command through the control endpoint (TCP4H + JSON), answering the envelope. */
    static JsonNode command(int controlPort, String line) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", controlPort), 2000);
            s.setSoTimeout(10_000);
            byte[] req = JSON.writeValueAsBytes(JSON.createObjectNode().put("command", line));
            DataOutputStream o = new DataOutputStream(s.getOutputStream());
            o.writeInt(req.length + 4);
            o.write(req);
            o.flush();
            DataInputStream in = new DataInputStream(s.getInputStream());
            int len = in.readInt() - 4;
            byte[] b = new byte[len];
            in.readFully(b);
            return JSON.readTree(b);
        }
    }

    /** msgs_in_queue of output-k, or -1 when the gateway does not answer. */
    static long queued(int controlPort, int k) {
        try {
            JsonNode d = command(controlPort, "stats-yuno service=__output_side__").get("data");
            return d.get("output-" + k).get("msgs_in_queue").asLong();
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** VmRSS of a process in KiB, or -1. */
    static long rssKb(long pid) {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
                if (l.startsWith("VmRSS:")) return Long.parseLong(l.replaceAll("[^0-9]", ""));
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }

    static String log(Path logFile) {
        try {
            return Files.readString(logFile);
        } catch (IOException e) {
            return "";
        }
    }

    /** Waits until {@code ledger} holds every acked id, or the timeout. */
    static void awaitDelivered(Ledger ledger, BitSet ackedIds, long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline && ledger.lost(ackedIds) > 0) sleep(100);
    }

    /** Waits until nothing new arrives for {@code quietMs}. */
    static void awaitQuiet(Ledger ledger, long quietMs, long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        long last = -1;
        long since = System.currentTimeMillis();
        while (System.currentTimeMillis() < deadline) {
            long n = ledger.frames();
            if (n != last) {
                last = n;
                since = System.currentTimeMillis();
            } else if (System.currentTimeMillis() - since >= quietMs) {
                return;
            }
            sleep(100);
        }
    }

    /** Prints the scenario's figures and appends them to target/reliability/results.txt. */
    static String report(String scenario, long sent, long delivered, long lost, long duplicated, String extra) {
        String line = String.format(Locale.ROOT, "RELIABILITY %s [%s]: sent %d, delivered %d, lost %d, duplicated %d%s",
                scenario, longProfile() ? "long" : "short", sent, delivered, lost, duplicated,
                extra == null || extra.isEmpty() ? "" : "; " + extra);
        System.out.println(line);
        try {
            Path f = Files.createDirectories(Path.of("target/reliability")).resolve("results.txt");
            Files.writeString(f, line + System.lineSeparator(), StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException ignored) {
            // the line is on stdout anyway
        }
        return line;
    }
}
