package io.gatehouse.sink;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.AttrType;
import io.gatehouse.api.Cancellable;
import io.gatehouse.api.CommandSpec;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.InputGates;
import io.gatehouse.api.Glog;
import io.gatehouse.api.Kw;
import io.gatehouse.api.Param;
import io.gatehouse.api.St;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * C_SINK: the end of a line, for the demo, tests and benchmarks. It acks every message that carries
 * {@code __md_trq__}, counts messages and distinct ids, and optionally echoes.
 *
 * <p>Ids of the form {@code <id_prefix><number>} (what {@code ./gatehouse send} makes) are kept in a bit set,
 * so a million ids cost 125 KB; other ids go into a set bounded by {@code max_ids}, past which duplicates are
 * no longer told apart ({@code ids_overflow}).
 */
public final class Sink implements GObjBehavior {
    static final Attr<JsonNode> INPUT = Attr.json("input", AttrType.JSON, null, AttrFlag.RD,
            "Gate service name(s) to listen to; empty = the gate that has this sink as subscriber");
    static final Attr<Boolean> ECHO = Attr.bool("echo", false, AttrFlag.WR, "Send every message back");
    static final Attr<Boolean> ACK = Attr.bool("ack", true, AttrFlag.WR, "Ack messages that carry __md_trq__");
    static final Attr<String> ID_KEY = Attr.string("id_key", "id", AttrFlag.RD, "Key (path) of the message id");
    static final Attr<String> ID_PREFIX = Attr.string("id_prefix", "msg-", AttrFlag.RD,
            "Ids made of this prefix and a number are tracked in a bit set");
    static final Attr<Long> MAX_IDS = Attr.integer("max_ids", 1_000_000, AttrFlag.RD,
            "Most distinct non-numeric ids remembered (memory bound)");
    static final Attr<Long> RX_MSGS = Attr.integer("rxMsgs", 0, AttrFlag.RSTATS, "Messages received");
    static final Attr<Long> TX_MSGS = Attr.integer("txMsgs", 0, AttrFlag.RSTATS, "Messages echoed");
    static final Attr<Long> DISTINCT = Attr.integer("distinct_ids", 0, AttrFlag.RSTATS, "Distinct ids seen");
    static final Attr<Long> DUPLICATES = Attr.integer("duplicates", 0, AttrFlag.RSTATS, "Messages whose id was seen before");
    static final Attr<Long> ACKS = Attr.integer("acks_sent", 0, AttrFlag.RSTATS, "Acks sent");
    static final Attr<Long> BAD_JSON = Attr.integer("bad_json", 0, AttrFlag.RSTATS, "Messages that were not JSON objects");
    static final Attr<Boolean> IDS_OVERFLOW = Attr.bool("ids_overflow", false, AttrFlag.STATS,
            "More distinct non-numeric ids than max_ids: duplicates undercounted");

    static final GClassSpec<Sink> SPEC = GClassSpec.builder(GClassNames.C_SINK, Sink.class)
            .description("Acks, counts and optionally echoes what it receives")
            .attrs(INPUT, ECHO, ACK, ID_KEY, ID_PREFIX, MAX_IDS, RX_MSGS, TX_MSGS, DISTINCT, DUPLICATES, ACKS,
                    BAD_JSON, IDS_OVERFLOW)
            .fsm(Fsm.<Sink>builder()
                    .state(St.ST_IDLE)
                    .on(Ev.EV_ON_MESSAGE, Sink::acOnMessage)
                    .ignore(Ev.EV_ON_OPEN)
                    .ignore(Ev.EV_ON_CLOSE)
                    .ignore(Ev.EV_ON_ID)
                    .ignore(Ev.EV_ON_ID_NAK)
                    .on(Ev.EV_TIMEOUT_PERIODIC, Sink::acCheckGates)
                    .build())
            .commands(
                    CommandSpec.of("check-ids", "Which numeric ids in [from, to] never arrived", Sink::cmdCheckIds,
                            Param.integer("from", "0", "First id number"),
                            Param.integer("to", "-1", "Last id number (-1: the highest seen)")),
                    CommandSpec.of("reset-ids", "Forget the ids seen and zero the counters", Sink::cmdResetIds))
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(Sink::new)
            .build();

    private final GObj gobj;
    private InputGates inputs;
    private BitSet numericIds = new BitSet();
    private Set<String> otherIds = new HashSet<>();
    private long maxNumeric = -1;
    private Cancellable checker = Cancellable.NONE;

    Sink(GObj gobj) {
        this.gobj = gobj;
    }

    @Override
    public void onCreate() {
        inputs = new InputGates(gobj, InputGates.namesFrom(gobj.read(INPUT)));
    }

    @Override
    public int onStart() {
        inputs.subscribe();
        if (!inputs.names().isEmpty()) checker = gobj.setPeriodic(500, Ev.EV_TIMEOUT_PERIODIC);
        return 0;
    }

    @Override
    public int onStop() {
        checker.cancel();
        inputs.unsubscribeAll();
        return 0;
    }

    private int acCheckGates(String ev, ObjectNode kw, GObj src) {
        inputs.subscribe();
        return 0;
    }

    private int acOnMessage(String ev, ObjectNode kw, GObj src) {
        gobj.set(RX_MSGS, gobj.read(RX_MSGS) + 1);
        ByteBuf buf = Kw.gbuffer(kw);
        ObjectNode msg = null;
        try {
            msg = buf != null ? Kw.parse(buf) : Kw.withoutRefs(kw);
        } catch (IOException e) {
            gobj.set(BAD_JSON, gobj.read(BAD_JSON) + 1);
        }
        if (msg != null) countId(msg);
        JsonNode temp = kw.get(Kw.TEMP);
        if (msg != null && gobj.readBool(ACK)) {
            JsonNode md = msg.get(Kw.MD_TRQ);
            if (md != null && md.isObject()) sendAck((ObjectNode) md, temp, src);
        }
        if (gobj.readBool(ECHO) && buf != null && src != null) {
            ObjectNode back = Kw.withGbuffer(Kw.takeGbuffer(kw));
            if (temp != null) back.set(Kw.TEMP, temp);
            if (src.send(Ev.EV_SEND_MESSAGE, back, gobj) == 0) gobj.set(TX_MSGS, gobj.read(TX_MSGS) + 1);
        }
        Kw.release(kw);
        return 0;
    }

    private void countId(ObjectNode msg) {
        JsonNode idNode = Kw.get(msg, gobj.read(ID_KEY));
        if (idNode == null || idNode.isNull()) return;
        String id = idNode.asText();
        boolean seen;
        String prefix = gobj.read(ID_PREFIX);
        long n = numericSuffix(id, prefix);
        if (n >= 0 && n < Integer.MAX_VALUE) {
            seen = numericIds.get((int) n);
            numericIds.set((int) n);
            if (n > maxNumeric) maxNumeric = n;
        } else if (otherIds.contains(id)) {
            seen = true;
        } else if (otherIds.size() < gobj.readLong(MAX_IDS)) {
            otherIds.add(id);
            seen = false;
        } else {
            gobj.set(IDS_OVERFLOW, true);
            seen = false;
        }
        if (seen) gobj.set(DUPLICATES, gobj.read(DUPLICATES) + 1);
        else gobj.set(DISTINCT, gobj.read(DISTINCT) + 1);
    }

    private static long numericSuffix(String id, String prefix) {
        if (!id.startsWith(prefix) || id.length() == prefix.length() || id.length() - prefix.length() > 10) return -1;
        long v = 0;
        for (int i = prefix.length(); i < id.length(); i++) {
            char c = id.charAt(i);
            if (c < '0' || c > '9') return -1;
            v = v * 10 + (c - '0');
        }
        return v;
    }

    private void sendAck(ObjectNode md, JsonNode temp, GObj gate) {
        if (InputGates.reply(gobj, gate, InputGates.ack(md, 0), temp) == 0) gobj.set(ACKS, gobj.read(ACKS) + 1);
        else Glog.debug(gobj, "ack not sent", "gate", gate == null ? "" : gate.shortName());
    }

    // --- Commands ---

    private ObjectNode cmdCheckIds(String cmd, ObjectNode kw, GObj src) {
        long from = kw.get("from").asLong();
        long to = kw.get("to").asLong();
        if (to < 0) to = maxNumeric;
        if (from < 0 || to >= Integer.MAX_VALUE) return Envelope.error("from/to out of range");
        long missing = 0;
        long firstMissing = -1;
        for (long i = from; i <= to; i++) {
            if (!numericIds.get((int) i)) {
                missing++;
                if (firstMissing < 0) firstMissing = i;
            }
        }
        ObjectNode d = Kw.create();
        d.put("from", from);
        d.put("to", to);
        d.put("missing", missing);
        d.put("first_missing", firstMissing);
        d.put("distinct_ids", gobj.read(DISTINCT));
        d.put("duplicates", gobj.read(DUPLICATES));
        return Envelope.ok(missing == 0 ? "all ids arrived" : missing + " ids missing", d);
    }

    private ObjectNode cmdResetIds(String cmd, ObjectNode kw, GObj src) {
        numericIds = new BitSet();
        otherIds = new HashSet<>();
        maxNumeric = -1;
        for (Attr<Long> a : List.of(RX_MSGS, TX_MSGS, DISTINCT, DUPLICATES, ACKS, BAD_JSON)) gobj.set(a, 0L);
        gobj.set(IDS_OVERFLOW, false);
        return Envelope.ok("ids forgotten", null);
    }
}
