package io.gatehouse.core;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.support.Glog;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufOutputStream;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * The HTTP server of a container (DESIGN contract 10): {@code GET /metrics} for Prometheus and the live page at
 * {@code /}, with its JSON and Server-Sent Events under {@code /api/}.
 *
 * <p><b>/metrics</b>: text format 0.0.4. Every number a service's gobjs hold ({@link ServiceMetrics}): counters
 * ({@code COUNTER} attributes) as {@code gatehouse_<stat>_total} of type counter, the other
 * numbers as gauges, labelled {@code yuno}, {@code service}, {@code gobj} (the path below the service, absent for
 * the service itself) and {@code gclass}. No rates: a rate is PromQL's {@code rate()}, and reading counters moves
 * no read-driven rate window (seeds/000), however often Prometheus scrapes. Plus {@code gatehouse_up}, the
 * registry's counters, the core thread's CPU seconds, heap and RSS. Open to any client that can reach the port,
 * like before the page existed: it holds numbers only.
 *
 * <p><b>The page</b> ({@code /}, {@code /app.js}, {@code /app.css}: hand-written files in this bundle) and
 * <b>its API</b>: {@code /api/view} (the flow and the latest numbers, {@link LiveView}), {@code /api/history}
 * (the sampler's rings, {@link History}), {@code /api/events} (SSE: the view once a second), {@code /api/gobj}
 * (drill-down), {@code POST /api/command}. When {@code gatehouse.control.token} is set, they need it: a header
 * {@code Authorization: Bearer T}, or the cookie that {@code /?token=T} sets (HttpOnly, SameSite=Strict) before it
 * redirects to {@code /}; without it, 401. A command that writes (see {@link LiveView#readOnly}) needs the token in
 * the {@code X-Gatehouse-Token} header (a cookie alone could be sent by another site's form), and with no token
 * configured the page is read-only. Bound to loopback, the page also refuses a {@code Host} that is neither an IP
 * address nor {@code localhost} (a DNS-rebinding page cannot read it).
 *
 * <p><b>Threads</b>: sockets are served by one thread of their own ({@code gatehouse-http-<yuno>}), so slow
 * clients, 50 open pages or a slowloris never run on the yuno's core thread; only the reads of gobj state
 * ({@code /metrics}, a view, a drill-down, a command) are handed to the core loop, and their answers written back
 * from here. The sampler is a timer on the core loop ({@link Sampler}); its frame is serialised once and the same
 * bytes go to every open page.
 *
 * <p><b>Bad input</b>: one request per connection ({@code Connection: close}); a request head over
 * {@value #MAX_REQUEST} bytes gets 431, a body over {@value #MAX_REQUEST_BODY} bytes 413; a request not complete
 * within {@value #HEAD_TIMEOUT_MS} ms is closed, and when more than {@value #MAX_INCOMPLETE} connections are still
 * sending their request, the oldest is closed first, so a slowloris cannot keep a scrape out; past
 * {@value #MAX_CONNECTIONS} connections a new one is closed at once. A page that does not read its events has at
 * most the write buffer's high mark queued, gets no new frame meanwhile, and is closed after
 * {@value #STALLED_STREAM_MS} ms. The metrics answer is cut at {@value #MAX_BODY} bytes.
 */
public final class MetricsServer implements AutoCloseable {
    static final int MAX_REQUEST = 8192;
    static final int MAX_REQUEST_BODY = 64 * 1024;
    static final int MAX_BODY = 8 << 20;
    static final long HEAD_TIMEOUT_MS = 10_000;
    static final int MAX_CONNECTIONS = 256;
    static final int MAX_INCOMPLETE = 32;
    static final int MAX_STREAMS = 128;
    static final long STALLED_STREAM_MS = 30_000;
    /** A page polling /api/view (instead of SSE) keeps the frames coming this long after its last poll. */
    static final long POLL_KEEPALIVE_MS = 5_000;
    static final String COOKIE = "gatehouse_token";
    static final String TOKEN_HEADER = "x-gatehouse-token";

    private static final Map<String, String> ASSET_TYPES = Map.of(
            "index.html", "text/html; charset=utf-8",
            "app.js", "text/javascript; charset=utf-8",
            "app.css", "text/css; charset=utf-8");

    private final YunoRuntime runtime;
    private final String token;
    private final Sampler sampler;
    /** Core thread only. */
    private final LiveView view = new LiveView();
    private final Map<String, byte[]> assets = new HashMap<>();
    private EventLoopGroup group;
    private Channel listener;
    private boolean loopbackBind;

    // HTTP thread only:
    private final Set<Channel> incomplete = new LinkedHashSet<>();
    /** Open event streams, with the time (nanos) since which each has not been writable, or 0. */
    private final Map<Channel, long[]> streams = new LinkedHashMap<>();
    private int open;

    private volatile int streamCount;
    private volatile long lastPollNanos = Long.MIN_VALUE / 2;
    private volatile ObjectNode lastFrame;
    private volatile long lastFrameNanos;

    /** The page without a token: anyone who reaches the port reads it, and nobody writes through it. */
    public MetricsServer(YunoRuntime runtime) {
        this(runtime, null);
    }

    /** {@code token}: the control token ({@code gatehouse.control.token}); null or empty for none. */
    public MetricsServer(YunoRuntime runtime, String token) {
        this(runtime, token, new History(Sampler.HISTORY_SAMPLES, Sampler.MAX_SERIES));
    }

    MetricsServer(YunoRuntime runtime, String token, History history) {
        this.runtime = runtime;
        this.token = token == null || token.isEmpty() ? null : token;
        this.sampler = new Sampler(runtime, history);
        for (String a : ASSET_TYPES.keySet()) assets.put(a, resource("web/" + a));
    }

    private static byte[] resource(String name) {
        try (InputStream in = MetricsServer.class.getResourceAsStream(name)) {
            if (in == null) throw new IllegalStateException("missing resource " + name + " in the core bundle");
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Binds and starts the sampler; answers the bound port. */
    public int start(String host, int port) throws IOException {
        group = new NioEventLoopGroup(1, new DefaultThreadFactory("gatehouse-http-" + runtime.yuno().name(), true));
        ServerBootstrap b = new ServerBootstrap()
                .group(group)
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, new WriteBufferWaterMark(32 * 1024, 256 * 1024))
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new Conn());
                    }
                });
        try {
            listener = b.bind(host, port).sync().channel();
        } catch (Exception e) {
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new IOException("cannot listen for metrics on " + host + ":" + port + ": " + e.getMessage(), e);
        }
        InetSocketAddress bound = (InetSocketAddress) listener.localAddress();
        loopbackBind = bound.getAddress().isLoopbackAddress();
        sampler.start(new Sampler.FrameSink() {
            @Override
            public boolean wantsFrame() {
                return streamCount > 0 || System.nanoTime() - lastPollNanos < TimeUnit.MILLISECONDS.toNanos(POLL_KEEPALIVE_MS);
            }

            @Override
            public void frame() {
                ObjectNode v = buildView();
                EventLoopGroup g = group;
                if (g != null && !g.isShuttingDown()) g.execute(() -> broadcast(v));
            }
        });
        return bound.getPort();
    }

    @Override
    public void close() {
        sampler.stop();
        if (listener != null) listener.close().awaitUninterruptibly(2000);
        if (group != null) group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(3000);
    }

    Sampler sampler() {
        return sampler;
    }

    /** Pages with an open event stream. */
    int openPages() {
        return streamCount;
    }

    /** The view, built on the core thread; kept as the latest frame. */
    private ObjectNode buildView() {
        ObjectNode v = view.view(runtime.yuno(), sampler, token != null);
        lastFrame = v;
        lastFrameNanos = System.nanoTime();
        return v;
    }

    // --- /metrics ---

    /** What a scrape reads on the core thread; formatted on the HTTP thread. */
    static final class Scrape {
        String yuno;
        long delivered;
        long forwarded;
        long dropped;
        long bounced;
        int links;
        long coreCpuNanos;
        long heapUsed;
        long rss;
        final List<String> services = new ArrayList<>();
        final List<List<ServiceMetrics.Sample>> samples = new ArrayList<>();
    }

    /** Reads every number (core thread). */
    Scrape collect() {
        YunoImpl yuno = (YunoImpl) runtime.yuno();
        Scrape s = new Scrape();
        s.yuno = yuno.name();
        RegistryImpl r = yuno.registry();
        s.delivered = r.delivered;
        s.forwarded = r.forwarded;
        s.dropped = r.dropped;
        s.bounced = r.bounced;
        s.links = r.openLinks();
        s.coreCpuNanos = ProcessStats.currentThreadCpuNanos();
        s.heapUsed = ProcessStats.heapUsed();
        s.rss = ProcessStats.rssBytes();
        int size = 0;
        for (GObj svc : yuno.services()) {
            if (size > MAX_BODY / 64) break;
            try {
                List<ServiceMetrics.Sample> samples = ServiceMetrics.of(svc);
                s.services.add(svc.name());
                s.samples.add(samples);
                size += samples.size();
            } catch (RuntimeException e) {
                Glog.error(svc, "Metrics read failed", "error", String.valueOf(e));
            }
        }
        return s;
    }

    /** The metrics text (core thread; tests). */
    String scrape() {
        return format(collect());
    }

    private static final class Family {
        final String type;
        final StringBuilder lines = new StringBuilder();

        Family(String type) {
            this.type = type;
        }
    }

    /** The text format: one {@code # TYPE} per family, families sorted by name. */
    static String format(Scrape s) {
        Map<String, Family> families = new TreeMap<>();
        String y = "yuno=\"" + escape(s.yuno) + "\"";
        line(families, "gatehouse_up", "gauge", y, 1);
        line(families, "gatehouse_registry_delivered_total", "counter", y, s.delivered);
        line(families, "gatehouse_registry_forwarded_total", "counter", y, s.forwarded);
        line(families, "gatehouse_registry_dropped_total", "counter", y, s.dropped);
        line(families, "gatehouse_registry_bounced_total", "counter", y, s.bounced);
        line(families, "gatehouse_registry_links", "gauge", y, s.links);
        if (s.coreCpuNanos >= 0) line(families, "gatehouse_core_cpu_seconds_total", "counter", y, s.coreCpuNanos / 1e9);
        line(families, "gatehouse_process_heap_used_bytes", "gauge", y, s.heapUsed);
        if (s.rss >= 0) line(families, "gatehouse_process_resident_memory_bytes", "gauge", y, s.rss);
        int size = 0;
        for (int i = 0; i < s.services.size() && size <= MAX_BODY; i++) {
            String svc = y + ",service=\"" + escape(s.services.get(i)) + "\"";
            for (ServiceMetrics.Sample m : s.samples.get(i)) {
                boolean counter = m.kind == ServiceMetrics.Kind.COUNTER;
                String name = "gatehouse_" + sanitize(m.stat) + (counter ? "_total" : "");
                String labels = svc + (m.gobj.isEmpty() ? "" : ",gobj=\"" + escape(m.gobj) + "\"")
                        + ",gclass=\"" + escape(m.gclass) + "\"";
                size += line(families, name, counter ? "counter" : "gauge", labels, m.value);
            }
        }
        StringBuilder sb = new StringBuilder(4096);
        for (Map.Entry<String, Family> f : families.entrySet()) {
            if (sb.length() > MAX_BODY) {
                sb.append("# truncated at ").append(MAX_BODY).append(" bytes\n");
                break;
            }
            sb.append("# TYPE ").append(f.getKey()).append(' ').append(f.getValue().type).append('\n');
            sb.append(f.getValue().lines);
        }
        return sb.toString();
    }

    /** Adds one sample; a name already used with the other type is left out (Prometheus would refuse both). */
    private static int line(Map<String, Family> families, String name, String type, String labels, double value) {
        Family f = families.computeIfAbsent(name, k -> new Family(type));
        if (!f.type.equals(type)) return 0;
        int before = f.lines.length();
        f.lines.append(name).append('{').append(labels).append("} ").append(formatNumber(value)).append('\n');
        return f.lines.length() - before;
    }

    static String sanitize(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            b.append(c < 128 && (Character.isLetterOrDigit(c) || c == '_') ? c : '_');
        }
        return b.toString();
    }

    private static String escape(String v) {
        return v.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }

    private static String formatNumber(double v) {
        if (v == Math.rint(v) && Math.abs(v) < 1e15) return Long.toString((long) v);
        return String.format(Locale.ROOT, "%s", v);
    }

    // --- Requests ---

    /** A parsed request head (and body). */
    static final class Request {
        String method;
        String path;
        final Map<String, String> query = new HashMap<>();
        final Map<String, String> headers = new HashMap<>();
        byte[] body = new byte[0];

        String header(String name) {
            return headers.get(name);
        }

        /** Parses the head; null when it is not HTTP. */
        static Request parse(String head) {
            String[] lines = head.split("\r?\n");
            String[] first = lines[0].trim().split(" ");
            if (first.length < 2 || !first[1].startsWith("/")) return null;
            Request r = new Request();
            r.method = first[0];
            String target = first[1];
            int q = target.indexOf('?');
            r.path = q < 0 ? target : target.substring(0, q);
            if (q >= 0) {
                for (String kv : target.substring(q + 1).split("&")) {
                    if (kv.isEmpty()) continue;
                    int e = kv.indexOf('=');
                    try {
                        r.query.putIfAbsent(decode(e < 0 ? kv : kv.substring(0, e)), e < 0 ? "" : decode(kv.substring(e + 1)));
                    } catch (IllegalArgumentException badEscape) {
                        return null;
                    }
                }
            }
            for (int i = 1; i < lines.length; i++) {
                int c = lines[i].indexOf(':');
                if (c <= 0) continue;
                r.headers.putIfAbsent(lines[i].substring(0, c).trim().toLowerCase(Locale.ROOT), lines[i].substring(c + 1).trim());
            }
            return r;
        }

        private static String decode(String s) {
            return URLDecoder.decode(s, StandardCharsets.UTF_8);
        }

        static String decodeOrNull(String s) {
            try {
                return decode(s);
            } catch (IllegalArgumentException badEscape) {
                return null;
            }
        }

        String cookie(String name) {
            String c = header("cookie");
            if (c == null) return null;
            for (String part : c.split(";")) {
                int e = part.indexOf('=');
                if (e > 0 && part.substring(0, e).trim().equals(name)) return part.substring(e + 1).trim();
            }
            return null;
        }

        String bearer() {
            String a = header("authorization");
            return a != null && a.regionMatches(true, 0, "Bearer ", 0, 7) ? a.substring(7).trim() : null;
        }
    }

    private boolean tokenIs(String candidate) {
        return candidate != null && MessageDigest.isEqual(candidate.getBytes(StandardCharsets.UTF_8),
                token.getBytes(StandardCharsets.UTF_8));
    }

    private boolean authorized(Request r) {
        String cookie = r.cookie(COOKIE);
        return token == null || tokenIs(r.bearer()) || tokenIs(r.header(TOKEN_HEADER))
                || (cookie != null && tokenIs(Request.decodeOrNull(cookie)));
    }

    /** May write: a token is configured and the request carries it in a header (not only in the cookie). */
    private boolean mayWrite(Request r) {
        return token != null && (tokenIs(r.header(TOKEN_HEADER)) || tokenIs(r.bearer()));
    }

    /** Host header check for a loopback bind: an IP literal or localhost (DNS rebinding). */
    static boolean hostAllowed(String host) {
        if (host == null || host.isEmpty()) return true;
        String h = host.trim().toLowerCase(Locale.ROOT);
        if (h.startsWith("[")) return h.indexOf(']') > 0;
        int colon = h.lastIndexOf(':');
        if (colon >= 0) h = h.substring(0, colon);
        if (h.equals("localhost") || h.endsWith(".localhost")) return true;
        return h.matches("[0-9]{1,3}(\\.[0-9]{1,3}){3}");
    }

    private void dispatch(ChannelHandlerContext ctx, Request r) {
        boolean head = r.method.equals("HEAD");
        if (!head && !r.method.equals("GET") && !r.method.equals("POST")) {
            respond(ctx, "405 Method Not Allowed", "text/plain; charset=utf-8", text("only GET, HEAD and POST\n"), false);
            return;
        }
        if (r.path.equals("/metrics")) {
            if (r.method.equals("POST")) {
                respond(ctx, "405 Method Not Allowed", "text/plain; charset=utf-8", text("only GET\n"), false);
                return;
            }
            onCore(ctx, this::collect, s -> respond(ctx, "200 OK", "text/plain; version=0.0.4; charset=utf-8",
                    text(format(s)), head));
            return;
        }
        if (loopbackBind && !hostAllowed(r.header("host"))) {
            respond(ctx, "403 Forbidden", "text/plain; charset=utf-8", text("host not allowed: use an IP address or localhost\n"), false);
            return;
        }
        if (token != null) {
            String q = r.query.get("token");
            if (q != null && tokenIs(q) && r.path.equals("/")) {
                respond(ctx, "303 See Other", "text/plain; charset=utf-8", text("see /\n"), false,
                        "Location: /", "Set-Cookie: " + COOKIE + "=" + URLEncoder.encode(token, StandardCharsets.UTF_8)
                                + "; Path=/; HttpOnly; SameSite=Strict");
                return;
            }
            if (!authorized(r)) {
                respond(ctx, "401 Unauthorized", "text/plain; charset=utf-8",
                        text("this container has a control token: open /?token=TOKEN, or send Authorization: Bearer TOKEN\n"),
                        head, "WWW-Authenticate: Bearer realm=\"gatehouse\"");
                return;
            }
        }
        if (r.method.equals("POST") && !r.path.equals("/api/command")) {
            respond(ctx, "405 Method Not Allowed", "text/plain; charset=utf-8", text("only GET\n"), false);
            return;
        }
        switch (r.path) {
            case "/":
            case "/index.html":
                asset(ctx, "index.html", head);
                return;
            case "/app.js":
            case "/app.css":
                asset(ctx, r.path.substring(1), head);
                return;
            case "/api/view":
                apiView(ctx, head);
                return;
            case "/api/history":
                respond(ctx, "200 OK", "application/json", historyJson(), head);
                return;
            case "/api/events":
                events(ctx, head);
                return;
            case "/api/gobj":
                apiGobj(ctx, r, head);
                return;
            case "/api/command":
                if (!r.method.equals("POST")) {
                    respond(ctx, "405 Method Not Allowed", "text/plain; charset=utf-8", text("only POST\n"), false);
                    return;
                }
                apiCommand(ctx, r);
                return;
            default:
                respond(ctx, "404 Not Found", "text/plain; charset=utf-8", text("not found: try / or /metrics\n"), head);
        }
    }

    private void asset(ChannelHandlerContext ctx, String name, boolean head) {
        respond(ctx, "200 OK", ASSET_TYPES.get(name), assets.get(name), head,
                "Content-Security-Policy: default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
                "X-Frame-Options: DENY", "Referrer-Policy: no-referrer");
    }

    private void apiView(ChannelHandlerContext ctx, boolean head) {
        lastPollNanos = System.nanoTime();
        ObjectNode f = lastFrame;
        if (f != null && System.nanoTime() - lastFrameNanos < TimeUnit.MILLISECONDS.toNanos(2 * Sampler.PERIOD_MS)) {
            respond(ctx, "200 OK", "application/json", json(f), head);
            return;
        }
        onCore(ctx, this::buildView, v -> respond(ctx, "200 OK", "application/json", json(v), head));
    }

    private byte[] historyJson() {
        ByteBuf out = Unpooled.buffer(64 * 1024);
        try (OutputStream os = new ByteBufOutputStream(out);
             JsonGenerator g = Kw.MAPPER.getFactory().createGenerator(os)) {
            sampler.history().writeJson(g);
        } catch (IOException e) {
            out.release();
            throw new UncheckedIOException(e);
        }
        byte[] b = new byte[out.readableBytes()];
        out.readBytes(b);
        out.release();
        return b;
    }

    private void apiGobj(ChannelHandlerContext ctx, Request r, boolean head) {
        String service = r.query.getOrDefault("service", "");
        String path = r.query.getOrDefault("gobj", "");
        onCore(ctx, () -> LiveView.detail(runtime.yuno(), service, path), d -> {
            if (d == null) respond(ctx, "404 Not Found", "application/json", json(Envelope.error("gobj not found")), head);
            else respond(ctx, "200 OK", "application/json", json(d), head);
        });
    }

    /**
     * {@code {"command", "service"?, "gobj"?, "kw"?}}: runs the yuno command (a gclass command given with its
     * service runs on it) and answers its envelope. Writes need {@link #mayWrite}.
     */
    private void apiCommand(ChannelHandlerContext ctx, Request r) {
        ObjectNode kw;
        String command;
        try {
            JsonNode body = Kw.MAPPER.readTree(r.body);
            if (body == null || !body.isObject() || !body.path("command").isTextual()) throw new IOException("no command");
            command = body.get("command").asText().trim();
            kw = body.path("kw").isObject() ? ((ObjectNode) body.get("kw")).deepCopy() : Kw.create();
            for (String k : new String[] {"service", "gobj"}) {
                if (body.path(k).isTextual() && !body.get(k).asText().isEmpty()) kw.put(k, body.get(k).asText());
            }
        } catch (IOException | RuntimeException e) {
            respond(ctx, "400 Bad Request", "application/json",
                    json(Envelope.error("body must be {\"command\": \"...\", \"service\"?, \"gobj\"?, \"kw\"?}")), false);
            return;
        }
        if (!LiveView.readOnly(command, kw) && !mayWrite(r)) {
            String why = token == null
                    ? "'" + command + "' writes: this container has no control token, so the page is read-only"
                    : "'" + command + "' writes: send the control token (X-Gatehouse-Token)";
            respond(ctx, "403 Forbidden", "application/json", json(Envelope.error(why)), false);
            return;
        }
        String cmd = command;
        YunoRuntime.ExternalCommand ext = runtime.externalCommand(cmd);
        if (ext != null) {
            // Commands that wait for the core loop themselves (list-bundles, update-bundle) run off it.
            ext.run(kw).whenComplete((env, err) -> ctx.executor().execute(() -> {
                if (err != null) fail(ctx, err);
                else respond(ctx, "200 OK", "application/json", json(env), false);
            }));
            return;
        }
        onCore(ctx, () -> runtime.yuno().command(cmd, kw), env -> respond(ctx, "200 OK", "application/json", json(env), false));
    }

    // --- Server-Sent Events ---

    private void events(ChannelHandlerContext ctx, boolean head) {
        if (head) {
            respond(ctx, "200 OK", "text/event-stream", new byte[0], true);
            return;
        }
        if (streams.size() >= MAX_STREAMS) {
            respond(ctx, "503 Service Unavailable", "text/plain; charset=utf-8", text("too many open pages\n"), false);
            return;
        }
        String h = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-store\r\n"
                + "X-Content-Type-Options: nosniff\r\n\r\nretry: 2000\n\n";
        Channel ch = ctx.channel();
        streams.put(ch, new long[1]);
        streamCount = streams.size();
        ByteBuf out = ctx.alloc().buffer(h.length());
        out.writeCharSequence(h, StandardCharsets.ISO_8859_1);
        ctx.write(out);
        ObjectNode f = lastFrame;
        if (f != null && System.nanoTime() - lastFrameNanos < TimeUnit.MILLISECONDS.toNanos(2 * Sampler.PERIOD_MS)) {
            ctx.write(sseFrame(json(f)));
        }
        ctx.flush();
    }

    private static ByteBuf sseFrame(byte[] json) {
        ByteBuf b = Unpooled.buffer(json.length + 8);
        b.writeBytes("data: ".getBytes(StandardCharsets.US_ASCII)).writeBytes(json).writeByte('\n').writeByte('\n');
        return b;
    }

    /** Sends one frame to every open page (HTTP thread): serialised once, skipped for a page that is not reading. */
    private void broadcast(ObjectNode v) {
        if (streams.isEmpty()) return;
        ByteBuf frame = sseFrame(json(v));
        long now = System.nanoTime();
        try {
            for (Iterator<Map.Entry<Channel, long[]>> it = streams.entrySet().iterator(); it.hasNext(); ) {
                Map.Entry<Channel, long[]> e = it.next();
                Channel ch = e.getKey();
                if (!ch.isActive()) {
                    it.remove();
                    continue;
                }
                long[] since = e.getValue();
                if (ch.isWritable()) {
                    since[0] = 0;
                    ch.writeAndFlush(frame.retainedDuplicate());
                } else if (since[0] == 0) {
                    since[0] = now;
                } else if (now - since[0] > TimeUnit.MILLISECONDS.toNanos(STALLED_STREAM_MS)) {
                    ch.close();
                }
            }
        } finally {
            frame.release();
            streamCount = streams.size();
        }
    }

    // --- Plumbing ---

    /**
     * Runs {@code read} on the core loop and {@code then} back on this connection's thread; 503 when the yuno is
     * closed, 500 when the read fails.
     */
    private <T> void onCore(ChannelHandlerContext ctx, Callable<T> read, Consumer<T> then) {
        if (runtime.isClosed()) {
            respond(ctx, "503 Service Unavailable", "text/plain; charset=utf-8", text("yuno stopped\n"), false);
            return;
        }
        try {
            runtime.yuno().eventLoop().submit(read).addListener(f -> ctx.executor().execute(() -> {
                if (f.isSuccess()) {
                    try {
                        @SuppressWarnings("unchecked") T v = (T) f.getNow();
                        then.accept(v);
                    } catch (RuntimeException e) {
                        fail(ctx, e);
                    }
                } else {
                    fail(ctx, f.cause());
                }
            }));
        } catch (java.util.concurrent.RejectedExecutionException e) {
            respond(ctx, "503 Service Unavailable", "text/plain; charset=utf-8", text("yuno stopped\n"), false);
        }
    }

    private void fail(ChannelHandlerContext ctx, Throwable t) {
        Glog.error(null, "HTTP request failed", "error", String.valueOf(t));
        respond(ctx, "500 Internal Server Error", "text/plain; charset=utf-8", text("failed\n"), false);
    }

    private static byte[] text(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] json(JsonNode n) {
        try {
            return Kw.MAPPER.writeValueAsBytes(n);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void respond(ChannelHandlerContext ctx, String status, String type, byte[] body, boolean head,
                                String... headers) {
        if (!ctx.channel().isActive()) return;
        StringBuilder h = new StringBuilder(256).append("HTTP/1.1 ").append(status).append("\r\nContent-Type: ")
                .append(type).append("\r\nContent-Length: ").append(body.length)
                .append("\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n");
        for (String x : headers) h.append(x).append("\r\n");
        h.append("\r\n");
        ByteBuf out = ctx.alloc().buffer(h.length() + (head ? 0 : body.length));
        out.writeCharSequence(h, StandardCharsets.ISO_8859_1);
        if (!head) out.writeBytes(body);
        ctx.writeAndFlush(out).addListener(ChannelFutureListener.CLOSE);
    }

    /** One request per connection: read the head (and body), answer, close; or stay open as an event stream. */
    private final class Conn extends ChannelInboundHandlerAdapter {
        private ByteBuf in;
        private int headEnd = -1;
        private Request request;
        private boolean done;

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            in = ctx.alloc().heapBuffer(512);
            open++;
            if (open > MAX_CONNECTIONS) {
                done = true;
                ctx.close();
                return;
            }
            incomplete.add(ctx.channel());
            if (incomplete.size() > MAX_INCOMPLETE) {
                // The oldest request still coming in is the likeliest slowloris: it goes, the new client stays.
                Channel oldest = incomplete.iterator().next();
                incomplete.remove(oldest);
                oldest.close();
            }
            ctx.executor().schedule(() -> {
                if (!done) ctx.close();
            }, HEAD_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            ctx.fireChannelActive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf b = (ByteBuf) msg;
            try {
                if (done || !ctx.channel().isActive()) return;
                int limit = (headEnd < 0 ? MAX_REQUEST : headEnd + MAX_REQUEST_BODY) + 4;
                in.writeBytes(b, Math.min(b.readableBytes(), Math.max(0, limit - in.readableBytes())));
            } finally {
                b.release();
            }
            if (headEnd < 0) {
                String text = in.toString(StandardCharsets.ISO_8859_1);
                int end = text.indexOf("\r\n\r\n");
                int sep = 4;
                if (end < 0) {
                    end = text.indexOf("\n\n");
                    sep = 2;
                }
                if (end < 0) {
                    if (in.readableBytes() > MAX_REQUEST) finish(ctx, "431 Request Header Fields Too Large", "request too large\n");
                    return;
                }
                headEnd = end + sep;
                request = Request.parse(text.substring(0, end));
                if (request == null) {
                    finish(ctx, "400 Bad Request", "bad request\n");
                    return;
                }
            }
            int length = 0;
            String cl = request.header("content-length");
            if (cl != null) {
                try {
                    length = Integer.parseInt(cl.trim());
                } catch (NumberFormatException e) {
                    finish(ctx, "400 Bad Request", "bad content-length\n");
                    return;
                }
                if (length < 0 || length > MAX_REQUEST_BODY) {
                    finish(ctx, "413 Payload Too Large", "body too large\n");
                    return;
                }
            }
            if (in.readableBytes() < headEnd + length) return;
            request.body = new byte[length];
            in.getBytes(headEnd, request.body);
            done = true;
            incomplete.remove(ctx.channel());
            try {
                dispatch(ctx, request);
            } catch (RuntimeException e) {
                fail(ctx, e);
            }
        }

        private void finish(ChannelHandlerContext ctx, String status, String body) {
            done = true;
            incomplete.remove(ctx.channel());
            respond(ctx, status, "text/plain; charset=utf-8", text(body), false);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            open--;
            incomplete.remove(ctx.channel());
            if (streams.remove(ctx.channel()) != null) streamCount = streams.size();
            in.release();
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
