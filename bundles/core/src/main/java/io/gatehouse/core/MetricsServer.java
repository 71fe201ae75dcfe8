package io.gatehouse.core;

import io.gatehouse.api.GObj;
import io.gatehouse.support.Glog;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * A Prometheus scrape endpoint: HTTP/1.1 {@code GET /metrics} answers the text format 0.0.4 with one gauge
 * family per stat, {@code gatehouse_<stat>{yuno="...",service="...",[gobj="..."],[channel="..."]}}, from each
 * service's stats (see {@link ServiceMetrics}), plus the registry's counters and {@code gatehouse_up}. Raw Netty
 * on the yuno's core thread (the stats are read there anyway); one request per connection ({@code Connection:
 * close}); requests over {@value #MAX_REQUEST} bytes or slower than 10 s are dropped; the answer is cut at
 * {@value #MAX_BODY} bytes.
 */
public final class MetricsServer implements AutoCloseable {
    static final int MAX_REQUEST = 8192;
    static final int MAX_BODY = 8 << 20;

    private final YunoRuntime runtime;
    private Channel listener;

    public MetricsServer(YunoRuntime runtime) {
        this.runtime = runtime;
    }

    /** Binds; answers the bound port. */
    public int start(String host, int port) throws IOException {
        ServerBootstrap b = new ServerBootstrap()
                .group(runtime.yuno().eventLoop())
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new Http());
                    }
                });
        try {
            listener = b.bind(host, port).sync().channel();
        } catch (Exception e) {
            throw new IOException("cannot listen for metrics on " + host + ":" + port + ": " + e.getMessage(), e);
        }
        return ((InetSocketAddress) listener.localAddress()).getPort();
    }

    @Override
    public void close() {
        if (listener != null) listener.close().awaitUninterruptibly(2000);
    }

    /** The metrics text (core thread). */
    String scrape() {
        YunoImpl yuno = (YunoImpl) runtime.yuno();
        Map<String, List<String>> families = new TreeMap<>();
        String y = yuno.name();
        add(families, "up", y, null, Map.of(), 1);
        RegistryImpl r = yuno.registry();
        add(families, "registry_delivered", y, null, Map.of(), r.delivered);
        add(families, "registry_forwarded", y, null, Map.of(), r.forwarded);
        add(families, "registry_dropped", y, null, Map.of(), r.dropped);
        add(families, "registry_bounced", y, null, Map.of(), r.bounced);
        add(families, "registry_links", y, null, Map.of(), r.openLinks());
        int size = 0;
        for (GObj s : yuno.services()) {
            if (size > MAX_BODY) break;
            List<ServiceMetrics.Sample> samples;
            try {
                samples = ServiceMetrics.of(s);
            } catch (RuntimeException e) {
                Glog.error(s, "Stats for metrics failed", "error", String.valueOf(e));
                continue;
            }
            for (ServiceMetrics.Sample m : samples) {
                size += add(families, m.stat, y, s.name(), m.labels, m.value);
            }
        }
        StringBuilder sb = new StringBuilder(4096);
        for (Map.Entry<String, List<String>> f : families.entrySet()) {
            if (sb.length() > MAX_BODY) {
                sb.append("# truncated at ").append(MAX_BODY).append(" bytes\n");
                break;
            }
            sb.append("# TYPE ").append(f.getKey()).append(" gauge\n");
            for (String line : f.getValue()) sb.append(line);
        }
        return sb.toString();
    }

    private static int add(Map<String, List<String>> families, String stat, String yuno, String service,
                           Map<String, String> labels, double value) {
        String name = "gatehouse_" + sanitize(stat);
        StringBuilder l = new StringBuilder(96).append(name).append("{yuno=\"").append(escape(yuno)).append('"');
        if (service != null) l.append(",service=\"").append(escape(service)).append('"');
        for (Map.Entry<String, String> e : labels.entrySet()) {
            l.append(',').append(e.getKey()).append("=\"").append(escape(e.getValue())).append('"');
        }
        l.append("} ").append(format(value)).append('\n');
        families.computeIfAbsent(name, k -> new ArrayList<>()).add(l.toString());
        return l.length();
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

    private static String format(double v) {
        if (v == Math.rint(v) && Math.abs(v) < 1e15) return Long.toString((long) v);
        return String.format(Locale.ROOT, "%s", v);
    }

    /** One request per connection: read the head, answer, close. */
    private final class Http extends ChannelInboundHandlerAdapter {
        private final ByteBuf head = Unpooled.buffer(256);
        private boolean answered;

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            // A client that does not finish its request in 10 s is dropped.
            ctx.executor().schedule(() -> {
                if (!answered) ctx.close();
            }, 10, TimeUnit.SECONDS);
            ctx.fireChannelActive();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            ByteBuf in = (ByteBuf) msg;
            try {
                if (answered || !ctx.channel().isActive()) return;
                head.writeBytes(in, Math.min(in.readableBytes(), MAX_REQUEST + 4 - head.readableBytes()));
            } finally {
                in.release();
            }
            String text = head.toString(StandardCharsets.ISO_8859_1);
            int end = text.indexOf("\r\n\r\n");
            if (end < 0) end = text.indexOf("\n\n");
            if (end < 0) {
                if (head.readableBytes() > MAX_REQUEST) respond(ctx, "431 Request Header Fields Too Large", "request too large\n");
                return;
            }
            String[] first = text.substring(0, text.indexOf('\n')).trim().split(" ");
            if (first.length < 2) {
                respond(ctx, "400 Bad Request", "bad request\n");
            } else if (!first[0].equals("GET") && !first[0].equals("HEAD")) {
                respond(ctx, "405 Method Not Allowed", "only GET\n");
            } else if (!first[1].equals("/metrics") && !first[1].startsWith("/metrics?")) {
                respond(ctx, "404 Not Found", "try /metrics\n");
            } else {
                String body;
                try {
                    body = scrape();
                } catch (RuntimeException e) {
                    Glog.error(null, "Metrics scrape failed", "error", String.valueOf(e));
                    respond(ctx, "500 Internal Server Error", "scrape failed\n");
                    return;
                }
                respond(ctx, "200 OK", first[0].equals("HEAD") ? "" : body);
            }
        }

        private void respond(ChannelHandlerContext ctx, String status, String body) {
            answered = true;
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            String h = "HTTP/1.1 " + status + "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
                    + "Content-Length: " + b.length + "\r\nConnection: close\r\n\r\n";
            ByteBuf out = ctx.alloc().buffer(h.length() + b.length);
            out.writeBytes(h.getBytes(StandardCharsets.ISO_8859_1)).writeBytes(b);
            ctx.writeAndFlush(out).addListener(ChannelFutureListener.CLOSE);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            head.release();
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
