// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.relay;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.BinaryNode;
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
import io.gatehouse.support.Gbuffers;
import io.gatehouse.support.Glog;
import io.gatehouse.support.InputGates;
import io.gatehouse.support.Streak;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * C_RELAY: forwards what the input gate(s) receive to the output gate, and acks upstream. No C original: new in
 * Gatehouse.
 *
 * <p>At-least-once across hops: a message that carries {@code __md_trq__} (it came from an upstream queue gate,
 * ours or Yuneta's) is acked back on its own connection only once the output side has it for sure:
 * <ul>
 *   <li>an output whose gclass {@link GClassSpec#confirmsDurability() confirms durability} (a queue, or any
 *       other output that declares it) gets the message as a JSON dict with a {@link Kw#DURABLE} dict holding
 *       the upstream ack's data, and the ack goes up when the output answers {@link Ev#EV_ON_DURABLE} (after the
 *       record's fsync, per the queue's policy);</li>
 *   <li>any other output (a plain gate) gets the message as it came, and the ack goes up once the send was
 *       accepted.</li>
 * </ul>
 * A message the output refuses (queue full, disk full, no output) is answered with a nack: the same ack with a
 * negative {@code result}, which the queue protocol reads as "send it again later" and an ingest protocol turns
 * into its own refusal (an MQTT 5 PUBACK reason code, an HTTP 503). The relay names no other gclass: what it does
 * depends on the output's spec only.
 *
 * <p>Gates are found by service name; every {@code timeout_check_gates} ms the relay subscribes again to the
 * input gates, so it rejoins a gate whose service was rebuilt. An output that is missing (its gclass left and did
 * not come back within the upgrade grace) and messages that are not JSON are said once per streak.
 */
public final class Relay implements GObjBehavior {

    // --- Attributes ---

    static final Attr<JsonNode> INPUT = Attr.json("input", AttrType.JSON, null, AttrFlag.RD | AttrFlag.REQUIRED,
            "Input gate service name, or a list of them");
    static final Attr<String> OUTPUT = Attr.string("output", "", AttrFlag.RD | AttrFlag.REQUIRED,
            "Output gate service name");
    static final Attr<Long> TIMEOUT_CHECK_GATES = Attr.integer("timeout_check_gates", 500, AttrFlag.RD,
            "Milliseconds between checks that the relay is still subscribed to the current input gates");
    static final Attr<Long> RX_MSGS = Attr.counter("rxMsgs", AttrFlag.RSTATS, "Messages received");
    static final Attr<Long> TX_MSGS = Attr.counter("txMsgs", AttrFlag.RSTATS, "Messages handed to the output");
    static final Attr<Long> ACKS_SENT = Attr.counter("acks_sent", AttrFlag.RSTATS, "Acks sent upstream");
    static final Attr<Long> NACKS_SENT = Attr.counter("nacks_sent", AttrFlag.RSTATS,
            "Nacks sent upstream for messages the output refused (the producer sends them again)");
    static final Attr<Long> REFUSED = Attr.counter("refused", AttrFlag.RSTATS,
            "Messages the output refused (nacked upstream, the producer resends)");
    static final Attr<Long> BAD_JSON = Attr.counter("bad_json", AttrFlag.RSTATS,
            "Messages for a durable output that were not a JSON object (dropped with an error)");
    static final Attr<Long> PENDING_ACKS = Attr.integer("pending_acks", 0, AttrFlag.STATS,
            "Acks owed to producers for messages an output holds by token until they are durable");
    static final Attr<Long> ACKS_FORGOTTEN = Attr.counter("acks_forgotten", AttrFlag.RSTATS,
            "Acks owed by token that were dropped to keep the table bounded (their producers send again)");

    // --- Trace levels ---

    static final String TRACE_MESSAGES = "messages";

    // --- FSM ---

    static final Fsm<Relay> FSM = Fsm.<Relay>builder()
            .state(St.ST_IDLE)
                .on(Ev.EV_ON_MESSAGE,       Relay::acOnMessage)
                .on(Ev.EV_ON_DURABLE,       Relay::acOnDurable)
                .on(Ev.EV_ON_DURABLE_TOKENS, Relay::acOnDurableTokens)
                .on(Ev.EV_TIMEOUT_PERIODIC, Relay::acCheckGates)
                .ignore(Ev.EV_ON_OPEN)
                .ignore(Ev.EV_ON_CLOSE)
                .ignore(Ev.EV_ON_ID)
                .ignore(Ev.EV_ON_ID_NAK)
            .build();

    // --- Spec ---

    /**
     * The version of the state {@link #onExport} gives: 3 adds a batch's tells to come and answered entries to the
     * acks owed ({@link PendingAcks}); {@link #onImport} takes {@link #OLDEST_STATE_VERSION} to this one.
     */
    static final int STATE_VERSION = 3;
    /** The oldest state version {@link #onImport} takes: 1 (no acks owed by token, which 2 adds). */
    static final int OLDEST_STATE_VERSION = 1;

    static final GClassSpec<Relay> SPEC = GClassSpec.builder(GClassNames.C_RELAY, Relay.class)
            .description("Forwards input gate messages to an output gate, acking upstream after durable enqueue")
            .attrs(INPUT, OUTPUT, TIMEOUT_CHECK_GATES, RX_MSGS, TX_MSGS, ACKS_SENT, NACKS_SENT, REFUSED, BAD_JSON,
                    PENDING_ACKS, ACKS_FORGOTTEN)
            .fsm(FSM)
            .traceLevel(TRACE_MESSAGES, "Trace every message forwarded and every ack or nack sent upstream")
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .takesBatches()
            .takesMessageBatches()
            .stateVersion(STATE_VERSION)
            .factory(Relay::new)
            .build();

    // --- Private data ---

    /** In the {@link Kw#DURABLE} dict: the upstream message's {@code __md_trq__}, what the ack echoes. */
    private static final String DURABLE_MD = "md";
    /** In the {@link Kw#DURABLE} dict: the input gate the message came through (a reference). */
    private static final String DURABLE_GATE = "gate";
    /**
     * In the {@link Kw#DURABLE} dict, when the metadata was {@link MdTrq#simple}: the ack's bytes up to its result
     * ({@link MdTrq#ackStart}, a binary node), so the ack at EV_ON_DURABLE is a copy, not the metadata written
     * again. A dict without it (made by a revision before it) is answered from {@link #DURABLE_MD}, as before.
     */
    private static final String DURABLE_ACK = "ack";

    /**
     * The metadata of a message handed to its output as a record whose ack's bytes are kept ({@link #DURABLE_ACK}):
     * the durability dict then has no {@link #DURABLE_MD} (a revision since the ack's bytes answers from them),
     * and the dict is not built. A mark, never sent.
     */
    private static final ObjectNode MD_IN_ACK = Kw.create();

    /** The result of a nack for a refused message: negative, so the sender retries (Yuneta's queue protocol). */
    static final int REFUSED_RESULT = -1;

    private static final byte[] MD_TRQ_BYTES = Kw.MD_TRQ.getBytes(StandardCharsets.US_ASCII);

    private final GObj gobj;
    /** Reads the messages' bytes: the metadata of those forwarded as they came, the dict of those stored (core loop). */
    private final MdTrq scan = new MdTrq();
    private InputGates inputs;
    private Cancellable checker = Cancellable.NONE;
    /** When the next gate check is due (the yuno's monotonic clock); -1 while none is armed (stopped). */
    private long checkDueMs = -1;
    /** Messages refused while the output gate is missing (its service is down, waiting for its gclass). */
    private final Streak outputMissing = new Streak();
    /** Messages for a durable output that were not JSON objects. */
    private final Streak notJson = new Streak();
    /** The acks owed for messages sent by token ({@link Kw#DURABLE_TOKEN}) to an output that answers them. */
    private final PendingAcks pending = new PendingAcks();
    /** {@link PendingAcks#forgotten} when last said. */
    private long forgottenSaid;
    /** Tokens told back that this relay does not hold (forgotten, or told twice). */
    private final Streak unknownToken = new Streak();
    /** Batches that cannot be read (no md dict, ranges outside the buffer). */
    private final Streak badBatch = new Streak();

    /** The acks of one durable tell gathered per connection, each connection's sent as one batch. */
    private final UpstreamAcks upstreamAcks;

    Relay(GObj gobj) {
        this.gobj = gobj;
        this.upstreamAcks = new UpstreamAcks(gobj, (acks, nacks) -> {
            gobj.add(ACKS_SENT, acks);
            gobj.add(NACKS_SENT, nacks);
        });
    }

    // --- Framework methods ---

    @Override
    public void onCreate() {
        List<String> names = InputGates.namesFrom(gobj.read(INPUT));
        if (names.isEmpty()) throw new IllegalArgumentException("'input' must name at least one gate");
        inputs = new InputGates(gobj, names);
    }

    @Override
    public int onStart() {
        inputs.subscribe();
        armCheck(now() + gobj.readLong(TIMEOUT_CHECK_GATES));
        return 0;
    }

    @Override
    public int onStop() {
        upstreamAcks.clear();
        checker.cancel();
        checkDueMs = -1;
        inputs.unsubscribeAll();
        return 0;
    }

    /** A {@code Bundle.update()} of the relay has begun: no gate check until the new revision is there. */
    @Override
    public void onSuspend() {
        checker.cancel();
    }

    /**
     * A live upgrade: the gates it is subscribed to (the gobjs, in a list: InputGates is a class each revision
     * embeds, so the new one makes its own from its config and adopts them), the gate check deadline and the
     * streaks. The subscriptions themselves stay in core, and what waits for the output's EV_ON_DURABLE is in the output (the upstream ack's data and the input
     * gate, as JSON and a reference), so an EV_ON_DURABLE after the upgrade acks its producer as before.
     */
    @Override
    public ObjectNode onExport() {
        upstreamAcks.clear();
        ObjectNode s = Kw.create();
        inputs.exportState(s);
        s.put("check_due_ms", checkDueMs);
        ObjectNode st = s.putObject("streaks");
        st.put("output_missing", outputMissing.count());
        st.put("not_json", notJson.count());
        st.put("unknown_token", unknownToken.count());
        pending.exportState(s);
        checker.cancel();
        return s;
    }

    @Override
    public void onImport(ObjectNode state, int stateVersion) {
        if (stateVersion < OLDEST_STATE_VERSION || stateVersion > STATE_VERSION) {
            throw new IllegalArgumentException("C_RELAY takes state versions " + OLDEST_STATE_VERSION + " to "
                    + STATE_VERSION + ", not " + stateVersion);
        }
        JsonNode st = state.path("streaks");
        outputMissing.resume(st.path("output_missing").asLong(0));
        notJson.resume(st.path("not_json").asLong(0));
        unknownToken.resume(st.path("unknown_token").asLong(0));
        pending.importState(state);
        forgottenSaid = pending.forgotten();
        gobj.setLong(PENDING_ACKS, pending.size());
        long due = state.path("check_due_ms").asLong(-1);
        // InputGates is this revision's own class (io.gatehouse.support, embedded): what onCreate makes, told the
        // gates the old one was on (core keeps the subscriptions: none is made again, and a rebuilt gate is joined
        // at the check that was due, as without the upgrade).
        onCreate();
        if (!inputs.importState(state) && due >= 0) inputs.subscribe();
        if (due >= 0) armCheck(due);
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
        int[] batch = Batches.rangesOf(kw);
        int[] messages = batch == null ? Batches.messageRangesOf(kw) : null;
        gobj.add(RX_MSGS, batch != null ? batch.length / 2 : messages != null ? messages.length / 2 : 1);
        GObj out = gobj.yuno().service(gobj.read(OUTPUT));
        if (out == null) {
            if (outputMissing.hit()) {
                Glog.error(gobj, "Output gate NOT FOUND, messages not forwarded until it is back",
                        "output", gobj.read(OUTPUT));
            }
            gobj.inc(REFUSED);
            nackUpstream(kw, src);
            Kw.release(kw);
            return -1;
        }
        if (outputMissing.active()) {
            Glog.info(gobj, "Output gate back", "output", gobj.read(OUTPUT), "refused", outputMissing.end());
        }
        JsonNode temp = kw.get(Kw.TEMP);
        if (batch != null) return forwardBatch(out, kw, batch, temp, src);
        if (messages != null) return forwardMessages(out, kw, messages, temp, src);
        return forwardOne(out, kw, temp, src);
    }

    /**
     * The messages one read completed ({@link Kw#MESSAGES}): each forwarded in order as if it had come alone, and
     * answered alone. To an output that confirms durability each is read where it lies in the read's buffer (the
     * record is a copy); to a plain output, which takes the buffer, each goes in a slice of its own. Answers 0, or
     * the first refusal's answer (the others are forwarded all the same, as they would be alone).
     */
    private int forwardMessages(GObj out, ObjectNode kw, int[] ranges, JsonNode temp, GObj src) {
        ByteBuf all = Kw.takeGbuffer(kw);
        try {
            String bad = all == null ? "no gbuffer" : badRanges(ranges, all.readableBytes());
            if (bad != null) {
                gobj.add(BAD_JSON, ranges.length / 2);
                if (badBatch.hit()) {
                    Glog.error(gobj, "Messages refused: " + bad + " (said once until a good batch comes)",
                            "messages", ranges.length / 2);
                }
                return -1;
            }
            if (badBatch.active()) Glog.info(gobj, "Batches readable again", "refused", badBatch.end());
            boolean durable = out.gclass().confirmsDurability();
            ByteBuf view = durable ? all.duplicate() : null;
            int base = all.readerIndex();
            int answer = 0;
            for (int i = 0; i + 1 < ranges.length; i += 2) {
                int r;
                if (durable) {
                    view.setIndex(base + ranges[i], base + ranges[i + 1]);
                    r = forwardDurable(out, view, null, temp, src);
                } else {
                    r = forwardRaw(out, Kw.withGbuffer(all.retainedSlice(base + ranges[i], ranges[i + 1] - ranges[i])),
                            temp, src);
                }
                if (r < 0 && answer == 0) answer = r;
            }
            return answer;
        } finally {
            if (all != null) all.release();
        }
    }

    private int forwardOne(GObj out, ObjectNode kw, JsonNode temp, GObj src) {
        return out.gclass().confirmsDurability()
                ? forwardDurable(out, kw, temp, src)
                : forwardRaw(out, kw, temp, src);
    }

    /**
     * The output stored messages sent by token: each one's producer gets its ack now (a nack when the output says
     * they will never be durable), on the connection it came from, in the order the output tells them.
     */
    private int acOnDurableTokens(String ev, ObjectNode kw, GObj src) {
        long[] tokens = Kw.ref(kw, Kw.TOKENS, long[].class);
        if (tokens == null) return 0;
        int count = Math.min(tokens.length, Math.max(0, kw.path(Kw.COUNT).asInt(0)));
        int result = kw.path(Kw.RESULT).asInt(0) < 0 ? REFUSED_RESULT : 0;
        for (int i = 0; i < count; i++) answerToken(tokens[i], result);
        upstreamAcks.flush();
        pending.trim();
        gobj.setLong(PENDING_ACKS, pending.size());
        return 0;
    }

    /** Answers the producer of {@code token}; a token this relay does not hold is said once per streak. */
    private void answerToken(long token, int result) {
        int told = pending.tell(token, result < 0);
        if (told == PendingAcks.WAITING) return;
        if (told == PendingAcks.UNKNOWN) {
            if (unknownToken.hit()) {
                Glog.warn(gobj, "Durable token not known here (told twice, or its ack was dropped): no ack sent"
                        + " (said once until a known one comes)", "token", token);
            }
            return;
        }
        if (unknownToken.active()) Glog.info(gobj, "Durable tokens known again", "unknown", unknownToken.end());
        byte[] ack = pending.takenAck;
        int end = gobj.isTraced(TRACE_MESSAGES) ? -1 : MdTrq.closeAckInPlace(ack, result);
        if (end > 0 && upstreamAcks.add(pending.takenGate, pending.takenTemp, ack, Gbuffers.HEADROOM, end, result < 0)) {
            return;
        }
        answerUpstream(MdTrq.endAckInPlace(ack, result), null, pending.takenTemp, pending.takenGate, result);
    }

    /** Counts and says the acks the table of acks owed dropped to stay bounded (rare: an output that went silent). */
    private void noteForgotten() {
        long dropped = pending.forgotten() - forgottenSaid;
        if (dropped == 0) return;
        forgottenSaid += dropped;
        gobj.add(ACKS_FORGOTTEN, dropped);
        Glog.warn(gobj, "Acks owed by token dropped to keep their table bounded: those producers send again",
                "dropped", dropped, "max", PendingAcks.MAX_CAPACITY);
    }

    /** The output stored a message: its producer gets the ack now, on the connection it came from. */
    private int acOnDurable(String ev, ObjectNode kw, GObj src) {
        JsonNode token = kw.get(Kw.DURABLE_TOKEN);
        if (token != null && token.isIntegralNumber()) {
            // a token a gate put in a dict for one of its outputs whose revision does not answer tokens
            answerToken(token.asLong(), 0);
            upstreamAcks.flush();
            gobj.setLong(PENDING_ACKS, pending.size());
            return 0;
        }
        JsonNode ack = kw.get(DURABLE_ACK);
        if (ack instanceof BinaryNode) {
            JsonNode md = gobj.isTraced(TRACE_MESSAGES) ? kw.get(DURABLE_MD) : null;
            answerUpstream(MdTrq.endAck(MdTrq.startAck(((BinaryNode) ack).binaryValue()), 0),
                    md == null ? null : md.toString(), kw.get(Kw.TEMP), Kw.ref(kw, DURABLE_GATE, GObj.class), 0);
            return 0;
        }
        JsonNode md = kw.get(DURABLE_MD);
        if (md instanceof ObjectNode) {
            answerUpstream((ObjectNode) md, kw.get(Kw.TEMP), Kw.ref(kw, DURABLE_GATE, GObj.class), 0);
        }
        return 0;
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

    /**
     * The output stores the message, and the ack waits for EV_ON_DURABLE. An output that
     * {@link GClassSpec#takesJsonRecords() takes JSON records} gets the producer's bytes as the record
     * ({@link MdTrq#scanRecord}, taken in the scan's walk: {@code __md_trq__} cut out, whitespace left out; a
     * {@link Kw#JSON_RECORD} gbuffer) when they are in the form it would store; any other message, and any other
     * output, gets the dict, built by the scan from the bytes it checked ({@link MdTrq#tree}); what the scan cannot
     * vouch for is parsed by Jackson.
     */
    private int forwardDurable(GObj out, ObjectNode kw, JsonNode temp, GObj src) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        try {
            return forwardDurable(out, buf, kw, temp, src);
        } finally {
            if (buf != null) buf.release();
        }
    }

    /**
     * {@link #forwardDurable(GObj, ObjectNode, JsonNode, GObj)} of the message in {@code buf}'s readable bytes (read,
     * not consumed nor released), or, without a buffer, of {@code kw}'s keys.
     */
    private int forwardDurable(GObj out, ByteBuf buf, ObjectNode kw, JsonNode temp, GObj src) {
        ObjectNode msg;
        byte[] ackStart = null;
        boolean byToken = false;
        JsonNode upstreamMd;
        try {
            boolean takesRecords = out.gclass().takesJsonRecords();
            int found = buf == null ? MdTrq.UNSURE : takesRecords ? scan.scanRecord(buf) : scan.scan(buf);
            byte[] record = found != MdTrq.UNSURE && takesRecords ? scan.record() : null;
            // by token (forwardByToken): the ack's bytes made with room to end it in place
            byToken = record != null && found == MdTrq.FOUND && scan.simple() && !gobj.isTraced(TRACE_MESSAGES)
                    && out.gclass().answersDurableTokens();
            if (found == MdTrq.FOUND && scan.simple()) ackStart = byToken ? scan.ackStartWithRoom() : scan.ackStart();
            if (record != null) {
                msg = recordMessage(record);
                // The md's dict only where the ack's bytes are not kept (or for a trace): the ack needs no more.
                upstreamMd = found != MdTrq.FOUND ? null
                        : ackStart == null || gobj.isTraced(TRACE_MESSAGES) ? scan.mdTree() : MD_IN_ACK;
            } else {
                msg = buf == null ? Kw.withoutRefs(kw) : found == MdTrq.UNSURE ? Kw.parse(buf) : scan.tree();
                msg.remove(Kw.TEMP);
                upstreamMd = msg.remove(Kw.MD_TRQ);
            }
        } catch (IOException e) {
            notJson(e, buf);
            return -1;
        }
        jsonAgain();
        if (byToken) return forwardByToken(out, msg, ackStart, temp, src);
        if (upstreamMd != null && upstreamMd.isObject()) {
            ObjectNode durable = msg.putObject(Kw.DURABLE);
            if (upstreamMd != MD_IN_ACK) durable.set(DURABLE_MD, upstreamMd);
            if (ackStart != null) durable.set(DURABLE_ACK, BinaryNode.valueOf(ackStart));
            if (temp != null) durable.set(Kw.TEMP, temp);
            if (src != null) Kw.putRef(durable, DURABLE_GATE, src);
        }
        if (gobj.isTraced(TRACE_MESSAGES)) {
            Glog.info(gobj, "message forwarded, ack when durable", "output", out.name(), "md", String.valueOf(upstreamMd));
        }
        int r = out.send(Ev.EV_SEND_MESSAGE, msg, gobj);
        if (r < 0) {
            gobj.inc(REFUSED);
            if (ackStart != null) {
                answerUpstream(MdTrq.endAck(MdTrq.startAck(ackStart), REFUSED_RESULT),
                        gobj.isTraced(TRACE_MESSAGES) ? upstreamMd.toString() : null, temp, src, REFUSED_RESULT);
            } else if (upstreamMd instanceof ObjectNode) {
                answerUpstream((ObjectNode) upstreamMd, temp, src, REFUSED_RESULT);
            }
        } else {
            gobj.inc(TX_MSGS);
        }
        return r;
    }

    /**
     * A batch ({@link Kw#BATCH}): to an output that takes records and answers tokens, every message of it goes with
     * one token, and the producer gets one ack echoing the batch's {@code __md_trq__} when the output told the last
     * one durable, or a nack at the first refusal (the rest of the batch is not sent). To any other output, or while
     * traced, each message goes alone with the batch's md plus its index ({@link Kw#BATCH_INDEX}), and is answered
     * alone, as if the producer had sent it so.
     */
    private int forwardBatch(GObj out, ObjectNode kw, int[] ranges, JsonNode temp, GObj src) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        JsonNode mdNode = kw.get(Kw.MD_TRQ);
        ObjectNode md = mdNode instanceof ObjectNode ? (ObjectNode) mdNode : null;
        try {
            String bad = buf == null ? "no gbuffer" : md == null ? "no __md_trq__ dict"
                    : badRanges(ranges, buf.readableBytes());
            if (bad != null) {
                gobj.add(BAD_JSON, ranges.length / 2);
                if (badBatch.hit()) {
                    Glog.error(gobj, "Batch refused: " + bad + " (said once until a good batch comes)",
                            "messages", ranges.length / 2);
                }
                if (md != null) answerUpstream(md.deepCopy(), temp, src, REFUSED_RESULT);
                return -1;
            }
            if (badBatch.active()) Glog.info(gobj, "Batches readable again", "refused", badBatch.end());
            GClassSpec<?> spec = out.gclass();
            byte[] ackStart = spec.confirmsDurability() && spec.takesJsonRecords() && spec.answersDurableTokens()
                    && !gobj.isTraced(TRACE_MESSAGES) ? MdTrq.ackStartWithRoom(md) : null;
            return ackStart == null
                    ? forwardBatchApart(out, buf, ranges, md, temp, src)
                    : forwardBatchByToken(out, buf, ranges, batchRecords(kw, ranges), ackStart, temp, src);
        } finally {
            if (buf != null) buf.release();
        }
    }

    /** Why the ranges of a batch cannot be read from a buffer of {@code size} readable bytes; null when they can. */
    private static String badRanges(int[] ranges, int size) {
        if (ranges.length == 0 || (ranges.length & 1) != 0) return "its ranges are not start and end pairs";
        for (int i = 0; i < ranges.length; i += 2) {
            if (ranges[i] < 0 || ranges[i] >= ranges[i + 1] || ranges[i + 1] > size) return "a range is outside it";
        }
        return null;
    }

    /** The producer's {@link Kw#BATCH_RECORDS} of a batch of these ranges, or null (none, or not one per range). */
    private static int[][] batchRecords(ObjectNode kw, int[] ranges) {
        int[][] records = Kw.ref(kw, Kw.BATCH_RECORDS, int[][].class);
        return records != null && records.length >= ranges.length / 2 ? records : null;
    }

    private int forwardBatchByToken(GObj out, ByteBuf buf, int[] ranges, int[][] records, byte[] ackStart,
            JsonNode temp, GObj src) {
        int count = ranges.length / 2;
        long token = pending.add(ackStart, temp, src, count);
        int base = buf.readerIndex();
        int r = 0;
        for (int i = 0; i < count; i++) {
            int from = base + ranges[2 * i];
            int len = ranges[2 * i + 1] - ranges[2 * i];
            ObjectNode msg = records != null && records[i] != null
                    ? vouchedRecord(buf, from, len, records[i])
                    : batchMessage(buf.slice(from, len));
            if (msg != null) {
                msg.put(Kw.DURABLE_TOKEN, token);
                r = out.send(Ev.EV_SEND_MESSAGE, msg, gobj);
            } else {
                r = -1;
            }
            if (r < 0) {
                gobj.add(REFUSED, count - i);
                if (pending.refuse(token, count - i)) {
                    answerUpstream(MdTrq.endAckInPlace(pending.takenAck, REFUSED_RESULT), null, pending.takenTemp,
                            pending.takenGate, REFUSED_RESULT);
                }
                break;
            }
            gobj.inc(TX_MSGS);
        }
        noteForgotten();
        gobj.setLong(PENDING_ACKS, pending.size());
        return r < 0 ? r : 0;
    }

    /**
     * One message of a batch as the output stores it: the producer's bytes as the record when they are in that form
     * ({@link MdTrq#scanRecord}), else its dict; null when it is not a JSON object (said once per streak).
     */
    private ObjectNode batchMessage(ByteBuf one) {
        try {
            int found = scan.scanRecord(one);
            byte[] record = found == MdTrq.UNSURE ? null : scan.record();
            ObjectNode msg;
            if (record != null) {
                msg = recordMessage(record);
            } else {
                msg = found == MdTrq.UNSURE ? Kw.parse(one) : scan.tree();
                msg.remove(Kw.MD_TRQ);
                msg.remove(Kw.TEMP);
            }
            jsonAgain();
            return msg;
        } catch (IOException e) {
            notJson(e, one);
            return null;
        }
    }

    /**
     * The producer's bytes are the record the output would store for the dict: they go as they are, with the index
     * of their top-level members that the scan took on its way ({@link Kw#RECORD_FIELDS}).
     */
    private ObjectNode recordMessage(byte[] record) {
        return recordMessage(record, scan.copiedFields());
    }

    private static ObjectNode recordMessage(byte[] record, int[] fields) {
        ObjectNode msg = Kw.withGbuffer(Unpooled.wrappedBuffer(record));
        msg.put(Kw.JSON_RECORD, true);
        Kw.putRef(msg, Kw.RECORD_FIELDS, fields);
        return msg;
    }

    /**
     * A message of a batch whose producer vouched for its bytes as a record and indexed it ({@link Kw#BATCH_RECORDS}):
     * copied as it stands, with no walk.
     */
    private ObjectNode vouchedRecord(ByteBuf buf, int from, int len, int[] fields) {
        byte[] record = new byte[len];
        buf.getBytes(from, record);
        jsonAgain();
        return recordMessage(record, fields);
    }

    /** A message for a durable output that is not a JSON object: counted, and said once per streak. */
    private void notJson(IOException e, ByteBuf buf) {
        gobj.inc(BAD_JSON);
        if (notJson.hit()) {
            Glog.error(gobj, "Message is not a JSON object, not forwarded (said once until a JSON message comes)",
                    "error", e.getMessage(), "dump", preview(buf));
        }
    }

    private void jsonAgain() {
        if (notJson.active()) Glog.info(gobj, "Messages are JSON objects again", "not_forwarded", notJson.end());
    }

    /** Each message of a batch on its own, with the batch's md and its index: acked one by one. */
    private int forwardBatchApart(GObj out, ByteBuf buf, int[] ranges, ObjectNode md, JsonNode temp, GObj src) {
        byte[] mdHead = batchMdHead(md);
        int base = buf.readerIndex();
        for (int i = 0; i < ranges.length / 2; i++) {
            int from = base + ranges[2 * i];
            int end = base + ranges[2 * i + 1];
            ByteBuf m = Unpooled.buffer(end - from + mdHead.length + 16);
            if (!Gbuffers.writeWithLastKey(m, buf, from, end, mdHead, i)) {
                m.release();
                gobj.add(BAD_JSON, ranges.length / 2 - i);
                Glog.error(gobj, "Batch message is not a JSON object: it and the rest of its batch not forwarded",
                        "index", i, "dump", preview(buf.slice(from, end - from)));
                ObjectNode nack = md.deepCopy();
                nack.put(Kw.BATCH_INDEX, i);
                answerUpstream(nack, temp, src, REFUSED_RESULT);
                return -1;
            }
            ObjectNode one = Kw.withGbuffer(m);
            if (temp != null) one.set(Kw.TEMP, temp);
            int r = forwardOne(out, one, temp, src);
            if (r < 0) return r;
        }
        return 0;
    }

    /** {@code "__md_trq__":{...the batch's md...,"msg":}: what every message of a batch sent apart carries. */
    private static byte[] batchMdHead(ObjectNode md) {
        String json = md.toString();
        String head = "\"" + Kw.MD_TRQ + "\":" + json.substring(0, json.length() - 1) + (md.size() > 0 ? "," : "")
                + "\"" + Kw.BATCH_INDEX + "\":";
        return head.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * The ack's bytes ({@link MdTrq#ackStartWithRoom}) stay here, in {@link PendingAcks}, and the message goes with a token
     * ({@link Kw#DURABLE_TOKEN}): the output tells many tokens back in one {@link Ev#EV_ON_DURABLE_TOKENS} when a
     * commit covers them, and nothing per message is built for it.
     */
    private int forwardByToken(GObj out, ObjectNode msg, byte[] ackStart, JsonNode temp, GObj src) {
        long token = pending.add(ackStart, temp, src);
        msg.put(Kw.DURABLE_TOKEN, token);
        int r = out.send(Ev.EV_SEND_MESSAGE, msg, gobj);
        if (r < 0) {
            gobj.inc(REFUSED);
            if (pending.take(token)) {
                answerUpstream(MdTrq.endAckInPlace(ackStart, REFUSED_RESULT), null, temp, src, REFUSED_RESULT);
            }
        } else {
            gobj.inc(TX_MSGS);
        }
        noteForgotten();
        gobj.setLong(PENDING_ACKS, pending.size());
        return r;
    }

    /**
     * A plain output: the message goes as it came, acked once the output accepted it. The metadata the ack echoes
     * is found by a scan of the bytes ({@link MdTrq}); the ack is begun before the message is passed on (the
     * output owns the buffer then) and ended with the output's answer.
     */
    private int forwardRaw(GObj out, ObjectNode kw, JsonNode temp, GObj src) {
        ByteBuf buf = Kw.gbuffer(kw);
        ObjectNode md = null;
        ByteBuf ack = null;
        String traced = null;
        int found = buf == null ? MdTrq.NONE : scan.scan(buf);
        if (found == MdTrq.FOUND && scan.simple()) {
            ack = scan.startAck();
            if (gobj.isTraced(TRACE_MESSAGES)) traced = scan.text();
        } else if (found == MdTrq.FOUND) {
            md = parsedMd();
        } else if (found == MdTrq.UNSURE) {
            md = parseMd(buf);
        }
        kw.remove(Kw.TEMP);
        if (gobj.isTraced(TRACE_MESSAGES)) {
            Glog.info(gobj, "message forwarded", "output", out.name(), "bytes", buf == null ? -1 : buf.readableBytes());
        }
        int r = out.send(Ev.EV_SEND_MESSAGE, kw, gobj);
        if (r < 0) {
            gobj.inc(REFUSED);
        } else {
            gobj.inc(TX_MSGS);
        }
        int result = r < 0 ? REFUSED_RESULT : 0;
        if (ack != null) {
            answerUpstream(MdTrq.endAck(ack, result), traced, temp, src, result);
        } else if (md != null) {
            answerUpstream(md, temp, src, result);
        }
        return r < 0 ? r : 0;
    }

    /** A message the relay cannot forward at all (no output): its producer gets a nack if it asked for an ack. */
    private void nackUpstream(ObjectNode kw, GObj inputGate) {
        if (kw.has(Kw.BATCH)) {
            JsonNode md = kw.get(Kw.MD_TRQ);
            if (md instanceof ObjectNode) answerUpstream(((ObjectNode) md).deepCopy(), kw.get(Kw.TEMP), inputGate,
                    REFUSED_RESULT);
            return;
        }
        ByteBuf buf = Kw.gbuffer(kw);
        if (buf == null) return;
        int[] messages = Batches.messageRangesOf(kw);
        if (messages == null) {
            nackOne(buf, kw.get(Kw.TEMP), inputGate);
            return;
        }
        if (badRanges(messages, buf.readableBytes()) != null) return;   // forwardMessages says why
        ByteBuf view = buf.duplicate();
        int base = buf.readerIndex();
        for (int i = 0; i + 1 < messages.length; i += 2) {
            view.setIndex(base + messages[i], base + messages[i + 1]);
            nackOne(view, kw.get(Kw.TEMP), inputGate);
        }
    }

    /** The nack of the message in {@code buf}'s readable bytes, if it asked for an ack. */
    private void nackOne(ByteBuf buf, JsonNode temp, GObj inputGate) {
        int found = scan.scan(buf);
        if (found == MdTrq.FOUND && scan.simple()) {
            String traced = gobj.isTraced(TRACE_MESSAGES) ? scan.text() : null;
            answerUpstream(MdTrq.endAck(scan.startAck(), REFUSED_RESULT), traced, temp, inputGate, REFUSED_RESULT);
            return;
        }
        ObjectNode md = found == MdTrq.FOUND ? parsedMd() : found == MdTrq.UNSURE ? parseMd(buf) : null;
        if (md != null) answerUpstream(md, temp, inputGate, REFUSED_RESULT);
    }

    /** The metadata the last scan found, parsed alone; null if Jackson does not take it (it then has no ack). */
    private ObjectNode parsedMd() {
        try {
            return scan.parsed();
        } catch (IOException notJson) {
            return null;
        }
    }

    /** What the scan could not vouch for: the whole message parsed, as before the scan, for its metadata. */
    private static ObjectNode parseMd(ByteBuf buf) {
        if (buf.readableBytes() <= MD_TRQ_BYTES.length + 4 || !containsMdTrq(buf)) return null;
        try {
            JsonNode m = Kw.parse(buf).get(Kw.MD_TRQ);
            return m instanceof ObjectNode ? (ObjectNode) m : null;
        } catch (IOException notJson) {
            return null;   // a binary payload: forwarded as it is, nothing to ack
        }
    }

    /**
     * Sends the ack ({@code result} 0) or the nack (negative) back on the connection the message came from (its
     * {@code __temp__}).
     */
    private void answerUpstream(ObjectNode md, JsonNode temp, GObj inputGate, int result) {
        ByteBuf fast = MdTrq.writeAckStart(md);
        if (fast != null) {
            answerUpstream(MdTrq.endAck(fast, result), gobj.isTraced(TRACE_MESSAGES) ? md.toString() : null, temp,
                    inputGate, result);
            return;
        }
        // The same answer as InputGates.ack(md, result), without its copy: md is ours, taken out of the message
        // this relay parsed, and it is answered once.
        ObjectNode ack = Kw.create();
        ack.set(Kw.MD_TRQ, md.put(Kw.RESULT, result));
        boolean sent = InputGates.reply(gobj, inputGate, ack, temp) == 0;
        counted(sent, result, md.toString());
    }

    /**
     * Sends an ack written as bytes ({@code {"__md_trq__":{...,"result":R}}}, what {@link InputGates#reply} writes
     * for the dict): the same checks as it makes, then the buffer goes down the input gate.
     */
    private void answerUpstream(ByteBuf ack, String tracedMd, JsonNode temp, GObj inputGate, int result) {
        boolean sent = false;
        GObj channel = Kw.ref(temp, Kw.TEMP_CHANNEL_GOBJ, GObj.class);
        if (inputGate == null || inputGate.isDestroyed()
                || (channel != null && (channel.isDestroyed() || !channel.acceptsEvent(Ev.EV_SEND_MESSAGE)))) {
            ack.release();
        } else {
            ObjectNode kw = Kw.withGbuffer(ack);
            if (temp != null) kw.set(Kw.TEMP, temp);
            sent = inputGate.send(Ev.EV_SEND_MESSAGE, kw, gobj) == 0;
        }
        counted(sent, result, tracedMd);
    }

    private void counted(boolean sent, int result, String tracedMd) {
        if (sent) gobj.inc(result < 0 ? NACKS_SENT : ACKS_SENT);
        if (gobj.isTraced(TRACE_MESSAGES)) {
            Glog.info(gobj, (result < 0 ? "nack" : "ack") + (sent ? " sent upstream" : " not sent"), "md", tracedMd);
        }
    }

    private static boolean containsMdTrq(ByteBuf b) {
        int end = b.writerIndex() - MD_TRQ_BYTES.length;
        outer:
        for (int i = b.readerIndex(); i <= end; i++) {
            for (int j = 0; j < MD_TRQ_BYTES.length; j++) {
                if (b.getByte(i + j) != MD_TRQ_BYTES[j]) continue outer;
            }
            return true;
        }
        return false;
    }

    private static String preview(ByteBuf b) {
        if (b == null) return "";
        int n = Math.min(64, b.readableBytes());
        return b.toString(b.readerIndex(), n, StandardCharsets.UTF_8);
    }
}
