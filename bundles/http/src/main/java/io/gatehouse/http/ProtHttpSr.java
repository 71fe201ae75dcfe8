// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.AttrType;
import io.gatehouse.api.Cancellable;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.support.Batches;
import io.gatehouse.support.Glog;
import io.gatehouse.support.ProtocolBottom;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufInputStream;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.util.ReferenceCountUtil;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayDeque;
import java.util.BitSet;
import java.util.Queue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.zip.GZIPInputStream;

/**
 * C_PROT_HTTP_SR: HTTP/1.1 ingest over a transport bottom (a clisrv C_TCP bound by C_TCP_S), under a C_CHANNEL.
 * {@code POST <ingest_path>} carries one JSON object or NDJSON (one object per line, a batch). The objects of a
 * request go up in one EV_ON_MESSAGE ({@link Kw#BATCH}) with the request's {@code __md_trq__} ({@code conn},
 * {@code req}) when every gobj above takes batches, and C_RELAY acks the request once ({@code result} 0) when the
 * output stored them all durably, or nacks it (negative) at the first refusal; otherwise every object goes up as its
 * own EV_ON_MESSAGE whose {@code __md_trq__} also has its index ({@code msg}), acked alone. The request is answered
 * {@code 200 {"accepted": N}} when all N are acked, and {@code 503} with
 * {@code Retry-After} at the first nack, when nothing upstream takes a message, or when the acks do not all come
 * within {@code timeout_durable}: the client sends the whole request again (at least once). The body is checked
 * whole before anything goes up, so a bad line is a {@code 400} naming it and nothing of that request is stored.
 * {@code GET <health_path>} answers 200 while the gate and the {@code health_services} run, 503 otherwise.
 *
 * <p>Parsing is Netty's {@link HttpRequestDecoder} (codec-http) in an {@link EmbeddedChannel} per connection: the
 * socket belongs to C_TCP, so the decoder runs beside it on the core thread, fed by EV_RX_DATA. Answers are
 * written here (a status line, three headers and a small JSON body) and go down as EV_TX_DATA, in request order:
 * pipelined requests are processed as they come, at most {@code max_pipelined} of them unanswered, and answered in
 * order.
 *
 * <pre>
 *   ST_DISCONNECTED --EV_CONNECTED--&gt; ST_WAIT_HEADERS --headers--&gt; ST_WAIT_BODY --end of body--&gt; ST_IDLE
 *          ^                               ^   timeout_header        timeout_body                     |
 *          |                               +------------- bytes of the next request -----------------+
 *          +-- EV_DISCONNECTED, a timeout, an answer that closes (bad request, 413, Connection: close)
 * </pre>
 *
 * Bounds: {@code max_header_size}, {@code max_uri_length}, {@code max_body_size} (413), {@code max_lines} (413),
 * {@code max_pipelined} (reading stops until answers go out), {@code timeout_header} and {@code timeout_body}
 * (slowloris: 408 and close), {@code timeout_inactivity} (an idle keep-alive connection is closed).
 */
public final class ProtHttpSr implements GObjBehavior {
    public static final String GCLASS = "C_PROT_HTTP_SR";

    /** In the {@code __md_trq__} of a message: the connection (a random number per connection). */
    static final String MD_CONN = "conn";
    /** In the {@code __md_trq__} of a message: the request's sequence number on its connection. */
    static final String MD_REQ = "req";
    /** In the {@code __md_trq__} of a message: the message's index in its request (0-based). */
    static final String MD_MSG = "msg";

    // --- Attributes ---

    static final Attr<String> INGEST_PATH = Attr.string("ingest_path", "/ingest", AttrFlag.WR,
            "Path of POST requests carrying JSON or NDJSON (the query string is ignored)");
    static final Attr<String> HEALTH_PATH = Attr.string("health_path", "/health", AttrFlag.WR,
            "Path of GET/HEAD health checks (no token needed)");
    static final Attr<JsonNode> HEALTH_SERVICES = Attr.json("health_services", AttrType.LIST, null, AttrFlag.WR,
            "Services that must exist and run for the health check to answer 200 (e.g. the relay and the output)");
    static final Attr<String> BEARER_TOKEN = Attr.string("bearer_token", "", AttrFlag.WR,
            "POST needs 'Authorization: Bearer <this>' when set; empty = no token");
    static final Attr<Long> MAX_BODY_SIZE = Attr.integer("max_body_size", 1 << 20, AttrFlag.WR,
            "Largest request body, bytes (413 and close beyond)");
    static final Attr<Long> MAX_LINES = Attr.integer("max_lines", 10_000, AttrFlag.WR,
            "Most JSON objects (NDJSON lines) in one request (413 beyond)");
    static final Attr<Long> MAX_PIPELINED = Attr.integer("max_pipelined", 16, AttrFlag.WR,
            "Most requests of a connection received and not yet answered; reading stops at it");
    static final Attr<Long> MAX_HEADER_SIZE = Attr.integer("max_header_size", 8192, AttrFlag.WR,
            "Largest header block, bytes (431 and close beyond); read when a connection opens");
    static final Attr<Long> MAX_URI_LENGTH = Attr.integer("max_uri_length", 4096, AttrFlag.WR,
            "Longest request line, bytes (414 and close beyond); read when a connection opens");
    static final Attr<Long> TIMEOUT_HEADER = Attr.integer("timeout_header", 10_000, AttrFlag.WR,
            "A request's headers must be complete this long after the connection opened or its first bytes came, ms");
    static final Attr<Long> TIMEOUT_BODY = Attr.integer("timeout_body", 30_000, AttrFlag.WR,
            "A request's body must be complete this long after its headers, ms");
    static final Attr<Long> TIMEOUT_INACTIVITY = Attr.integer("timeout_inactivity", 60_000, AttrFlag.WR,
            "An idle keep-alive connection (everything answered, nothing received) is closed after this, ms");
    static final Attr<Long> TIMEOUT_DURABLE = Attr.integer("timeout_durable", 10_000, AttrFlag.WR,
            "A request whose messages are not all acked within this is answered 503, ms");
    static final Attr<Long> RETRY_AFTER = Attr.integer("retry_after", 2, AttrFlag.WR,
            "Retry-After of a 503 answer, seconds");
    static final Attr<Long> TIMEOUT_CLOSE = Attr.integer("timeout_close", 3000, AttrFlag.WR,
            "Timeout waiting the transport to disconnect after a drop, ms");
    static final Attr<Boolean> CONNECTED = Attr.bool("connected", false, AttrFlag.VOLATILE | AttrFlag.STATS,
            "Transport connected");
    static final Attr<Long> IN_FLIGHT = Attr.integer("requests_in_flight", 0, AttrFlag.VOLATILE | AttrFlag.STATS,
            "Requests of the connection received and not yet answered");
    static final Attr<Long> REQUESTS = Attr.counter("requests", AttrFlag.RSTATS, "Requests received");
    static final Attr<Long> ACCEPTED = Attr.counter("accepted_requests", AttrFlag.RSTATS,
            "Requests answered 200 (every message durably queued)");
    static final Attr<Long> MSGS_ACCEPTED = Attr.counter("accepted_msgs", AttrFlag.RSTATS,
            "Messages of the requests answered 200");
    static final Attr<Long> REFUSED = Attr.counter("refused_requests", AttrFlag.RSTATS,
            "Requests answered 503 (refused or not acked in time; the client sends them again)");
    static final Attr<Long> REJECTED = Attr.counter("rejected_requests", AttrFlag.RSTATS,
            "Requests answered 4xx (bad JSON, too large, no token, unknown path or method)");
    static final Attr<Long> PROTOCOL_ERRORS = Attr.counter("protocol_errors", AttrFlag.RSTATS,
            "Connections closed for malformed HTTP or a header/body timeout");
    static final Attr<Long> BATCHED = Attr.counter("batched_requests", AttrFlag.RSTATS,
            "Requests whose objects went up as one batch, acked once (every gobj above takes batches)");
    static final Attr<Long> STALE_ACKS = Attr.counter("stale_acks", AttrFlag.RSTATS,
            "Acks for requests already answered or of an earlier connection (ignored)");

    // --- Trace levels ---

    static final String TRACE_TRAFFIC = "traffic";

    // --- FSM ---

    static final String ST_WAIT_HEADERS = "ST_WAIT_HEADERS";
    static final String ST_WAIT_BODY = "ST_WAIT_BODY";
    static final String ST_IDLE = St.ST_IDLE;

    static final Fsm<ProtHttpSr> FSM = buildFsm();

    private static Fsm<ProtHttpSr> buildFsm() {
        Fsm.Builder<ProtHttpSr> b = Fsm.builder();
        b.state(St.ST_DISCONNECTED)
            .on(Ev.EV_CONNECTED,     ProtHttpSr::acConnected,      ST_WAIT_HEADERS)
            .on(Ev.EV_DISCONNECTED,  ProtHttpSr::acDisconnected)
            .on(Ev.EV_TIMEOUT,       ProtHttpSr::acTimeoutWaitDisconnected)
            .on(Ev.EV_SEND_MESSAGE,  ProtHttpSr::acLateAck)
            .on(Ev.EV_STOPPED,       ProtHttpSr::acStopped)
            .on(Ev.EV_DROP,          ProtHttpSr::acDrop)
            .ignore(Ev.EV_RX_DATA)   // bytes of a read that followed our own close
            .ignore(Ev.EV_PAUSE_INPUT)
            .ignore(Ev.EV_RESUME_INPUT)
            .ignore(Ev.EV_TX_READY);
        // The connected states take the same events: what a read or a timeout means in each (headers, body, between
        // requests) is decided by the actions from the state, so the rows are written once.
        for (String st : new String[] {ST_WAIT_HEADERS, ST_WAIT_BODY, ST_IDLE}) {
            Fsm.StateBuilder<ProtHttpSr> s = b.state(st);
            if (!st.equals(ST_WAIT_HEADERS)) s.enteredByAction();
            s.on(Ev.EV_RX_DATA,       ProtHttpSr::acRxData)
             .on(Ev.EV_SEND_MESSAGE,  ProtHttpSr::acAck)
             .on(Ev.EV_TIMEOUT,       ProtHttpSr::acTimeout)
             .on(Ev.EV_DISCONNECTED,  ProtHttpSr::acDisconnected)
             .on(Ev.EV_DROP,          ProtHttpSr::acDrop)
             .on(Ev.EV_PAUSE_INPUT,   ProtHttpSr::acPauseInput)
             .on(Ev.EV_RESUME_INPUT,  ProtHttpSr::acResumeInput)
             .ignore(Ev.EV_TX_READY);
        }
        return b.publishes(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE).build();
    }

    // --- Spec ---

    /** The version of what {@link #onExport} hands over (see docs/CORE.md, "Live upgrade"). */
    static final int STATE_VERSION = 1;

    public static final GClassSpec<ProtHttpSr> SPEC = GClassSpec.builder(GCLASS, ProtHttpSr.class)
            .description("HTTP/1.1 ingest: POST JSON or NDJSON, answered 200 only once every message is durably queued")
            .attrs(INGEST_PATH, HEALTH_PATH, HEALTH_SERVICES, BEARER_TOKEN, MAX_BODY_SIZE, MAX_LINES, MAX_PIPELINED,
                    MAX_HEADER_SIZE, MAX_URI_LENGTH, TIMEOUT_HEADER, TIMEOUT_BODY, TIMEOUT_INACTIVITY, TIMEOUT_DURABLE,
                    RETRY_AFTER, TIMEOUT_CLOSE, CONNECTED, IN_FLIGHT, REQUESTS, ACCEPTED, MSGS_ACCEPTED, REFUSED,
                    REJECTED, PROTOCOL_ERRORS, BATCHED, STALE_ACKS)
            .fsm(FSM)
            .traceLevel(TRACE_TRAFFIC, "Trace every request line and the status it was answered")
            .acceptUnusedYunetaKeys("user_data", "user_data2")
            .linkUp(CONNECTED)
            .stateVersion(STATE_VERSION)
            .factory(ProtHttpSr::new)
            .build();

    private static final byte[] CONTINUE = "HTTP/1.1 100 Continue\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    /** One request of the connection, from its headers until its answer is written. */
    private static final class Req {
        final long seq;
        final boolean keepAlive;
        final boolean headMethod;
        /** A POST to the ingest path whose body is collected (false: the body is read and discarded). */
        boolean ingest;
        /** Its body came with {@code Content-Encoding: gzip}: decompressed once complete. */
        boolean gzip;
        ByteBuf body;
        long bodyBytes;
        boolean readDone;
        int expected;
        int acked;
        BitSet ackedMsgs;
        /** Its messages went up as one batch ({@link Kw#BATCH}): one ack answers them all. */
        boolean batched;
        /** When the acks must be in (the yuno's clock, ms); -1 before the messages went up. */
        long deadline = -1;
        /** The encoded answer, once decided; written when every earlier request's answer was. */
        ByteBuf answer;
        int status;
        boolean closeAfter;

        Req(long seq, boolean keepAlive, boolean headMethod) {
            this.seq = seq;
            this.keepAlive = keepAlive;
            this.headMethod = headMethod;
        }

        void release() {
            if (body != null) body.release();
            if (answer != null) answer.release();
            body = null;
            answer = null;
        }
    }

    // --- Private data ---

    private final GObj gobj;
    private final ByteBufAllocator alloc = ByteBufAllocator.DEFAULT;
    /** Reads the relay's acks without a tree. */
    private final AckScan ackScan = new AckScan();
    private final ObjectRanges objectRanges = new ObjectRanges();
    /** Messages (lines) up to this size are built in unpooled heap buffers. */
    private static final int MESSAGE_HEAP_MAX = 64 * 1024;
    /** codec-http's decoder for the current connection; null while disconnected. */
    private EmbeddedChannel decoder;
    /** Requests received and not yet answered on the wire, in order. */
    private final ArrayDeque<Req> requests = new ArrayDeque<>();
    private long connId;
    private long lastSeq;
    /** When the read side is late (header, body or inactivity timeout, per state); -1 = not timed. */
    private long readDeadline = -1;
    /** Bytes of a request whose headers are not complete came (ST_WAIT_HEADERS). */
    private boolean partial;
    private Cancellable timer = Cancellable.NONE;
    /** The deadline the timer is armed for; -1 = none. */
    private long armedFor = -1;
    /** After our own close: when "Timeout waiting disconnected" is due; -1 = not closing. */
    private long closeDeadline = -1;
    private boolean opened;
    /** An answer that closes the connection is decided: nothing more is read. */
    private boolean closing;
    private boolean pausedByUpper;
    private boolean bottomPaused;
    private boolean pumping;
    private boolean pumpAgain;
    /** 503 answers in a row on this channel, for the "said once" log. */
    private long refusedInARow;
    /** A live upgrade stopped our reading (onSuspend): the next revision decides whether to resume. */
    private boolean suspended;

    ProtHttpSr(GObj gobj) {
        this.gobj = gobj;
    }

    // --- Framework methods ---

    @Override
    public int onStop() {
        clearTimer();
        GObj bottom = gobj.bottom();
        if (bottom != null && bottom.isRunning()) bottom.stop();
        return 0;
    }

    @Override
    public void onDestroy() {
        clearTimer();
        releaseConnection();
    }

    @Override
    public void onReadAttrs() {
        gobj.setLong(IN_FLIGHT, requests.size());
    }

    /** A live upgrade waits for the new revision: stop reading the socket (core holds the events meanwhile). */
    @Override
    public void onSuspend() {
        suspended = true;
        GObj bottom = gobj.bottom();
        if (!bottomPaused && bottom != null && bottom.acceptsEvent(Ev.EV_PAUSE_INPUT)) {
            bottom.send(Ev.EV_PAUSE_INPUT, null, gobj);
        }
    }

    /**
     * The connection as it is, for the next revision: the decoder (a Netty channel, whatever it holds), the requests
     * in order with their acks, deadlines and buffers, the flags. Ownership of the decoder and the buffers goes with
     * the state.
     */
    @Override
    public ObjectNode onExport() {
        ObjectNode s = Kw.create();
        s.put("opened", opened).put("conn", connId).put("last_seq", lastSeq).put("read_deadline", readDeadline)
                .put("partial", partial).put("close_deadline", closeDeadline).put("closing", closing)
                .put("paused_by_upper", pausedByUpper).put("bottom_paused", bottomPaused || suspended)
                .put("refused_in_a_row", refusedInARow);
        if (decoder != null) Kw.putRef(s, "decoder", decoder);
        ArrayNode reqs = s.putArray("requests");
        for (Req q : requests) {
            ObjectNode r = reqs.addObject();
            r.put("seq", q.seq).put("keep_alive", q.keepAlive).put("head", q.headMethod).put("ingest", q.ingest)
                    .put("body_bytes", q.bodyBytes).put("read_done", q.readDone).put("expected", q.expected)
                    .put("acked", q.acked).put("deadline", q.deadline).put("status", q.status)
                    .put("batched", q.batched).put("gzip", q.gzip)
                    .put("close_after", q.closeAfter);
            if (q.ackedMsgs != null) {
                ArrayNode bits = r.putArray("acked_msgs");
                for (long w : q.ackedMsgs.toLongArray()) bits.add(w);
            }
            if (q.body != null) Kw.putRef(r, "body", q.body);
            if (q.answer != null) Kw.putRef(r, "answer", q.answer);
        }
        decoder = null;
        requests.clear();
        clearTimer();
        return s;
    }

    @Override
    public void onImport(ObjectNode s, int stateVersion) {
        if (stateVersion != STATE_VERSION) throw new IllegalArgumentException("unknown state version " + stateVersion);
        opened = s.path("opened").asBoolean();
        connId = s.path("conn").asLong();
        lastSeq = s.path("last_seq").asLong();
        readDeadline = s.path("read_deadline").asLong(-1);
        partial = s.path("partial").asBoolean();
        closeDeadline = s.path("close_deadline").asLong(-1);
        closing = s.path("closing").asBoolean();
        pausedByUpper = s.path("paused_by_upper").asBoolean();
        bottomPaused = s.path("bottom_paused").asBoolean();
        refusedInARow = s.path("refused_in_a_row").asLong();
        decoder = Kw.ref(s, "decoder", EmbeddedChannel.class);
        for (JsonNode r : s.path("requests")) {
            Req q = new Req(r.path("seq").asLong(), r.path("keep_alive").asBoolean(), r.path("head").asBoolean());
            q.ingest = r.path("ingest").asBoolean();
            q.bodyBytes = r.path("body_bytes").asLong();
            q.readDone = r.path("read_done").asBoolean();
            q.expected = r.path("expected").asInt();
            q.acked = r.path("acked").asInt();
            q.batched = r.path("batched").asBoolean(false);
            q.gzip = r.path("gzip").asBoolean(false);   // a revision before gzip bodies took none
            q.deadline = r.path("deadline").asLong(-1);
            q.status = r.path("status").asInt();
            q.closeAfter = r.path("close_after").asBoolean();
            if (r.has("acked_msgs")) {
                long[] words = new long[r.get("acked_msgs").size()];
                for (int i = 0; i < words.length; i++) words[i] = r.get("acked_msgs").get(i).asLong();
                q.ackedMsgs = BitSet.valueOf(words);
            }
            q.body = Kw.ref(r, "body", ByteBuf.class);
            q.answer = Kw.ref(r, "answer", ByteBuf.class);
            requests.add(q);
        }
        if (decoder != null) {
            pump();   // answers that became due, reading resumed unless something holds it, timers from the deadlines
        } else if (closeDeadline >= 0) {
            timer = gobj.setTimeout(Math.max(1, closeDeadline - nowMs()), Ev.EV_TIMEOUT, null);
        }
    }

    // --- Actions ---

    private int acConnected(String event, ObjectNode kw, GObj src) {
        gobj.resetVolatiles();
        gobj.set(CONNECTED, true);
        releaseConnection();
        clearTimer();
        decoder = new EmbeddedChannel(new HttpRequestDecoder(new HttpDecoderConfig()
                .setMaxInitialLineLength(gobj.readInt(MAX_URI_LENGTH))
                .setMaxHeaderSize(gobj.readInt(MAX_HEADER_SIZE))
                .setMaxChunkSize(64 * 1024)));
        connId = ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE;
        lastSeq = 0;
        closing = false;
        pausedByUpper = false;
        bottomPaused = false;
        partial = false;
        closeDeadline = -1;
        opened = true;
        if (!gobj.isRunning()) {
            gobj.changeState(St.ST_DISCONNECTED);
        } else {
            readDeadline = nowMs() + gobj.readLong(TIMEOUT_HEADER);
            rearm();
        }
        return gobj.publish(Ev.EV_ON_OPEN, kw);
    }

    private int acDisconnected(String event, ObjectNode kw, GObj src) {
        gobj.set(CONNECTED, false);
        if (gobj.inState(ST_WAIT_BODY) || (gobj.inState(ST_WAIT_HEADERS) && partial)) {
            // the peer went away in the middle of a request (a truncated body, headers with no end)
            Glog.error(gobj, "HTTP connection closed in the middle of a request", "msgset", "protocol_error",
                    "peername", peername(), "waiting", gobj.inState(ST_WAIT_BODY) ? "body" : "headers");
            gobj.inc(PROTOCOL_ERRORS);
        }
        releaseConnection();
        clearTimer();
        closeDeadline = -1;
        gobj.changeState(St.ST_DISCONNECTED);
        if (!opened) {
            Kw.release(kw);   // never opened: the channel above must not see a close
            return 0;
        }
        opened = false;
        return gobj.publish(Ev.EV_ON_CLOSE, kw);
    }

    private int acRxData(String event, ObjectNode kw, GObj src) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        if (buf == null) {
            Glog.error(gobj, "gbuffer NULL", "event", event);
            return -1;
        }
        if (closing || decoder == null) {
            buf.release();   // an answer that closes is decided: what the peer sends after it is not read
            return 0;
        }
        boolean idleBefore = gobj.inState(ST_IDLE) && decoder.inboundMessages().isEmpty();
        long seqBefore = lastSeq;
        if (gobj.inState(ST_WAIT_HEADERS)) partial = true;
        try {
            decoder.writeInbound(buf);
        } catch (Exception e) {
            Glog.error(gobj, "HTTP decoder failed, closing", "msgset", "protocol_error", "peername", peername(),
                    "error", String.valueOf(e));
            gobj.inc(PROTOCOL_ERRORS);
            close();
            return 0;
        }
        pump();
        if (idleBefore && !closing && decoder != null && gobj.inState(ST_IDLE) && lastSeq == seqBefore
                && decoder.inboundMessages().isEmpty()) {
            // Everything before was complete, so these bytes begin the next request and its headers are not all
            // here: the header guard runs from now and more bytes do not restart it.
            gobj.changeState(ST_WAIT_HEADERS);
            partial = true;
            readDeadline = nowMs() + gobj.readLong(TIMEOUT_HEADER);
            rearm();
        }
        return 0;
    }

    /**
     * An ack or nack of one of our messages, sent back down by the relay through the gate and the channel: read
     * from its bytes by {@link AckScan}, or parsed when the scan cannot vouch for it.
     */
    private int acAck(String event, ObjectNode kw, GObj src) {
        ObjectNode msg = kw;
        ByteBuf b = Kw.takeGbuffer(kw);
        if (b != null) {
            try {
                if (ackScan.scan(b) == AckScan.FOUND) {
                    onAck(ackScan.conn(), ackScan.req(), ackScan.msg(), ackScan.result());
                    pump();
                    return 0;
                }
                msg = Kw.parse(b);
            } catch (IOException e) {
                msg = null;
            } finally {
                b.release();
            }
        }
        JsonNode md = msg == null ? null : msg.get(Kw.MD_TRQ);
        if (md == null || !md.isObject()) {
            // HTTP cannot push to its client: only acks of our own messages come this way
            Glog.error(gobj, "Message to an HTTP client dropped: only acks are expected", "msgset", "internal_error");
            return -1;
        }
        onAck(md.path(MD_CONN).asLong(-1), md.path(MD_REQ).asLong(-1), md.path(MD_MSG).asInt(-1),
                md.has(Kw.RESULT) ? md.get(Kw.RESULT).asInt() : (int) Kw.getLong(msg, Kw.RESULT, 0));
        pump();
        return 0;
    }

    /** An ack after the connection it belongs to closed: the client had gone, nothing to answer. */
    private int acLateAck(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        gobj.inc(STALE_ACKS);
        return 0;
    }

    private int acTimeout(String event, ObjectNode kw, GObj src) {
        armedFor = -1;
        long now = nowMs();
        for (Req q : requests) {
            if (q.answer == null && q.deadline >= 0 && q.deadline <= now) {
                refuse(q, "no durable answer within timeout_durable");
            }
        }
        if (readDeadline >= 0 && !bottomPaused && readDeadline <= now) readTimeout();
        if (decoder != null) pump();
        return 0;
    }

    private int acTimeoutWaitDisconnected(String event, ObjectNode kw, GObj src) {
        if (closeDeadline < 0 || nowMs() < closeDeadline) return 0;   // a timer of the connected time
        closeDeadline = -1;
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

    /** Flow control from above (a gate that cannot take more): stop reading the socket. */
    private int acPauseInput(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        pausedByUpper = true;
        updateBottomPause();
        rearm();
        return 0;
    }

    private int acResumeInput(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        pausedByUpper = false;
        pump();
        return 0;
    }

    // --- Local methods: the request pump ---

    /**
     * Writes the answers that are due, in order, then takes the next decoded parts of requests, until neither moves.
     * Re-entrant calls (an ack that arrives while a request's messages go up) only ask for another round.
     */
    private void pump() {
        if (pumping) {
            pumpAgain = true;
            return;
        }
        pumping = true;
        try {
            do {
                pumpAgain = false;
                flushAnswers();
                if (decoder == null) return;
                processInbound();
            } while (pumpAgain && decoder != null);
        } finally {
            pumping = false;
        }
        if (decoder != null) {
            updateBottomPause();
            rearm();
        }
    }

    private void processInbound() {
        Queue<Object> in = decoder.inboundMessages();
        while (!closing && !pausedByUpper && decoder != null) {
            Object o = in.peek();
            if (o == null) return;
            if (o instanceof HttpRequest && requests.size() >= gobj.readLong(MAX_PIPELINED)) return;
            in.poll();
            try {
                if (o instanceof HttpRequest) onHeaders((HttpRequest) o);
                if (o instanceof HttpContent && !closing && decoder != null) onContent((HttpContent) o);
            } finally {
                ReferenceCountUtil.release(o);
            }
        }
    }

    private void onHeaders(HttpRequest r) {
        gobj.inc(REQUESTS);
        Req q = new Req(++lastSeq, HttpUtil.isKeepAlive(r), HttpMethod.HEAD.equals(r.method()));
        requests.add(q);
        partial = false;
        if (gobj.isTraced(TRACE_TRAFFIC)) Glog.info(gobj, "HTTP request", "method", r.method().name(), "uri", r.uri());
        DecoderResult dr = r.decoderResult();
        if (dr.isFailure()) {
            Throwable cause = dr.cause();
            HttpResponseStatus st = cause instanceof TooLongHttpLineException ? HttpResponseStatus.REQUEST_URI_TOO_LONG
                    : cause instanceof TooLongHttpHeaderException ? HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
                    : HttpResponseStatus.BAD_REQUEST;
            protocolError(q, st, "Bad HTTP request, closing", String.valueOf(cause));
            return;
        }
        gobj.changeState(ST_WAIT_BODY);
        readDeadline = nowMs() + gobj.readLong(TIMEOUT_BODY);
        String path = pathOf(r.uri());
        CharSequence expect = r.headers().get(HttpHeaderNames.EXPECT);
        boolean expectContinue = expect != null && HttpHeaderValues.CONTINUE.contentEqualsIgnoreCase(expect);
        if (expect != null && !expectContinue) {
            reject(q, HttpResponseStatus.EXPECTATION_FAILED, error("unsupported Expect: " + expect), true);
        } else if (path.equals(gobj.read(INGEST_PATH))) {
            if (!HttpMethod.POST.equals(r.method())) {
                reject(q, HttpResponseStatus.METHOD_NOT_ALLOWED, error("method not allowed"), expectContinue,
                        "allow", "POST");
                return;
            }
            if (!authorized(r)) {
                reject(q, HttpResponseStatus.UNAUTHORIZED, error("missing or wrong bearer token"), expectContinue,
                        "www-authenticate", "Bearer realm=\"gatehouse\"");
                return;
            }
            String encoding = r.headers().get(HttpHeaderNames.CONTENT_ENCODING);
            String coding = encoding == null ? "" : encoding.trim();
            if (HttpHeaderValues.GZIP.contentEqualsIgnoreCase(coding)
                    || HttpHeaderValues.X_GZIP.contentEqualsIgnoreCase(coding)) {
                q.gzip = true;
            } else if (encoding != null && !HttpHeaderValues.IDENTITY.contentEqualsIgnoreCase(coding)) {
                // a body in another coding would only fail as bad JSON: say what is wrong instead
                reject(q, HttpResponseStatus.UNSUPPORTED_MEDIA_TYPE,
                        error("unsupported Content-Encoding: " + encoding + " (gzip and identity are taken)"),
                        expectContinue);
                return;
            }
            long max = gobj.readLong(MAX_BODY_SIZE);
            long length = HttpUtil.getContentLength(r, -1L);
            if (length > max) {
                tooLarge(q, length);
                return;
            }
            q.ingest = true;
            q.body = alloc.heapBuffer((int) Math.max(256, Math.min(length >= 0 ? length : 4096, max)));
            if (expectContinue && requests.peekFirst() == q) writeDown(alloc.buffer(CONTINUE.length).writeBytes(CONTINUE));
        } else if (path.equals(gobj.read(HEALTH_PATH))) {
            if (!HttpMethod.GET.equals(r.method()) && !HttpMethod.HEAD.equals(r.method())) {
                reject(q, HttpResponseStatus.METHOD_NOT_ALLOWED, error("method not allowed"), expectContinue,
                        "allow", "GET, HEAD");
                return;
            }
            health(q);
        } else {
            reject(q, HttpResponseStatus.NOT_FOUND, error("no such path: " + path), expectContinue);
        }
    }

    private void onContent(HttpContent c) {
        Req q = requests.peekLast();
        if (q == null || q.readDone) return;
        if (c.decoderResult().isFailure()) {
            protocolError(q, HttpResponseStatus.BAD_REQUEST, "Bad HTTP request body, closing",
                    String.valueOf(c.decoderResult().cause()));
            return;
        }
        ByteBuf content = c.content();
        q.bodyBytes += content.readableBytes();
        if (q.bodyBytes > gobj.readLong(MAX_BODY_SIZE)) {
            tooLarge(q, q.bodyBytes);
            return;
        }
        if (q.ingest && q.answer == null) q.body.writeBytes(content);
        if (!(c instanceof LastHttpContent)) return;
        q.readDone = true;
        gobj.changeState(ST_IDLE);
        readDeadline = -1;   // the inactivity timeout runs once everything is answered
        if (!q.keepAlive) closing = true;   // Connection: close: this is the last request
        if (q.ingest && q.answer == null) ingest(q);
    }

    /** The body is complete: checks it whole, then sends each object up with its {@code __md_trq__}. */
    private void ingest(Req q) {
        ByteBuf body = q.body;
        q.body = null;
        if (q.gzip) {
            body = gunzipped(q, body);
            if (body == null) return;
        }
        try {
            byte[] a = body.array();
            int off = body.arrayOffset() + body.readerIndex();
            int maxLines = gobj.readInt(MAX_LINES);
            Ndjson.Scan s = objectRanges.scan(a, off, body.readableBytes(), maxLines);
            if (s == null) s = Ndjson.scan(a, off, body.readableBytes(), maxLines);
            if (s.tooMany) {
                ObjectNode e = error("too many messages in one request");
                e.put("max_lines", gobj.readLong(MAX_LINES));
                reject(q, HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, e, false);
                return;
            }
            if (s.error != null) {
                ObjectNode e = error("bad JSON");
                e.put("line", s.errorLine);
                e.put("detail", s.error);
                reject(q, HttpResponseStatus.BAD_REQUEST, e, false);
                return;
            }
            if (s.count == 0) {
                reject(q, HttpResponseStatus.BAD_REQUEST, error("no JSON object in the body"), false);
                return;
            }
            q.expected = s.count;
            q.ackedMsgs = new BitSet(s.count);
            q.deadline = nowMs() + gobj.readLong(TIMEOUT_DURABLE);
            if (s.count > 1 && Batches.takenAbove(gobj)) {
                ingestBatch(q, body.retain(), s, off);
                return;
            }
            byte[] mdHead = Ndjson.mdHead(connId, q.seq);
            ByteBuf whole = Unpooled.wrappedBuffer(a);   // the scan's ranges are indexes into the array
            for (int i = 0; i < s.count; i++) {
                int len = s.ends[i] - s.starts[i];
                // unpooled, its bytes starting its array: it lives a moment (the relay reads it in place and stores
                // a record of its own), and never reaches a pool arena nor the leak detector's sampling
                int size = len + mdHead.length + 13;
                ByteBuf m = size <= MESSAGE_HEAP_MAX ? Unpooled.buffer(size) : alloc.heapBuffer(size);
                Ndjson.writeMessage(m, whole, s.starts[i], s.ends[i], mdHead, i);
                int r = gobj.publish(Ev.EV_ON_MESSAGE, Kw.withGbuffer(m));
                if (decoder == null || gobj.isDestroyed()) return;   // dropped while the message went up
                if (q.answer != null) return;   // nacked: the rest of the request is not offered
                if (r < 0) {
                    refuse(q, "refused by the input side");
                    return;
                }
            }
        } finally {
            body.release();
        }
    }

    /**
     * The body a gzip request decompresses to (the compressed buffer is released), or null once the request is
     * answered: 400 for bytes that are not gzip or end early, 413 when it would decompress to more than
     * {@code max_body_size} (the limit is on what is stored, so a small body that inflates to gigabytes is stopped at
     * the limit). Read whole, the connection is kept. Several members one after the other are one body, as gzip has it.
     */
    private ByteBuf gunzipped(Req q, ByteBuf compressed) {
        long max = gobj.readLong(MAX_BODY_SIZE);
        int compressedSize = compressed.readableBytes();
        ByteBuf out = alloc.heapBuffer((int) Math.min(max, Math.max(256L, compressedSize * 4L)));
        try (InputStream in = new GZIPInputStream(new ByteBufInputStream(compressed), 8192)) {
            while (true) {
                // inflated straight into the body's array, at most one byte past the limit: that byte says it is over
                long room = max + 1 - out.readableBytes();
                if (room <= 0) {
                    ObjectNode e = error("body too large once decompressed");
                    e.put("max_body_size", max);
                    reject(q, HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, e, false);
                    Glog.info(gobj, "HTTP gzip body too large once decompressed", "peername", peername(),
                            "compressed", compressedSize, "max_body_size", max);
                    out.release();
                    return null;
                }
                out.ensureWritable((int) Math.min(8192, room));
                if (out.writeBytes(in, (int) Math.min(out.writableBytes(), room)) < 0) return out;
            }
        } catch (IOException e) {
            // ZipException (not gzip, a bad block or checksum), EOFException (cut short, or empty)
            ObjectNode err = error("bad gzip body");
            err.put("detail", e instanceof java.io.EOFException ? "the gzip stream ends early"
                    : e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName());
            reject(q, HttpResponseStatus.BAD_REQUEST, err, false);
            out.release();
            return null;
        } finally {
            compressed.release();
        }
    }

    /**
     * Every object of the request in one EV_ON_MESSAGE ({@link Kw#BATCH}: the body and the objects' ranges in it),
     * with the request's {@code __md_trq__} ({@code conn}, {@code req}): the relay answers once for all of them, or
     * once per object with its {@code msg} when its output cannot keep them together. {@code arrayBase} is where the
     * body's readable bytes start in the scan's array indexes.
     */
    private void ingestBatch(Req q, ByteBuf body, Ndjson.Scan s, int arrayBase) {
        int[] ranges = new int[s.count * 2];
        for (int i = 0; i < s.count; i++) {
            ranges[2 * i] = s.starts[i] - arrayBase;
            ranges[2 * i + 1] = s.ends[i] - arrayBase;
        }
        ObjectNode kw = Kw.withGbuffer(body);
        ObjectNode md = kw.putObject(Kw.MD_TRQ);
        md.put(MD_CONN, connId);
        md.put(MD_REQ, q.seq);
        Kw.putRef(kw, Kw.BATCH, ranges);
        if (s.records != null) Kw.putRef(kw, Kw.BATCH_RECORDS, s.records);
        q.batched = true;
        gobj.inc(BATCHED);
        int r = gobj.publish(Ev.EV_ON_MESSAGE, kw);
        if (decoder == null || gobj.isDestroyed() || q.answer != null) return;
        if (r < 0) refuse(q, "refused by the input side");
    }

    private void onAck(long conn, long seq, int msg, int result) {
        Req q = null;
        if (conn == connId) {
            for (Req r : requests) {
                if (r.seq == seq) {
                    q = r;
                    break;
                }
            }
        }
        if (q != null && q.answer == null && q.batched && msg == -1) {
            // the batch's one answer: every object of the request, or none
            if (result < 0) {
                refuse(q, "refused by the queue");
            } else {
                q.acked = q.expected;
                accept(q);
            }
            return;
        }
        if (q == null || q.answer != null || msg < 0 || msg >= q.expected) {
            gobj.inc(STALE_ACKS);   // answered already (a nack or a timeout came first), or of another connection
            return;
        }
        if (result < 0) {
            refuse(q, "refused by the queue");
            return;
        }
        if (q.ackedMsgs.get(msg)) return;
        q.ackedMsgs.set(msg);
        if (++q.acked == q.expected) accept(q);
    }

    /** Writes the answers due, in request order; closes after an answer that says so. */
    private void flushAnswers() {
        boolean wrote = false;
        for (Req q; (q = requests.peekFirst()) != null && q.answer != null && (q.readDone || q.closeAfter); ) {
            requests.pollFirst();
            ByteBuf a = q.answer;
            q.answer = null;
            q.release();
            if (gobj.isTraced(TRACE_TRAFFIC)) Glog.info(gobj, "HTTP answer", "status", q.status);
            writeDown(a);
            wrote = true;
            if (q.closeAfter || !q.keepAlive) {
                close();
                return;
            }
            if (decoder == null) return;
        }
        if (wrote) {
            pumpAgain = true;   // room for pipelined requests that waited
            if (requests.isEmpty() && gobj.inState(ST_IDLE)) {
                readDeadline = nowMs() + gobj.readLong(TIMEOUT_INACTIVITY);
            }
        }
    }

    private void readTimeout() {
        readDeadline = -1;
        if (gobj.inState(ST_IDLE)) {
            if (!requests.isEmpty()) return;
            Glog.debug(gobj, "Idle HTTP connection closed", "peername", peername(),
                    "timeout_inactivity", gobj.readLong(TIMEOUT_INACTIVITY));
            close();
            return;
        }
        boolean headers = gobj.inState(ST_WAIT_HEADERS);
        Glog.error(gobj, headers ? "Timeout waiting HTTP request headers, closing" : "Timeout waiting HTTP request body, closing",
                "msgset", "protocol_error", "peername", peername(),
                headers ? "timeout_header" : "timeout_body", gobj.readLong(headers ? TIMEOUT_HEADER : TIMEOUT_BODY),
                "waiting", headers ? (partial ? "rest of the headers" : "first request") : "rest of the body");
        gobj.inc(PROTOCOL_ERRORS);
        if (headers && !partial && requests.isEmpty()) {
            close();   // nothing was said on this connection: nothing to answer
            return;
        }
        Req q = headers ? null : requests.peekLast();
        if (q == null || q.readDone) {
            q = new Req(0, false, false);   // the request whose headers never came: its place in the order
            q.readDone = true;
            requests.add(q);
        }
        if (q.answer == null) {
            answer(q, HttpResponseStatus.REQUEST_TIMEOUT, error("request not received in time"), true);
            gobj.inc(REJECTED);
        } else {
            markClose(q);
        }
    }

    // --- Local methods: answers ---

    private void accept(Req q) {
        ObjectNode b = Kw.create();
        b.put("accepted", q.expected);
        answer(q, HttpResponseStatus.OK, b, false);
        gobj.inc(ACCEPTED);
        gobj.add(MSGS_ACCEPTED, q.expected);
        if (refusedInARow > 0) {
            Glog.info(gobj, "HTTP requests accepted again", "refused", refusedInARow);
            refusedInARow = 0;
        }
    }

    /** 503: not stored for sure; the client sends the whole request again after Retry-After. */
    private void refuse(Req q, String why) {
        long retry = gobj.readLong(RETRY_AFTER);
        ObjectNode b = error("not stored, send the request again");
        b.put("reason", why);
        b.put("retry_after", retry);
        answer(q, HttpResponseStatus.SERVICE_UNAVAILABLE, b, false, "retry-after", Long.toString(retry));
        gobj.inc(REFUSED);
        if (refusedInARow++ == 0) {
            Glog.warn(gobj, "HTTP requests refused (503), the clients send them again", "reason", why,
                    "peername", peername());
        }
    }

    private void reject(Req q, HttpResponseStatus st, ObjectNode body, boolean closeAfter, String... headers) {
        answer(q, st, body, closeAfter, headers);
        gobj.inc(REJECTED);
    }

    private void tooLarge(Req q, long size) {
        ObjectNode e = error("body too large");
        e.put("max_body_size", gobj.readLong(MAX_BODY_SIZE));
        if (q.answer == null) {
            // The rest of the body is not read: the connection closes after the answer.
            reject(q, HttpResponseStatus.REQUEST_ENTITY_TOO_LARGE, e, true);
        } else {
            markClose(q);
        }
        Glog.info(gobj, "HTTP body too large, closing", "peername", peername(), "size", size,
                "max_body_size", gobj.readLong(MAX_BODY_SIZE));
    }

    private void protocolError(Req q, HttpResponseStatus st, String text, String cause) {
        Glog.error(gobj, text, "msgset", "protocol_error", "peername", peername(), "status", st.code(),
                "error", cause);
        gobj.inc(PROTOCOL_ERRORS);
        if (q.answer == null) {
            reject(q, st, error(st.reasonPhrase().toLowerCase(java.util.Locale.ROOT)), true);
        } else {
            markClose(q);
        }
    }

    private void health(Req q) {
        ArrayNode down = Kw.MAPPER.createArrayNode();
        GObj gate = gobj;
        while (gate != null && !gate.isService()) gate = gate.parent();
        if (gate == null || !gate.isRunning() || gate.isDisabled()) down.add(gate == null ? "gate" : gate.name());
        JsonNode names = gobj.read(HEALTH_SERVICES);
        if (names != null) {
            for (JsonNode n : names) {
                GObj s = gobj.yuno().service(n.asText());
                if (s == null || !s.isRunning() || s.isDisabled()) down.add(n.asText());
            }
        }
        ObjectNode b = Kw.create();
        b.put("status", down.isEmpty() ? "up" : "down");
        if (!down.isEmpty()) {
            b.set("down", down);
            long retry = gobj.readLong(RETRY_AFTER);
            answer(q, HttpResponseStatus.SERVICE_UNAVAILABLE, b, false, "retry-after", Long.toString(retry));
        } else {
            answer(q, HttpResponseStatus.OK, b, false);
        }
    }

    /**
     * Decides the answer of {@code q} (the first decision stands): encodes it now and lets {@link #flushAnswers}
     * write it in order. The body, if any, is given up.
     */
    private void answer(Req q, HttpResponseStatus st, ObjectNode json, boolean closeAfter, String... headers) {
        if (q.answer != null) return;
        if (q.body != null) {
            q.body.release();
            q.body = null;
        }
        q.status = st.code();
        if (closeAfter) markClose(q);
        byte[] body = Kw.toJson(json).getBytes(StandardCharsets.UTF_8);
        ByteBuf out = alloc.buffer(160 + body.length);
        out.writeCharSequence(HttpVersion.HTTP_1_1.text(), StandardCharsets.US_ASCII);
        out.writeByte(' ');
        out.writeCharSequence(st.codeAsText(), StandardCharsets.US_ASCII);
        out.writeByte(' ');
        out.writeCharSequence(st.reasonPhrase(), StandardCharsets.US_ASCII);
        header(out, "content-type", "application/json");
        header(out, "content-length", Integer.toString(body.length));
        for (int i = 0; i + 1 < headers.length; i += 2) header(out, headers[i], headers[i + 1]);
        if (q.closeAfter || !q.keepAlive) header(out, "connection", "close");
        out.writeByte('\r').writeByte('\n').writeByte('\r').writeByte('\n');
        if (!q.headMethod) out.writeBytes(body);
        q.answer = out;
        pumpAgain = true;
    }

    private static void header(ByteBuf out, String name, String value) {
        out.writeByte('\r').writeByte('\n');
        out.writeCharSequence(name, StandardCharsets.US_ASCII);
        out.writeByte(':').writeByte(' ');
        out.writeCharSequence(value, StandardCharsets.US_ASCII);
    }

    private static ObjectNode error(String text) {
        ObjectNode e = Kw.create();
        e.put("error", text);
        return e;
    }

    /** The connection closes after the answer of {@code q}; nothing after it is read. */
    private void markClose(Req q) {
        q.closeAfter = true;
        closing = true;
        pumpAgain = true;
    }

    // --- Local methods: connection ---

    private boolean authorized(HttpRequest r) {
        String token = gobj.read(BEARER_TOKEN);
        if (token == null || token.isEmpty()) return true;
        String h = r.headers().get(HttpHeaderNames.AUTHORIZATION);
        if (h == null || h.length() < 7 || !h.regionMatches(true, 0, "Bearer ", 0, 7)) return false;
        // constant time: the comparison says nothing about how much of a guess was right
        return MessageDigest.isEqual(h.substring(7).trim().getBytes(StandardCharsets.UTF_8),
                token.getBytes(StandardCharsets.UTF_8));
    }

    /** The path of a request target: origin form ({@code /a?b}) or absolute form ({@code http://h/a?b}). */
    static String pathOf(String uri) {
        int from = 0;
        if (!uri.startsWith("/")) {
            int scheme = uri.indexOf("://");
            if (scheme > 0) {
                int slash = uri.indexOf('/', scheme + 3);
                if (slash < 0) return "/";
                from = slash;
            }
        }
        int end = uri.length();
        for (int i = from; i < uri.length(); i++) {
            char c = uri.charAt(i);
            if (c == '?' || c == '#') {
                end = i;
                break;
            }
        }
        return uri.substring(from, end);
    }

    /** Stops or resumes reading the socket when the reason changed: closing, paused from above, requests waiting. */
    private void updateBottomPause() {
        boolean want = closing || pausedByUpper || (decoder != null && !decoder.inboundMessages().isEmpty());
        if (want == bottomPaused) return;
        bottomPaused = want;
        if (!want) restartReadDeadline();   // we had stopped reading: the peer was not late meanwhile
        ProtocolBottom.pauseReads(gobj, want);
    }

    private void restartReadDeadline() {
        long now = nowMs();
        if (gobj.inState(ST_WAIT_HEADERS)) readDeadline = now + gobj.readLong(TIMEOUT_HEADER);
        else if (gobj.inState(ST_WAIT_BODY)) readDeadline = now + gobj.readLong(TIMEOUT_BODY);
        else if (gobj.inState(ST_IDLE)) readDeadline = requests.isEmpty() ? now + gobj.readLong(TIMEOUT_INACTIVITY) : -1;
    }

    /** One timer for the nearest deadline (read side, or a request's acks); a timer that fires early re-arms. */
    private void rearm() {
        if (decoder == null) return;
        long next = Long.MAX_VALUE;
        if (readDeadline >= 0 && !bottomPaused) next = readDeadline;
        for (Req q : requests) {
            if (q.answer == null && q.deadline >= 0 && q.deadline < next) next = q.deadline;
        }
        if (next == Long.MAX_VALUE) {
            if (armedFor >= 0) clearTimer();
            return;
        }
        if (next == armedFor) return;
        timer.cancel();
        armedFor = next;
        timer = gobj.setTimeout(Math.max(1, next - nowMs()), Ev.EV_TIMEOUT, null);
    }

    private void clearTimer() {
        timer.cancel();
        timer = Cancellable.NONE;
        armedFor = -1;
    }

    /** Our close: nothing more is accepted, the transport is dropped (it writes what it holds first). */
    private void close() {
        gobj.changeState(St.ST_DISCONNECTED);
        releaseConnection();
        clearTimer();
        long t = gobj.readLong(TIMEOUT_CLOSE);
        closeDeadline = nowMs() + t;
        timer = gobj.setTimeout(t, Ev.EV_TIMEOUT, null);
        dropBottom();
    }

    private void releaseConnection() {
        if (decoder != null) {
            EmbeddedChannel d = decoder;
            decoder = null;
            d.finishAndReleaseAll();
        }
        for (Req q : requests) q.release();
        requests.clear();
        readDeadline = -1;
        partial = false;
    }

    private void writeDown(ByteBuf out) {
        GObj bottom = gobj.bottom();
        if (bottom == null) {
            out.release();
            Glog.error(gobj, "No bottom to send", "msgset", "internal_error");
            return;
        }
        bottom.send(Ev.EV_TX_DATA, Kw.withGbuffer(out), gobj);
    }

    private void dropBottom() {
        ProtocolBottom.drop(gobj, false);
    }

    private String peername() {
        return ProtocolBottom.peername(gobj);
    }

    private long nowMs() {
        return gobj.yuno().clock().monotonicMillis();
    }
}
