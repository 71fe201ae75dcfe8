// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.AttrType;
import io.gatehouse.api.Cancellable;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.support.Glog;
import io.gatehouse.support.Streak;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.ssl.SslContext;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.security.cert.X509Certificate;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.RejectedExecutionException;

/**
 * C_TCP_S: a TCP/TLS listener that hands accepted sockets to server-side C_TCP gobjs ("clisrv").
 *
 * <p>Three ways to bind connections, chosen by the config:
 * <ul>
 *   <li><b>channels</b> (Yuneta's new method, default): every C_CHANNEL sibling gets a clisrv C_TCP at the end
 *       of its bottom chain (reused if there is one, else created as {@code clisrv-<k>} with {@code clisrv_kw}).
 *       The connection limit is the number of channels: a connection beyond it waits, unread, until a channel
 *       frees (accepting pauses, so further clients stay in the kernel backlog), as the C code does.</li>
 *   <li><b>legacy</b> ({@code child_tree_filter} present): as above, but a connection beyond the channels is
 *       accepted and closed ("TCP_S: Connection not accepted: no free child tree found").</li>
 *   <li><b>dynamic</b> ({@code channel_template} present): each accepted connection gets a channel subtree
 *       created from the template (a config node: gclass, kw, children) under this gobj's parent, destroyed
 *       when the connection closes; at most {@code max_connections}, beyond which connections are accepted
 *       and closed with a warning.</li>
 * </ul>
 * A listen failure is an error log and a refused start: the process is never killed ({@code exitOnError} is
 * accepted and ignored). Connections not accepted under a flood are said once when it starts, then at most once a
 * minute with a count, and once {@value #REFUSALS_QUIET_MS} ms after the last one, with the total.
 * Port of {@code kernel/c/root-linux/src/c_tcp_s.c} @6043415.
 *
 * <pre>
 *   ST_STOPPED --start: listening--&gt; ST_IDLE --stop--&gt; ST_STOPPED
 * </pre>
 */
public final class TcpS implements GObjBehavior {
    public static final String GCLASS = GClassNames.C_TCP_S;

    // --- Attributes ---

    static final Attr<String> URL = Attr.string("url", "", AttrFlag.PERSIST, "Listening url (tcp://host:port, tcps://...)");
    static final Attr<Long> BACKLOG = Attr.integer("backlog", 4096, AttrFlag.PERSIST, "Listen backlog");
    static final Attr<JsonNode> CRYPTO = Attr.json("crypto", AttrType.JSON, null, AttrFlag.PERSIST,
            "TLS config: ssl_certificate, ssl_certificate_key, ssl_trusted_certificate (client auth), ssl_ciphers;"
            + " writing it while listening with TLS reloads the certificates");
    static final Attr<Boolean> USE_SSL = Attr.bool("use_ssl", false, AttrFlag.RD, "TLS, from the url schema");
    static final Attr<String> LHOST = Attr.string("lHost", "", AttrFlag.RD, "Listening host");
    static final Attr<String> LPORT = Attr.string("lPort", "", AttrFlag.RD, "Listening port (the bound one)");
    static final Attr<JsonNode> CHILD_TREE_FILTER = Attr.json("child_tree_filter", AttrType.JSON, null, AttrFlag.RD,
            "Presence selects the legacy method: connections beyond the channels are closed");
    static final Attr<JsonNode> CLISRV_KW = Attr.json("clisrv_kw", AttrType.JSON, null, AttrFlag.RD,
            "kw for the C_TCP gobjs this listener creates");
    static final Attr<JsonNode> CHANNEL_TEMPLATE = Attr.json("channel_template", AttrType.JSON, null, AttrFlag.RD,
            "Dynamic mode: a config node {gclass, kw, children} created per accepted connection");
    static final Attr<Long> MAX_CONNECTIONS = Attr.integer("max_connections", 1024, AttrFlag.WR,
            "Dynamic mode: most concurrent connections");
    static final Attr<Long> CONNXS = Attr.integer("connxs", 0, AttrFlag.STATS, "Current connections");
    static final Attr<Long> TCONNXS = Attr.counter("tconnxs", 0, "Total connections accepted");

    // --- Trace levels ---

    static final String TRACE_LISTEN = "listen";

    // --- FSM ---

    static final Fsm<TcpS> FSM = Fsm.<TcpS>builder()
        .state(St.ST_STOPPED)
            .ignore(Ev.EV_STOPPED)
            .ignore(Ev.EV_TIMEOUT)
        .state(St.ST_IDLE)
            .enteredByAction()
            .ignore(Ev.EV_STOPPED)
            .on(Ev.EV_TIMEOUT,       TcpS::acRefusalsQuiet)
        .build();

    // --- Spec ---

    public static final GClassSpec<TcpS> SPEC = GClassSpec.builder(GCLASS, TcpS.class)
            .description("TCP/TLS listener: binds accepted connections to C_CHANNEL siblings (or creates them)")
            .attrs(URL, BACKLOG, CRYPTO, USE_SSL, LHOST, LPORT, CHILD_TREE_FILTER, CLISRV_KW, CHANNEL_TEMPLATE,
                    MAX_CONNECTIONS, CONNXS, TCONNXS)
            .fsm(FSM)
            .command("reload-certs", "Reload the TLS certificates from crypto", TcpS::cmdReloadCerts)
            .command("view-cert", "The certificate this listener serves: subject, issuer, serial, validity,"
                    + " days_remaining, url", TcpS::cmdViewCert)
            .traceLevel(TRACE_LISTEN, "Log the listening url at info level (debug otherwise)")
            .acceptUnusedYunetaKeys("shared", "use_dups", "only_allowed_ips", "trace_tls", "exitOnError",
                    "user_data", "user_data2")
            .factory(TcpS::new)
            .build();

    private static final String NOT_TLS = "Listener is not TLS-enabled or not running";
    /** ACME clients (certbot) renew 30 days before expiry by default: fewer days left means a renewal was missed. */
    private static final long EXPIRY_WARNING_DAYS = 30;
    /** A flood of connections not accepted is over once none was refused for this long (ms). */
    static final long REFUSALS_QUIET_MS = 5_000;

    private enum Mode { CHANNELS, LEGACY, DYNAMIC }

    // --- Private data ---

    private final GObj gobj;
    private Mode mode = Mode.CHANNELS;
    private Channel server;
    private SslContext sslCtx;
    /** The certificate sslCtx presents: what view-cert shows, not what crypto says now (a bad write is not served). */
    private X509Certificate servedCert;
    private final List<Tcp> bound = new ArrayList<>();
    /** Accepted sockets waiting for a free channel (channels mode), unread. */
    private final ArrayDeque<Channel> pending = new ArrayDeque<>();
    /** Dynamic mode: the subtree created for each clisrv. */
    private final Map<Tcp, GObj> dynamicTops = new IdentityHashMap<>();
    private int created;
    /** Connections not accepted (no free channel, max_connections) since the flood began. */
    private final Streak refused = new Streak();
    private long lastRefusedMs;
    /** Runs while a flood of refusals may still be going on, to say when it is over. */
    private Cancellable quietTimer = Cancellable.NONE;

    TcpS(GObj gobj) {
        this.gobj = gobj;
    }

    // --- Framework methods ---

    @Override
    public int onStart() {
        Url url = listenUrl();
        if (url == null || !makeTls(url)) return -1;
        mode = gobj.read(CHANNEL_TEMPLATE) instanceof ObjectNode ? Mode.DYNAMIC
                : gobj.read(CHILD_TREE_FILTER) instanceof ObjectNode ? Mode.LEGACY : Mode.CHANNELS;
        ServerSocketChannel socket = bind(url);
        if (socket == null) return -1;
        if (mode != Mode.DYNAMIC && bindChannels() == 0) {
            Glog.error(gobj, "C_TCP_S new method: No channels found", "url", gobj.read(URL));
            closeQuietly(socket);
            return -1;
        }
        server = listen(socket);
        if (gobj.isTraced(TRACE_LISTEN)) {
            Glog.info(gobj, "Listening...", "url", gobj.read(URL), "lPort", socket.socket().getLocalPort());
        } else {
            Glog.debug(gobj, "Listening...", "url", gobj.read(URL), "lPort", socket.socket().getLocalPort());
        }
        if (servedCert != null) warnIfExpiring();
        gobj.changeState(St.ST_IDLE);
        // Bound clisrvs are started after the listener exists so that a free one can resume accepting.
        for (Tcp t : new ArrayList<>(bound)) {
            if (!t.gobj().isRunning()) t.gobj().start();
        }
        return 0;
    }

    @Override
    public int onStop() {
        closeServer();
        gobj.changeState(St.ST_STOPPED);
        return 0;
    }

    @Override
    public void onDestroy() {
        closeServer();
    }

    @Override
    public void onWriting(String attr) {
        // Not listening, or listening in plain TCP: the next start reads crypto anyway. A crypto that cannot serve
        // is refused (the old one stays written and served), so a bad write is never persisted to fail the restart.
        if (attr.equals(CRYPTO.name()) && servingTls()) {
            String failure = reloadCerts();
            if (failure != null) throw new IllegalArgumentException("crypto refused, the certificates in use stay: " + failure);
        }
    }

    // --- Commands ---

    private ObjectNode cmdReloadCerts(ObjectNode kw, GObj src) {
        if (!servingTls()) return Envelope.error(NOT_TLS);
        return reloadCerts() == null ? Envelope.ok("TLS certificates reloaded", null)
                : Envelope.error("reload-certs FAILED (check logs)");
    }

    private ObjectNode cmdViewCert(ObjectNode kw, GObj src) {
        if (!servingTls()) return Envelope.error(NOT_TLS);
        ObjectNode data = Tls.describe(servedCert, gobj.yuno().clock().epochMillis());
        data.put("url", gobj.read(URL));
        return Envelope.ok(data);
    }

    // --- Actions ---

    /** The quiet timer: the flood of refused connections is over once none came for {@link #REFUSALS_QUIET_MS}. */
    private int acRefusalsQuiet(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        long quiet = gobj.yuno().clock().monotonicMillis() - lastRefusedMs;
        if (quiet < REFUSALS_QUIET_MS) {
            quietTimer = gobj.setTimeout(REFUSALS_QUIET_MS - quiet, Ev.EV_TIMEOUT, null);
            return 0;
        }
        quietTimer = Cancellable.NONE;
        endRefusals();
        return 0;
    }

    // --- Local methods ---

    // Called by the server-side C_TCPs this listener binds.

    /** A bound clisrv is free: give it a waiting socket, or resume accepting. */
    void clisrvFree(Tcp t) {
        if (mode == Mode.DYNAMIC) return;
        while (!pending.isEmpty() && t.isFree()) {
            Channel c = pending.poll();
            if (c.isActive()) {
                t.attach(c);
                return;
            }
            connxs(-1);
        }
        if (server != null && pending.isEmpty() && !server.config().isAutoRead()) {
            server.config().setAutoRead(true);
        }
    }

    /** A clisrv connection closed. */
    void clisrvClosed(Tcp t) {
        connxs(-1);
        if (mode == Mode.DYNAMIC) {
            GObj top = dynamicTops.remove(t);
            // Destroy after the close has been told all the way up (we are inside its publish chain).
            if (top != null) gobj.yuno().execute(top::destroy);
            return;
        }
        clisrvFree(t);
    }

    /** A clisrv was stopped or destroyed. */
    void clisrvGone(Tcp t) {
        if (mode == Mode.DYNAMIC && dynamicTops.remove(t) != null) {
            connxs(-1);
        }
    }

    // This listener's own steps.

    /** The {@code url} to listen on, or null (said) when it does not parse or has no port. */
    private Url listenUrl() {
        String u = gobj.read(URL);
        Url url;
        try {
            url = Url.parse(u);
        } catch (IllegalArgumentException e) {
            Glog.error(gobj, "URL NULL".equals(e.getMessage()) ? "URL NULL" : "Parsing url failed",
                    "url", u, "error", e.getMessage());
            return null;
        }
        if (url.port == 0) {
            Glog.error(gobj, "Cannot Listen on port 0", "url", u);
            return null;
        }
        return url;
    }

    /** Sets {@code use_ssl} and, for a secure url, the server context from {@code crypto}; false (said) when it fails. */
    private boolean makeTls(Url url) {
        gobj.setBool(USE_SSL, url.secure);
        sslCtx = null;
        servedCert = null;
        if (!url.secure) return true;
        try {
            Tls.ServerContext tls = Tls.server(crypto());
            sslCtx = tls.ssl();
            servedCert = tls.certificate();
            return true;
        } catch (IOException | RuntimeException e) {
            Glog.error(gobj, "Cannot create TLS context", "url", gobj.read(URL), "error", String.valueOf(e.getMessage()));
            return false;
        }
    }

    /**
     * Binds the listening socket here, on the core thread, so that a bind error refuses the start at once; sets
     * {@code lHost} and {@code lPort} (the bound port). Null (said) when it cannot bind.
     */
    private ServerSocketChannel bind(Url url) {
        ServerSocketChannel socket = null;
        try {
            InetAddress addr = InetAddress.getByName(url.host);
            socket = ServerSocketChannel.open();
            socket.configureBlocking(false);
            socket.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            socket.bind(new InetSocketAddress(addr, url.port), (int) Math.max(1, gobj.readLong(BACKLOG)));
        } catch (IOException | RuntimeException e) {
            Glog.error(gobj, "Cannot Listen", "msgset", "operational_error", "url", gobj.read(URL),
                    "error", String.valueOf(e.getMessage()));
            closeQuietly(socket);
            return null;
        }
        gobj.set(LHOST, url.host);
        gobj.set(LPORT, String.valueOf(socket.socket().getLocalPort()));
        return socket;
    }

    /**
     * Accepts on the core loop; accepted sockets go to the yuno's io group (the core loop itself with io_threads 0)
     * unread, until a clisrv takes them.
     */
    private Channel listen(ServerSocketChannel socket) {
        ServerBootstrap sb = new ServerBootstrap()
                .group(gobj.yuno().eventLoop(), gobj.yuno().ioGroup())
                .channelFactory(() -> new NioServerSocketChannel(socket))
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childOption(ChannelOption.AUTO_READ, false)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel c) {
                        if (gobj.yuno().inCoreThread()) {
                            onAccepted(c);
                            return;
                        }
                        // Registered on a worker loop (io_threads > 0): the binding is gobj work, for the core loop.
                        try {
                            gobj.yuno().execute(() -> onAccepted(c));
                        } catch (RejectedExecutionException e) {
                            c.close();
                        }
                    }
                });
        return sb.register().channel();
    }

    private void closeServer() {
        if (server != null) {
            server.close();
            server = null;
        }
        for (Channel c; (c = pending.poll()) != null; ) c.close();
        quietTimer.cancel();
        quietTimer = Cancellable.NONE;
        endRefusals();
    }

    /**
     * One more connection not accepted: true when it is to be said (see {@link Streak}); the end of the flood is
     * said {@link #REFUSALS_QUIET_MS} after the last one.
     */
    private boolean refusing() {
        lastRefusedMs = gobj.yuno().clock().monotonicMillis();
        if (quietTimer == Cancellable.NONE) quietTimer = gobj.setTimeout(REFUSALS_QUIET_MS, Ev.EV_TIMEOUT, null);
        return refused.hit(lastRefusedMs);
    }

    private void endRefusals() {
        long n = refused.end();
        if (n > 0) Glog.info(gobj, "TCP_S: Connection refusals ended", "url", gobj.read(URL), "refused", n);
    }

    private JsonNode crypto() {
        return gobj.read(CRYPTO) == null ? Kw.create() : gobj.read(CRYPTO);
    }

    private boolean servingTls() {
        return sslCtx != null && server != null;
    }

    /**
     * Builds a context from crypto as it is now and hands it to the clisrvs, so it serves the next handshakes;
     * established connections keep the session they negotiated. On failure the old context keeps serving.
     *
     * @return null when reloaded, else the cause
     */
    private String reloadCerts() {
        Tls.ServerContext tls;
        try {
            tls = Tls.server(crypto());
        } catch (IOException | RuntimeException e) {
            Glog.error(gobj, "reload-certs FAILED", "url", gobj.read(URL), "error", String.valueOf(e));
            return String.valueOf(e);
        }
        sslCtx = tls.ssl();
        servedCert = tls.certificate();
        for (Tcp t : bound) t.bindListener(this, sslCtx);
        for (Tcp t : dynamicTops.keySet()) t.bindListener(this, sslCtx);
        Glog.info(gobj, "TLS certificates reloaded", "url", gobj.read(URL),
                "subject", servedCert.getSubjectX500Principal().getName(),
                "not_after", servedCert.getNotAfter().toInstant().toString());
        warnIfExpiring();
        return null;
    }

    private void warnIfExpiring() {
        long days = Tls.daysRemaining(servedCert, gobj.yuno().clock().epochMillis());
        if (days > EXPIRY_WARNING_DAYS) return;
        Glog.warn(gobj, days < 0 ? "TLS certificate expired" : "TLS certificate expires soon",
                "url", gobj.read(URL), "subject", servedCert.getSubjectX500Principal().getName(),
                "not_after", servedCert.getNotAfter().toInstant().toString(), "days_remaining", days);
    }

    private static void closeQuietly(ServerSocketChannel c) {
        if (c == null) return;
        try {
            c.close();
        } catch (IOException ignored) {
            // nothing listens anyway
        }
    }

    /** Binds a clisrv C_TCP at the end of every C_CHANNEL sibling's bottom chain; answers how many. */
    private int bindChannels() {
        GObj parent = gobj.parent();
        if (parent == null) return 0;
        int n = 0;
        for (GObj sibling : parent.children()) {
            if (sibling == gobj || !GClassNames.C_CHANNEL.equals(sibling.gclassName())) continue;
            GObj last = sibling.lastBottom();
            if (last == sibling) {
                Glog.error(gobj, "Bottom gobj not found", "channel", sibling.name());
                continue;
            }
            Tcp t = clisrvUnder(last, false);
            if (t != null && !bound.contains(t)) {
                bound.add(t);
                n++;
            }
        }
        return n;
    }

    /** Reuses {@code last} if it is a C_TCP, else creates {@code clisrv-<k>} under it as its bottom. */
    private Tcp clisrvUnder(GObj last, boolean volatileChild) {
        GObj tcpGobj;
        if (GClassNames.C_TCP.equals(last.gclassName())) {
            tcpGobj = last;
        } else {
            ObjectNode kw = gobj.read(CLISRV_KW) instanceof ObjectNode ? ((ObjectNode) gobj.read(CLISRV_KW)).deepCopy() : Kw.create();
            String name = "clisrv-" + (++created);
            tcpGobj = volatileChild ? last.createVolatileChild(name, GClassNames.C_TCP, kw)
                    : last.createChild(name, GClassNames.C_TCP, kw);
            if (tcpGobj == null) return null;
            last.setBottom(tcpGobj);
        }
        if (!(tcpGobj.behavior() instanceof Tcp)) return null;
        Tcp t = (Tcp) tcpGobj.behavior();
        t.bindListener(this, sslCtx);
        return t;
    }

    private Tcp firstFree() {
        for (Tcp t : bound) {
            if (t.isFree()) return t;
        }
        return null;
    }

    private void onAccepted(Channel c) {
        gobj.inc(TCONNXS);
        if (server == null || !gobj.isRunning()) {
            c.close();
            return;
        }
        switch (mode) {
            case DYNAMIC:
                acceptDynamic(c);
                return;
            case LEGACY: {
                Tcp t = firstFree();
                if (t == null) {
                    if (refusing()) {
                        Glog.error(gobj, "TCP_S: Connection not accepted: no free child tree found",
                                "peer", String.valueOf(c.remoteAddress()), "refused", refused.count());
                    }
                    c.close();
                    return;
                }
                connxs(+1);
                t.attach(c);
                return;
            }
            default: {
                connxs(+1);
                Tcp t = firstFree();
                if (t != null) {
                    t.attach(c);
                    return;
                }
                // All channels busy: keep it unread until one frees, and stop accepting meanwhile.
                pending.add(c);
                c.closeFuture().addListener((ChannelFutureListener) f -> gobj.yuno().execute(() -> {
                    if (pending.remove(c)) connxs(-1);
                }));
                server.config().setAutoRead(false);
            }
        }
    }

    private void acceptDynamic(Channel c) {
        if (dynamicTops.size() >= gobj.readLong(MAX_CONNECTIONS)) {
            if (refusing()) {
                Glog.warn(gobj, "TCP_S: Connection not accepted: max_connections reached",
                        "max_connections", gobj.readLong(MAX_CONNECTIONS), "peer", String.valueOf(c.remoteAddress()),
                        "refused", refused.count());
            }
            c.close();
            return;
        }
        GObj parent = gobj.parent();
        String name = gobj.name() + "-" + (created + 1);
        GObj top = createTree(parent, (ObjectNode) gobj.read(CHANNEL_TEMPLATE), name);
        if (top == null) {
            c.close();
            return;
        }
        top.startTree();
        Tcp t = clisrvUnder(top.lastBottom(), true);
        if (t == null) {
            top.destroy();
            c.close();
            return;
        }
        dynamicTops.put(t, top);
        t.gobj().start();
        connxs(+1);
        t.attach(c);
    }

    private static GObj createTree(GObj parent, ObjectNode node, String name) {
        String gclass = Kw.getString(node, "gclass", "");
        ObjectNode kw = node.get("kw") instanceof ObjectNode ? ((ObjectNode) node.get("kw")).deepCopy() : Kw.create();
        GObj g = parent.createVolatileChild(name, gclass, kw);
        if (g == null) return null;
        JsonNode children = node.get("children");
        if (children != null && children.isArray()) {
            GObj only = null;
            for (JsonNode child : children) {
                if (!(child instanceof ObjectNode)) continue;
                String childName = Kw.getString(child, "name", name);
                only = createTree(g, (ObjectNode) child, childName.isEmpty() ? name : childName);
                if (only == null) {
                    g.destroy();
                    return null;
                }
            }
            if (children.size() == 1) g.setBottom(only);
        }
        return g;
    }

    private void connxs(int d) {
        gobj.setLong(CONNXS, Math.max(0, gobj.readLong(CONNXS) + d));
    }
}
