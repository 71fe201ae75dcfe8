// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.channel;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.Envelope;
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
import io.gatehouse.support.RateWindow;
import io.netty.buffer.ByteBuf;

/**
 * C_CHANNEL: turns a tube (protocol + transport, its bottom) into one endpoint that is open or closed, counts
 * the messages that go through it and computes their rates when its stats are read.
 *
 * <p>Port of {@code kernel/c/root-linux/src/c_channel.c} @6043415535bd, with rates computed when the stats are
 * read, over the milliseconds since the previous read ({@link RateWindow}; docs/GATES.md, "Message rates").
 *
 * <pre>
 *   ST_CLOSED  --EV_ON_OPEN-->  ST_OPENED  --EV_ON_CLOSE-->  ST_CLOSED
 * </pre>
 *
 * <ul>
 *   <li>Up: EV_ON_MESSAGE / EV_ON_IEV_MESSAGE / EV_ON_ID / EV_ON_ID_NAK count rx and are published as they
 *       came (same event, same kw); EV_ON_OPEN / EV_ON_CLOSE set {@code opened} and are published.</li>
 *   <li>Down: EV_SEND_MESSAGE (counts tx: attempts, not successes) goes to the bottom as EV_SEND_MESSAGE, or
 *       EV_TX_DATA when the bottom is a bare transport; EV_SEND_IEV sends its {@code __iev_event__};
 *       EV_DROP is passed down.</li>
 *   <li>In ST_CLOSED only EV_ON_OPEN and EV_STOPPED are defined: a send to a closed channel answers -1 with
 *       "Event NOT DEFINED in state".</li>
 *   <li>Stats read by its parent (a gate) answer the bare counters; read by anyone else they are the stats of
 *       the bottom (the protocol and transport attributes).</li>
 *   <li>It has no commands of its own: core proxies every command to the bottom.</li>
 * </ul>
 */
public final class Channel implements GObjBehavior {

    // --- Attributes ---

    public static final Attr<Boolean> OPENED = Attr.bool("opened", false, AttrFlag.RD, "Channel opened");
    static final Attr<Long> TX_MSGS = Attr.counter(RateWindow.TX_MSGS, AttrFlag.RSTATS,
            "Messages sent down (attempts, a refused send too, as in Yuneta)");
    static final Attr<Long> RX_MSGS = Attr.counter(RateWindow.RX_MSGS, AttrFlag.RSTATS, "Messages received from below");

    // --- Trace levels ---

    static final String TRACE_CONNECTION = "connection";
    static final String TRACE_MESSAGES = "messages";

    // --- FSM ---

    static final Fsm<Channel> FSM = Fsm.<Channel>builder()
            .state(St.ST_CLOSED)
                .on(Ev.EV_ON_OPEN,          Channel::acOnOpen,      St.ST_OPENED)
                .on(Ev.EV_STOPPED,          Channel::acStopped)
                .ignore(Ev.EV_PAUSE_INPUT)
                .ignore(Ev.EV_RESUME_INPUT)
            .state(St.ST_OPENED)
                .on(Ev.EV_ON_MESSAGE,       Channel::acOnMessage)
                .on(Ev.EV_ON_IEV_MESSAGE,   Channel::acOnMessage)
                .on(Ev.EV_ON_ID,            Channel::acOnMessage)
                .on(Ev.EV_ON_ID_NAK,        Channel::acOnMessage)
                .on(Ev.EV_SEND_MESSAGE,     Channel::acSendMessage)
                .on(Ev.EV_SEND_IEV,         Channel::acSendIev)
                .on(Ev.EV_DROP,             Channel::acDrop)
                .ignore(Ev.EV_ON_OPEN)
                .on(Ev.EV_ON_CLOSE,         Channel::acOnClose,     St.ST_CLOSED)
                .on(Ev.EV_STOPPED,          Channel::acStopped)
                .on(Ev.EV_PAUSE_INPUT,      Channel::acFlowControl)
                .on(Ev.EV_RESUME_INPUT,     Channel::acFlowControl)
            .publishes(Ev.EV_ON_MESSAGE, Ev.EV_ON_IEV_MESSAGE, Ev.EV_ON_ID, Ev.EV_ON_ID_NAK,
                    Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE)
            .build();

    // --- Spec ---

    /** The version of the state {@link #onExport} gives; {@link #onImport} takes this one only. */
    static final int STATE_VERSION = 1;

    public static final GClassSpec<Channel> SPEC = GClassSpec.builder(GClassNames.C_CHANNEL, Channel.class)
            .description("One logical link over a protocol stack: open/closed, message counters and rates")
            .attrs(OPENED, TX_MSGS, RX_MSGS)
            .fsm(FSM)
            .traceLevel(TRACE_CONNECTION, "Trace the opening and closing of the channel, with the peer's address")
            .traceLevel(TRACE_MESSAGES, "Trace every message going up or down, with its size and kw")
            .acceptUnusedYunetaKeys("user_data", "user_data2")
            .subscriptionModel(GClassSpec.SubscriptionModel.CHILD)
            .takesBatches()
            .takesSendBatches()
            .takesMessageBatches()
            .stateVersion(STATE_VERSION)
            .factory(Channel::new)
            .build();

    // --- Private data ---

    private final GObj gobj;
    private final RateWindow msgs;

    private Channel(GObj gobj) {
        this.gobj = gobj;
        this.msgs = new RateWindow(gobj.yuno().clock(), () -> gobj.readLong(TX_MSGS), () -> gobj.readLong(RX_MSGS));
    }

    // --- Framework methods ---

    @Override
    public int onStop() {
        // The stack below stops with the channel (disable-channel); the tree walk stops it too, harmlessly.
        GObj bottom = gobj.bottom();
        if (bottom != null && bottom.isRunning()) bottom.stop();
        return 0;
    }

    /**
     * Read by its parent (the gate): the bare counters and rates, and the rate window moves by the rule of
     * {@link RateWindow}. Read by anyone else: the bottom's stats (the protocol and transport).
     */
    @Override
    public ObjectNode onStats(String filter, ObjectNode kw, GObj src) {
        if (src != null && src == gobj.parent()) {
            if ("__reset__".equals(filter)) {
                gobj.setLong(TX_MSGS, 0);
                gobj.setLong(RX_MSGS, 0);
            }
            return msgs.readStats(filter);
        }
        GObj bottom = gobj.bottom();
        if (bottom == null) {
            Glog.error(gobj, "No bottom gobj");
            return Envelope.error("No bottom gobj");
        }
        return bottom.stats(filter, kw, gobj);
    }

    /**
     * A live upgrade: the rate window is all the channel holds besides what core keeps (the FSM state, which is
     * open or closed, the attributes with the counters, and the bottom), so the next read of its rates closes the
     * window the old revision opened, at the same time and with the same counts.
     */
    @Override
    public ObjectNode onExport() {
        ObjectNode s = Kw.create();
        s.set("msgs", msgs.exportState());
        return s;
    }

    @Override
    public void onImport(ObjectNode state, int stateVersion) {
        if (stateVersion != STATE_VERSION) {
            throw new IllegalArgumentException("C_CHANNEL takes state version " + STATE_VERSION + ", not " + stateVersion);
        }
        msgs.importState(state.get("msgs"));
    }

    /** The counters and the rates as last computed, without reading: the window does not move. */
    ObjectNode lastStats() {
        return msgs.putStats(Kw.create());
    }

    // --- Actions ---

    private int acOnOpen(String event, ObjectNode kw, GObj src) {
        gobj.set(OPENED, true);
        if (gobj.isTraced(TRACE_CONNECTION)) {
            Glog.info(gobj, "ON_OPEN", "peername", Kw.getString(kw, Kw.PEERNAME, ""),
                    "sockname", Kw.getString(kw, Kw.SOCKNAME, ""));
        }
        return gobj.publish(Ev.EV_ON_OPEN, kw);
    }

    private int acOnClose(String event, ObjectNode kw, GObj src) {
        gobj.set(OPENED, false);
        if (gobj.isTraced(TRACE_CONNECTION)) {
            Glog.info(gobj, "ON_CLOSE", "peername", Kw.getString(kw, Kw.PEERNAME, ""),
                    "sockname", Kw.getString(kw, Kw.SOCKNAME, ""));
        }
        return gobj.publish(Ev.EV_ON_CLOSE, kw);
    }

    private int acOnMessage(String event, ObjectNode kw, GObj src) {
        gobj.add(RX_MSGS, Batches.messagesOf(kw));
        if (gobj.isTraced(TRACE_MESSAGES)) traceMessage("<- " + event, kw);
        return gobj.publish(event, kw);
    }

    private int acSendMessage(String event, ObjectNode kw, GObj src) {
        GObj bottom = gobj.bottom();
        if (bottom == null) {
            Glog.error(gobj, "No bottom gobj", "event", event);
            Kw.release(kw);
            return -1;
        }
        String down;
        if (bottom.hasInputEvent(Ev.EV_SEND_MESSAGE)) {
            down = Ev.EV_SEND_MESSAGE;
        } else if (bottom.hasInputEvent(Ev.EV_TX_DATA)) {
            down = Ev.EV_TX_DATA;
        } else {
            Glog.error(gobj, "Bottom without EV_SEND_MESSAGE or EV_TX_DATA input event", "bottom", bottom.shortName());
            Kw.release(kw);
            return -1;
        }
        // txMsgs counts attempts, as in Yuneta: a refused send is still counted.
        int[] batch = Batches.rangesOf(kw);
        gobj.add(TX_MSGS, batch == null ? 1 : batch.length / 2);
        if (gobj.isTraced(TRACE_MESSAGES)) traceMessage("-> " + down, kw);
        if (batch != null && !(down.equals(Ev.EV_SEND_MESSAGE) && bottom.gclass().takesSendBatches())) {
            // a bottom without send batches (an older revision, another protocol): each message as it came alone
            String ev = down;
            return Batches.sendApart(kw, one -> bottom.send(ev, one, gobj));
        }
        return bottom.send(down, kw, gobj);
    }

    private int acSendIev(String event, ObjectNode kw, GObj src) {
        JsonNode iev = kw.remove(Kw.IEV_EVENT);
        if (iev == null || !iev.isTextual() || iev.asText().isEmpty()) {
            Glog.error(gobj, "EV_SEND_IEV without " + Kw.IEV_EVENT);
            Kw.release(kw);
            return -1;
        }
        GObj bottom = gobj.bottom();
        if (bottom == null) {
            Glog.error(gobj, "No bottom gobj", "event", event);
            Kw.release(kw);
            return -1;
        }
        gobj.inc(TX_MSGS);
        if (gobj.isTraced(TRACE_MESSAGES)) traceMessage("-> " + iev.asText(), kw);
        return bottom.send(iev.asText(), kw, gobj);
    }

    private int acDrop(String event, ObjectNode kw, GObj src) {
        GObj bottom = gobj.bottom();
        if (bottom == null) {
            Glog.error(gobj, "No bottom gobj", "event", event);
            Kw.release(kw);
            return -1;
        }
        if (gobj.isTraced(TRACE_CONNECTION)) Glog.info(gobj, "DROP");
        return bottom.send(Ev.EV_DROP, kw, gobj);
    }

    /**
     * EV_PAUSE_INPUT / EV_RESUME_INPUT (input flow control): the consumer's credit goes down to the protocol or
     * transport that reads the socket, which stops or resumes reading it; a stack that has no input thresholds
     * ignores it. Closed: ignored.
     */
    private int acFlowControl(String event, ObjectNode kw, GObj src) {
        GObj bottom = gobj.bottom();
        if (bottom == null || !bottom.hasInputEvent(event)) {
            Kw.release(kw);
            return 0;
        }
        return bottom.send(event, kw, gobj);
    }

    private int acStopped(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        if (src != null && src != gobj && src.isVolatile() && src.parent() == gobj) src.destroy();
        return 0;
    }

    // --- Local methods ---

    private void traceMessage(String what, ObjectNode kw) {
        ByteBuf b = Kw.gbuffer(kw);
        Glog.info(gobj, what, "bytes", b == null ? -1 : b.readableBytes(), "kw", Kw.toJson(kw));
    }
}
