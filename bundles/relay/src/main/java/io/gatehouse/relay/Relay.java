package io.gatehouse.relay;

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
import io.gatehouse.api.InputGates;
import io.gatehouse.api.Glog;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.util.List;

/**
 * C_RELAY: forwards what the input gate(s) receive to the output gate, and acks upstream.
 *
 * <p>At-least-once across hops: a message that carries {@code __md_trq__} (it came from an upstream
 * C_QIOGATE, ours or Yuneta's) is acked back on its own connection only once the output side has it for
 * sure: when the output is a queue (C_QIOGATE / C_MQIOGATE), after the record is durable per the queue's
 * fsync policy (the queue runs the {@code __on_durable__} callback); when the output is a plain gate, after
 * the send was accepted. A message the output refuses is not acked, so the producer sends it again.
 *
 * <p>Gates are found by service name; the relay subscribes again when a gate is rebuilt (hot swap).
 */
public final class Relay implements GObjBehavior {
    public static final String ON_DURABLE = "__on_durable__";

    static final Attr<JsonNode> INPUT = Attr.json("input", AttrType.JSON, null, AttrFlag.RD | AttrFlag.REQUIRED,
            "Input gate service name, or a list of them");
    static final Attr<String> OUTPUT = Attr.string("output", "", AttrFlag.RD | AttrFlag.REQUIRED,
            "Output gate service name");
    static final Attr<Long> CHECK_INTERVAL = Attr.integer("timeout_check_gates", 500, AttrFlag.RD,
            "Milliseconds between checks that the relay is still subscribed to the current input gates");
    static final Attr<Long> RX_MSGS = Attr.integer("rxMsgs", 0, AttrFlag.RSTATS, "Messages received");
    static final Attr<Long> TX_MSGS = Attr.integer("txMsgs", 0, AttrFlag.RSTATS, "Messages handed to the output");
    static final Attr<Long> ACKS = Attr.integer("acks_sent", 0, AttrFlag.RSTATS, "Acks sent upstream");
    static final Attr<Long> REFUSED = Attr.integer("refused", 0, AttrFlag.RSTATS,
            "Messages the output refused (not acked, the producer resends)");
    static final Attr<Long> BAD_JSON = Attr.integer("bad_json", 0, AttrFlag.RSTATS,
            "Messages for a queue output that were not a JSON object (dropped with an error)");

    static final GClassSpec<Relay> SPEC = GClassSpec.builder(GClassNames.C_RELAY, Relay.class)
            .description("Forwards input gate messages to an output gate, acking upstream after durable enqueue")
            .attrs(INPUT, OUTPUT, CHECK_INTERVAL, RX_MSGS, TX_MSGS, ACKS, REFUSED, BAD_JSON)
            .fsm(Fsm.<Relay>builder()
                    .state(St.ST_IDLE)
                    .on(Ev.EV_ON_MESSAGE, Relay::acOnMessage)
                    .ignore(Ev.EV_ON_OPEN)
                    .ignore(Ev.EV_ON_CLOSE)
                    .ignore(Ev.EV_ON_ID)
                    .ignore(Ev.EV_ON_ID_NAK)
                    .on(Ev.EV_TIMEOUT_PERIODIC, Relay::acCheckGates)
                    .build())
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(Relay::new)
            .build();

    private final GObj gobj;
    private InputGates inputs;
    private String output;
    private Cancellable checker = Cancellable.NONE;
    /** Messages refused since the output gate went missing (0: it is there). */
    private long refusedWhileMissing;
    // Counted here per message and added to the attributes when they are read (onReadAttrs): a boxed
    // attribute write per message and counter was a visible share of the relay's cost.
    private long dRx;
    private long dTx;
    private long dAcks;
    private long dRefused;
    private long dBadJson;

    Relay(GObj gobj) {
        this.gobj = gobj;
    }

    @Override
    public void onCreate() {
        List<String> names = InputGates.namesFrom(gobj.read(INPUT));
        if (names.isEmpty()) throw new IllegalArgumentException("'input' must name at least one gate");
        inputs = new InputGates(gobj, names);
        output = gobj.read(OUTPUT);
    }

    @Override
    public int onStart() {
        inputs.subscribe();
        checker = gobj.setPeriodic(gobj.readLong(CHECK_INTERVAL), Ev.EV_TIMEOUT_PERIODIC);
        return 0;
    }

    @Override
    public int onStop() {
        checker.cancel();
        inputs.unsubscribeAll();
        return 0;
    }

    @Override
    public void onReadAttrs() {
        add(RX_MSGS, dRx);
        add(TX_MSGS, dTx);
        add(ACKS, dAcks);
        add(REFUSED, dRefused);
        add(BAD_JSON, dBadJson);
        dRx = dTx = dAcks = dRefused = dBadJson = 0;
    }

    private void add(Attr<Long> a, long n) {
        if (n != 0) gobj.set(a, gobj.read(a) + n);
    }

    // --- Actions ---

    private int acCheckGates(String ev, ObjectNode kw, GObj src) {
        inputs.subscribe();
        return 0;
    }

    private int acOnMessage(String ev, ObjectNode kw, GObj src) {
        dRx++;
        GObj out = gobj.yuno().service(output);
        if (out == null) {
            // Said once per outage (a hot swap of the output side takes it away for a moment under load).
            if (refusedWhileMissing++ == 0) {
                Glog.error(gobj, "Output gate NOT FOUND, messages not forwarded until it is back", "output", output);
            }
            dRefused++;
            Kw.release(kw);
            return -1;
        }
        if (refusedWhileMissing > 0) {
            Glog.info(gobj, "Output gate back", "output", output, "refused", refusedWhileMissing);
            refusedWhileMissing = 0;
        }
        JsonNode temp = kw.get(Kw.TEMP);
        String outClass = out.gclassName();
        boolean queued = outClass.equals(GClassNames.C_QIOGATE) || outClass.equals(GClassNames.C_MQIOGATE);
        return queued ? forwardToQueue(out, kw, temp, src) : forwardRaw(out, kw, temp, src);
    }

    private int forwardToQueue(GObj out, ObjectNode kw, JsonNode temp, GObj src) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        ObjectNode msg;
        try {
            msg = buf != null ? Kw.parse(buf) : Kw.withoutRefs(kw);
        } catch (IOException e) {
            dBadJson++;
            Glog.error(gobj, "Message is not a JSON object, not forwarded", "error", e.getMessage(),
                    "dump", dump(buf));
            return -1;
        } finally {
            if (buf != null) buf.release();
        }
        msg.remove(Kw.TEMP);
        JsonNode upstreamMd = msg.remove(Kw.MD_TRQ);
        if (upstreamMd != null && upstreamMd.isObject()) {
            ObjectNode md = (ObjectNode) upstreamMd;
            Kw.putRef(msg, ON_DURABLE, (Runnable) () -> ackUpstream(md, temp, src));
        }
        int r = out.send(Ev.EV_SEND_MESSAGE, msg, gobj);
        if (r < 0) {
            dRefused++;
        } else {
            dTx++;
        }
        return r;
    }

    private int forwardRaw(GObj out, ObjectNode kw, JsonNode temp, GObj src) {
        ObjectNode md = null;
        ByteBuf buf = Kw.gbuffer(kw);
        if (buf != null && buf.readableBytes() > 14 && containsMdTrq(buf)) {
            try {
                JsonNode m = Kw.parse(buf).get(Kw.MD_TRQ);
                if (m != null && m.isObject()) md = (ObjectNode) m;
            } catch (IOException notJson) {
                // a binary payload: forwarded as it is, nothing to ack
            }
        }
        kw.remove(Kw.TEMP);
        int r = out.send(Ev.EV_SEND_MESSAGE, kw, gobj);
        if (r < 0) {
            dRefused++;
            return r;
        }
        dTx++;
        if (md != null) ackUpstream(md, temp, src);
        return 0;
    }

    private static boolean containsMdTrq(ByteBuf b) {
        byte[] key = "__md_trq__".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        int end = b.writerIndex() - key.length;
        outer:
        for (int i = b.readerIndex(); i <= end; i++) {
            for (int j = 0; j < key.length; j++) {
                if (b.getByte(i + j) != key[j]) continue outer;
            }
            return true;
        }
        return false;
    }

    /** Sends the ack back on the connection the message came from (its {@code __temp__}). */
    private void ackUpstream(ObjectNode md, JsonNode temp, GObj inputGate) {
        // The same answer as InputGates.ack(md, 0), without its copy: md is ours, taken out of the message this
        // relay parsed, and it is acked once.
        ObjectNode ack = Kw.create();
        ack.set(Kw.MD_TRQ, md.put("result", 0));
        if (InputGates.reply(gobj, inputGate, ack, temp) == 0) {
            dAcks++;
        }
    }

    private static String dump(ByteBuf b) {
        if (b == null) return "";
        int n = Math.min(64, b.readableBytes());
        return b.toString(b.readerIndex(), n, java.nio.charset.StandardCharsets.UTF_8);
    }
}
