// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.sink;

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
import io.gatehouse.api.Param;
import io.gatehouse.api.St;
import io.gatehouse.support.Batches;
import io.gatehouse.support.Gbuffers;
import io.gatehouse.support.Glog;
import io.gatehouse.support.InputGates;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.util.List;

/**
 * C_SINK: the end of a line, for the demo, tests and benchmarks. It acks every message that carries
 * {@code __md_trq__}, counts messages and distinct ids, and optionally echoes. No C original: new in Gatehouse.
 *
 * <p>It listens to the gates named in {@code input} and subscribes to them again every
 * {@code timeout_check_gates} ms, so it rejoins a gate whose service was rebuilt.
 *
 * <p>The ids seen are kept in bounded memory ({@link SeenIds}): numbered ids ({@code <id_prefix><number>}) in a
 * bit set, other ids in a set bounded by {@code max_ids}, past which duplicates are no longer told apart
 * ({@code ids_overflow}).
 */
public final class Sink implements GObjBehavior {

    // --- Attributes ---

    static final Attr<JsonNode> INPUT = Attr.json("input", AttrType.JSON, null, AttrFlag.RD,
            "Gate service name(s) to listen to; empty = the gate that has this sink as subscriber");
    static final Attr<Boolean> ECHO = Attr.bool("echo", false, AttrFlag.WR, "Send every message back");
    static final Attr<Boolean> ACK = Attr.bool("ack", true, AttrFlag.WR, "Ack messages that carry __md_trq__");
    static final Attr<String> ID_KEY = Attr.string("id_key", "id", AttrFlag.RD, "Key (path) of the message id");
    static final Attr<String> ID_PREFIX = Attr.string("id_prefix", "msg-", AttrFlag.RD,
            "Ids made of this prefix and a number are tracked in a bit set");
    static final Attr<Long> MAX_IDS = Attr.integer("max_ids", 1_000_000, AttrFlag.RD,
            "Most distinct non-numeric ids remembered (memory bound)");
    static final Attr<Long> TIMEOUT_CHECK_GATES = Attr.integer("timeout_check_gates", 500, AttrFlag.RD,
            "Milliseconds between checks that the sink is still subscribed to the current input gates");
    static final Attr<Long> RX_MSGS = Attr.counter("rxMsgs", AttrFlag.RSTATS, "Messages received");
    static final Attr<Long> TX_MSGS = Attr.counter("txMsgs", AttrFlag.RSTATS, "Messages echoed");
    static final Attr<Long> DISTINCT_IDS = Attr.counter("distinct_ids", AttrFlag.RSTATS, "Distinct ids seen");
    static final Attr<Long> DUPLICATES = Attr.counter("duplicates", AttrFlag.RSTATS, "Messages whose id was seen before");
    static final Attr<Long> ACKS_SENT = Attr.counter("acks_sent", AttrFlag.RSTATS, "Acks sent");
    static final Attr<Long> BAD_JSON = Attr.counter("bad_json", AttrFlag.RSTATS, "Messages that were not JSON objects");
    static final Attr<Boolean> IDS_OVERFLOW = Attr.bool("ids_overflow", false, AttrFlag.STATS,
            "More distinct non-numeric ids than max_ids: duplicates undercounted");

    // --- Trace levels ---

    static final String TRACE_MESSAGES = "messages";

    // --- FSM ---

    static final Fsm<Sink> FSM = Fsm.<Sink>builder()
            .state(St.ST_IDLE)
                .on(Ev.EV_ON_MESSAGE,       Sink::acOnMessage)
                .on(Ev.EV_TIMEOUT_PERIODIC, Sink::acCheckGates)
                .ignore(Ev.EV_ON_OPEN)
                .ignore(Ev.EV_ON_CLOSE)
                .ignore(Ev.EV_ON_ID)
                .ignore(Ev.EV_ON_ID_NAK)
            .build();

    // --- Spec ---

    /** The version of the state {@link #onExport} gives; {@link #onImport} takes this one only. */
    static final int STATE_VERSION = 1;

    static final GClassSpec<Sink> SPEC = GClassSpec.builder(GClassNames.C_SINK, Sink.class)
            .description("Acks, counts and optionally echoes what it receives")
            .attrs(INPUT, ECHO, ACK, ID_KEY, ID_PREFIX, MAX_IDS, TIMEOUT_CHECK_GATES, RX_MSGS, TX_MSGS, DISTINCT_IDS,
                    DUPLICATES, ACKS_SENT, BAD_JSON, IDS_OVERFLOW)
            .fsm(FSM)
            .command("check-ids", "Which numeric ids in [from, to] never arrived", Sink::cmdCheckIds,
                    Param.integer("from", "0", "First id number"),
                    Param.integer("to", "-1", "Last id number (-1: the highest seen)"))
            .command("reset-ids", "Forget the ids seen and zero the counters", Sink::cmdResetIds)
            .traceLevel(TRACE_MESSAGES, "Trace every message received, with its id, and every ack and echo sent")
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .takesMessageBatches()
            .stateVersion(STATE_VERSION)
            .factory(Sink::new)
            .build();

    // --- Private data ---

    private final GObj gobj;
    private InputGates inputs;
    private SeenIds ids = new SeenIds();
    private final SinkScan scan = new SinkScan();
    private Cancellable checker = Cancellable.NONE;
    /** When the next gate check is due (the yuno's monotonic clock); -1 while none is armed. */
    private long checkDueMs = -1;

    Sink(GObj gobj) {
        this.gobj = gobj;
    }

    // --- Framework methods ---

    @Override
    public void onCreate() {
        inputs = new InputGates(gobj, InputGates.namesFrom(gobj.read(INPUT)));
    }

    @Override
    public int onStart() {
        inputs.subscribe();
        if (!inputs.names().isEmpty()) armCheck(now() + gobj.readLong(TIMEOUT_CHECK_GATES));
        return 0;
    }

    @Override
    public int onStop() {
        checker.cancel();
        checkDueMs = -1;
        inputs.unsubscribeAll();
        return 0;
    }

    /** A {@code Bundle.update()} of the sink has begun: no gate check until the new revision is there. */
    @Override
    public void onSuspend() {
        checker.cancel();
    }

    /**
     * A live upgrade: the ids seen (handed over as they are, see {@link SeenIds#exportState}) and the gate check
     * deadline, and the gates it is subscribed to (the gobjs, in a list: InputGates is a class each revision embeds,
     * so the new one makes its own from its config and adopts them). The counters are attributes and the subscriptions are in core: both stay.
     */
    @Override
    public ObjectNode onExport() {
        ObjectNode s = Kw.create();
        s.set("ids", ids.exportState());
        inputs.exportState(s);
        s.put("check_due_ms", checkDueMs);
        checker.cancel();
        return s;
    }

    @Override
    public void onImport(ObjectNode state, int stateVersion) {
        if (stateVersion != STATE_VERSION) {
            throw new IllegalArgumentException("C_SINK takes state version " + STATE_VERSION + ", not " + stateVersion);
        }
        ids = SeenIds.importState(state.get("ids"));
        long due = state.path("check_due_ms").asLong(-1);
        // InputGates is this revision's own class (io.gatehouse.support, embedded): what onCreate makes, told the
        // gates the old one was on (core keeps the subscriptions: none is made again, and a rebuilt gate is joined
        // at the check that was due, as without the upgrade).
        onCreate();
        if (!inputs.importState(state) && due >= 0) inputs.subscribe();
        if (due >= 0) armCheck(due);
    }

    // --- Commands ---

    private ObjectNode cmdCheckIds(ObjectNode kw, GObj src) {
        long from = kw.get("from").asLong();
        long to = kw.get("to").asLong();
        if (to < 0) to = ids.highest();
        if (from < 0 || to >= Integer.MAX_VALUE) return Envelope.error("from/to out of range");
        long[] gap = ids.missing(from, to);
        long missing = gap[0];
        ObjectNode d = Kw.create();
        d.put("from", from);
        d.put("to", to);
        d.put("missing", missing);
        d.put("first_missing", gap[1]);
        d.put("distinct_ids", gobj.readLong(DISTINCT_IDS));
        d.put("duplicates", gobj.readLong(DUPLICATES));
        return Envelope.ok(missing == 0 ? "all ids arrived" : missing + " ids missing", d);
    }

    private ObjectNode cmdResetIds(ObjectNode kw, GObj src) {
        ids = new SeenIds();
        for (Attr<Long> a : List.of(RX_MSGS, TX_MSGS, DISTINCT_IDS, DUPLICATES, ACKS_SENT, BAD_JSON)) gobj.setLong(a, 0);
        gobj.set(IDS_OVERFLOW, false);
        return Envelope.ok("ids forgotten", null);
    }

    // --- Actions ---

    private int acCheckGates(String ev, ObjectNode kw, GObj src) {
        if (checkDueMs >= 0) {
            long period = gobj.readLong(TIMEOUT_CHECK_GATES);
            long next = checkDueMs + period;
            armCheck(next <= now() ? now() + period : next);
        }
        inputs.subscribe();
        return 0;
    }

    private int acOnMessage(String ev, ObjectNode kw, GObj src) {
        int[] messages = Batches.messageRangesOf(kw);
        if (messages != null) return onMessages(ev, kw, messages, src);
        gobj.inc(RX_MSGS);
        ByteBuf buf = Kw.gbuffer(kw);
        if (buf != null && !gobj.isTraced(TRACE_MESSAGES) && fromBytes(buf, kw.get(Kw.TEMP), src)) {
            echo(kw, buf, src);
            Kw.release(kw);
            return 0;
        }
        ObjectNode msg = null;
        try {
            msg = buf != null ? Kw.parse(buf) : Kw.withoutRefs(kw);
        } catch (IOException e) {
            gobj.inc(BAD_JSON);
        }
        if (msg != null) countId(msg);
        if (gobj.isTraced(TRACE_MESSAGES)) {
            JsonNode id = msg == null ? null : Kw.get(msg, gobj.read(ID_KEY));
            Glog.info(gobj, "message received", "id", id == null ? "" : id.asText(), "json", msg != null);
        }
        JsonNode temp = kw.get(Kw.TEMP);
        if (msg != null && gobj.readBool(ACK)) {
            JsonNode md = msg.get(Kw.MD_TRQ);
            if (md != null && md.isObject()) sendAck((ObjectNode) md, temp, src);
        }
        echo(kw, buf, src);
        Kw.release(kw);
        return 0;
    }

    /**
     * The messages one read completed ({@link Kw#MESSAGES}), each taken as if it had come alone (its own slice, the
     * read's {@code __temp__}): counted, acked and echoed one by one.
     */
    private int onMessages(String ev, ObjectNode kw, int[] ranges, GObj src) {
        ByteBuf all = Kw.takeGbuffer(kw);
        if (all == null) return -1;
        try {
            JsonNode temp = kw.get(Kw.TEMP);
            int base = all.readerIndex();
            for (int i = 0; i + 1 < ranges.length; i += 2) {
                if (ranges[i] < 0 || ranges[i] >= ranges[i + 1] || ranges[i + 1] > all.readableBytes()) {
                    gobj.add(BAD_JSON, (ranges.length - i) / 2);   // no bytes to read: not JSON either
                    return -1;
                }
                ObjectNode one = Kw.withGbuffer(all.retainedSlice(base + ranges[i], ranges[i + 1] - ranges[i]));
                if (temp != null) one.set(Kw.TEMP, temp);
                acOnMessage(ev, one, src);
            }
            return 0;
        } finally {
            all.release();
        }
    }

    /**
     * The message's id counted and its ack sent from its bytes ({@link SinkScan}), with no tree: true when done;
     * false, with nothing done, when the scan cannot vouch for them (the caller parses the message).
     */
    private boolean fromBytes(ByteBuf buf, JsonNode temp, GObj src) {
        if (scan.scan(buf, gobj.read(ID_KEY)) != SinkScan.FOUND) return false;
        boolean ack = gobj.readBool(ACK) && scan.hasMd();
        if (ack && !scan.ackable()) return false;
        String id = scan.id();
        if (id != null) countId(id);
        if (ack) {
            ByteBuf out = Gbuffers.allocateHeap(scan.mdLength() + 32);
            scan.writeAck(out);
            boolean sent = InputGates.reply(gobj, src, out, temp) == 0;
            if (sent) {
                gobj.inc(ACKS_SENT);
            } else {
                Glog.debug(gobj, "ack not sent", "gate", src == null ? "" : src.shortName());
            }
        }
        return true;
    }

    private void echo(ObjectNode kw, ByteBuf buf, GObj src) {
        if (gobj.readBool(ECHO) && buf != null && src != null) {
            JsonNode temp = kw.get(Kw.TEMP);
            ObjectNode back = Kw.withGbuffer(Kw.takeGbuffer(kw));
            if (temp != null) back.set(Kw.TEMP, temp);
            if (src.send(Ev.EV_SEND_MESSAGE, back, gobj) == 0) gobj.inc(TX_MSGS);
            if (gobj.isTraced(TRACE_MESSAGES)) Glog.info(gobj, "message echoed", "gate", src.shortName());
        }
    }

    // --- Local methods ---

    /**
     * The gate check, at a fixed rate like core's periodic timers, armed as one timeout at a time so that its
     * deadline is known: a live upgrade hands it over and the next revision checks when this one would have.
     */
    private void armCheck(long dueMs) {
        checker.cancel();
        checkDueMs = dueMs;
        checker = gobj.setTimeout(Math.max(0, dueMs - now()), Ev.EV_TIMEOUT_PERIODIC, null);
    }

    private long now() {
        return gobj.yuno().clock().monotonicMillis();
    }

    private void countId(ObjectNode msg) {
        JsonNode idNode = Kw.get(msg, gobj.read(ID_KEY));
        if (idNode == null || idNode.isNull()) return;
        countId(idNode.asText());
    }

    private void countId(String id) {
        SeenIds.Seen seen = ids.add(id, gobj.read(ID_PREFIX), gobj.readLong(MAX_IDS));
        if (seen == SeenIds.Seen.UNTRACKED) gobj.set(IDS_OVERFLOW, true);
        gobj.inc(seen == SeenIds.Seen.AGAIN ? DUPLICATES : DISTINCT_IDS);
    }

    private void sendAck(ObjectNode md, JsonNode temp, GObj gate) {
        boolean sent = InputGates.reply(gobj, gate, InputGates.ack(md, 0), temp) == 0;
        if (sent) gobj.inc(ACKS_SENT);
        if (gobj.isTraced(TRACE_MESSAGES)) {
            Glog.info(gobj, sent ? "ack sent" : "ack not sent", "md", md.toString());
        } else if (!sent) {
            Glog.debug(gobj, "ack not sent", "gate", gate == null ? "" : gate.shortName());
        }
    }
}
