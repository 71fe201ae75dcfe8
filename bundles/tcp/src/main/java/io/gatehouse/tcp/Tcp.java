// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.AttrType;
import io.gatehouse.api.Cancellable;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Glog;
import io.gatehouse.api.InputThreshold;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.NetUtil;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;

/**
 * C_TCP: one TCP (optionally TLS) connection on Netty. Client role when {@code url} is set (connects,
 * reconnects with backoff, optional inactivity model); "clisrv" role when bound by C_TCP_S, which hands it
 * accepted sockets. Publishes EV_CONNECTED, EV_RX_DATA (one per socket read), EV_DISCONNECTED, EV_TX_READY,
 * EV_STOPPED. Port of {@code kernel/c/root-linux/src/c_tcp.c} @6043415.
 *
 * <pre>
 *            start                       EV_CONNECT / EV_TIMEOUT (reconnect)
 *  ST_STOPPED -----&gt; ST_DISCONNECTED -------------------------------&gt; ST_WAIT_CONNECTED
 *                      ^      ^                                          |      | tls
 *                      |      |   connect failed (reconnect timer)       |      v
 *                      |      +------------------------------------------+  ST_WAIT_HANDSHAKE
 *                      |                                                 |      |
 *                      |   socket closed      EV_DROP                    v      v
 *                      +---------------- ST_WAIT_STOPPED &lt;------------ ST_CONNECTED
 * </pre>
 *
 * Threading: the socket is registered on the yuno's core loop (io_threads 0), so every Netty callback runs
 * on the core thread and calls straight into the FSM; a callback that arrives on another thread hops with
 * {@code yuno.execute}. Writes are coalesced: each EV_TX_DATA is written without flush, one flush task runs
 * per event-loop batch, and crossing the output threshold flushes at once. With io_threads > 0 the socket is
 * on a worker loop and a {@link WorkerLink} carries its reads to the core loop and its writes back, in
 * batches, where the core-loop socket would read, write and flush.
 */
public final class Tcp implements GObjBehavior {

    // --- Attributes ---

    static final Attr<Boolean> CLISRV = Attr.bool("__clisrv__", false, AttrFlag.STATS, "Server side, bound by C_TCP_S");
    static final Attr<String> URL = Attr.string("url", "", AttrFlag.RD, "Url to connect to; non-empty = client");
    static final Attr<Boolean> USE_SSL = Attr.bool("use_ssl", false, AttrFlag.RD, "TLS (from the url schema, or set by C_TCP_S)");
    static final Attr<JsonNode> CRYPTO = Attr.json("crypto", AttrType.JSON, null, AttrFlag.RD, "TLS config (see Tls)");
    static final Attr<Boolean> CONNECTED = Attr.bool("connected", false, AttrFlag.VOLATILE | AttrFlag.STATS, "Connected");
    static final Attr<Boolean> SECURE_CONNECTED = Attr.bool("secure_connected", false,
            AttrFlag.VOLATILE | AttrFlag.STATS, "TLS handshake done");
    static final Attr<String> SCHEMA = Attr.string("schema", "", AttrFlag.RD, "Schema of the url, set at start");
    static final Attr<Boolean> NO_TX_READY_EVENT = Attr.bool("no_tx_ready_event", false, AttrFlag.RD,
            "Do not publish EV_TX_READY");
    static final Attr<Long> MAX_TX_QUEUE = Attr.integer("max_tx_queue", 0, AttrFlag.WR,
            "Messages queued while the socket is not writable; 0 = unlimited");
    static final Attr<Long> MAX_TX_BYTES = Attr.integer("max_tx_bytes", 64L * 1024 * 1024, AttrFlag.WR,
            "Bytes queued while the socket is not writable; 0 = unlimited");
    static final Attr<String> TX_OVERFLOW = Attr.string("tx_overflow", "close", AttrFlag.WR,
            "On a full tx queue: close (drop the connection) or drop_oldest (discard with an error log)");
    static final Attr<Long> CUR_TX_QUEUE = Attr.integer("cur_tx_queue", 0, AttrFlag.STATS,
            "Messages queued now (not yet handed to the socket)");
    static final Attr<Long> RX_BUFFER_SIZE = Attr.integer("rx_buffer_size", 4096, AttrFlag.PERSIST,
            "Initial bytes per read (Netty adapts between 64 and 64 KiB)");
    static final Attr<Long> TIMEOUT_BETWEEN_CONNECTIONS = Attr.integer("timeout_between_connections", 2000,
            AttrFlag.RD, "Reconnect delay, ms");
    static final Attr<Long> TIMEOUT_BETWEEN_CONNECTIONS_MAX = Attr.integer("timeout_between_connections_max", 0,
            AttrFlag.RD, "If greater than the base: exponential backoff cap, ms");
    static final Attr<Long> TIMEOUT_INACTIVITY = Attr.integer("timeout_inactivity", -1, AttrFlag.RD,
            "Client: close after this many ms without traffic and reconnect on demand; -1/0 = never");
    static final Attr<Long> TIMEOUT_CONNECT = Attr.integer("timeout_connect", 10000, AttrFlag.RD,
            "Connect attempt timeout, ms (the C code has none)");
    static final Attr<Long> INPUT_THRESHOLD_MSGS = Attr.integer("input_threshold_msgs", 0, AttrFlag.WR,
            "Input threshold, reads handed up and not credited back (EV_RESUME_INPUT); 0 = unlimited");
    static final Attr<Long> INPUT_THRESHOLD_BYTES = Attr.integer("input_threshold_bytes", 0, AttrFlag.WR,
            "Input threshold, bytes handed up and not credited back; 0 = unlimited");
    static final Attr<Long> OUTPUT_THRESHOLD_MSGS = Attr.integer("output_threshold_msgs", 0, AttrFlag.WR,
            "Flush at once when this many messages were written since the last flush; 0 = end of batch only");
    static final Attr<Long> OUTPUT_THRESHOLD_BYTES = Attr.integer("output_threshold_bytes", 65536, AttrFlag.WR,
            "Flush at once when this many bytes were written since the last flush; 0 = end of batch only");
    static final Attr<Long> TX_BYTES = Attr.counter("txBytes", AttrFlag.RSTATS, "Bytes handed to the socket");
    static final Attr<Long> RX_BYTES = Attr.counter("rxBytes", AttrFlag.RSTATS, "Bytes read");
    static final Attr<Long> TX_MSGS = Attr.counter("txMsgs", AttrFlag.RSTATS, "EV_TX_DATA buffers handed to the socket");
    static final Attr<Long> RX_MSGS = Attr.counter("rxMsgs", AttrFlag.RSTATS, "Socket reads (EV_RX_DATA)");
    static final Attr<String> PEERNAME = Attr.string("peername", "", AttrFlag.VOLATILE | AttrFlag.STATS, "ip:port of the peer");
    static final Attr<String> SOCKNAME = Attr.string("sockname", "", AttrFlag.VOLATILE | AttrFlag.STATS, "Local ip:port");
    static final Attr<Long> CONNXS = Attr.counter("connxs", AttrFlag.STATS, "Connections established");

    // --- Trace levels ---

    static final String TRACE_CONNECTIONS = "connections";
    static final String TRACE_TRAFFIC = "traffic";
    static final String TRACE_TLS = "tls";

    // --- FSM ---

    static final Fsm<Tcp> FSM = Fsm.<Tcp>builder()
        .state(St.ST_DISCONNECTED)
            .on(Ev.EV_CONNECT,       Tcp::acConnect,        St.ST_WAIT_CONNECTED)
            .on(Ev.EV_TIMEOUT,       Tcp::acConnect,        St.ST_WAIT_CONNECTED)
            .on(Ev.EV_TX_DATA,       Tcp::acTxDataDisconnected)
            .on(Ev.EV_PAUSE_INPUT,   Tcp::acPauseInput)
            .on(Ev.EV_RESUME_INPUT,  Tcp::acResumeInput)
        .state(St.ST_STOPPED)
            .enteredByAction()
        .state(St.ST_WAIT_STOPPED)
            .enteredByAction()
            .ignore(Ev.EV_DROP)
            .on(Ev.EV_TX_DATA,       Tcp::acTxDataDisconnected)
            .on(Ev.EV_PAUSE_INPUT,   Tcp::acPauseInput)
            .on(Ev.EV_RESUME_INPUT,  Tcp::acResumeInput)
            .ignore(Ev.EV_TIMEOUT)
        .state(St.ST_WAIT_CONNECTED)
            .on(Ev.EV_TX_DATA,       Tcp::acTxDataConnecting)
            .on(Ev.EV_DROP,          Tcp::acDrop)
            .on(Ev.EV_PAUSE_INPUT,   Tcp::acPauseInput)
            .on(Ev.EV_RESUME_INPUT,  Tcp::acResumeInput)
            .ignore(Ev.EV_CONNECT)
            .ignore(Ev.EV_TIMEOUT)
        .state(St.ST_WAIT_HANDSHAKE)
            .enteredByAction()
            .on(Ev.EV_TX_DATA,       Tcp::acTxDataConnecting)
            .on(Ev.EV_DROP,          Tcp::acDrop)
            .on(Ev.EV_PAUSE_INPUT,   Tcp::acPauseInput)
            .on(Ev.EV_RESUME_INPUT,  Tcp::acResumeInput)
            .ignore(Ev.EV_CONNECT)
            .ignore(Ev.EV_TIMEOUT)
        .state(St.ST_CONNECTED)
            .enteredByAction()
            .on(Ev.EV_TX_DATA,       Tcp::acTxData)
            .on(Ev.EV_TIMEOUT,       Tcp::acTimeoutInactivity)
            .on(Ev.EV_DROP,          Tcp::acDrop)
            .on(Ev.EV_PAUSE_INPUT,   Tcp::acPauseInput)
            .on(Ev.EV_RESUME_INPUT,  Tcp::acResumeInput)
            .ignore(Ev.EV_CONNECT)
        .publishes(Ev.EV_CONNECTED, Ev.EV_DISCONNECTED, Ev.EV_RX_DATA, Ev.EV_TX_READY, Ev.EV_STOPPED)
        .build();

    // --- Spec ---

    public static final GClassSpec<Tcp> SPEC = GClassSpec.builder(GClassNames.C_TCP, Tcp.class)
            .description("TCP transport (client or server side of one connection), TLS optional")
            .attrs(CLISRV, URL, USE_SSL, CRYPTO, CONNECTED, SECURE_CONNECTED, SCHEMA, NO_TX_READY_EVENT, MAX_TX_QUEUE,
                    MAX_TX_BYTES, TX_OVERFLOW, CUR_TX_QUEUE, RX_BUFFER_SIZE, TIMEOUT_BETWEEN_CONNECTIONS,
                    TIMEOUT_BETWEEN_CONNECTIONS_MAX, TIMEOUT_INACTIVITY, TIMEOUT_CONNECT, INPUT_THRESHOLD_MSGS,
                    INPUT_THRESHOLD_BYTES, OUTPUT_THRESHOLD_MSGS, OUTPUT_THRESHOLD_BYTES, TX_BYTES, RX_BYTES, TX_MSGS,
                    RX_MSGS, PEERNAME, SOCKNAME, CONNXS)
            .fsm(FSM)
            .traceLevel(TRACE_CONNECTIONS, "Trace connections and disconnections, with the peer and the cause")
            .traceLevel(TRACE_TRAFFIC, "Trace every socket read and write, with its size")
            .traceLevel(TRACE_TLS, "Trace TLS handshakes that fail")
            .manualStart()
            .acceptUnusedYunetaKeys("ytls", "fd_clisrv", "fd_listen", "jwt", "cert_pem", "skip_cert_cn",
                    "user_data", "user_data2")
            .linkUp(CONNECTED)
            .factory(Tcp::new)
            .build();

    /** Error logs for discarded tx messages are said once every this many drops. */
    private static final int DROP_LOG_EVERY = 1000;

    // --- Private data ---

    private final GObj gobj;
    private final EventLoop loop;
    /** The connection being set up or up; null when disconnected. */
    private Channel ch;
    /** Set when {@link #ch} is on a worker loop (io_threads > 0); null on the core loop. */
    private WorkerLink link;
    private TcpS listener;
    private SslContext sslCtx;
    private Url url;
    private Cancellable timer = Cancellable.NONE;
    private long backoff;
    private boolean connectedPublished;
    private boolean everConnected;
    private boolean idleClose;
    private String lastCause = "";
    /** The last read or write, on the yuno's clock (ms), for the inactivity model. */
    private long lastActivityMs;
    private int connectGen;
    // tx
    private final ArrayDeque<ByteBuf> txQueue = new ArrayDeque<>();
    private long txQueueBytes;
    private boolean wasUnwritable;
    private boolean flushScheduled;
    private int unflushedMsgs;
    private long unflushedBytes;
    private long dropped;
    private final Runnable flushTask = this::flushNow;
    // input threshold
    private final InputThreshold inputThreshold = new InputThreshold();
    private boolean pausedByUpper;

    public Tcp(GObj gobj) {
        this.gobj = gobj;
        this.loop = gobj.yuno().eventLoop();
    }

    // --- Lifecycle ---

    @Override
    public void onCreate() {
        if (!knownOverflowPolicy(gobj.read(TX_OVERFLOW))) {
            Glog.error(gobj, "tx_overflow unknown, the connection will be closed on overflow", "tx_overflow",
                    String.valueOf(gobj.read(TX_OVERFLOW)), "known", "close, drop_oldest");
        }
    }

    private static boolean knownOverflowPolicy(String p) {
        return "close".equals(p) || "drop_oldest".equals(p);
    }

    @Override
    public int onStart() {
        if (!gobj.inState(St.ST_STOPPED) && !gobj.inState(St.ST_DISCONNECTED)) {
            Glog.error(gobj, "Initial wrong tcp state", "state", gobj.state());
            return -1;
        }
        gobj.changeState(St.ST_DISCONNECTED);
        backoff = gobj.readLong(TIMEOUT_BETWEEN_CONNECTIONS);
        if (listener != null) {
            // clisrv: C_TCP_S hands us accepted sockets
            listener.clisrvFree(this);
            return 0;
        }
        String u = gobj.read(URL);
        if (u == null || u.isEmpty()) {
            return 0;
        }
        try {
            url = Url.parse(u);
            gobj.set(SCHEMA, url.schema);
            gobj.setBool(USE_SSL, url.secure);
            if (!url.knownSchema) Glog.warn(gobj, "schema NOT supported, using tcp", "url", u);
        } catch (IllegalArgumentException e) {
            Glog.error(gobj, "Parsing url failed", "url", u, "error", e.getMessage());
            url = null;
        }
        if (inactivityModel() && everConnected) {
            return 0;   // restart in the inactivity model: connect on demand
        }
        gobj.send(Ev.EV_CONNECT, null, gobj);
        return 0;
    }

    @Override
    public int onStop() {
        clearTimer();
        discardTxQueue();
        Channel c = ch;
        ch = null;
        dropLink();
        if (c != null) c.close();
        boolean published = connectedPublished;
        connectedPublished = false;
        gobj.resetVolatiles();
        gobj.changeState(St.ST_STOPPED);
        if (published && !gobj.isDestroyed()) gobj.publish(Ev.EV_DISCONNECTED, Kw.create());
        if (!gobj.isDestroyed()) gobj.publish(Ev.EV_STOPPED, Kw.create());
        if (listener != null) listener.clisrvGone(this);
        return 0;
    }

    @Override
    public void onDestroy() {
        clearTimer();
        discardTxQueue();
        if (ch != null) {
            ch.close();
            ch = null;
        }
        dropLink();
        if (listener != null) listener.clisrvGone(this);
    }

    @Override
    public void onWriting(String attr) {
        if (attr.equals(TX_OVERFLOW.name()) && !knownOverflowPolicy(gobj.read(TX_OVERFLOW))) {
            throw new IllegalArgumentException("tx_overflow must be close or drop_oldest, not '" + gobj.read(TX_OVERFLOW) + "'");
        }
        if (ch != null && (attr.equals(INPUT_THRESHOLD_MSGS.name()) || attr.equals(INPUT_THRESHOLD_BYTES.name()))) {
            updateAutoRead();
        }
    }

    // --- Called by C_TCP_S (same bundle) ---

    void bindListener(TcpS l, SslContext serverCtx) {
        this.listener = l;
        this.sslCtx = serverCtx;
        gobj.setBool(CLISRV, true);
        gobj.setBool(USE_SSL, serverCtx != null);
    }

    GObj gobj() {
        return gobj;
    }

    /** The socket, or null (tests check which loop serves it). */
    Channel channel() {
        return ch;
    }

    /** Free to take a new accepted socket. */
    boolean isFree() {
        return listener != null && gobj.isRunning() && ch == null && gobj.inState(St.ST_DISCONNECTED);
    }

    /** Takes an accepted (registered, active) socket. */
    void attach(Channel c) {
        ch = c;
        gobj.changeState(St.ST_WAIT_CONNECTED);
        lastCause = "";
        // autoRead first: the handlers may report the connection (and the upper layer pause it) as they are added.
        if (c.eventLoop() == loop) {
            c.config().setAutoRead(true);
            initPipeline(c, sslCtx, null, 0, null);
            return;
        }
        WorkerLink l = new WorkerLink(this, gobj.yuno());
        link = l;
        SslContext ctx = sslCtx;
        try {
            // On the socket's own loop, so that no event of it can fire before its handlers are all in place.
            c.eventLoop().execute(() -> {
                c.config().setAutoRead(true);
                initPipeline(c, ctx, null, 0, l);
            });
        } catch (RejectedExecutionException e) {
            loop.execute(() -> onInactive(c));   // the worker is stopping and closes the socket
        }
    }

    // --- Netty callbacks (TcpHandler) ---

    void onActive(Channel c) {
        if (c != ch) return;
        if (sslCtx != null) {
            gobj.changeState(St.ST_WAIT_HANDSHAKE);
            return;   // EV_CONNECTED after the handshake
        }
        setConnected(c);
    }

    void onHandshake(Channel c, Throwable failure) {
        if (c != ch) return;
        if (failure != null) {
            lastCause = "TLS handshake failed: " + failure.getMessage();
            if (gobj.isTraced(TRACE_TLS) || gobj.isTraced(TRACE_CONNECTIONS)) {
                Glog.info(gobj, "TLS handshake failed", "error", String.valueOf(failure.getMessage()));
            }
            c.close();
            return;
        }
        gobj.setBool(SECURE_CONNECTED, true);
        setConnected(c);
    }

    void onRead(Channel c, ByteBuf buf) {
        if (c != ch || gobj.isDestroyed()) {
            buf.release();
            return;
        }
        int n = buf.readableBytes();
        gobj.inc(RX_MSGS);
        gobj.add(RX_BYTES, n);
        if (inactivity()) lastActivityMs = nowMs();
        if (gobj.isTraced(TRACE_TRAFFIC)) Glog.info(gobj, "read", "bytes", n);
        ObjectNode kw = Kw.withGbuffer(buf);
        if (inputThreshold.handedUp(n, gobj.readLong(INPUT_THRESHOLD_MSGS), gobj.readLong(INPUT_THRESHOLD_BYTES))) {
            kw.put(Kw.IS_BLOCKED, true);
            updateAutoRead();
        }
        gobj.publish(Ev.EV_RX_DATA, kw);
    }

    void onReadComplete(Channel c) {
        if (c != ch) return;
        if (unflushedMsgs > 0) flushNow();
    }

    void onWritabilityChanged(Channel c) {
        if (c != ch) return;
        if (writable()) {
            drainTxQueue();
        } else {
            wasUnwritable = true;
            if (link != null) link.awaitRoom(c);
        }
    }

    void onException(Channel c, Throwable cause) {
        if (c != ch) return;
        lastCause = String.valueOf(cause.getMessage());
        c.close();
    }

    void onInactive(Channel c) {
        if (c != ch) return;
        setDisconnected();
    }

    // --- Local methods ---

    private boolean inactivityModel() {
        return inactivity() && listener == null;
    }

    // --- Called by WorkerLink (io_threads > 0), on the core loop ---

    boolean inputPaused() {
        return pausedByUpper || inputThreshold.isBlocked();
    }

    /** The socket of {@code l}, or null once this gobj let go of it. */
    Channel channelOf(WorkerLink l) {
        return l == link ? ch : null;
    }

    /** WorkerLink started or finished holding reads: the socket reads only when nothing is held. */
    void inputHeldChanged() {
        updateAutoRead();
    }

    private boolean writable() {
        return link == null ? ch.isWritable() : link.writable(ch);
    }

    private void dropLink() {
        WorkerLink l = link;
        link = null;
        if (l != null) l.discard();
    }

    /** The inactivity model is on: a client that closes after timeout_inactivity and reconnects on demand. */
    private boolean inactivity() {
        return gobj.readLong(TIMEOUT_INACTIVITY) > 0;
    }

    private long nowMs() {
        return gobj.yuno().clock().monotonicMillis();
    }

    private void clearTimer() {
        timer.cancel();
        timer = Cancellable.NONE;
    }

    private void setTimer(long ms) {
        timer.cancel();
        timer = gobj.setTimeout(ms, Ev.EV_TIMEOUT, null);
    }

    private void updateAutoRead() {
        Channel c = ch;
        if (c == null) return;
        boolean read = !inputThreshold.isBlocked() && !pausedByUpper;
        if (read && link != null && link.holding()) {
            // Reads held across the hop go up first; reading again before they are gone would let a worker
            // read a burst per resume while the consumer takes only up to its threshold: memory without bound.
            link.inputResumed();
            read = false;
        }
        if (c.config().isAutoRead() != read) {
            c.config().setAutoRead(read);
        }
    }

    /** Runs on the socket's loop; reads no gobj state ({@code ctx} and {@code l} come from the core loop). */
    private void initPipeline(Channel c, SslContext ctx, String host, int port, WorkerLink l) {
        if (ctx != null) {
            SslHandler h = host == null ? ctx.newHandler(c.alloc()) : ctx.newHandler(c.alloc(), host, port);
            c.pipeline().addLast("ssl", h);
        }
        c.pipeline().addLast("tcp", l != null ? l : new TcpHandler(this, gobj.yuno()));
    }

    private void connect() {
        if (url == null) {
            scheduleReconnect();
            gobj.changeState(St.ST_DISCONNECTED);
            return;
        }
        if (url.secure && sslCtx == null) {
            try {
                sslCtx = Tls.client(gobj.read(CRYPTO) == null ? Kw.create() : gobj.read(CRYPTO));
            } catch (IOException | RuntimeException e) {
                Glog.error(gobj, "Cannot create TLS context", "error", String.valueOf(e.getMessage()));
                gobj.changeState(St.ST_DISCONNECTED);
                scheduleReconnect();
                return;
            }
        }
        int gen = ++connectGen;
        byte[] ip = NetUtil.createByteArrayFromIpAddressString(url.host);
        if (ip != null) {
            try {
                doConnect(new InetSocketAddress(InetAddress.getByAddress(ip), url.port));
            } catch (IOException e) {
                connectFailed(null, e);
            }
            return;
        }
        // A host name: resolve off the core thread (a gobj action never blocks), connect back on it.
        String host = url.host;
        int port = url.port;
        CompletableFuture.supplyAsync(() -> new InetSocketAddress(host, port)).whenComplete((addr, err) ->
            gobj.yuno().execute(() -> {
                if (gen != connectGen || gobj.isDestroyed() || !gobj.inState(St.ST_WAIT_CONNECTED)) return;
                if (err != null || addr.isUnresolved()) {
                    connectFailed(null, new IOException("cannot resolve " + host));
                } else {
                    doConnect(addr);
                }
            }));
    }

    private void doConnect(SocketAddress addr) {
        String host = url.host;
        int port = url.port;
        EventLoop io = gobj.yuno().ioGroup().next();
        WorkerLink l = io == loop ? null : new WorkerLink(this, gobj.yuno());
        SslContext ctx = sslCtx;
        Bootstrap b = new Bootstrap()
                .group(io)
                .channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.max(1, gobj.readLong(TIMEOUT_CONNECT)))
                .option(ChannelOption.RCVBUF_ALLOCATOR, recvAllocator())
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel c) {
                        initPipeline(c, ctx, host, port, l);
                    }
                });
        ChannelFuture f = b.connect(addr);
        ch = f.channel();
        link = l;
        f.addListener((ChannelFutureListener) fut -> {
            // Netty fails a connect (refused, timeout_connect) on the socket's loop, a worker with io_threads > 0.
            if (!fut.isSuccess()) {
                Channel fc = fut.channel();
                Throwable cause = fut.cause();
                gobj.yuno().execute(() -> connectFailed(fc, cause));
            }
        });
    }

    AdaptiveRecvByteBufAllocator recvAllocator() {
        int initial = (int) Math.max(64, Math.min(65536, gobj.readLong(RX_BUFFER_SIZE)));
        return new AdaptiveRecvByteBufAllocator(64, initial, 65536);
    }

    private void connectFailed(Channel c, Throwable cause) {
        if (c != null && c != ch) return;
        ch = null;
        dropLink();
        lastCause = cause == null ? "" : String.valueOf(cause.getMessage());
        if (gobj.isTraced(TRACE_CONNECTIONS)) {
            Glog.info(gobj, "Disconnected", "msg2", "Disconnected To", "url", gobj.read(URL), "cause", lastCause);
        } else {
            Glog.debug(gobj, "Connection failed", "url", gobj.read(URL), "cause", lastCause);
        }
        if (!gobj.isRunning()) {
            gobj.changeState(St.ST_STOPPED);
            return;
        }
        gobj.changeState(St.ST_DISCONNECTED);
        if (!inactivityModel()) discardTxQueue();
        scheduleReconnect();
    }

    private void scheduleReconnect() {
        long base = gobj.readLong(TIMEOUT_BETWEEN_CONNECTIONS);
        long max = gobj.readLong(TIMEOUT_BETWEEN_CONNECTIONS_MAX);
        long d = backoff > 0 ? backoff : base;
        if (max > base) {
            backoff = Math.min(d * 2, max);
        } else {
            backoff = base;
        }
        setTimer(d);
    }

    private void setConnected(Channel c) {
        gobj.setBool(CONNECTED, true);
        gobj.set(PEERNAME, addr(c.remoteAddress()));
        gobj.set(SOCKNAME, addr(c.localAddress()));
        gobj.inc(CONNXS);
        clearTimer();
        gobj.changeState(St.ST_CONNECTED);
        backoff = gobj.readLong(TIMEOUT_BETWEEN_CONNECTIONS);
        everConnected = true;
        idleClose = false;
        connectedPublished = true;
        inputThreshold.reset();
        if (gobj.isTraced(TRACE_CONNECTIONS)) {
            Glog.info(gobj, "Connected", "msg2", listener == null ? "Connected To" : "Connected From",
                    "url", gobj.read(URL), "remote-addr", gobj.read(PEERNAME), "local-addr", gobj.read(SOCKNAME));
        } else {
            Glog.debug(gobj, "Connected", "url", gobj.read(URL), "remote-addr", gobj.read(PEERNAME));
        }
        ObjectNode kw = Kw.create();
        kw.put(Kw.URL, gobj.read(URL));
        kw.put(Kw.PEERNAME, gobj.read(PEERNAME));
        kw.put(Kw.SOCKNAME, gobj.read(SOCKNAME));
        gobj.publish(Ev.EV_CONNECTED, kw);
        if (gobj.isDestroyed() || c != ch) return;
        updateAutoRead();
        drainTxQueue();
        if (inactivityModel()) {
            lastActivityMs = nowMs();
            setTimer(gobj.readLong(TIMEOUT_INACTIVITY));
        }
    }

    private void setDisconnected() {
        ch = null;
        dropLink();
        boolean published = connectedPublished;
        connectedPublished = false;
        clearTimer();
        if (!(inactivityModel() && !published && gobj.isRunning())) {
            discardTxQueue();
        }
        inputThreshold.reset();
        pausedByUpper = false;
        unflushedMsgs = 0;
        unflushedBytes = 0;
        String peer = gobj.read(PEERNAME);
        gobj.resetVolatiles();
        if (gobj.isTraced(TRACE_CONNECTIONS)) {
            Glog.info(gobj, "Disconnected", "msg2", listener == null ? "Disconnected To" : "Disconnected From",
                    "url", gobj.read(URL), "remote-addr", peer, "cause", lastCause);
        } else {
            Glog.debug(gobj, "Disconnected", "url", gobj.read(URL), "remote-addr", peer, "cause", lastCause);
        }
        if (listener != null) {
            // A clisrv serves one connection after another: its counters are the current connection's.
            gobj.setLong(TX_BYTES, 0);
            gobj.setLong(RX_BYTES, 0);
            gobj.setLong(TX_MSGS, 0);
            gobj.setLong(RX_MSGS, 0);
        }
        gobj.changeState(gobj.isRunning() ? St.ST_DISCONNECTED : St.ST_STOPPED);
        if (published) {
            gobj.publish(Ev.EV_DISCONNECTED, Kw.create());
            if (gobj.isDestroyed()) return;
        }
        if (!gobj.isRunning()) {
            gobj.changeState(St.ST_STOPPED);
            gobj.publish(Ev.EV_STOPPED, Kw.create());
            return;
        }
        if (listener != null) {
            listener.clisrvClosed(this);
            return;
        }
        if (idleClose) {
            return;   // inactivity model: reconnect on demand (EV_TX_DATA or EV_CONNECT)
        }
        if (gobj.inState(St.ST_DISCONNECTED) && timer == Cancellable.NONE) {
            scheduleReconnect();
        }
    }

    private static String addr(SocketAddress a) {
        if (a instanceof InetSocketAddress) {
            InetSocketAddress i = (InetSocketAddress) a;
            String h = i.getAddress() == null ? i.getHostString() : i.getAddress().getHostAddress();
            if (h.indexOf(':') >= 0) {
                int pct = h.indexOf('%');
                if (pct >= 0) h = h.substring(0, pct);
                return "[" + h + "]:" + i.getPort();
            }
            return h + ":" + i.getPort();
        }
        return String.valueOf(a);
    }

    /** Half-close then close, after what was written is flushed: the peer sees FIN, not RST (B18). */
    private void closeGracefully(Channel c) {
        if (link != null) flushNow();   // the batch still on the core side goes before the FIN
        boolean plain = sslCtx == null;   // read here: the listener runs on the socket's loop
        c.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener((ChannelFutureListener) f -> {
            if (c instanceof SocketChannel && plain && c.isActive()) {
                ((SocketChannel) c).shutdownOutput().addListener(x -> c.close());
            } else {
                c.close();
            }
        });
    }

    private void write(ByteBuf buf) {
        int n = buf.readableBytes();
        if (link == null) ch.write(buf, ch.voidPromise());
        else link.add(buf);
        gobj.inc(TX_MSGS);
        gobj.add(TX_BYTES, n);
        if (gobj.isTraced(TRACE_TRAFFIC)) Glog.info(gobj, "write", "bytes", n);
        unflushedMsgs++;
        unflushedBytes += n;
        long om = gobj.readLong(OUTPUT_THRESHOLD_MSGS);
        long ob = gobj.readLong(OUTPUT_THRESHOLD_BYTES);
        if ((om > 0 && unflushedMsgs >= om) || (ob > 0 && unflushedBytes >= ob)) {
            flushNow();
        } else if (!flushScheduled) {
            flushScheduled = true;
            loop.execute(flushTask);
        }
        if (inactivity()) lastActivityMs = nowMs();
    }

    private void flushNow() {
        flushScheduled = false;
        if (unflushedMsgs == 0) return;
        unflushedMsgs = 0;
        unflushedBytes = 0;
        Channel c = ch;
        if (c != null) {
            if (link == null) c.flush();
            else link.handOff(c);
        }
    }

    /** Queues (socket not writable, or not connected yet) with the overflow policy; false = connection dropped. */
    private boolean enqueue(ByteBuf buf) {
        long maxQ = gobj.readLong(MAX_TX_QUEUE);
        long maxB = gobj.readLong(MAX_TX_BYTES);
        int n = buf.readableBytes();
        boolean over = (maxQ > 0 && txQueue.size() >= maxQ) || (maxB > 0 && !txQueue.isEmpty() && txQueueBytes + n > maxB);
        if (over) {
            if ("drop_oldest".equals(gobj.read(TX_OVERFLOW))) {
                while (!txQueue.isEmpty() && ((maxQ > 0 && txQueue.size() >= maxQ) || (maxB > 0 && txQueueBytes + n > maxB))) {
                    ByteBuf old = txQueue.poll();
                    txQueueBytes -= old.readableBytes();
                    old.release();
                    if (dropped++ % DROP_LOG_EVERY == 0) {
                        Glog.error(gobj, "throw away tcp tx message", "msgset", "queue_full",
                                "max_tx_queue", maxQ, "max_tx_bytes", maxB, "dropped", dropped);
                    }
                }
            } else {
                buf.release();
                Glog.error(gobj, "tcp tx queue overflow, closing", "msgset", "queue_full",
                        "max_tx_queue", maxQ, "max_tx_bytes", maxB, "cur_tx_queue", txQueue.size(),
                        "queued_bytes", txQueueBytes);
                lastCause = "tx queue overflow";
                discardTxQueue();
                if (ch != null) {
                    gobj.changeState(St.ST_WAIT_STOPPED);
                    ch.close();
                }
                return false;
            }
        }
        txQueue.add(buf);
        txQueueBytes += n;
        gobj.setLong(CUR_TX_QUEUE, txQueue.size());
        return true;
    }

    private void drainTxQueue() {
        Channel c = ch;
        if (c == null || !gobj.inState(St.ST_CONNECTED)) return;
        while (!txQueue.isEmpty() && writable()) {
            ByteBuf b = txQueue.poll();
            txQueueBytes -= b.readableBytes();
            write(b);
        }
        gobj.setLong(CUR_TX_QUEUE, txQueue.size());
        if (txQueue.isEmpty() && wasUnwritable && writable()) {
            wasUnwritable = false;
            if (!gobj.readBool(NO_TX_READY_EVENT)) gobj.publish(Ev.EV_TX_READY, Kw.create());
        } else if (link != null && (!txQueue.isEmpty() || wasUnwritable)) {
            // Still owing EV_TX_READY: the queue may have emptied into the hop without room left, and with the
            // bytes across the hop Netty may never turn the socket unwritable, so no writability event would come.
            link.awaitRoom(c);
        }
    }

    private void discardTxQueue() {
        for (ByteBuf b; (b = txQueue.poll()) != null; ) b.release();
        txQueueBytes = 0;
        gobj.setLong(CUR_TX_QUEUE, 0);
    }

    // --- Actions ---

    private int acConnect(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        clearTimer();
        if (listener != null) {
            gobj.changeState(St.ST_DISCONNECTED);   // clisrv never connects out
            return 0;
        }
        connect();
        return 0;
    }

    private int acTxData(String event, ObjectNode kw, GObj src) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        if (buf == null) {
            Glog.error(gobj, "gbuffer NULL", "event", event);
            return -1;
        }
        if (txQueue.isEmpty() && writable()) {
            write(buf);
            return 0;
        }
        wasUnwritable = true;
        if (!enqueue(buf)) return -1;
        if (link != null) link.awaitRoom(ch);
        return 0;
    }

    private int acTxDataDisconnected(String event, ObjectNode kw, GObj src) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        if (buf == null) {
            Glog.error(gobj, "gbuffer NULL", "event", event);
            return -1;
        }
        if (inactivityModel() && gobj.isRunning() && gobj.inState(St.ST_DISCONNECTED)) {
            enqueue(buf);
            clearTimer();
            gobj.send(Ev.EV_CONNECT, null, gobj);
            return 0;
        }
        buf.release();
        Glog.error(gobj, "tcp tx data while disconnected, dropped", "msgset", "operational_error",
                "url", gobj.read(URL));
        return 0;
    }

    private int acTxDataConnecting(String event, ObjectNode kw, GObj src) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        if (buf == null) {
            Glog.error(gobj, "gbuffer NULL", "event", event);
            return -1;
        }
        if (inactivityModel()) {
            enqueue(buf);
            return 0;
        }
        buf.release();
        Glog.error(gobj, "tcp tx data while connecting, dropped", "msgset", "operational_error",
                "url", gobj.read(URL));
        return 0;
    }

    private int acTimeoutInactivity(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        long timeout = gobj.readLong(TIMEOUT_INACTIVITY);
        if (!inactivityModel()) return 0;
        long idleMs = nowMs() - lastActivityMs;
        if (idleMs < timeout) {
            setTimer(timeout - idleMs);   // traffic since the timer was armed: wait the rest
            return 0;
        }
        idleClose = true;
        lastCause = "Inactivity timeout";
        if (ch != null) {
            gobj.changeState(St.ST_WAIT_STOPPED);
            closeGracefully(ch);
        }
        return 0;
    }

    private int acDrop(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        lastCause = "Local dropping";
        idleClose = false;
        Channel c = ch;
        if (c == null) {
            gobj.changeState(St.ST_DISCONNECTED);
            if (gobj.isRunning() && listener == null) scheduleReconnect();
            return 0;
        }
        gobj.changeState(St.ST_WAIT_STOPPED);
        if (c.isActive()) {
            closeGracefully(c);
        } else {
            c.close();
        }
        return 0;
    }

    private int acPauseInput(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        pausedByUpper = true;
        updateAutoRead();
        return 0;
    }

    /** Lifts a pause and credits back processed reads ({@code msgs}, {@code bytes}; absent = everything). */
    private int acResumeInput(String event, ObjectNode kw, GObj src) {
        inputThreshold.credit(kw, gobj.readLong(INPUT_THRESHOLD_MSGS), gobj.readLong(INPUT_THRESHOLD_BYTES));
        Kw.release(kw);
        pausedByUpper = false;
        updateAutoRead();
        return 0;
    }
}
