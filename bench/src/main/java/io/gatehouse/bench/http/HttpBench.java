package io.gatehouse.bench.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.channel.ChannelGClass;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.http.ProtHttpSrGClass;
import io.gatehouse.iogate.IoGateGClass;
import io.gatehouse.mqiogate.MqIoGateGClass;
import io.gatehouse.mqtt.ProtMqtt2GClass;
import io.gatehouse.mqtt.ProtMqttGClass;
import io.gatehouse.qiogate.QIoGateGClass;
import io.gatehouse.relay.RelayGClass;
import io.gatehouse.sink.SinkGClass;
import io.gatehouse.tcp.TcpGClass;
import io.gatehouse.tcp.TcpSGClass;
import io.gatehouse.tcp4h.ProtTcp4hGClass;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpServerCodec;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

/**
 * HTTP NDJSON ingest, the same client load in the same run, against:
 * <ol type="a">
 *   <li>{@code raw}: a raw Netty HTTP server (HttpServerCodec + HttpObjectAggregator) that counts the lines and
 *       answers 200 without storing anything (the baseline);</li>
 *   <li>{@code gatehouse}: the demo gateway in this JVM: C_PROT_HTTP_SR → C_RELAY → C_MQIOGATE → two C_QIOGATE on
 *       disk (trqueue, fsync policy {@code interval}) → two C_SINK over TCP4H; every request is answered only once
 *       each of its lines is durably queued.</li>
 * </ol>
 * Client: {@code --connections} keep-alive connections, each with {@code --pipeline} requests in flight (a writer
 * thread and a reader thread per connection; 1 = write, read the answer), every request the same NDJSON body of
 * {@code --batch} lines of about {@code --size} bytes ({@code --gzip true}: the body compressed once, sent with
 * {@code Content-Encoding: gzip}, and the raw server decompresses it with Netty's {@code HttpContentDecompressor}
 * before counting its lines). Configurations are interleaved in rounds; medians, the ratio
 * to (a), and the server's CPU per message (from {@link java.lang.management.ThreadMXBean}: on a loaded machine the
 * rate says how much CPU the server got, the CPU per message what it costs) are printed.
 *
 * <pre>HttpBench [--rounds 3] [--connections 4] [--batch 100] [--size 128] [--warmup 2] [--duration 5] [--fsync none|interval|always]
 *           [--sinks true|false] [--pipeline 1] [--gzip false] [--configs raw,gatehouse] [--queue-kw key=value,...]</pre>
 * Run from the repository root (the demo config is read from {@code runtime/felix/src/main/dist/conf}, or from
 * {@code -Dgatehouse.demo.config}).
 */
public final class HttpBench {
    private static final ObjectMapper JSON = new ObjectMapper();

    private HttpBench() {}

    static final class Options {
        int rounds = 3;
        int connections = 4;
        int batch = 100;
        int size = 128;
        double warmup = 2;
        double duration = 5;
        /** fsync_policy of the demo's two C_QIOGATE; null = the demo's (interval). */
        String fsync;
        /** More attributes of the demo's two C_QIOGATE ({@code --queue-kw fsync_max_records=0}), as JSON members. */
        String queueKw = "";
        /** false: the demo's sinks are left out, the queues only fill (ingest and durable enqueue alone). */
        boolean sinks = true;
        /** Requests in flight per connection (HTTP/1.1 pipelining); C_PROT_HTTP_SR reads at most max_pipelined (16). */
        int pipeline = 1;
        /** Print the gateway's stats (gates, relay, sinks) after each gatehouse window. */
        boolean stats;
        /** Bodies sent gzip-compressed ({@code Content-Encoding: gzip}). */
        boolean gzip;
        /** Which servers run, in this order each round. */
        List<String> configs = List.of("raw", "gatehouse");
    }

    /**
     * One window: answered lines and requests, and the CPU time the server's threads (raw: its event loop;
     * gatehouse: the core loop, which also runs the sinks, and the queue flusher) and the client's threads used in it.
     */
    record Result(String config, long msgs, long requests, long errors, double seconds, long serverCpuNs,
                  long clientCpuNs) {
        double msgsPerSec() {
            return msgs / seconds;
        }

        double serverUsPerMsg() {
            return msgs == 0 ? 0 : serverCpuNs / 1e3 / msgs;
        }

        double clientUsPerMsg() {
            return msgs == 0 ? 0 : clientCpuNs / 1e3 / msgs;
        }

        double requestsPerSec() {
            return requests / seconds;
        }
    }

    public static void main(String[] args) throws Exception {
        Options o = new Options();
        for (int i = 0; i < args.length; i += 2) {
            switch (args[i]) {
                case "--rounds": o.rounds = Integer.parseInt(args[i + 1]); break;
                case "--connections": o.connections = Integer.parseInt(args[i + 1]); break;
                case "--batch": o.batch = Integer.parseInt(args[i + 1]); break;
                case "--size": o.size = Integer.parseInt(args[i + 1]); break;
                case "--warmup": o.warmup = Double.parseDouble(args[i + 1]); break;
                case "--duration": o.duration = Double.parseDouble(args[i + 1]); break;
                case "--fsync": o.fsync = args[i + 1]; break;
                case "--queue-kw": o.queueKw = io.gatehouse.bench.load.SideBySide.queueKw(args[i + 1]); break;
                case "--sinks": o.sinks = Boolean.parseBoolean(args[i + 1]); break;
                case "--pipeline": o.pipeline = Integer.parseInt(args[i + 1]); break;
                case "--configs": o.configs = List.of(args[i + 1].split(",")); break;
                case "--stats": o.stats = Boolean.parseBoolean(args[i + 1]); break;
                case "--gzip": o.gzip = Boolean.parseBoolean(args[i + 1]); break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        byte[] ndjson = body(o.batch, o.size);
        byte[] body = o.gzip ? gzip(ndjson) : ndjson;
        if (o.pipeline < 1) throw new IllegalArgumentException("--pipeline must be at least 1");
        for (String c : o.configs) {
            if (!c.equals("raw") && !c.equals("gatehouse")) throw new IllegalArgumentException("unknown config " + c);
        }
        if (o.configs.contains("gatehouse") && !Files.isRegularFile(demoConfig())) {
            // said before the first round, not after the raw one has run
            throw new IllegalArgumentException("the demo config " + demoConfig().toAbsolutePath() + " is not there: run"
                    + " from the repository root, or give its path with -Dgatehouse.demo.config");
        }
        System.out.printf(Locale.ROOT, "# http ingest: %d rounds, %d connections x %d requests in flight, %d lines of"
                        + " ~%d B per request (%d B body%s), fsync %s, sinks %s, warmup %.0f s, window %.0f s; JVM %s, %d cpus, load %s%n",
                o.rounds, o.connections, o.pipeline, o.batch, o.size, ndjson.length,
                o.gzip ? ", " + body.length + " B gzip-compressed" : "", o.fsync == null ? "interval" : o.fsync,
                o.sinks ? "in this JVM" : "none (the queues fill)", o.warmup, o.duration,
                System.getProperty("java.version"), Runtime.getRuntime().availableProcessors(), loadAverage());
        Map<String, List<Result>> results = new LinkedHashMap<>();
        for (int r = 1; r <= o.rounds; r++) {
            for (String config : o.configs) {
                Result res = config.equals("raw") ? runRaw(o, body) : runGatehouse(o, body);
                results.computeIfAbsent(config, k -> new ArrayList<>()).add(res);
                System.out.printf(Locale.ROOT, "round %d %-10s %,10.0f msgs/s %,8.0f req/s  errors %d  server %.2f us/msg"
                                + " (%.0f%% of a cpu), client %.2f us/msg  load %s%n", r, config, res.msgsPerSec(),
                        res.requestsPerSec(), res.errors(), res.serverUsPerMsg(),
                        100.0 * res.serverCpuNs() / 1e9 / res.seconds(), res.clientUsPerMsg(), loadAverage());
            }
        }
        List<Result> rawResults = results.get("raw");
        double raw = rawResults == null ? Double.NaN : median(rawResults, Result::msgsPerSec);
        System.out.println();
        System.out.println("| config | msgs/s (median) | requests/s | ratio to raw | server CPU us/msg (median) |");
        System.out.println("|---|---|---|---|---|");
        for (Map.Entry<String, List<Result>> e : results.entrySet()) {
            double m = median(e.getValue(), Result::msgsPerSec);
            System.out.printf(Locale.ROOT, "| %s | %,.0f | %,.0f | %.2f | %.2f |%n", e.getKey(), m, m / o.batch, m / raw,
                    median(e.getValue(), Result::serverUsPerMsg));
        }
    }

    // --- the client ---

    static byte[] gzip(byte[] bytes) throws java.io.IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        try (java.util.zip.GZIPOutputStream z = new java.util.zip.GZIPOutputStream(out)) {
            z.write(bytes);
        }
        return out.toByteArray();
    }

    static byte[] body(int lines, int size) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < lines; i++) {
            String head = "{\"id\":\"msg-" + i + "\",\"tm\":1764428000,\"pad\":\"";
            int pad = Math.max(0, size - head.length() - 3);
            sb.append(head).append("x".repeat(pad)).append("\"}\n");
        }
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Runs the load against {@code port}: warmup, then counts answered messages for the window. Each connection has
     * a writer thread and a reader thread: the writer sends a request whenever fewer than {@code --pipeline} are
     * unanswered, the reader reads the answers in order (with 1, write then read, as a plain keep-alive client).
     * {@code serverThreads} names the server's threads (prefixes) whose CPU time is counted over the window.
     */
    static Result load(String config, int port, Options o, byte[] body, String... serverThreads) throws Exception {
        byte[] head = ("POST /ingest HTTP/1.1\r\nHost: bench\r\nContent-Type: application/x-ndjson\r\n"
                + (o.gzip ? "Content-Encoding: gzip\r\n" : "") + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
        byte[] request = new byte[head.length + body.length];
        System.arraycopy(head, 0, request, 0, head.length);
        System.arraycopy(body, 0, request, head.length, body.length);
        AtomicLong requests = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        AtomicBoolean counting = new AtomicBoolean();
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> threads = new ArrayList<>();
        List<Socket> sockets = new java.util.concurrent.CopyOnWriteArrayList<>();
        for (int c = 0; c < o.connections; c++) {
            Socket s = new Socket();
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
            s.setSoTimeout(30_000);
            sockets.add(s);
            java.util.concurrent.Semaphore window = new java.util.concurrent.Semaphore(o.pipeline);
            Thread writer = new Thread(() -> {
                try {
                    OutputStream out = s.getOutputStream();
                    while (!stop.get()) {
                        if (!window.tryAcquire(100, java.util.concurrent.TimeUnit.MILLISECONDS)) continue;
                        out.write(request);   // a permit taken is a request sent, whose answer the reader waits for
                        out.flush();
                    }
                } catch (IOException | InterruptedException e) {
                    if (!stop.get()) errors.incrementAndGet();
                }
            }, "http-bench-client-w" + c);
            Thread reader = new Thread(() -> {
                try {
                    InputStream in = new java.io.BufferedInputStream(s.getInputStream(), 4096);
                    // at the end, the answers of what was sent are read before the socket closes (a clean stop)
                    while (!(stop.get() && window.availablePermits() == o.pipeline)) {
                        int status = readAnswer(in);
                        window.release();
                        if (!counting.get()) continue;
                        if (status == 200) requests.incrementAndGet();
                        else errors.incrementAndGet();
                    }
                } catch (IOException e) {
                    if (!stop.get()) errors.incrementAndGet();
                }
            }, "http-bench-client-r" + c);
            for (Thread t : List.of(writer, reader)) {
                t.setDaemon(true);
                t.start();
                threads.add(t);
            }
        }
        Thread.sleep((long) (o.warmup * 1000));
        Map<String, Long> cpu0 = threadCpu();
        counting.set(true);
        long t0 = System.nanoTime();
        Thread.sleep((long) (o.duration * 1000));
        counting.set(false);
        double seconds = (System.nanoTime() - t0) / 1e9;
        Map<String, Long> cpu1 = threadCpu();
        long n = requests.get();
        stop.set(true);
        for (Thread t : threads) t.join(35_000);   // writers stop, readers take the answers still due
        for (Socket s : sockets) s.close();
        long server = 0;
        long client = 0;
        for (Map.Entry<String, Long> e : cpu1.entrySet()) {
            long d = e.getValue() - cpu0.getOrDefault(e.getKey(), e.getValue());
            String name = e.getKey().substring(e.getKey().indexOf(' ') + 1);
            if (name.startsWith("http-bench-client")) client += d;
            for (String p : serverThreads) {
                if (name.startsWith(p)) {
                    server += d;
                    break;
                }
            }
        }
        return new Result(config, n * o.batch, n, errors.get(), seconds, server, client);
    }

    /** CPU time of every live thread, keyed "id name" (a thread that ended in the window is not counted). */
    static Map<String, Long> threadCpu() {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        Map<String, Long> m = new java.util.HashMap<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            long c = mx.getThreadCpuTime(t.getId());
            if (c >= 0) m.put(t.getId() + " " + t.getName(), c);
        }
        return m;
    }

    /** Reads one answer: status line, headers, a content-length body. Answers the status. */
    static int readAnswer(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        int status = -1;
        int length = 0;
        boolean first = true;
        for (;;) {
            line.setLength(0);
            for (int c; (c = in.read()) != '\n'; ) {
                if (c < 0) throw new IOException("closed");
                if (c != '\r') line.append((char) c);
            }
            if (line.length() == 0) break;
            if (first) {
                status = Integer.parseInt(line.substring(9, 12));
                first = false;
            } else if (line.length() > 15 && line.substring(0, 15).equalsIgnoreCase("content-length:")) {
                length = Integer.parseInt(line.substring(15).trim());
            }
        }
        in.skipNBytes(length);
        return status;
    }

    // --- (a) raw Netty HTTP ---

    static Result runRaw(Options o, byte[] body) throws Exception {
        NioEventLoopGroup group = new NioEventLoopGroup(1, new io.netty.util.concurrent.DefaultThreadFactory("raw-http"));
        try {
            Channel server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                    .childHandler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new HttpServerCodec());
                            if (o.gzip) ch.pipeline().addLast(new io.netty.handler.codec.http.HttpContentDecompressor());
                            ch.pipeline().addLast(new HttpObjectAggregator(16 << 20),
                                    new SimpleChannelInboundHandler<FullHttpRequest>() {
                                        @Override
                                        protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
                                            ByteBuf c = req.content();
                                            int lines = 0;
                                            for (int i = c.readerIndex(); i < c.writerIndex(); i++) {
                                                if (c.getByte(i) == '\n') lines++;
                                            }
                                            byte[] answer = ("{\"accepted\":" + lines + "}").getBytes(StandardCharsets.US_ASCII);
                                            FullHttpResponse resp = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                                                    HttpResponseStatus.OK, Unpooled.wrappedBuffer(answer));
                                            resp.headers().set(HttpHeaderNames.CONTENT_TYPE, "application/json");
                                            HttpUtil.setContentLength(resp, answer.length);
                                            ctx.writeAndFlush(resp);
                                        }
                                    });
                        }
                    }).bind("127.0.0.1", 0).sync().channel();
            int port = ((InetSocketAddress) server.localAddress()).getPort();
            try {
                return load("raw", port, o, body, "raw-http");
            } finally {
                server.close().sync();
            }
        } finally {
            group.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).sync();
        }
    }

    // --- (b) Gatehouse: the demo gateway ---

    private static Path demoConfig() {
        return Path.of(System.getProperty("gatehouse.demo.config", "runtime/felix/src/main/dist/conf/gatehouse.json"));
    }

    static Result runGatehouse(Options o, byte[] body) throws Exception {
        Path data = Files.createTempDirectory("gatehouse-httpbench-");
        int[] ports = freePorts(5);
        ObjectNode cfg = (ObjectNode) JSON.readTree(Files.readAllBytes(demoConfig()));
        ObjectNode vars = (ObjectNode) cfg.get("__json_config_variables__");
        vars.put("__input_port__", "" + ports[0]);
        vars.put("__sink0_port__", "" + ports[1]);
        vars.put("__sink1_port__", "" + ports[2]);
        vars.put("__http_port__", "" + ports[3]);
        vars.put("__mqtt_port__", "" + ports[4]);   // the demo also listens for MQTT: never on its fixed port here
        if (!o.sinks) {
            ArrayNode services = (ArrayNode) cfg.get("services");
            for (int i = services.size() - 1; i >= 0; i--) {
                if (services.get(i).get("name").asText().startsWith("sink")
                        || services.get(i).get("name").asText().startsWith("__sink")) services.remove(i);
            }
        }
        for (JsonNode svc : cfg.get("services")) {
            if (!svc.get("name").asText().equals("__output_side__")) continue;
            for (JsonNode q : svc.get("children")) {
                ObjectNode kw = (ObjectNode) q.get("kw");
                if (o.fsync != null) kw.put("fsync_policy", o.fsync);
                if (!o.queueKw.isEmpty()) kw.setAll((ObjectNode) JSON.readTree("{" + o.queueKw.substring(1) + "}"));
            }
        }
        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl();
             YunoRuntime rt = YunoRuntime.builder().name("httpbench").dataDir(data).gclasses(gclasses(queues))
                     .config(cfg).build().start()) {
            Result r = load("gatehouse", ports[3], o, body, "gatehouse-core-", "trqueue");
            JsonNode out = rt.command("stats-yuno service=__output_side__").get("data");
            long queued = 0;
            for (JsonNode q : out) queued += q.path("msgs_in_queue").asLong();
            System.out.printf(Locale.ROOT, "          (gatehouse: %d still queued for the sinks at the end)%n", queued);
            if (o.stats) {
                for (String svc : List.of("__http_side__", "relay", "__output_side__", "sink0", "sink1")) {
                    System.out.println("          stats " + svc + ": " + rt.command("stats-yuno service=" + svc).get("data"));
                }
            }
            return r;
        } finally {
            try (Stream<Path> s = Files.walk(data)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    static List<GClassSpec<?>> gclasses(TrQueueFactoryImpl queues) {
        return List.of(new TcpGClass().spec(), new TcpSGClass().spec(), new ProtTcp4hGClass().spec(),
                new ChannelGClass().spec(), new IoGateGClass().spec(), new QIoGateGClass(queues).spec(),
                new MqIoGateGClass().spec(), new RelayGClass().spec(), new SinkGClass().spec(),
                new ProtHttpSrGClass().spec(), new ProtMqttGClass().spec(), new ProtMqtt2GClass().spec());
    }

    static int[] freePorts(int n) throws IOException {
        List<ServerSocket> open = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) open.add(new ServerSocket(0));
            return open.stream().mapToInt(ServerSocket::getLocalPort).toArray();
        } finally {
            for (ServerSocket s : open) s.close();
        }
    }

    static double median(List<Result> rs, java.util.function.ToDoubleFunction<Result> f) {
        double[] v = rs.stream().mapToDouble(f).sorted().toArray();
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    static String loadAverage() {
        try {
            return Files.readString(Path.of("/proc/loadavg")).trim();
        } catch (IOException e) {
            return "?";
        }
    }
}
