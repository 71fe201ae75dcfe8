// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.support.Glog;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.util.NetUtil;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;

/**
 * The client side of a C_TCP (one with a {@code url}): opens the connection, and after a failed attempt or a lost
 * connection tries again after {@code timeout_between_connections}. When {@code timeout_between_connections_max}
 * is larger, each failure doubles the wait up to it (exponential backoff), and a connection brings it back to the
 * base. A host name is resolved off the core thread; {@code timeout_connect} bounds an attempt (Netty's connect
 * timeout, on the socket's loop).
 *
 * <p>It decides when and how to connect; {@link Tcp} owns the socket once it exists, and the states. The wait is
 * Tcp's one gobj timer (EV_TIMEOUT in ST_DISCONNECTED is the next attempt), so it runs on the yuno's clock.
 * Core loop only.
 */
final class Reconnector {
    private final Tcp tcp;
    private final GObj gobj;
    /** The url read at start; null when it did not parse (attempts then only wait). */
    private Url url;
    /** The client TLS context, made at the first attempt to a secure url. */
    private SslContext tls;
    /** The wait before the next attempt, ms. */
    private long backoff;
    /** Counts attempts, so that a name resolved for an attempt given up since is not connected to. */
    private int attempt;

    Reconnector(Tcp tcp, GObj gobj) {
        this.tcp = tcp;
        this.gobj = gobj;
    }

    /** At start: the first wait is the base again. */
    void reset() {
        backoff = gobj.readLong(Tcp.TIMEOUT_BETWEEN_CONNECTIONS);
    }

    /**
     * Reads {@code url} at start and sets {@code schema} and {@code use_ssl} from it. False when there is no url: a
     * gobj without one never connects out.
     */
    boolean readUrl() {
        String u = gobj.read(Tcp.URL);
        if (u == null || u.isEmpty()) return false;
        try {
            url = Url.parse(u);
            gobj.set(Tcp.SCHEMA, url.schema);
            gobj.setBool(Tcp.USE_SSL, url.secure);
            if (!url.knownSchema) Glog.warn(gobj, "schema NOT supported, using tcp", "url", u);
        } catch (IllegalArgumentException e) {
            Glog.error(gobj, "Parsing url failed", "url", u, "error", e.getMessage());
            url = null;
        }
        return true;
    }

    /** A connection is up: the next wait is the base again. */
    void connected() {
        reset();
    }

    /** Starts an attempt (the gobj is in ST_WAIT_CONNECTED). */
    void connect() {
        if (url == null) {
            retryLater();
            gobj.changeState(St.ST_DISCONNECTED);
            return;
        }
        if (url.secure && tls == null) {
            try {
                tls = Tls.client(gobj.read(Tcp.CRYPTO) == null ? Kw.create() : gobj.read(Tcp.CRYPTO));
            } catch (IOException | RuntimeException e) {
                Glog.error(gobj, "Cannot create TLS context", "error", String.valueOf(e.getMessage()));
                gobj.changeState(St.ST_DISCONNECTED);
                retryLater();
                return;
            }
        }
        int gen = ++attempt;
        byte[] ip = NetUtil.createByteArrayFromIpAddressString(url.host);
        if (ip != null) {
            try {
                open(new InetSocketAddress(InetAddress.getByAddress(ip), url.port));
            } catch (IOException e) {
                failed(null, e);
            }
            return;
        }
        // A host name: resolved off the core thread (a gobj action never blocks), connected back on it.
        String host = url.host;
        int port = url.port;
        CompletableFuture.supplyAsync(() -> new InetSocketAddress(host, port)).whenComplete((addr, err) ->
            gobj.yuno().execute(() -> {
                if (gen != attempt || gobj.isDestroyed() || !gobj.inState(St.ST_WAIT_CONNECTED)) return;
                if (err != null || addr.isUnresolved()) {
                    failed(null, new IOException("cannot resolve " + host));
                } else {
                    open(addr);
                }
            }));
    }

    /** Arms the wait before the next attempt and grows the following one (backoff). */
    void retryLater() {
        long base = gobj.readLong(Tcp.TIMEOUT_BETWEEN_CONNECTIONS);
        long max = gobj.readLong(Tcp.TIMEOUT_BETWEEN_CONNECTIONS_MAX);
        long wait = backoff > 0 ? backoff : base;
        backoff = max > base ? Math.min(wait * 2, max) : base;
        tcp.setTimer(wait);
    }

    /**
     * For a live upgrade: the wait before the next attempt and the client TLS context (a JDK context: nothing in it to
     * release, so a state nobody takes leaves it to the garbage collector). A host name being resolved for an attempt
     * is given up here (its answer no longer matches {@link #attempt}); the new revision resolves it again.
     */
    ObjectNode exportState() {
        attempt++;
        ObjectNode s = Kw.create().put("backoff_ms", backoff);
        if (tls != null) Kw.putRef(s, "tls", tls);
        return s;
    }

    /** Takes over a state {@link #exportState} gave; the url is read again (quietly: it was said at start). */
    void importState(JsonNode s) {
        backoff = s == null ? gobj.readLong(Tcp.TIMEOUT_BETWEEN_CONNECTIONS)
                : s.path("backoff_ms").asLong(gobj.readLong(Tcp.TIMEOUT_BETWEEN_CONNECTIONS));
        tls = s == null ? null : Kw.ref(s, "tls", SslContext.class);
        String u = gobj.read(Tcp.URL);
        try {
            url = u == null || u.isEmpty() ? null : Url.parse(u);
        } catch (IllegalArgumentException e) {
            url = null;
        }
    }

    /**
     * A live upgrade took {@code c} over while it connects. The listener the old revision put on the connect went with
     * that revision, so a failed attempt (refused, or {@code timeout_connect}: Netty closes the socket either way) is
     * seen from the close of a socket that never came up.
     */
    void watchConnect(Channel c) {
        c.closeFuture().addListener((ChannelFutureListener) f -> {
            try {
                gobj.yuno().execute(() -> {
                    if (tcp.holds(c) && gobj.inState(St.ST_WAIT_CONNECTED)) failed(c, new IOException("connect failed"));
                });
            } catch (RejectedExecutionException e) {
                // the yuno stopped: nobody waits for this attempt
            }
        });
    }

    /** Connects a new socket on the next loop of the yuno's io group; Tcp takes it at once. */
    private void open(SocketAddress addr) {
        String host = url.host;
        int port = url.port;
        EventLoop io = gobj.yuno().ioGroup().next();
        WorkerLink l = io == gobj.yuno().eventLoop() ? null : new WorkerLink(tcp, gobj.yuno());
        SslContext ctx = tls;
        Bootstrap b = new Bootstrap()
                .group(io)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.max(1, gobj.readLong(Tcp.TIMEOUT_CONNECT)))
                .option(ChannelOption.RCVBUF_ALLOCATOR, Tcp.recvAllocator(gobj))
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, Tcp.WATER_MARK)
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel c) {
                        tcp.initPipeline(c, ctx, host, port, l);
                    }
                });
        ChannelFuture f = b.connect(addr);
        tcp.takeSocket(f.channel(), l);
        f.addListener((ChannelFutureListener) fut -> {
            // Netty fails a connect (refused, timeout_connect) on the socket's loop, a worker with io_threads > 0.
            if (!fut.isSuccess()) {
                Channel fc = fut.channel();
                Throwable cause = fut.cause();
                gobj.yuno().execute(() -> failed(fc, cause));
            }
        });
    }

    /** An attempt failed (refused, timed out, not resolved): said, and tried again later while the gobj runs. */
    private void failed(Channel c, Throwable cause) {
        if (c != null && !tcp.holds(c)) return;   // an attempt the gobj gave up already (dropped, stopped)
        String why = cause == null ? "" : String.valueOf(cause.getMessage());
        if (gobj.isTraced(Tcp.TRACE_CONNECTIONS)) {
            Glog.info(gobj, "Disconnected", "msg2", "Disconnected To", "url", gobj.read(Tcp.URL), "cause", why);
        } else {
            Glog.debug(gobj, "Connection failed", "url", gobj.read(Tcp.URL), "cause", why);
        }
        if (tcp.attemptFailed(why)) retryLater();
    }
}
