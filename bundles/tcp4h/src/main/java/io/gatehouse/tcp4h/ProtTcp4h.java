// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.POJONode;
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
import io.gatehouse.support.Gbuffers;
import io.gatehouse.support.Glog;
import io.gatehouse.support.InputThreshold;
import io.gatehouse.support.ProtocolBottom;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * C_PROT_TCP4H: 4-byte big-endian length-prefixed messages over a transport bottom (a C_TCP; with {@code url} and
 * no bottom it creates one). Deframes EV_RX_DATA into one EV_ON_MESSAGE per frame, frames EV_SEND_MESSAGE into
 * EV_TX_DATA, and turns protocol errors and timeouts into a drop of the transport.
 * Port of {@code kernel/c/root-linux/src/c_prot_tcp4h.c} @6043415 (its ST_WAIT_HANDSHAKE state, which nothing
 * enters, is not kept).
 *
 * <pre>
 *   ST_DISCONNECTED --EV_CONNECTED--&gt; ST_WAIT_FRAME_HEADER &lt;--frame complete-- ST_WAIT_PAYLOAD
 *         ^                                 |  header complete, payload partial      ^
 *         |                                 +----------------------------------------+
 *         +---- EV_DISCONNECTED, or a protocol error or timeout (EV_DROP to the bottom, and wait for it to
 *               report the close within timeout_close)
 * </pre>
 *
 * Input threshold: with {@code input_threshold_msgs}/{@code _bytes} set, frames handed up count until the consumer
 * credits them back with EV_RESUME_INPUT; the frame that reaches either limit carries {@code is_blocked: true},
 * the rest of the read stays here and the bottom stops reading (EV_PAUSE_INPUT), so TCP backpressure reaches the
 * sender.
 *
 * <p>Message batches up: the complete frames at the front of a read go up in one EV_ON_MESSAGE ({@link Kw#MESSAGES},
 * their payloads' ranges in one slice of the read) when every gobj above takes message batches, no input threshold
 * is set and traffic is not traced; else each frame goes up alone. A read of a busy producer holds hundreds of small
 * frames, and each one's event through the channel and the gate, its slice and its kw cost as much as the relay's
 * work on it.
 */
public final class ProtTcp4h implements GObjBehavior {
    public static final String GCLASS = GClassNames.C_PROT_TCP4H;

    // --- Attributes ---

    static final Attr<String> URL = Attr.string("url", "", AttrFlag.PERSIST,
            "Client url; if set and there is no bottom, a C_TCP child is created with it at start");
    static final Attr<Long> MAX_PKT_SIZE = Attr.integer("max_pkt_size", 0, AttrFlag.WR,
            "Largest payload accepted, bytes; 0 = 16 MiB (Yuneta's max block)");
    static final Attr<Boolean> IAM_SERVER = Attr.bool("iamServer", false, AttrFlag.RD,
            "Server side: the bottom is dropped only if it is running");
    static final Attr<Long> TIMEOUT_PAYLOAD = Attr.integer("timeout_payload", 5000, AttrFlag.PERSIST,
            "Timeout waiting the rest of a payload, ms");
    static final Attr<Long> TIMEOUT_HEADER = Attr.integer("timeout_header", 0, AttrFlag.PERSIST,
            "Close a connection that sends no complete frame within this time after connecting, or whose frame"
            + " header stays incomplete this long, ms; 0 = never (Yuneta)");
    static final Attr<Long> TIMEOUT_CLOSE = Attr.integer("timeout_close", 3000, AttrFlag.PERSIST,
            "Timeout waiting the transport to disconnect after a drop, ms");
    static final Attr<Long> INPUT_THRESHOLD_MSGS = Attr.integer("input_threshold_msgs", 0, AttrFlag.WR,
            "Input threshold, messages handed up and not credited back; 0 = unlimited");
    static final Attr<Long> INPUT_THRESHOLD_BYTES = Attr.integer("input_threshold_bytes", 0, AttrFlag.WR,
            "Input threshold, bytes handed up and not credited back; 0 = unlimited");
    static final Attr<JsonNode> CRYPTO = Attr.json("crypto", AttrType.JSON, null, AttrFlag.RD,
            "TLS config passed to the C_TCP child created from url");
    static final Attr<JsonNode> TCP_KW = Attr.json("tcp_kw", AttrType.JSON, null, AttrFlag.RD,
            "Extra kw for the C_TCP child created from url (timeouts, thresholds...)");
    static final Attr<Boolean> CONNECTED = Attr.bool("connected", false, AttrFlag.VOLATILE | AttrFlag.STATS,
            "Transport connected");
    static final Attr<Boolean> INPUT_BLOCKED = Attr.bool("input_blocked", false, AttrFlag.VOLATILE | AttrFlag.STATS,
            "Input stopped by the threshold or by EV_PAUSE_INPUT");

    // --- Trace levels ---

    static final String TRACE_TRAFFIC = "traffic";

    // --- FSM ---

    static final String ST_WAIT_FRAME_HEADER = "ST_WAIT_FRAME_HEADER";
    static final String ST_WAIT_PAYLOAD = "ST_WAIT_PAYLOAD";

    static final Fsm<ProtTcp4h> FSM = Fsm.<ProtTcp4h>builder()
        .state(St.ST_DISCONNECTED)
            .on(Ev.EV_CONNECTED,     ProtTcp4h::acConnected,      ST_WAIT_FRAME_HEADER)
            .on(Ev.EV_DISCONNECTED,  ProtTcp4h::acDisconnected)
            .on(Ev.EV_TIMEOUT,       ProtTcp4h::acTimeoutWaitDisconnected)
            .on(Ev.EV_STOPPED,       ProtTcp4h::acStopped)
            .on(Ev.EV_DROP,          ProtTcp4h::acDrop)
            .on(Ev.EV_PAUSE_INPUT,   ProtTcp4h::acPauseInput)
            .on(Ev.EV_RESUME_INPUT,  ProtTcp4h::acResumeInput)
            .ignore(Ev.EV_RX_DATA)   // the rest of a read that came after our own close: dropped silently
            .ignore(Ev.EV_TX_READY)
        .state(ST_WAIT_FRAME_HEADER)
            .on(Ev.EV_RX_DATA,       ProtTcp4h::acRxData)
            .on(Ev.EV_SEND_MESSAGE,  ProtTcp4h::acSendMessage)
            .on(Ev.EV_DISCONNECTED,  ProtTcp4h::acDisconnected,   St.ST_DISCONNECTED)
            .on(Ev.EV_DROP,          ProtTcp4h::acDrop)
            .on(Ev.EV_PAUSE_INPUT,   ProtTcp4h::acPauseInput)
            .on(Ev.EV_RESUME_INPUT,  ProtTcp4h::acResumeInput)
            .on(Ev.EV_TIMEOUT,       ProtTcp4h::acTimeoutHeader)
            .ignore(Ev.EV_TX_READY)
        .state(ST_WAIT_PAYLOAD)
            .enteredByAction()
            .on(Ev.EV_RX_DATA,       ProtTcp4h::acRxData)
            .on(Ev.EV_SEND_MESSAGE,  ProtTcp4h::acSendMessage)
            .on(Ev.EV_DISCONNECTED,  ProtTcp4h::acDisconnected,   St.ST_DISCONNECTED)
            .on(Ev.EV_TIMEOUT,       ProtTcp4h::acTimeoutPayload)
            .on(Ev.EV_DROP,          ProtTcp4h::acDrop)
            .on(Ev.EV_PAUSE_INPUT,   ProtTcp4h::acPauseInput)
            .on(Ev.EV_RESUME_INPUT,  ProtTcp4h::acResumeInput)
            .ignore(Ev.EV_TX_READY)
        .publishes(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE)
        .build();

    // --- Spec ---

    /** The version of the state {@link #onExport} gives; {@link #onImport} takes this one only. */
    static final int STATE_VERSION = 1;

    public static final GClassSpec<ProtTcp4h> SPEC = GClassSpec.builder(GCLASS, ProtTcp4h.class)
            .description("4-byte big-endian length-prefixed messages (header = payload length + 4)")
            .attrs(URL, MAX_PKT_SIZE, IAM_SERVER, TIMEOUT_PAYLOAD, TIMEOUT_HEADER, TIMEOUT_CLOSE,
                    INPUT_THRESHOLD_MSGS, INPUT_THRESHOLD_BYTES, CRYPTO, TCP_KW, CONNECTED, INPUT_BLOCKED)
            .fsm(FSM)
            .traceLevel(TRACE_TRAFFIC, "Trace every frame read and written, with its size")
            // timeout_handshake: TCP4H has no handshake (Yuneta's dead ST_WAIT_HANDSHAKE is not kept)
            .acceptUnusedYunetaKeys("cert_pem", "timeout_handshake", "user_data", "user_data2")
            .linkUp(CONNECTED)
            .stateVersion(STATE_VERSION)
            .takesSendBatches()
            .factory(ProtTcp4h::new)
            .build();

    /** Payloads up to this size are copied behind their header (one buffer); larger ones are composed. */
    private static final int COPY_LIMIT = 2048;
    /** The most frames one message batch up carries: a bound on what one event asks of the gobjs above. */
    static final int MAX_BATCH_MESSAGES = 1024;

    // --- Private data ---

    private final GObj gobj;
    private final Tcp4hFramer framer = new Tcp4hFramer();
    private final ByteBufAllocator alloc = ByteBufAllocator.DEFAULT;
    /** Reads (or their rest) waiting while the input is blocked, in arrival order. */
    private final ArrayDeque<ByteBuf> held = new ArrayDeque<>();
    private Cancellable timer = Cancellable.NONE;
    /** When {@link #timer} falls due, on the yuno's clock (ms); -1 when none is armed. Handed over in a live upgrade. */
    private long timerDueMs = -1;
    /** When a live upgrade suspended this gobj (the yuno's clock, ms); -1 when it is not suspended. */
    private long suspendedAtMs = -1;
    /** The timer is the payload timer (see {@link #armPayloadTimer}). */
    private boolean payloadTimerArmed;
    /** When the last bytes of an incomplete payload came, on the yuno's clock (ms). */
    private long lastPayloadReadMs;
    /** Not final: a live upgrade hands the object itself (an api type) to the new revision. */
    private InputThreshold inputThreshold = new InputThreshold();
    private boolean pausedByUpper;
    private boolean bottomPaused;
    /** A complete frame arrived since the connection opened. */
    private boolean anyFrame;
    /** When the header guard ({@code timeout_header}) started counting (the yuno's clock, ms), -1 when it does not run. */
    private long headerGuardSinceMs = -1;
    /** The bytes of the frames {@link #completeFrames} found, headers included. */
    private int batchBytes;

    ProtTcp4h(GObj gobj) {
        this.gobj = gobj;
    }

    // --- Framework methods ---

    @Override
    public int onStart() {
        String url = gobj.read(URL);
        if (gobj.bottom() == null && url != null && !url.isEmpty()) {
            ObjectNode kw = Kw.create();
            JsonNode extra = gobj.read(TCP_KW);
            if (extra instanceof ObjectNode) kw.setAll((ObjectNode) extra.deepCopy());
            kw.put(Kw.URL, url);
            JsonNode crypto = gobj.read(CRYPTO);
            if (crypto instanceof ObjectNode && crypto.size() > 0) kw.set("crypto", crypto.deepCopy());
            GObj tcp = gobj.createChild(gobj.name(), GClassNames.C_TCP, kw);
            if (tcp == null) {
                return -1;
            }
            gobj.setBottom(tcp);
        }
        GObj bottom = gobj.bottom();
        if (bottom != null && !bottom.isRunning()) {
            JsonNode bu = bottom.readAttr(Kw.URL);
            if (bu != null && bu.isTextual() && !bu.asText().isEmpty()) {
                // Client side: we start our transport. Server-side transports are started by C_TCP_S.
                bottom.start();
            }
        }
        return 0;
    }

    @Override
    public int onStop() {
        clearTimer();
        GObj bottom = gobj.bottom();
        if (bottom != null && bottom.isRunning()) {
            bottom.stop();
        }
        return 0;
    }

    @Override
    public void onDestroy() {
        clearTimer();
        framer.reset();
        releaseHeld();
    }

    /**
     * A {@code Bundle.update()} of this bundle began: the timer stops (its deadline is kept) and the bottom stops
     * reading, so that reads do not pile up in core's held events while the new revision is not there; TCP
     * backpressure holds the peer meanwhile.
     */
    @Override
    public void onSuspend() {
        suspendedAtMs = nowMs();
        timer.cancel();
        timer = Cancellable.NONE;
        if (!gobj.inState(St.ST_DISCONNECTED) && !bottomPaused) {
            bottomPaused = true;
            tellBottom(true);
        }
    }

    /**
     * A live upgrade: the framer's place in the stream (a header or a payload partly received, the gathered bytes
     * by reference), the reads held while the input is blocked, the input threshold (the api object itself), the
     * timer's deadline and the guards' clocks. The output side holds nothing: each EV_SEND_MESSAGE goes down at once.
     * This behaviour then holds no buffer.
     */
    @Override
    public ObjectNode onExport() {
        ObjectNode s = Kw.create();
        s.set("framer", framer.exportState());
        ArrayNode reads = s.putArray("held");
        for (ByteBuf b; (b = held.poll()) != null; ) reads.addPOJO(b);
        s.set("input_threshold", inputThreshold.exportState());
        s.put("paused_by_upper", pausedByUpper);
        s.put("bottom_paused", bottomPaused);
        s.put("any_frame", anyFrame);
        s.put("header_guard_since_ms", headerGuardSinceMs);
        s.put("last_payload_read_ms", lastPayloadReadMs);
        s.put("timer_due_ms", timerDueMs);
        s.put("payload_timer_armed", payloadTimerArmed);
        s.put("suspended_at_ms", suspendedAtMs);
        return s;
    }

    /**
     * Takes the state of {@link #onExport}, checked whole before anything is taken, and goes on mid-frame. The time
     * a {@code Bundle.update()} kept the gobj suspended does not count against the peer (its bytes were not read
     * meanwhile): the payload and header timers and the timer's deadline move by it. A bottom paused for the upgrade
     * reads again, unless the input is blocked.
     */
    @Override
    public void onImport(ObjectNode state, int stateVersion) {
        if (stateVersion != STATE_VERSION) {
            throw new IllegalArgumentException("C_PROT_TCP4H takes state version " + STATE_VERSION + ", not " + stateVersion);
        }
        List<ByteBuf> reads = buffersIn(state.get("held"));
        InputThreshold threshold = new InputThreshold();
        threshold.importState(state.get("input_threshold"));
        JsonNode framerState = state.get("framer");
        if (framerState != null) framer.importState(framerState);

        held.addAll(reads);
        inputThreshold = threshold;
        long suspendedMs = state.path("suspended_at_ms").asLong(-1) < 0 ? 0
                : Math.max(0, nowMs() - state.path("suspended_at_ms").asLong());
        pausedByUpper = state.path("paused_by_upper").asBoolean(false);
        bottomPaused = state.path("bottom_paused").asBoolean(false);
        anyFrame = state.path("any_frame").asBoolean(false);
        long guardSince = state.path("header_guard_since_ms").asLong(-1);
        headerGuardSinceMs = guardSince < 0 ? -1 : guardSince + suspendedMs;
        lastPayloadReadMs = state.path("last_payload_read_ms").asLong(0) + suspendedMs;
        long due = state.path("timer_due_ms").asLong(-1);
        if (due >= 0) {
            setTimer(Math.max(0, due + suspendedMs - nowMs()));
            payloadTimerArmed = state.path("payload_timer_armed").asBoolean(false);
        }
        if (!gobj.inState(St.ST_DISCONNECTED)) updateBottomPause();
    }

    // --- Actions ---

    private int acConnected(String event, ObjectNode kw, GObj src) {
        gobj.resetVolatiles();
        gobj.set(CONNECTED, true);
        framer.reset();
        releaseHeld();
        inputThreshold.reset();
        pausedByUpper = false;
        bottomPaused = false;
        clearTimer();
        anyFrame = false;
        headerGuardSinceMs = -1;
        if (!gobj.isRunning()) {
            gobj.changeState(St.ST_DISCONNECTED);
        } else {
            armHeaderGuard();
        }
        return gobj.publish(Ev.EV_ON_OPEN, kw);
    }

    private int acDisconnected(String event, ObjectNode kw, GObj src) {
        boolean opened = gobj.readBool(CONNECTED);
        gobj.set(CONNECTED, false);
        gobj.set(INPUT_BLOCKED, false);
        framer.reset();
        releaseHeld();
        clearTimer();
        inputThreshold.unblock();
        pausedByUpper = false;
        bottomPaused = false;
        gobj.changeState(St.ST_DISCONNECTED);
        if (!opened) {
            // Not open (a second EV_DISCONNECTED, or a transport that reports a close it never opened): the channel
            // above saw no EV_ON_OPEN, so it must not see an EV_ON_CLOSE either.
            Kw.release(kw);
            return 0;
        }
        return gobj.publish(Ev.EV_ON_CLOSE, kw);
    }

    private int acRxData(String event, ObjectNode kw, GObj src) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        if (buf == null) {
            Glog.error(gobj, "gbuffer NULL", "event", event);
            return -1;
        }
        if (inputBlocked() || !held.isEmpty()) {
            held.add(buf);
            drainHeld();
            return 0;
        }
        process(buf);
        return 0;
    }

    private int acSendMessage(String event, ObjectNode kw, GObj src) {
        GObj bottom = gobj.bottom();
        ByteBuf payload = Kw.gbuffer(kw);
        int[] batch = payload == null ? null : Batches.rangesOf(kw);
        if (batch != null) return sendFrames(bottom, kw, payload, batch);
        if (bottom != null && payload != null && Gbuffers.canPrepend(payload, Tcp4hFramer.HEADER_SIZE)) {
            // The producer left room in front: the header goes there and the kw goes down as it came.
            Gbuffers.prependInt(payload, payload.readableBytes() + Tcp4hFramer.HEADER_SIZE);
            if (gobj.isTraced(TRACE_TRAFFIC)) Glog.info(gobj, "frame sent", "bytes", payload.readableBytes());
            return bottom.send(Ev.EV_TX_DATA, kw, gobj);
        }
        boolean binary = payload != null;
        ByteBuf out;
        try {
            out = frame(kw);
        } catch (RuntimeException e) {
            Kw.release(kw);
            Glog.error(gobj, "Cannot frame message", "error", String.valueOf(e));
            return -1;
        }
        if (bottom == null) {
            out.release();
            Glog.error(gobj, "No bottom to send", "msgset", "internal_error");
            return -1;
        }
        if (gobj.isTraced(TRACE_TRAFFIC)) Glog.info(gobj, "frame sent", "bytes", out.readableBytes());
        // A binary message's kw carries its frame down (the transport reads only the gbuffer): one dict per
        // message instead of two. A JSON message's kw was the payload; the frame goes in a kw of its own.
        return bottom.send(Ev.EV_TX_DATA, binary ? Kw.setGbuffer(kw, out) : Kw.withGbuffer(out), gobj);
    }

    /**
     * A send batch ({@link Kw#BATCH}): each message framed as it would be alone, the frames one after the other in
     * one buffer that goes down in one EV_TX_DATA, with the frames' ranges for the transport's counters. The copy
     * is the one a small message alone gets from the transport's write batch, made here once for all of them.
     */
    private int sendFrames(GObj bottom, ObjectNode kw, ByteBuf payload, int[] batch) {
        if (bottom == null) {
            Kw.release(kw);
            Glog.error(gobj, "No bottom to send", "msgset", "internal_error");
            return -1;
        }
        int frames = batch.length / 2;
        int base = payload.readerIndex();
        int bytes = 0;
        for (int i = 0; i < frames; i++) bytes += batch[2 * i + 1] - batch[2 * i];
        ByteBuf out = alloc.buffer(bytes + frames * Tcp4hFramer.HEADER_SIZE);
        int at = 0;
        for (int i = 0; i < frames; i++) {
            int from = batch[2 * i];
            int len = batch[2 * i + 1] - from;
            out.writeInt(len + Tcp4hFramer.HEADER_SIZE);
            out.writeBytes(payload, base + from, len);
            // the kw's ranges now say where each frame is, header included (the kw and its array are ours)
            batch[2 * i] = at;
            at += len + Tcp4hFramer.HEADER_SIZE;
            batch[2 * i + 1] = at;
        }
        if (gobj.isTraced(TRACE_TRAFFIC)) Glog.info(gobj, "frames sent", "frames", frames, "bytes", out.readableBytes());
        Kw.setGbuffer(kw, out);   // releases the batch's buffer
        return bottom.send(Ev.EV_TX_DATA, kw, gobj);
    }

    private int acTimeoutPayload(String event, ObjectNode kw, GObj src) {
        timerFired();
        long timeout = gobj.readLong(TIMEOUT_PAYLOAD);
        long quietMs = nowMs() - lastPayloadReadMs;
        if (framer.inPayload() && quietMs < timeout) {
            setTimer(timeout - quietMs);   // bytes came since the timer was armed: wait the rest
            payloadTimerArmed = true;
            return 0;
        }
        Glog.warn(gobj, "Timeout waiting PAYLOAD data", "msgset", "protocol_error", "timeout_payload", timeout);
        framer.reset();
        close();
        return 0;
    }

    private int acTimeoutHeader(String event, ObjectNode kw, GObj src) {
        timerFired();   // a payload timer that outlived its payload lands here too
        long t = gobj.readLong(TIMEOUT_HEADER);
        if (t <= 0 || headerGuardSinceMs < 0 || inputBlocked()) {
            return 0; // a stale timer: the guard does not run now
        }
        if (nowMs() - headerGuardSinceMs < t) {
            armHeaderGuard(); // early (the timeout was changed): wait the rest
            return 0;
        }
        String peer = ProtocolBottom.peername(gobj);
        Glog.warn(gobj, "Timeout waiting frame header", "msgset", "protocol_error", "peername", peer,
                "timeout_header", t, "waiting", anyFrame ? "rest of a header" : "first frame");
        headerGuardSinceMs = -1;
        framer.reset();
        close();
        return 0;
    }

    private int acTimeoutWaitDisconnected(String event, ObjectNode kw, GObj src) {
        timerFired();
        Glog.warn(gobj, "Timeout waiting disconnected", "msgset", "protocol_error");
        dropBottom();
        return 0;
    }

    private int acDrop(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        dropBottom();
        return 0;
    }

    private int acStopped(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        ProtocolBottom.stopped(gobj, src);
        return 0;
    }

    /** An upper gobj cannot take more (e.g. its output is not writable): stop reading. */
    private int acPauseInput(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        if (gobj.inState(ST_WAIT_FRAME_HEADER) && headerGuardSinceMs >= 0) { // we stop reading: the peer is not late
            clearTimer();
            headerGuardSinceMs = -1;
        }
        pausedByUpper = true;
        updateBottomPause();
        return 0;
    }

    /**
     * The consumer credits back what it processed ({@code msgs}, {@code bytes}; both absent = everything) and
     * lifts an explicit pause. Held bytes are deframed again, which may block once more.
     */
    private int acResumeInput(String event, ObjectNode kw, GObj src) {
        inputThreshold.credit(kw, gobj.readLong(INPUT_THRESHOLD_MSGS), gobj.readLong(INPUT_THRESHOLD_BYTES));
        Kw.release(kw);
        pausedByUpper = false;
        drainHeld();
        if (!gobj.inState(St.ST_DISCONNECTED)) {
            updateBottomPause();
        }
        if (gobj.inState(ST_WAIT_FRAME_HEADER) && held.isEmpty()) {
            armHeaderGuard();
        }
        return 0;
    }

    // --- Local methods ---

    private long nowMs() {
        return gobj.yuno().clock().monotonicMillis();
    }

    private void clearTimer() {
        timer.cancel();
        timer = Cancellable.NONE;
        timerDueMs = -1;
        payloadTimerArmed = false;
    }

    private void setTimer(long ms) {
        timer.cancel();
        timer = gobj.setTimeout(ms, Ev.EV_TIMEOUT, null);
        timerDueMs = nowMs() + ms;
        payloadTimerArmed = false;
    }

    /** The timer's EV_TIMEOUT came: no timer is armed any more. */
    private void timerFired() {
        timer = Cancellable.NONE;
        timerDueMs = -1;
        payloadTimerArmed = false;
    }

    /**
     * timeout_payload counts from the last read while a payload is incomplete. Rearming a timer on every read
     * costs a scheduled task and its cancellation per read; instead one timer stays armed and, when it fires,
     * waits the rest of the time if bytes came since.
     */
    private void armPayloadTimer() {
        lastPayloadReadMs = nowMs();
        if (!payloadTimerArmed) {
            setTimer(gobj.readLong(TIMEOUT_PAYLOAD));
            payloadTimerArmed = true;
        }
    }

    private void releaseHeld() {
        for (ByteBuf b; (b = held.poll()) != null; ) b.release();
    }

    private boolean inputBlocked() {
        return inputThreshold.isBlocked() || pausedByUpper;
    }

    /**
     * Deframes {@code buf} (owned) and publishes each frame. Stops early, keeping the rest in {@link #held},
     * when a frame blocks the input; stops and discards the rest when a publish tore the connection down.
     */
    private void process(ByteBuf buf) {
        if (!payloadTimerArmed) clearTimer();   // a payload timer left armed finds out by itself when it fires
        boolean batches = true;   // until the gobjs above are asked, or they said no
        try {
            for (;;) {
                if (inputBlocked()) {
                    if (buf.isReadable()) {
                        held.add(buf);
                        buf = null;
                    }
                    gobj.changeState(ST_WAIT_FRAME_HEADER);
                    headerGuardSinceMs = -1; // we stopped reading: the peer is not late
                    return;
                }
                if (batches && !framer.hasPartial()) {
                    int count = completeFrames(buf);
                    if (count >= 2 && (batches = batchable())) {
                        deliverBatch(buf, count);
                        if (gobj.isDestroyed() || gobj.inState(St.ST_DISCONNECTED)) return;
                        continue;
                    }
                }
                ByteBuf frame = framer.decode(alloc, buf, gobj.readLong(MAX_PKT_SIZE));
                if (frame == null) {
                    break;
                }
                deliver(frame);
                if (gobj.isDestroyed() || gobj.inState(St.ST_DISCONNECTED)) {
                    // The subscriber dropped or stopped us while handling the frame: the rest of this read is
                    // discarded silently, as Yuneta does since 7.8.1 (it used to log an error per frame left).
                    return;
                }
            }
            if (framer.error() != Tcp4hFramer.Error.NONE) {
                protocolError();
                return;
            }
        } finally {
            if (buf != null) buf.release();
        }
        if (framer.inPayload()) {
            gobj.changeState(ST_WAIT_PAYLOAD);
            armPayloadTimer();
        } else {
            gobj.changeState(ST_WAIT_FRAME_HEADER);
            armHeaderGuard();
        }
    }

    /**
     * The header guard (opt-in, {@code timeout_header} > 0): while waiting for a header, it runs before the first
     * frame of the connection, and from the end of the last frame (or the first byte of a header after an idle
     * period) while part of a header is held; more header bytes do not restart it. An idle connection between
     * complete frames is not timed, nor is a connection whose input we stopped.
     */
    private void armHeaderGuard() {
        long t = gobj.readLong(TIMEOUT_HEADER);
        if (t <= 0 || inputBlocked() || (anyFrame && !framer.hasPartial())) {
            if (headerGuardSinceMs >= 0) clearTimer();
            headerGuardSinceMs = -1;
            return;
        }
        long now = nowMs();
        if (headerGuardSinceMs < 0) headerGuardSinceMs = now;
        setTimer(Math.max(1, t - (now - headerGuardSinceMs)));
    }

    private void drainHeld() {
        while (!inputBlocked() && !held.isEmpty() && !gobj.inState(St.ST_DISCONNECTED)) {
            process(held.poll());
        }
    }

    /**
     * How many complete frames are at the front of {@code buf} (not consumed), at most {@link #MAX_BATCH_MESSAGES};
     * their bytes in {@link #batchBytes}. Stops before a header the framer refuses (it says why when it reaches it)
     * and before a frame not all read. Only the headers are read; no scratch is kept per connection, as ten thousand
     * idle devices may each hold one.
     */
    private int completeFrames(ByteBuf buf) {
        int base = buf.readerIndex();
        int end = buf.writerIndex();
        long limit = Tcp4hFramer.limit(gobj.readLong(MAX_PKT_SIZE));
        int at = base;
        int count = 0;
        while (count < MAX_BATCH_MESSAGES && end - at >= Tcp4hFramer.HEADER_SIZE) {
            long length = buf.getInt(at) & 0xFFFFFFFFL;
            long payload = length - Tcp4hFramer.HEADER_SIZE;
            if (payload <= 0 || payload > limit || payload > end - at - Tcp4hFramer.HEADER_SIZE) break;
            count++;
            at += (int) length;
        }
        batchBytes = at - base;
        return count;
    }

    /** Frames may go up as one batch: nothing counts them one by one, and every gobj above takes it. */
    private boolean batchable() {
        return gobj.readLong(INPUT_THRESHOLD_MSGS) <= 0 && gobj.readLong(INPUT_THRESHOLD_BYTES) <= 0
                && !gobj.isTraced(TRACE_TRAFFIC) && Batches.messageBatchesTakenAbove(gobj);
    }

    /**
     * The {@code count} frames {@link #completeFrames} found, up in one EV_ON_MESSAGE ({@link Kw#MESSAGES}: their
     * payloads' ranges, from the slice's start).
     */
    private void deliverBatch(ByteBuf buf, int count) {
        anyFrame = true;
        headerGuardSinceMs = -1;
        int[] ranges = new int[2 * count];
        int base = buf.readerIndex();
        int at = base;
        for (int i = 0; i < count; i++) {
            int length = buf.getInt(at);
            ranges[2 * i] = at + Tcp4hFramer.HEADER_SIZE - base;
            ranges[2 * i + 1] = at + length - base;
            at += length;
        }
        ObjectNode kw = Kw.withGbuffer(buf.readRetainedSlice(batchBytes));
        Kw.putRef(kw, Kw.MESSAGES, ranges);
        gobj.publish(Ev.EV_ON_MESSAGE, kw);
    }

    private void deliver(ByteBuf frame) {
        anyFrame = true;
        headerGuardSinceMs = -1;
        int len = frame.readableBytes();
        ObjectNode kw = Kw.withGbuffer(frame);
        if (inputThreshold.handedUp(len, gobj.readLong(INPUT_THRESHOLD_MSGS), gobj.readLong(INPUT_THRESHOLD_BYTES))) {
            kw.put(Kw.IS_BLOCKED, true);
            updateBottomPause();
        }
        if (gobj.isTraced(TRACE_TRAFFIC)) Glog.info(gobj, "frame received", "bytes", len);
        gobj.publish(Ev.EV_ON_MESSAGE, kw);
    }

    /** Tells the bottom to stop or resume reading when the blocked state changed. */
    private void updateBottomPause() {
        boolean want = inputBlocked();
        gobj.set(INPUT_BLOCKED, want);
        if (want == bottomPaused) return;
        bottomPaused = want;
        tellBottom(want);
    }

    private void tellBottom(boolean pause) {
        ProtocolBottom.pauseReads(gobj, pause);
    }

    /** The buffers of a list of a state, checked: IllegalArgumentException when it holds anything else. */
    private static List<ByteBuf> buffersIn(JsonNode list) {
        List<ByteBuf> out = new ArrayList<>();
        if (list == null) return out;
        if (!list.isArray()) throw new IllegalArgumentException("held is not a list");
        for (JsonNode n : list) {
            Object b = n instanceof POJONode ? ((POJONode) n).getPojo() : null;
            if (!(b instanceof ByteBuf)) throw new IllegalArgumentException("held holds something other than a buffer");
            out.add((ByteBuf) b);
        }
        return out;
    }

    private void protocolError() {
        Tcp4hFramer.Error e = framer.error();
        long l = framer.badHeader();
        String peer = ProtocolBottom.peername(gobj);
        if (e == Tcp4hFramer.Error.ZERO_LENGTH) {
            Glog.error(gobj, "frame_length cannot be 0", "msgset", "protocol_error", "peername", peer);
        } else {
            Glog.warn(gobj, "tcp4h head too long", "msgset", "protocol_error", "peername", peer,
                    "len", l - Tcp4hFramer.HEADER_SIZE, "max_pkt_size", Tcp4hFramer.limit(gobj.readLong(MAX_PKT_SIZE)));
        }
        framer.reset();
        close();
    }

    /** Yuneta's ws_close: DISCONNECTED first (nothing more accepted), then drop the transport. */
    private void close() {
        gobj.changeState(St.ST_DISCONNECTED);
        releaseHeld();
        setTimer(gobj.readLong(TIMEOUT_CLOSE));
        dropBottom();
    }

    private void dropBottom() {
        ProtocolBottom.drop(gobj, !gobj.readBool(IAM_SERVER));
    }

    private ByteBuf frame(ObjectNode kw) {
        ByteBuf payload = Kw.takeGbuffer(kw);
        if (payload == null) {
            ByteBuf out = alloc.buffer(256);
            out.writeInt(0);
            Kw.writeJson(kw, out);
            out.setInt(0, out.readableBytes());
            return out;
        }
        int n = payload.readableBytes();
        if (n <= COPY_LIMIT) {
            ByteBuf out = alloc.buffer(Tcp4hFramer.HEADER_SIZE + n);
            out.writeInt(n + Tcp4hFramer.HEADER_SIZE);
            out.writeBytes(payload);
            payload.release();
            return out;
        }
        CompositeByteBuf out = alloc.compositeBuffer(2);
        out.addComponent(true, Tcp4hFrameEncoder.header(alloc, n));
        // The composite takes over the payload reference; its readable bytes are consumed from the sender's view.
        out.addComponent(true, payload.readRetainedSlice(n));
        payload.release();
        return out;
    }
}
