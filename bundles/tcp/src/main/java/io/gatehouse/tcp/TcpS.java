// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
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
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
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

    /**
     * Reads per turn of an accepted connection: 4 × 64 KiB, against the 16 of a client C_TCP (an output reading its
     * destination's acks), so that producers flooding the core loop leave its outputs the turns they need.
     */
    static final long DEFAULT_RX_MAX_READS = 4;

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
    static final Attr<Long> RX_MAX_READS = Attr.integer("rx_max_reads", DEFAULT_RX_MAX_READS, AttrFlag.WR,
            "Socket reads per turn of the loop (up to 64 KiB each) of every accepted connection, written to its C_TCP's"
            + " rx_max_reads: the input's share of a loop turn against the outputs' acks");
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
            .on(Ev.EV_TIMEOUT,       TcpS::acTimeout)
        .build();

    // --- Spec ---

    /** The version of the state {@link #onExport} gives; {@link #onImport} takes this one only. */
    static final int STATE_VERSION = 1;

    public static final GClassSpec<TcpS> SPEC = GClassSpec.builder(GCLASS, TcpS.class)
            .description("TCP/TLS listener: binds accepted connections to C_CHANNEL siblings (or creates them)")
            .attrs(URL, BACKLOG, CRYPTO, USE_SSL, LHOST, LPORT, CHILD_TREE_FILTER, CLISRV_KW, CHANNEL_TEMPLATE,
                    MAX_CONNECTIONS, RX_MAX_READS, CONNXS, TCONNXS)
            .fsm(FSM)
            .command("reload-certs", "Reload the TLS certificates from crypto", TcpS::cmdReloadCerts)
            .command("view-cert", "The certificate this listener serves: subject, issuer, serial, validity,"
                    + " days_remaining, url", TcpS::cmdViewCert)
            .traceLevel(TRACE_LISTEN, "Log the listening url at info level (debug otherwise)")
            .acceptUnusedYunetaKeys("shared", "use_dups", "only_allowed_ips", "trace_tls", "exitOnError",
                    "user_data", "user_data2")
            .stateVersion(STATE_VERSION)
            .factory(TcpS::new)
            .build();

    private static final String NOT_TLS = "Listener is not TLS-enabled or not running";
    /** ACME clients (certbot) renew 30 days before expiry by default: fewer days left means a renewal was missed. */
    private static final long EXPIRY_WARNING_DAYS = 30;
    /** A flood of connections not accepted is over once none was refused for this long (ms). */
    static final long REFUSALS_QUIET_MS = 5_000;
    /** After an accept error (too many open files), accepting pauses this long (ms), as Netty's own acceptor does. */
    static final long ACCEPT_ERROR_PAUSE_MS = 1_000;
    /** The key of the EV_TIMEOUT kw that says which of the two timers fired. */
    private static final String TIMER = "timer";
    private static final String TIMER_QUIET = "refusals_quiet";
    private static final String TIMER_ACCEPT_PAUSE = "accept_pause";

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
    /** When {@link #quietTimer} falls due (the yuno's clock, ms); -1 when it does not run. Handed over in a live upgrade. */
    private long quietDueMs = -1;
    /** Accepting is paused after an accept error until then (the yuno's clock, ms); -1 when it is not. */
    private long acceptPausedUntilMs = -1;
    private Cancellable acceptPauseTimer = Cancellable.NONE;
    /** A live upgrade suspended this gobj: no accepting, no waiting socket handed out, until the new revision. */
    private boolean suspended;
    /**
     * Takes a waiting socket that closed out of {@link #pending}. One object for all of them, so that a live upgrade
     * can take it off the sockets it hands over (the new revision puts its own on).
     */
    private final ChannelFutureListener pendingClosed = this::waitingSocketClosed;

    TcpS(GObj gobj) {
        this.gobj = gobj;
    }

    // --- Framework methods ---

    @Override
    public int onStart() {
        Url url = listenUrl();
        if (url == null || !makeTls(url)) return -1;
        mode = modeOf(gobj);
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

    /**
     * A {@code Bundle.update()} of this bundle began: accepting stops (connects wait in the kernel backlog, none is
     * refused), waiting sockets stay where they are, and the timers stop with their deadlines kept for the new
     * revision.
     */
    @Override
    public void onSuspend() {
        suspended = true;
        quietTimer.cancel();
        quietTimer = Cancellable.NONE;
        acceptPauseTimer.cancel();
        acceptPauseTimer = Cancellable.NONE;
        updateAccepting();
    }

    /**
     * A live upgrade: the listening socket itself (bound, registered, so no connect is refused while the revision
     * changes; the new revision puts its own {@link Acceptor} in this one's place), the sockets waiting for a free
     * channel, the bound clisrvs and dynamic subtrees (as gobjs: their behaviours change revision too), the TLS
     * context and certificate in use, the refusal streak and the timers' deadlines. This behaviour then holds none of
     * them.
     */
    @Override
    public ObjectNode onExport() {
        ObjectNode s = Kw.create();
        if (server != null) Kw.putRef(s, "server", server);
        ArrayNode waiting = s.putArray("pending");
        for (Channel c : pending) {
            c.closeFuture().removeListener(pendingClosed);
            waiting.addPOJO(c);
        }
        ArrayNode clisrvs = s.putArray("bound");
        for (Tcp t : bound) clisrvs.addPOJO(t.gobj());
        ArrayNode tops = s.putArray("dynamic");
        dynamicTops.forEach((t, top) -> {
            ObjectNode e = tops.addObject();
            Kw.putRef(e, "clisrv", t.gobj());
            Kw.putRef(e, "top", top);
        });
        s.put("created", created);
        // A JDK context (see Tls): nothing in it to release, so a state nobody takes leaves it to the garbage collector.
        if (sslCtx != null) Kw.putRef(s, "ssl_context", sslCtx);
        if (servedCert != null) Kw.putRef(s, "served_cert", servedCert);
        s.set("refused", Kw.create().put("count", refused.count()));
        s.put("last_refused_ms", lastRefusedMs);
        s.put("quiet_due_ms", quietDueMs);
        s.put("accept_paused_until_ms", acceptPausedUntilMs);
        server = null;
        pending.clear();
        bound.clear();
        dynamicTops.clear();
        return s;
    }

    /**
     * Takes the state of {@link #onExport}, checked whole before anything is taken: this revision's acceptor replaces
     * the old one on the listening socket, the timers are armed again at their deadlines. The clisrvs take their own
     * states in this same task, perhaps after this one, so waiting sockets go to free channels, and accepting
     * resumes, in the next task.
     */
    @Override
    public void onImport(ObjectNode state, int stateVersion) {
        if (stateVersion != STATE_VERSION) {
            throw new IllegalArgumentException("C_TCP_S takes state version " + STATE_VERSION + ", not " + stateVersion);
        }
        Channel srv = HandedState.ref(state, "server", Channel.class);
        if (srv != null && srv.pipeline().context(Acceptor.NAME) == null) {
            throw new IllegalArgumentException("the listening socket has no acceptor");
        }
        List<Channel> waiting = HandedState.refs(state, "pending", Channel.class);
        List<Tcp> clisrvs = new ArrayList<>();
        for (GObj g : HandedState.refs(state, "bound", GObj.class)) clisrvs.add(clisrvOf(g));
        Map<Tcp, GObj> tops = new IdentityHashMap<>();
        for (JsonNode e : HandedState.list(state, "dynamic")) {
            tops.put(clisrvOf(HandedState.ref(e, "clisrv", GObj.class)), HandedState.ref(e, "top", GObj.class));
        }

        mode = modeOf(gobj);
        server = srv;
        pending.addAll(waiting);
        bound.addAll(clisrvs);
        dynamicTops.putAll(tops);
        created = state.path("created").asInt(0);
        sslCtx = HandedState.ref(state, "ssl_context", SslContext.class);
        servedCert = HandedState.ref(state, "served_cert", X509Certificate.class);
        refused.resume(state.path("refused").path("count").asLong(0), state.path("last_refused_ms").asLong(0));
        lastRefusedMs = state.path("last_refused_ms").asLong(0);
        for (Channel c : pending) c.closeFuture().addListener(pendingClosed);
        if (server != null) server.pipeline().replace(Acceptor.NAME, Acceptor.NAME, new Acceptor(this));
        long quietDue = state.path("quiet_due_ms").asLong(-1);
        if (quietDue >= 0) armQuietTimer(quietDue);
        long pausedUntil = state.path("accept_paused_until_ms").asLong(-1);
        if (pausedUntil >= 0) pauseAccepting(pausedUntil);
        if (server != null) gobj.yuno().eventLoop().execute(this::acceptAgain);
    }

    @Override
    public void onWriting(String attr) {
        if (attr.equals(RX_MAX_READS.name())) {
            long reads = rxMaxReads();
            for (Tcp t : bound) t.takeMaxReads(reads);
            for (Tcp t : dynamicTops.keySet()) t.takeMaxReads(reads);
        }
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

    /**
     * One of the two timers (the kw says which). The quiet timer: the flood of refused connections is over once none
     * came for {@link #REFUSALS_QUIET_MS}. The accept pause: accepting resumes after an accept error.
     */
    private int acTimeout(String event, ObjectNode kw, GObj src) {
        String which = Kw.getString(kw, TIMER, "");
        Kw.release(kw);
        if (TIMER_ACCEPT_PAUSE.equals(which)) {
            acceptPauseTimer = Cancellable.NONE;
            acceptPausedUntilMs = -1;
            updateAccepting();
            return 0;
        }
        quietTimer = Cancellable.NONE;
        quietDueMs = -1;
        long now = gobj.yuno().clock().monotonicMillis();
        long quiet = now - lastRefusedMs;
        if (quiet < REFUSALS_QUIET_MS) {
            armQuietTimer(now + REFUSALS_QUIET_MS - quiet);
            return 0;
        }
        endRefusals();
        return 0;
    }

    // --- Local methods ---

    // Called by the server-side C_TCPs this listener binds.

    /**
     * A bound clisrv is free: give it a waiting socket, or resume accepting. Not while suspended: the revision that
     * takes over does it ({@link #acceptAgain}).
     */
    void clisrvFree(Tcp t) {
        if (mode == Mode.DYNAMIC || suspended) return;
        while (!pending.isEmpty() && t.isFree()) {
            Channel c = pending.poll();
            if (c.isActive()) {
                t.attach(c);
                return;
            }
            connxs(-1);
        }
        updateAccepting();
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

    GObj gobj() {
        return gobj;
    }

    /** {@code rx_max_reads}: what each accepted connection reads per turn of the loop. */
    long rxMaxReads() {
        return gobj.readLong(RX_MAX_READS);
    }

    /** The listening socket, or null (tests fire an accept error on it). */
    Channel listening() {
        return server;
    }

    // Called by the Acceptor, on the core loop.

    /**
     * A connection was accepted: it gets its options and its loop (the yuno's io group, the core loop itself with
     * io_threads 0), unread, and is bound at once; on a worker loop, Tcp's first task for it runs after the
     * registration there.
     */
    void accepted(Channel child) {
        child.config().setOption(ChannelOption.TCP_NODELAY, true);
        child.config().setOption(ChannelOption.WRITE_BUFFER_WATER_MARK, Tcp.WATER_MARK);
        child.config().setAutoRead(false);
        ChannelFuture registered;
        try {
            registered = gobj.yuno().ioGroup().next().register(child);
        } catch (RuntimeException e) {
            child.unsafe().closeForcibly();
            return;
        }
        if (registered.isDone() && !registered.isSuccess()) {
            child.unsafe().closeForcibly();
            return;
        }
        // A worker loop that stops refuses the registration later: the socket is closed, Tcp sees it go.
        registered.addListener((ChannelFutureListener) f -> {
            if (!f.isSuccess()) child.unsafe().closeForcibly();
        });
        onAccepted(child);
    }

    /** Accepting failed (too many open files): said, and paused for {@link #ACCEPT_ERROR_PAUSE_MS}, as Netty's does. */
    void acceptFailed(Throwable cause) {
        if (server == null || acceptPausedUntilMs >= 0) return;
        Glog.warn(gobj, "TCP_S: Accept failed, accepting pauses", "url", gobj.read(URL), "error", String.valueOf(cause),
                "pause_ms", ACCEPT_ERROR_PAUSE_MS);
        pauseAccepting(gobj.yuno().clock().monotonicMillis() + ACCEPT_ERROR_PAUSE_MS);
    }

    // This listener's own steps.

    /** On the socket's loop: a socket that waited for a free channel closed. */
    private void waitingSocketClosed(ChannelFuture f) {
        Channel c = f.channel();
        try {
            gobj.yuno().execute(() -> {
                if (pending.remove(c)) connxs(-1);
            });
        } catch (RejectedExecutionException e) {
            // the yuno stopped
        }
    }

    private static Mode modeOf(GObj g) {
        return g.read(CHANNEL_TEMPLATE) instanceof ObjectNode ? Mode.DYNAMIC
                : g.read(CHILD_TREE_FILTER) instanceof ObjectNode ? Mode.LEGACY : Mode.CHANNELS;
    }

    /** Accepting runs unless suspended, paused after an accept error, or while a socket waits for a free channel. */
    private void updateAccepting() {
        if (server == null) return;
        boolean accept = !suspended && acceptPausedUntilMs < 0 && pending.isEmpty();
        if (server.config().isAutoRead() != accept) server.config().setAutoRead(accept);
    }

    /** After a live upgrade: free channels take the sockets that waited, and accepting resumes. */
    private void acceptAgain() {
        if (server == null) return;   // stopped, or handed over again, meanwhile
        for (Tcp t : new ArrayList<>(bound)) {
            if (pending.isEmpty()) break;
            if (t.isFree()) clisrvFree(t);
        }
        updateAccepting();
    }

    private void pauseAccepting(long untilMs) {
        acceptPausedUntilMs = untilMs;
        acceptPauseTimer.cancel();
        acceptPauseTimer = timerAt(untilMs, TIMER_ACCEPT_PAUSE);
        updateAccepting();
    }

    private void armQuietTimer(long dueMs) {
        quietDueMs = dueMs;
        quietTimer.cancel();
        quietTimer = timerAt(dueMs, TIMER_QUIET);
    }

    /** One of the two timers, due at {@code dueMs}: its EV_TIMEOUT says {@code which}. */
    private Cancellable timerAt(long dueMs, String which) {
        return gobj.setTimeout(Math.max(0, dueMs - gobj.yuno().clock().monotonicMillis()), Ev.EV_TIMEOUT,
                Kw.create().put(TIMER, which));
    }

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
        Channel c = new NioServerSocketChannel(socket);
        c.pipeline().addLast(Acceptor.NAME, new Acceptor(this));
        gobj.yuno().eventLoop().register(c);   // from the core thread: registered, and accepting, when this returns
        return c;
    }

    private void closeServer() {
        if (server != null) {
            server.close();
            server = null;
        }
        for (Channel c; (c = pending.poll()) != null; ) c.close();
        quietTimer.cancel();
        quietTimer = Cancellable.NONE;
        quietDueMs = -1;
        acceptPauseTimer.cancel();
        acceptPauseTimer = Cancellable.NONE;
        acceptPausedUntilMs = -1;
        endRefusals();
    }

    /**
     * One more connection not accepted: true when it is to be said (see {@link Streak}); the end of the flood is
     * said {@link #REFUSALS_QUIET_MS} after the last one.
     */
    private boolean refusing() {
        lastRefusedMs = gobj.yuno().clock().monotonicMillis();
        if (quietDueMs < 0) armQuietTimer(lastRefusedMs + REFUSALS_QUIET_MS);
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
                c.closeFuture().addListener(pendingClosed);
                updateAccepting();
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

    /** The clisrv behind a gobj of a state, which must run this revision's C_TCP by now. */
    private static Tcp clisrvOf(GObj g) {
        if (g == null || !(g.behavior() instanceof Tcp)) throw new IllegalArgumentException("a clisrv runs another revision");
        return (Tcp) g.behavior();
    }

}
