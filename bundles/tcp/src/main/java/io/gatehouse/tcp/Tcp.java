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
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.support.Batches;
import io.gatehouse.support.Glog;
import io.gatehouse.support.InputThreshold;
import io.gatehouse.support.Streak;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.EventLoop;
import io.netty.channel.MaxMessagesRecvByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.channel.socket.SocketChannel;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.List;
import java.util.concurrent.RejectedExecutionException;

/**
 * C_TCP: one TCP (optionally TLS) connection on Netty. A client when {@code url} is set: it connects, and reconnects
 * with backoff after a failure or a close ({@link Reconnector}), or, with {@code timeout_inactivity}, closes an idle
 * connection and connects again when there is something to send. Server side ("clisrv") when a C_TCP_S binds it
 * and hands it accepted sockets. Publishes EV_CONNECTED, EV_RX_DATA (one per socket read), EV_DISCONNECTED (only
 * after an EV_CONNECTED), EV_TX_READY and EV_STOPPED. Port of {@code kernel/c/root-linux/src/c_tcp.c} @6043415.
 *
 * <pre>
 *            EV_CONNECT, EV_TIMEOUT (the reconnect wait), or C_TCP_S hands over an accepted socket
 *  ST_DISCONNECTED -----------------------------------------------------------&gt; ST_WAIT_CONNECTED
 *   (initial) ^  ^                                                               |    |          |
 *             |  +---------------- attempt failed (a reconnect waits) ----------+    | TLS      | plain:
 *             |                                                                       v          | socket up
 *             |                                                             ST_WAIT_HANDSHAKE    |
 *             |                                                                       |          |
 *             |                                                        handshake done v          |
 *             +&lt;----------------- socket closed ----------------------------- ST_CONNECTED &lt;----+
 *             |                                                                       |
 *             |                                                EV_DROP, timeout_inactivity,
 *             |                                                tx queue overflow      v
 *             +&lt;----------------- socket closed ----------------------------- ST_WAIT_STOPPED
 *
 *  onStop, from any state: ST_STOPPED (EV_DISCONNECTED if it was connected, then EV_STOPPED); onStart: ST_DISCONNECTED.
 * </pre>
 *
 * What it sends goes through a {@link TxBuffer} (the tx queue, its bounds and overflow policy, coalesced flushes).
 * Threading: with io_threads 0 the socket is registered on the yuno's core loop, so every Netty callback runs on the
 * core thread and calls straight into the FSM ({@link TcpHandler}); a callback that arrives on another thread hops
 * with {@code yuno.execute}. With io_threads &gt; 0 the socket is on a worker loop and a {@link WorkerLink} carries its
 * reads to the core loop and its writes back, in batches, where the core-loop socket would read, write and flush.
 */
public final class Tcp implements GObjBehavior {
    public static final String GCLASS = GClassNames.C_TCP;

    /** Netty's own default for a socket (what a client C_TCP read before a custom allocator dropped it to 1). */
    static final long DEFAULT_RX_MAX_READS = 16;
    /** The most {@code rx_max_reads} takes; more is taken as this. */
    static final long MAX_RX_MAX_READS = 1024;

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
    static final Attr<String> TX_OVERFLOW = Attr.string("tx_overflow", TxOverflow.CLOSE.value(), AttrFlag.WR,
            "On a full tx queue: close (drop the connection) or drop_oldest (discard the oldest messages)");
    static final Attr<Long> CUR_TX_QUEUE = Attr.integer("cur_tx_queue", 0, AttrFlag.STATS,
            "Messages queued now (not yet handed to the socket)");
    static final Attr<Long> RX_BUFFER_SIZE = Attr.integer("rx_buffer_size", 4096, AttrFlag.PERSIST,
            "Initial bytes per read (Netty adapts between 64 and 64 KiB)");
    static final Attr<Long> RX_MAX_READS = Attr.integer("rx_max_reads", DEFAULT_RX_MAX_READS, AttrFlag.WR,
            "Socket reads per turn of the loop (up to 64 KiB each) before the other sockets and the tasks get it;"
            + " a connection a C_TCP_S accepted takes the listener's");
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
    static final Attr<Long> TX_MSGS = Attr.counter("txMsgs", AttrFlag.RSTATS,
            "EV_TX_DATA buffers handed to the socket, each frame of a protocol's send batch counted");
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

    /** The version of the state {@link #onExport} gives; {@link #onImport} takes this one only. */
    static final int STATE_VERSION = 1;

    public static final GClassSpec<Tcp> SPEC = GClassSpec.builder(GCLASS, Tcp.class)
            .description("TCP transport (client or server side of one connection), TLS optional")
            .attrs(CLISRV, URL, USE_SSL, CRYPTO, CONNECTED, SECURE_CONNECTED, SCHEMA, NO_TX_READY_EVENT, MAX_TX_QUEUE,
                    MAX_TX_BYTES, TX_OVERFLOW, CUR_TX_QUEUE, RX_BUFFER_SIZE, RX_MAX_READS, TIMEOUT_BETWEEN_CONNECTIONS,
                    TIMEOUT_BETWEEN_CONNECTIONS_MAX, TIMEOUT_INACTIVITY, TIMEOUT_CONNECT, INPUT_THRESHOLD_MSGS,
                    INPUT_THRESHOLD_BYTES, OUTPUT_THRESHOLD_MSGS, OUTPUT_THRESHOLD_BYTES, TX_BYTES, RX_BYTES, TX_MSGS,
                    RX_MSGS, PEERNAME, SOCKNAME, CONNXS)
            .fsm(FSM)
            .traceLevel(TRACE_CONNECTIONS, "Trace connections and disconnections, with the peer and the cause")
            .traceLevel(TRACE_TRAFFIC, "Trace every socket read and write, with its size")
            .traceLevel(TRACE_TLS, "Trace TLS handshakes: the ones that fail, with the cause, and the protocol and cipher of the ones that work")
            .manualStart()
            .acceptUnusedYunetaKeys("ytls", "fd_clisrv", "fd_listen", "jwt", "cert_pem", "skip_cert_cn",
                    "user_data", "user_data2")
            .linkUp(CONNECTED)
            .stateVersion(STATE_VERSION)
            .factory(Tcp::new)
            .build();

    /**
     * Loads, links and initializes the classes a live upgrade's import runs, so that a new revision does its class
     * loading when its gclass registers (DS activation, {@link TcpGClass}), not in the handover task: that task is the
     * pause every gobj of the bundle waits through.
     */
    static void preload() {
        java.lang.invoke.MethodHandles.Lookup lookup = java.lang.invoke.MethodHandles.lookup();
        for (Class<?> c : new Class<?>[] {TcpHandler.class, HandedState.class, TxBuffer.class, Reconnector.class,
                Streak.class, TxSink.class, TcpBridge.class, Acceptor.class, TcpS.class, Url.class}) {
            try {
                lookup.ensureInitialized(c);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);   // the same package: not thrown
            }
        }
    }

    /** The name of the socket's last handler, which a live upgrade replaces with the new revision's. */
    static final String HANDLER = "tcp";

    // --- Private data ---

    private final GObj gobj;
    private final EventLoop loop;
    private final TxBuffer tx;
    private final Reconnector connector;
    /** The connection being set up or up; null when disconnected. */
    private Channel ch;
    /** Set when {@link #ch} is on a worker loop (io_threads &gt; 0); null on the core loop. */
    private WorkerLink link;
    /** The C_TCP_S that binds this gobj (server side); null for a client. */
    private TcpS listener;
    /** The TLS context C_TCP_S serves its sockets with; null on a plain listener or a client. */
    private SslContext serverTls;
    private Cancellable timer = Cancellable.NONE;
    /** When {@link #timer} falls due, on the yuno's clock (ms); -1 when none is armed. Handed over in a live upgrade. */
    private long timerDueMs = -1;
    /** When a live upgrade suspended this gobj (the yuno's clock, ms); -1 when it is not suspended. */
    private long suspendedAtMs = -1;
    private boolean everConnected;
    /** The inactivity model closed the connection: it reconnects on demand, not after a wait. */
    private boolean idleClose;
    private String lastCause = "";
    /** The last read or write, on the yuno's clock (ms), for the inactivity model. */
    private long lastActivityMs;
    /** Not final: a live upgrade hands the object itself (an api type) to the new revision. */
    private InputThreshold inputThreshold = new InputThreshold();
    private boolean pausedByUpper;
    /** EV_TX_DATA dropped because there was no connection, since the last one. */
    private final Streak droppedWhileDown = new Streak();

    Tcp(GObj gobj) {
        this.gobj = gobj;
        this.loop = gobj.yuno().eventLoop();
        this.tx = new TxBuffer(this, gobj, loop);
        this.connector = new Reconnector(this, gobj);
    }

    // --- Framework methods ---

    @Override
    public void onCreate() {
        if (TxOverflow.of(gobj.read(TX_OVERFLOW)) == null) {
            Glog.error(gobj, "tx_overflow unknown, the connection will be closed on overflow", "tx_overflow",
                    String.valueOf(gobj.read(TX_OVERFLOW)), "known", TxOverflow.KNOWN);
        }
    }

    @Override
    public int onStart() {
        if (!gobj.inState(St.ST_STOPPED) && !gobj.inState(St.ST_DISCONNECTED)) {
            Glog.error(gobj, "Initial wrong tcp state", "state", gobj.state());
            return -1;
        }
        gobj.changeState(St.ST_DISCONNECTED);
        connector.reset();
        if (listener != null) {
            listener.clisrvFree(this);   // server side: C_TCP_S hands over accepted sockets
            return 0;
        }
        if (!connector.readUrl()) {
            return 0;
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
        tx.discard();
        Channel c = releaseSocket();
        if (c != null) c.close();
        boolean published = gobj.readBool(CONNECTED);
        gobj.resetVolatiles();
        gobj.changeState(St.ST_STOPPED);
        endDroppedWhileDown();
        if (published && !gobj.isDestroyed()) gobj.publish(Ev.EV_DISCONNECTED, Kw.create());
        if (!gobj.isDestroyed()) gobj.publish(Ev.EV_STOPPED, Kw.create());
        if (listener != null) listener.clisrvGone(this);
        return 0;
    }

    @Override
    public void onDestroy() {
        clearTimer();
        tx.discard();
        Channel c = releaseSocket();
        if (c != null) c.close();
        endDroppedWhileDown();
        if (listener != null) listener.clisrvGone(this);
    }

    @Override
    public void onWriting(String attr) {
        if (attr.equals(TX_OVERFLOW.name()) && TxOverflow.of(gobj.read(TX_OVERFLOW)) == null) {
            throw new IllegalArgumentException("tx_overflow must be close or drop_oldest, not '" + gobj.read(TX_OVERFLOW) + "'");
        }
        if (ch != null && (attr.equals(INPUT_THRESHOLD_MSGS.name()) || attr.equals(INPUT_THRESHOLD_BYTES.name()))) {
            updateAutoRead();
        }
        if (ch != null && attr.equals(RX_MAX_READS.name())) applyMaxReads(ch);
    }

    @Override
    public void onReadAttrs() {
        gobj.setLong(CUR_TX_QUEUE, tx.size());
    }

    /**
     * A {@code Bundle.update()} of this bundle began: the socket stops reading and the timer stops (its deadline is
     * kept for the new revision), so that nothing arrives by itself until the new revision takes over.
     */
    @Override
    public void onSuspend() {
        suspendedAtMs = nowMs();
        timer.cancel();
        timer = Cancellable.NONE;
        updateAutoRead();
    }

    /**
     * A live upgrade: the socket (the new revision puts its own handler in this one's place in the pipeline), the tx
     * queue, the reconnect state, the timer's deadline, the input threshold (the api object itself) and the rest of
     * the connection's bookkeeping. This behaviour then holds no socket, so whatever its handler or its listeners
     * still report is ignored. Refused for a socket on a worker loop (io_threads &gt; 0): reads and writes in flight
     * between the loops belong to this revision's WorkerLink and its tasks, so core rebuilds the service instead.
     */
    @Override
    public ObjectNode onExport() {
        if (link != null) {
            throw new IllegalStateException("C_TCP on a worker loop (io_threads > 0) is not handed over: its reads and"
                    + " writes in flight between the loops belong to the old revision");
        }
        ObjectNode s = Kw.create();
        Channel c = ch;
        if (c != null) Kw.putRef(s, "channel", c);
        // Let go of the socket before the last flush: the room that flush makes is for the new revision. Were this
        // behaviour to take it (its writability callback drains the queue and says EV_TX_READY), the layers above
        // would pump their backlog, message by message, into the socket inside the handover task: the pause would
        // grow with the backlog (seconds under load).
        ch = null;
        s.set("tx", tx.exportState());
        s.set("connector", connector.exportState());
        if (listener != null) Kw.putRef(s, "listener", listener.gobj());
        // A JDK context (see Tls): nothing in it to release, so a state nobody takes leaves it to the garbage collector.
        if (serverTls != null) Kw.putRef(s, "server_tls", serverTls);
        s.set("input_threshold", inputThreshold.exportState());
        s.put("paused_by_upper", pausedByUpper);
        s.put("timer_due_ms", timerDueMs);
        s.put("suspended_at_ms", suspendedAtMs);
        s.put("ever_connected", everConnected);
        s.put("idle_close", idleClose);
        s.put("last_cause", lastCause);
        s.put("last_activity_ms", lastActivityMs);
        s.set("dropped_while_down", Kw.create().put("count", droppedWhileDown.count()));
        tx.detach();
        return s;
    }

    /**
     * Takes the state of {@link #onExport}, checked whole before anything is taken (a refused state stays whole for
     * core to release): this revision's handler replaces the old one under the same name, reading goes on as the
     * threshold and the upper layer say, the timer is armed again at its deadline. A connect under way is watched
     * from the socket's close; a host name being resolved is resolved again. The time a {@code Bundle.update()} kept
     * the gobj suspended does not count as inactivity.
     */
    @Override
    public void onImport(ObjectNode state, int stateVersion) {
        if (stateVersion != STATE_VERSION) {
            throw new IllegalArgumentException("C_TCP takes state version " + STATE_VERSION + ", not " + stateVersion);
        }
        Channel c = HandedState.ref(state, "channel", Channel.class);
        if (c != null && (!c.isRegistered() || c.eventLoop() != loop || c.pipeline().context(HANDLER) == null)) {
            throw new IllegalArgumentException("the socket is not on the core loop with a C_TCP handler");
        }
        List<ByteBuf> queued = TxBuffer.queueOf(state.get("tx"));
        GObj listenerGobj = HandedState.ref(state, "listener", GObj.class);
        if (listenerGobj != null && !(listenerGobj.behavior() instanceof TcpS)) {
            throw new IllegalArgumentException("its C_TCP_S runs another revision");
        }
        InputThreshold threshold = new InputThreshold();
        threshold.importState(state.get("input_threshold"));

        listener = listenerGobj == null ? null : (TcpS) listenerGobj.behavior();
        serverTls = HandedState.ref(state, "server_tls", SslContext.class);
        inputThreshold = threshold;
        pausedByUpper = state.path("paused_by_upper").asBoolean(false);
        everConnected = state.path("ever_connected").asBoolean(false);
        idleClose = state.path("idle_close").asBoolean(false);
        lastCause = state.path("last_cause").asText("");
        long suspendedMs = state.path("suspended_at_ms").asLong(-1) < 0 ? 0
                : Math.max(0, nowMs() - state.path("suspended_at_ms").asLong());
        lastActivityMs = state.path("last_activity_ms").asLong(0) + suspendedMs;
        droppedWhileDown.resume(state.path("dropped_while_down").path("count").asLong(0), nowMs());
        connector.importState(state.get("connector"));
        tx.importState(state.get("tx"), queued);
        if (c != null) {
            takeSocket(c, null);
            TcpHandler h = new TcpHandler(this, gobj.yuno());
            if (c.isActive()) h.connectionReported();
            c.pipeline().replace(HANDLER, HANDLER, h);
            // an older revision may have read more (or less) per turn, or known no rx_max_reads at all
            if (listener != null) gobj.setLong(RX_MAX_READS, listener.rxMaxReads());
            applyMaxReads(c);
            if (listener == null && gobj.inState(St.ST_WAIT_CONNECTED)) connector.watchConnect(c);
        }
        long due = state.path("timer_due_ms").asLong(-1);
        if (due >= 0) setTimerAt(gobj.inState(St.ST_CONNECTED) ? due + suspendedMs : due);
        updateAutoRead();
        if (c != null) {
            // Room the old revision's last flush made is reported to nobody (it had let go of the socket): the queue
            // drains, and an owed EV_TX_READY is said, in the next task, outside the pause.
            loop.execute(() -> {
                if (ch == c && tx.writable()) drainTx();
            });
        }
        if (c == null && listener == null && gobj.isRunning() && gobj.inState(St.ST_WAIT_CONNECTED)) {
            connector.connect();   // the old revision was resolving the host name
        }
    }

    // --- Actions ---

    private int acConnect(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        clearTimer();
        if (listener != null) {
            gobj.changeState(St.ST_DISCONNECTED);   // the server side never connects out
            return 0;
        }
        connector.connect();
        return 0;
    }

    private int acTxData(String event, ObjectNode kw, GObj src) {
        int frames = Batches.messagesOf(kw);
        ByteBuf buf = gbufferOf(event, kw);
        if (buf == null) return -1;
        if (!tx.send(buf)) {
            txOverflowed();
            return -1;
        }
        countMoreFrames(frames);
        return 0;
    }

    /**
     * A protocol's frames of a send batch in one buffer: txMsgs counts frames, as when each came alone. The buffer
     * itself is counted once it is written; the frames after its first are counted when it is taken.
     */
    private void countMoreFrames(int frames) {
        if (frames > 1) gobj.add(TX_MSGS, frames - 1);
    }

    private int acTxDataDisconnected(String event, ObjectNode kw, GObj src) {
        ByteBuf buf = gbufferOf(event, kw);
        if (buf == null) return -1;
        if (inactivityModel() && gobj.isRunning() && gobj.inState(St.ST_DISCONNECTED)) {
            int frames = Batches.messagesOf(kw);
            if (!tx.hold(buf)) txOverflowed();
            else countMoreFrames(frames);
            clearTimer();
            gobj.send(Ev.EV_CONNECT, null, gobj);
            return 0;
        }
        buf.release();
        dropWhileDown("tcp tx data while disconnected, dropped");
        return 0;
    }

    private int acTxDataConnecting(String event, ObjectNode kw, GObj src) {
        ByteBuf buf = gbufferOf(event, kw);
        if (buf == null) return -1;
        if (inactivityModel()) {
            int frames = Batches.messagesOf(kw);
            if (!tx.hold(buf)) txOverflowed();
            else countMoreFrames(frames);
            return 0;
        }
        buf.release();
        dropWhileDown("tcp tx data while connecting, dropped");
        return 0;
    }

    private int acTimeoutInactivity(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        timer = Cancellable.NONE;   // it fired
        timerDueMs = -1;
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
            if (gobj.isRunning() && listener == null) connector.retryLater();
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

    // --- Local methods ---

    // Called by C_TCP_S, which binds this gobj as the server side of its connections and hands it sockets.

    void bindListener(TcpS l, SslContext serverCtx) {
        this.listener = l;
        this.serverTls = serverCtx;
        gobj.setBool(CLISRV, true);
        gobj.setBool(USE_SSL, serverCtx != null);
    }

    GObj gobj() {
        return gobj;
    }

    /**
     * When a socket's unsent bytes make it unwritable (and writable again under the low mark). Netty's default high
     * mark, 64 KiB, is {@code output_threshold_bytes}' default too: the batch written before each flush tipped the
     * socket unwritable just before the flush, every time, and each message after it went through the tx queue and
     * a drain (7 % of the core loop forwarding at full rate). Four batches up, only a peer that does not read makes it
     * unwritable; the tx queue's own limits bound what waits beyond.
     */
    static final WriteBufferWaterMark WATER_MARK = new WriteBufferWaterMark(128 << 10, 256 << 10);

    /**
     * The read buffers of this gobj's sockets: {@code rx_buffer_size} to start with, adapted by Netty between 64 B and
     * 64 KiB, and at most {@code rx_max_reads} reads per turn of the loop. A custom allocator reads once per turn
     * unless told (Netty gives its own default, 16, only to the allocator a socket is made with).
     */
    static AdaptiveRecvByteBufAllocator recvAllocator(GObj g) {
        int initial = (int) Math.max(64, Math.min(65536, g.readLong(RX_BUFFER_SIZE)));
        AdaptiveRecvByteBufAllocator a = new AdaptiveRecvByteBufAllocator(64, initial, 65536);
        a.maxMessagesPerRead(maxReads(g));
        return a;
    }

    /** {@code rx_max_reads}, within 1..{@link #MAX_RX_MAX_READS}. */
    static int maxReads(GObj g) {
        return (int) Math.max(1, Math.min(MAX_RX_MAX_READS, g.readLong(RX_MAX_READS)));
    }

    /**
     * Sets {@code rx_max_reads} on the socket's allocator: its read handle asks the allocator at each read, so this
     * holds from the socket's next read on, whatever revision made the allocator.
     */
    void applyMaxReads(Channel c) {
        RecvByteBufAllocator a = c.config().getRecvByteBufAllocator();
        if (a instanceof MaxMessagesRecvByteBufAllocator) {
            ((MaxMessagesRecvByteBufAllocator) a).maxMessagesPerRead(maxReads(gobj));
        }
    }

    /** The listener's {@code rx_max_reads} for this server side: written here, and to its socket if it has one. */
    void takeMaxReads(long reads) {
        gobj.setLong(RX_MAX_READS, reads);
        if (ch != null) applyMaxReads(ch);
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
        gobj.changeState(St.ST_WAIT_CONNECTED);
        lastCause = "";
        // The allocator before the first read: Netty makes a socket's read handle once, from the allocator it has then.
        if (listener != null) gobj.setLong(RX_MAX_READS, listener.rxMaxReads());
        c.config().setRecvByteBufAllocator(recvAllocator(gobj));
        // autoRead first: the handlers may report the connection (and the upper layer pause it) as they are added.
        if (c.eventLoop() == loop) {
            takeSocket(c, null);
            c.config().setAutoRead(true);
            initPipeline(c, serverTls, null, 0, null);
            return;
        }
        WorkerLink l = new WorkerLink(this, gobj.yuno());
        takeSocket(c, l);
        SslContext ctx = serverTls;
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

    // Netty's callbacks, through TcpBridge, on the core loop.

    void onActive(Channel c) {
        if (c != ch) return;
        if (gobj.readBool(USE_SSL)) {
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
        if (gobj.isTraced(TRACE_TLS)) {
            SslHandler h = c.pipeline().get(SslHandler.class);
            Glog.info(gobj, "TLS handshake done", "protocol", h == null ? "" : h.engine().getSession().getProtocol(),
                    "cipher", h == null ? "" : h.engine().getSession().getCipherSuite());
        }
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
        if (tx.unflushed()) tx.flush();
    }

    void onWritabilityChanged(Channel c) {
        if (c != ch) return;
        if (tx.writable()) {
            drainTx();
        } else {
            tx.blocked();
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

    // Called by Reconnector, TxBuffer and WorkerLink, on the core loop.

    /** Takes {@code c} as the socket; {@code l} carries it across to its worker loop, null when it is on the core loop. */
    void takeSocket(Channel c, WorkerLink l) {
        ch = c;
        link = l;
        tx.attach(c, l != null ? l : TxSink.SOCKET);
    }

    /** True when {@code c} is the socket. */
    boolean holds(Channel c) {
        return c == ch;
    }

    /**
     * A connect attempt failed: lets go of its socket and goes back to ST_DISCONNECTED (ST_STOPPED if stopped
     * meanwhile). True when the gobj still runs, and so tries again.
     */
    boolean attemptFailed(String cause) {
        releaseSocket();
        lastCause = cause;
        if (!gobj.isRunning()) {
            gobj.changeState(St.ST_STOPPED);
            return false;
        }
        gobj.changeState(St.ST_DISCONNECTED);
        if (!inactivityModel()) tx.discard();
        return true;
    }

    /** Runs on the socket's loop; reads no gobj state ({@code ctx} and {@code l} come from the core loop). */
    void initPipeline(Channel c, SslContext ctx, String host, int port, WorkerLink l) {
        if (ctx != null) {
            SslHandler h = host == null ? ctx.newHandler(c.alloc()) : ctx.newHandler(c.alloc(), host, port);
            c.pipeline().addLast("ssl", h);
        }
        c.pipeline().addLast(HANDLER, l != null ? l : new TcpHandler(this, gobj.yuno()));
    }

    /** Arms the gobj's one timer: the reconnect wait in ST_DISCONNECTED, the inactivity timer in ST_CONNECTED. */
    void setTimer(long ms) {
        setTimerAt(nowMs() + ms);
    }

    /** TxBuffer handed a buffer to the socket: traffic, for the inactivity model. */
    void wrote() {
        if (inactivity()) lastActivityMs = nowMs();
    }

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

    // This gobj's own steps.

    private void setConnected(Channel c) {
        gobj.setBool(CONNECTED, true);
        gobj.set(PEERNAME, addr(c.remoteAddress()));
        gobj.set(SOCKNAME, addr(c.localAddress()));
        gobj.inc(CONNXS);
        clearTimer();
        gobj.changeState(St.ST_CONNECTED);
        connector.connected();
        everConnected = true;
        idleClose = false;
        inputThreshold.reset();
        if (gobj.isTraced(TRACE_CONNECTIONS)) {
            Glog.info(gobj, "Connected", "msg2", listener == null ? "Connected To" : "Connected From",
                    "url", gobj.read(URL), "remote-addr", gobj.read(PEERNAME), "local-addr", gobj.read(SOCKNAME));
        } else {
            Glog.debug(gobj, "Connected", "url", gobj.read(URL), "remote-addr", gobj.read(PEERNAME));
        }
        endDroppedWhileDown();
        ObjectNode kw = Kw.create();
        kw.put(Kw.URL, gobj.read(URL));
        kw.put(Kw.PEERNAME, gobj.read(PEERNAME));
        kw.put(Kw.SOCKNAME, gobj.read(SOCKNAME));
        gobj.publish(Ev.EV_CONNECTED, kw);
        if (gobj.isDestroyed() || c != ch) return;
        updateAutoRead();
        drainTx();
        if (inactivityModel()) {
            lastActivityMs = nowMs();
            setTimer(gobj.readLong(TIMEOUT_INACTIVITY));
        }
    }

    private void setDisconnected() {
        releaseSocket();
        boolean published = gobj.readBool(CONNECTED);
        clearTimer();
        if (!(inactivityModel() && !published && gobj.isRunning())) {
            tx.discard();
        }
        inputThreshold.reset();
        pausedByUpper = false;
        String peer = gobj.read(PEERNAME);
        gobj.resetVolatiles();
        if (gobj.isTraced(TRACE_CONNECTIONS)) {
            Glog.info(gobj, "Disconnected", "msg2", listener == null ? "Disconnected To" : "Disconnected From",
                    "url", gobj.read(URL), "remote-addr", peer, "cause", lastCause);
        } else {
            Glog.debug(gobj, "Disconnected", "url", gobj.read(URL), "remote-addr", peer, "cause", lastCause);
        }
        if (listener != null) {
            // A server-side C_TCP serves one connection after another: its counters are the current connection's.
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
            connector.retryLater();
        }
    }

    /** Lets go of the socket, and of what its worker link still holds; answers it (null when there was none). */
    private Channel releaseSocket() {
        Channel c = ch;
        ch = null;
        tx.detach();
        WorkerLink l = link;
        link = null;
        if (l != null) l.discard();
        return c;
    }

    /** Writes what the tx queue holds, while connected; EV_TX_READY once it emptied after the socket was full. */
    private void drainTx() {
        if (ch == null || !gobj.inState(St.ST_CONNECTED)) return;
        if (tx.drain() && !gobj.readBool(NO_TX_READY_EVENT)) gobj.publish(Ev.EV_TX_READY, Kw.create());
    }

    /** The tx queue overflowed under the close policy (TxBuffer said it and released the queue): drop the connection. */
    private void txOverflowed() {
        lastCause = "tx queue overflow";
        if (ch != null) {
            gobj.changeState(St.ST_WAIT_STOPPED);
            ch.close();
        }
    }

    /**
     * Half-close then close, after what was written is flushed: the peer reads everything sent before the close,
     * then sees a FIN, not a reset (a reset may discard data still unread on its side).
     */
    private void closeGracefully(Channel c) {
        tx.flush();   // what waits on the core side (a worker link's batch) goes before the FIN
        boolean plain = !gobj.readBool(USE_SSL);   // read here: the listener below runs on the socket's loop
        c.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener((ChannelFutureListener) f -> {
            if (c instanceof SocketChannel && plain && c.isActive()) {
                ((SocketChannel) c).shutdownOutput().addListener(x -> c.close());
            } else {
                c.close();
            }
        });
    }

    /** The kw's gbuffer, taken; null (said) when the kw has none. */
    private ByteBuf gbufferOf(String event, ObjectNode kw) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        if (buf == null) Glog.error(gobj, "gbuffer NULL", "event", event);
        return buf;
    }

    /** EV_TX_DATA with no connection to send it on: said when it starts, then with a count (see {@link Streak}). */
    private void dropWhileDown(String msg) {
        if (droppedWhileDown.hit(nowMs())) {
            Glog.error(gobj, msg, "msgset", "operational_error", "url", gobj.read(URL),
                    "dropped", droppedWhileDown.count());
        }
    }

    private void endDroppedWhileDown() {
        long n = droppedWhileDown.end();
        if (n > 0) Glog.info(gobj, "tcp tx data dropped while not connected", "url", gobj.read(URL), "dropped", n);
    }

    private void updateAutoRead() {
        Channel c = ch;
        if (c == null) return;
        boolean read = suspendedAtMs < 0 && !inputThreshold.isBlocked() && !pausedByUpper;
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

    private void clearTimer() {
        timer.cancel();
        timer = Cancellable.NONE;
        timerDueMs = -1;
    }

    /** The timer at {@code dueMs}; while suspended only the deadline is kept, for the revision that takes over. */
    private void setTimerAt(long dueMs) {
        timer.cancel();
        timerDueMs = dueMs;
        timer = suspendedAtMs >= 0 ? Cancellable.NONE
                : gobj.setTimeout(Math.max(0, dueMs - nowMs()), Ev.EV_TIMEOUT, null);
    }

    /** The inactivity model is on: a client that closes after timeout_inactivity and reconnects on demand. */
    private boolean inactivityModel() {
        return inactivity() && listener == null;
    }

    private boolean inactivity() {
        return gobj.readLong(TIMEOUT_INACTIVITY) > 0;
    }

    private long nowMs() {
        return gobj.yuno().clock().monotonicMillis();
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
}
