// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.iogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
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
import io.gatehouse.api.Param;
import io.gatehouse.api.St;
import io.gatehouse.support.Batches;
import io.gatehouse.support.Glog;
import io.gatehouse.support.RateWindow;
import io.gatehouse.support.Streak;
import io.netty.buffer.ByteBuf;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * C_IOGATE: routes messages between its C_CHANNEL children and the gobjs above it.
 *
 * <p>Port of {@code kernel/c/root-linux/src/c_iogate.c} @6043415535bd, with what the C code lacks: a broadcast
 * gives every channel its own copy of the bytes (the C code shared one buffer and sent empty frames after the
 * first), stats answer the envelope, and one addition (send_type 2, round robin).
 *
 * <p><b>Up.</b> A message from a channel counts rx and is published under the same event with
 * {@code __temp__ = {"channel": <name>, "channel_gobj": <ref>}} added, so a reply put back with that
 * {@code __temp__} goes out on the same connection. EV_ON_OPEN / EV_ON_CLOSE get the same {@code __temp__}.
 *
 * <p><b>Down</b> (EV_SEND_MESSAGE, EV_SEND_IEV), per message {@code __send_type__} else the attribute:
 * <ul>
 *   <li>{@code __temp__.channel_gobj}, else {@code __temp__.channel}: that channel, whatever the send type.</li>
 *   <li>0: one open channel at a time (Yuneta's "rotated", really sticky failover): the current channel while
 *       it stays open and enabled; when it closes, the next open one after it, wrapping, which then stays.</li>
 *   <li>1: every open channel. All but the last get a copy of the unread bytes of the gbuffer (in a copy of the
 *       kw); the last one takes the original. A kw without gbuffer is shared.</li>
 *   <li>2 (Gatehouse only): round robin, one message per open channel in turn.</li>
 * </ul>
 * txMsgs counts each channel that accepted the message. The sender always gets 0: a message with no open
 * channel is dropped; "No channel FOUND to send" is said once when that starts and once, with the count, when a
 * channel takes messages again.
 *
 * <p><b>Stats</b>: the envelope {@code {"result":0,...,"data":{txMsgs, rxMsgs, txMsgsec, rxMsgsec,
 * maxtxMsgsec, maxrxMsgsec, "channels": {<name>: <the channel's bare stats>}}}}; rates as in {@link RateWindow}.
 */
public final class IoGate implements GObjBehavior {

    // --- Attributes ---

    /** The values of {@code send_type}. */
    public static final int SEND_ONE = 0;
    public static final int SEND_ALL = 1;
    public static final int SEND_ROUND_ROBIN = 2;

    public static final Attr<Long> SEND_TYPE = Attr.integer("send_type", SEND_ONE, AttrFlag.RD | AttrFlag.WR,
            "0: one open channel at a time (sticky), 1: every open channel, 2: round robin per message");
    static final Attr<Long> TX_MSGS = Attr.counter(RateWindow.TX_MSGS, AttrFlag.RSTATS, "Messages sent to channels");
    static final Attr<Long> RX_MSGS = Attr.counter(RateWindow.RX_MSGS, AttrFlag.RSTATS, "Messages received from channels");

    // --- Trace levels ---

    static final String TRACE_CONNECTION = "connection";
    static final String TRACE_MESSAGES = "messages";

    // --- FSM ---

    static final Fsm<IoGate> FSM = Fsm.<IoGate>builder()
            .state(St.ST_IDLE)
                .on(Ev.EV_ON_MESSAGE,       IoGate::acOnMessage)
                .on(Ev.EV_ON_COMMAND,       IoGate::acOnMessage)
                .on(Ev.EV_ON_ID,            IoGate::acOnMessage)
                .on(Ev.EV_ON_ID_NAK,        IoGate::acOnMessage)
                .on(Ev.EV_ON_IEV_MESSAGE,   IoGate::acOnIevMessage)
                .on(Ev.EV_SEND_MESSAGE,     IoGate::acSendMessage)
                .on(Ev.EV_SEND_IEV,         IoGate::acSendMessage)
                .on(Ev.EV_DROP,             IoGate::acDrop)
                .on(Ev.EV_ON_OPEN,          IoGate::acOnOpen)
                .on(Ev.EV_ON_CLOSE,         IoGate::acOnClose)
                .on(Ev.EV_STOPPED,          IoGate::acStopped)
                .on(Ev.EV_PAUSE_INPUT,      IoGate::acFlowControl)
                .on(Ev.EV_RESUME_INPUT,     IoGate::acFlowControl)
            .publishes(Ev.EV_ON_MESSAGE, Ev.EV_ON_COMMAND, Ev.EV_ON_ID, Ev.EV_ON_ID_NAK,
                    Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE)
            .build();

    // --- Spec ---

    private static final Param PM_CHANNEL_NAME = Param.string("channel_name", "",
            "Channel name, a regular expression (empty: every channel)");
    private static final Param PM_OPENED = Param.bool("opened", "false", "Only the opened channels");

    /** The version of the state {@link #onExport} gives; {@link #onImport} takes this one only. */
    static final int STATE_VERSION = 1;
    /** Slots of the {@code __temp__} nodes kept per channel (a power of two). */
    private static final int TEMP_SLOTS = 256;

    public static final GClassSpec<IoGate> SPEC = GClassSpec.builder(GClassNames.C_IOGATE, IoGate.class)
            .description("Routes messages between its channels and the gobjs above: one, all or round robin")
            .attrs(SEND_TYPE, TX_MSGS, RX_MSGS)
            .fsm(FSM)
            .command("view-channels",       "View channels.",           IoGate::cmdViewChannels, PM_CHANNEL_NAME, PM_OPENED)
            .command("enable-channel",      "Enable channels.",         IoGate::cmdEnableChannel, PM_CHANNEL_NAME, PM_OPENED)
            .command("disable-channel",     "Disable channels.",        IoGate::cmdDisableChannel, PM_CHANNEL_NAME, PM_OPENED)
            .command("trace-on-channel",    "Trace on channels.",       IoGate::cmdTraceOnChannel, PM_CHANNEL_NAME, PM_OPENED)
            .command("trace-off-channel",   "Trace off channels.",      IoGate::cmdTraceOffChannel, PM_CHANNEL_NAME, PM_OPENED)
            .command("reset-stats-channel", "Reset stats of channels.", IoGate::cmdResetStatsChannel, PM_CHANNEL_NAME, PM_OPENED)
            .traceLevel(TRACE_CONNECTION, "Trace channels opening and closing")
            .traceLevel(TRACE_MESSAGES, "Trace every message routed, with its channel, size and kw")
            .acceptUnusedYunetaKeys("persistent_channels", "user_data", "user_data2")
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .takesBatches()
            .takesSendBatches()
            .takesMessageBatches()
            .stateVersion(STATE_VERSION)
            .factory(IoGate::new)
            .build();

    // --- Private data ---

    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private final GObj gobj;
    private final RateWindow msgs;
    /** send_type 0: the channel that stays chosen while it is open. */
    private GObj currentChannel;
    /** send_type 2: the child index where the next search starts. */
    private int roundRobinNext;
    /** Messages dropped because no channel could take them. */
    private final Streak noChannel = new Streak();
    /** Messages for a channel name (in {@code __temp__}) that is not a child. */
    private final Streak unknownChannel = new Streak();
    /** Messages whose {@code __send_type__} is unknown. */
    private final Streak badSendType = new Streak();
    /**
     * The {@code __temp__} node of each channel seen lately, made once and given to all its messages: a node, its
     * map and a reference node per message were 3.4 % of the core loop under sustained forwarding. Direct-mapped by
     * identity, so bounded whatever the number of connections; a slot taken by another channel is made again.
     */
    private final GObj[] tempChannels = new GObj[TEMP_SLOTS];
    private final ObjectNode[] tempNodes = new ObjectNode[TEMP_SLOTS];

    private IoGate(GObj gobj) {
        this.gobj = gobj;
        this.msgs = new RateWindow(gobj.yuno().clock(), () -> gobj.readLong(TX_MSGS), () -> gobj.readLong(RX_MSGS));
    }

    // --- Framework methods ---

    @Override
    public void onCreate() {
        checkSendType(gobj.readLong(SEND_TYPE));
    }

    @Override
    public void onWriting(String attr) {
        if (attr.equals(SEND_TYPE.name())) checkSendType(gobj.readLong(SEND_TYPE));
    }

    @Override
    public void onChildAdded(GObj child) {
        String gc = child.gclassName();
        if (!GClassNames.C_CHANNEL.equals(gc) && !GClassNames.C_TCP_S.equals(gc)) {
            Glog.error(gobj, "IOGate child must be a C_CHANNEL gclass", "child", child.shortName());
        }
    }

    /**
     * The envelope with the gate's counters and rates under {@code data} and one entry per channel under
     * {@code data.channels} (each channel read as its parent, which moves its own rate window).
     */
    @Override
    public ObjectNode onStats(String filter, ObjectNode kw, GObj src) {
        if ("__reset__".equals(filter)) {
            gobj.setLong(TX_MSGS, 0);
            gobj.setLong(RX_MSGS, 0);
        }
        ObjectNode data = msgs.readStats(filter);
        ObjectNode channels = data.putObject("channels");
        int i = 0;
        for (GObj ch : gobj.children()) {
            if (!isChannel(ch)) continue;
            String name = ch.name().isEmpty() ? "#" + i : ch.name();
            i++;
            channels.set(name, ch.stats("__reset__".equals(filter) ? filter : "", null, gobj));
        }
        return Envelope.ok(data);
    }

    /**
     * A live upgrade: the rate window, the channel send_type 0 sticks to, where round robin goes next, and the
     * streaks of dropped messages. The channels themselves are children: they stay, open, with their own windows.
     */
    @Override
    public ObjectNode onExport() {
        ObjectNode s = Kw.create();
        s.set("msgs", msgs.exportState());
        if (currentChannel != null) Kw.putRef(s, "current_channel", currentChannel);
        s.put("round_robin_next", roundRobinNext);
        ObjectNode st = s.putObject("streaks");
        st.put("no_channel", noChannel.count());
        st.put("unknown_channel", unknownChannel.count());
        st.put("bad_send_type", badSendType.count());
        return s;
    }

    @Override
    public void onImport(ObjectNode state, int stateVersion) {
        if (stateVersion != STATE_VERSION) {
            throw new IllegalArgumentException("C_IOGATE takes state version " + STATE_VERSION + ", not " + stateVersion);
        }
        msgs.importState(state.get("msgs"));
        currentChannel = Kw.ref(state, "current_channel", GObj.class);
        roundRobinNext = state.path("round_robin_next").asInt(0);
        JsonNode st = state.path("streaks");
        noChannel.resume(st.path("no_channel").asLong(0));
        unknownChannel.resume(st.path("unknown_channel").asLong(0));
        badSendType.resume(st.path("bad_send_type").asLong(0));
    }

    /** The counters and the rates as last computed, without reading: the window does not move. */
    ObjectNode lastStats() {
        return msgs.putStats(Kw.create());
    }

    /** Yuneta's local method {@code channels_opened}: counted on request, never kept up to date per event. */
    public int channelsOpened() {
        int n = 0;
        for (GObj ch : gobj.children()) {
            if (isChannel(ch) && isOpened(ch)) n++;
        }
        return n;
    }

    // --- Commands ---

    private ObjectNode cmdViewChannels(ObjectNode kw, GObj src) {
        return forChannels(kw, null);
    }

    private ObjectNode cmdEnableChannel(ObjectNode kw, GObj src) {
        return forChannels(kw, GObj::enable);
    }

    private ObjectNode cmdDisableChannel(ObjectNode kw, GObj src) {
        return forChannels(kw, GObj::disable);
    }

    private ObjectNode cmdTraceOnChannel(ObjectNode kw, GObj src) {
        return forChannels(kw, ch -> setUserTraces(ch, true));
    }

    private ObjectNode cmdTraceOffChannel(ObjectNode kw, GObj src) {
        return forChannels(kw, ch -> setUserTraces(ch, false));
    }

    private ObjectNode cmdResetStatsChannel(ObjectNode kw, GObj src) {
        return forChannels(kw, ch -> {
            ch.stats("__reset__", null, gobj);
            return 0;
        });
    }

    private interface ChannelOp {
        int apply(GObj channel);
    }

    /**
     * Applies {@code op} to the channels selected by {@code channel_name} (a regular expression searched in
     * the name) and {@code opened}, then answers the view-channels table of the same selection. A name that
     * matches no channel is an error (Yuneta's loop spun forever on it).
     */
    private ObjectNode forChannels(ObjectNode kw, ChannelOp op) {
        String channelName = Kw.getString(kw, "channel_name", "");
        boolean onlyOpened = Kw.getBool(kw, "opened", false);
        Pattern re = null;
        if (!channelName.isEmpty()) {
            try {
                re = Pattern.compile(channelName);
            } catch (PatternSyntaxException e) {
                return Envelope.error("regcomp() failed");
            }
        }
        List<GObj> selected = new ArrayList<>();
        boolean nameMatched = false;
        for (GObj ch : gobj.children()) {
            if (!isChannel(ch)) continue;
            if (re != null && !re.matcher(ch.name()).find()) continue;
            nameMatched = true;
            if (onlyOpened && !isOpened(ch)) continue;
            selected.add(ch);
        }
        if (re != null && !nameMatched) {
            return Envelope.error("channel_name '" + channelName + "' matches no channel");
        }
        if (op != null) {
            for (GObj ch : selected) op.apply(ch);
        }
        return viewChannels(selected);
    }

    private static final int[] WIDTHS = {22, 6, 12, 12, 8, 8, 8, 8, 20, 20};
    private static final String[] HEADERS = {"  Channel name", "Opened", "Tx Msgs", "Rx Msgs", "Tx m/s", "Rx m/s",
            "Traced", "Disabled", "Sockname", "Peername"};

    private ObjectNode viewChannels(List<GObj> channels) {
        ArrayNode rows = F.arrayNode();
        rows.add(row(HEADERS));
        String[] sep = new String[WIDTHS.length];
        for (int i = 0; i < WIDTHS.length; i++) sep[i] = "=".repeat(WIDTHS[i]);
        rows.add(row(sep));
        for (GObj ch : channels) {
            // Read as the parent: the bare counters (and the channel's rate window moves, as in Yuneta).
            ObjectNode st = ch.stats("", null, gobj);
            rows.add(row(new String[] {
                    ch.name(),
                    isOpened(ch) ? "Y" : "",
                    String.valueOf(st.path(RateWindow.TX_MSGS).asLong()),
                    String.valueOf(st.path(RateWindow.RX_MSGS).asLong()),
                    String.valueOf(st.path(RateWindow.TX_MSGSEC).asLong()),
                    String.valueOf(st.path(RateWindow.RX_MSGSEC).asLong()),
                    hasUserTraces(ch) ? "Y" : "",
                    ch.isDisabled() ? "Y" : "",
                    stackAttr(ch, Kw.SOCKNAME),
                    stackAttr(ch, Kw.PEERNAME)}));
        }
        String comment = gobj.yuno().role() + "^" + gobj.yuno().name() + ": " + (rows.size() - 2) + " channels";
        return Envelope.ok(comment, rows);
    }

    private static String row(String[] cols) {
        StringBuilder sb = new StringBuilder(140);
        for (int i = 0; i < cols.length; i++) {
            if (i > 0) sb.append(' ');
            String c = cols[i] == null ? "" : cols[i];
            if (c.length() > WIDTHS[i]) c = c.substring(0, WIDTHS[i]);
            sb.append(c);
            if (i < cols.length - 1) sb.append(" ".repeat(WIDTHS[i] - c.length()));
        }
        return sb.toString();
    }

    /** A string attribute (sockname, peername) of the first gobj down the channel's stack that has it. */
    private static String stackAttr(GObj ch, String attr) {
        GObj g = ch;
        for (int guard = 0; g != null && guard < 16; guard++, g = g.bottom()) {
            JsonNode v = g.readAttr(attr);
            if (v != null && !v.isNull() && !v.asText().isEmpty()) return v.asText();
        }
        return "";
    }

    private static int setUserTraces(GObj ch, boolean on) {
        for (String level : ch.gclass().traceLevels().keySet()) ch.setTrace(level, on);
        return 0;
    }

    private static boolean hasUserTraces(GObj ch) {
        for (String level : ch.gclass().traceLevels().keySet()) {
            if (ch.isTraced(level)) return true;
        }
        return false;
    }

    // --- Actions ---

    private int acOnMessage(String event, ObjectNode kw, GObj src) {
        gobj.add(RX_MSGS, Batches.messagesOf(kw));
        putTemp(kw, src);
        if (gobj.isTraced(TRACE_MESSAGES)) traceMessage("<- " + event, kw, src);
        return gobj.publish(event, kw);
    }

    private int acOnIevMessage(String event, ObjectNode kw, GObj src) {
        JsonNode iev = kw.remove(Kw.IEV_EVENT);
        if (iev == null || !iev.isTextual() || iev.asText().isEmpty()) {
            Glog.error(gobj, "EV_ON_IEV_MESSAGE without " + Kw.IEV_EVENT, "channel", src == null ? "" : src.name());
            Kw.release(kw);
            return -1;
        }
        gobj.inc(RX_MSGS);
        putTemp(kw, src);
        if (gobj.isTraced(TRACE_MESSAGES)) traceMessage("<- " + iev.asText(), kw, src);
        return gobj.publish(iev.asText(), kw);
    }

    private int acOnOpen(String event, ObjectNode kw, GObj src) {
        putTemp(kw, src);
        if (gobj.isTraced(TRACE_CONNECTION)) Glog.info(gobj, "ON_OPEN", "channel", src == null ? "" : src.name());
        return gobj.publish(Ev.EV_ON_OPEN, kw);
    }

    private int acOnClose(String event, ObjectNode kw, GObj src) {
        putTemp(kw, src);
        if (gobj.isTraced(TRACE_CONNECTION)) Glog.info(gobj, "ON_CLOSE", "channel", src == null ? "" : src.name());
        return gobj.publish(Ev.EV_ON_CLOSE, kw);
    }

    private int acStopped(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        if (src != null && src != gobj && src.isVolatile() && src.parent() == gobj) src.destroy();
        return 0;
    }

    /** EV_SEND_MESSAGE and EV_SEND_IEV: choose the channel(s) and send the same event. Always answers 0. */
    private int acSendMessage(String event, ObjectNode kw, GObj src) {
        int[] batch = Batches.rangesOf(kw);
        if (batch != null) return sendBatch(event, kw, src, batch);
        JsonNode temp = kw.get(Kw.TEMP);
        if (temp != null && temp.isObject()) {
            GObj ch = Kw.ref(temp, Kw.TEMP_CHANNEL_GOBJ, GObj.class);
            if (ch == null) {
                String name = Kw.getString(temp, Kw.TEMP_CHANNEL, "");
                if (!name.isEmpty()) {
                    ch = gobj.child(name);
                    if (ch == null) {
                        if (unknownChannel.hit()) {
                            Glog.error(gobj, "No channel FOUND to send: messages for it are dropped "
                                    + "(said once until a named channel is found)", "channel", name, "event", event);
                        }
                        Kw.release(kw);
                        return 0;
                    }
                    if (unknownChannel.active()) {
                        Glog.info(gobj, "Named channels found again", "dropped", unknownChannel.end());
                    }
                }
            }
            if (ch != null) {
                sendTo(ch, event, kw);
                return 0;
            }
        }
        long sendType = Kw.getLong(kw, Kw.SEND_TYPE, gobj.readLong(SEND_TYPE));
        if (sendType == SEND_ALL) {
            broadcast(event, kw);
        } else if (sendType == SEND_ROUND_ROBIN) {
            GObj ch = nextRoundRobin();
            if (ch == null) noChannel(event, kw);
            else sendTo(ch, event, kw);
        } else {
            if (sendType != SEND_ONE) {
                if (badSendType.hit()) {
                    Glog.error(gobj, "send_type unknown, sending to one channel (said once until a known one comes)",
                            "send_type", sendType);
                }
            } else if (badSendType.active()) {
                Glog.info(gobj, "Known send types again", "unknown", badSendType.end());
            }
            GObj ch = stickyChannel();
            if (ch == null) noChannel(event, kw);
            else sendTo(ch, event, kw);
        }
        return 0;
    }

    /**
     * A send batch ({@link Kw#BATCH}) goes whole to the one channel that would take each of its messages (the channel
     * its {@code __temp__} holds, or the one send_type 0 sticks to) when that channel takes send batches. Otherwise
     * each message goes as if it came alone: round robin and send-to-all choose per message, and a channel named by
     * name or one without batches gets them one by one.
     */
    private int sendBatch(String event, ObjectNode kw, GObj src, int[] batch) {
        GObj ch = null;
        JsonNode temp = kw.get(Kw.TEMP);
        if (temp != null) {
            // the channel a reply names by its gobj (the relay's acks); a name alone is looked up per message below
            ch = Kw.ref(temp, Kw.TEMP_CHANNEL_GOBJ, GObj.class);
        } else if (!kw.has(Kw.SEND_TYPE) && gobj.readLong(SEND_TYPE) == SEND_ONE) {
            ch = stickyChannel();
        }
        if (ch != null && ch.gclass().takesSendBatches()) {
            sendTo(ch, event, kw, batch.length / 2);
            return 0;
        }
        Batches.sendApart(kw, one -> acSendMessage(event, one, src));
        return 0;
    }

    private void sendTo(GObj ch, String event, ObjectNode kw) {
        sendTo(ch, event, kw, 1);
    }

    /** Sends {@code kw}, holding {@code messages} (a send batch's, else 1), to {@code ch}; counted when taken. */
    private void sendTo(GObj ch, String event, ObjectNode kw, int messages) {
        if (gobj.isTraced(TRACE_MESSAGES)) traceMessage("-> " + event, kw, ch);
        if (ch.send(event, kw, gobj) == 0) {
            gobj.add(TX_MSGS, messages);
            channelTookOne();
        }
    }

    /** Said once for a run of dropped messages: with every channel down, each message would say it. */
    private void noChannel(String event, ObjectNode kw) {
        if (noChannel.hit()) {
            Glog.error(gobj, "No channel FOUND to send: messages are dropped until a channel takes one",
                    "event", event);
        }
        Kw.release(kw);
    }

    private void channelTookOne() {
        if (noChannel.active()) Glog.info(gobj, "A channel takes messages again", "dropped", noChannel.end());
    }

    /**
     * send_type 1. Every open channel but the last gets a copy of the kw whose gbuffer is a copy of the bytes
     * left to read; the last one takes the original kw and buffer. The copies are made from the original
     * before it is handed on, and a channel reads out only its own buffer, so every channel sends the same
     * bytes (the C code shared one buffer and the 2nd and later channels sent empty frames).
     */
    private void broadcast(String event, ObjectNode kw) {
        List<GObj> open = new ArrayList<>();
        for (GObj ch : gobj.children()) {
            if (isChannel(ch) && isOpened(ch)) open.add(ch);
        }
        if (open.isEmpty()) {
            noChannel(event, kw);
            return;
        }
        ByteBuf buf = Kw.gbuffer(kw);
        int last = open.size() - 1;
        int sent = 0;
        for (int i = 0; i < last; i++) {
            ObjectNode k;
            if (buf != null) {
                k = kw.deepCopy();
                // copy(): the readable bytes only, in a buffer of their own; the original's index does not move.
                Kw.putRef(k, Kw.GBUFFER, buf.copy());
            } else {
                k = kw;   // no buffer: the JSON is shared, as Yuneta's kw_incref
            }
            if (gobj.isTraced(TRACE_MESSAGES)) traceMessage("-> " + event, k, open.get(i));
            if (open.get(i).send(event, k, gobj) == 0) sent++;
        }
        if (gobj.isTraced(TRACE_MESSAGES)) traceMessage("-> " + event, kw, open.get(last));
        if (open.get(last).send(event, kw, gobj) == 0) sent++;
        gobj.add(TX_MSGS, sent);
        if (sent > 0) {
            channelTookOne();
        } else if (noChannel.hit()) {
            Glog.error(gobj, "No channel FOUND to send: messages are dropped until a channel takes one",
                    "event", event);
        }
    }

    /** send_type 0: the current channel while it is open and enabled, else the next open one after it. */
    private GObj stickyChannel() {
        GObj cur = currentChannel;
        if (cur != null && !cur.isDestroyed() && cur.parent() == gobj && !cur.isDisabled() && isOpened(cur)) {
            return cur;
        }
        List<GObj> children = gobj.children();
        int n = children.size();
        if (n == 0) return null;
        int start = cur == null ? 0 : Math.max(0, children.indexOf(cur));
        for (int k = 0; k < n; k++) {
            GObj ch = children.get((start + k) % n);
            if (isChannel(ch) && !ch.isDisabled() && isOpened(ch)) {
                currentChannel = ch;
                return ch;
            }
        }
        return null;
    }

    /** send_type 2: the next open and enabled channel after the last one used, wrapping. */
    private GObj nextRoundRobin() {
        List<GObj> children = gobj.children();
        int n = children.size();
        for (int k = 0; k < n; k++) {
            int idx = (roundRobinNext + k) % n;
            GObj ch = children.get(idx);
            if (isChannel(ch) && !ch.isDisabled() && isOpened(ch)) {
                roundRobinNext = (idx + 1) % n;
                return ch;
            }
        }
        return null;
    }

    /**
     * EV_DROP: to the gate's bottom (a gate with one channel), else to the channel of {@code __temp__}, each
     * only if opened; without a target, to every opened channel.
     */
    private int acDrop(String event, ObjectNode kw, GObj src) {
        GObj target = gobj.bottom();
        JsonNode temp = kw.get(Kw.TEMP);
        if (target == null && temp != null && temp.isObject()) {
            target = Kw.ref(temp, Kw.TEMP_CHANNEL_GOBJ, GObj.class);
            if (target == null) {
                String name = Kw.getString(temp, Kw.TEMP_CHANNEL, "");
                if (!name.isEmpty()) {
                    target = gobj.child(name);
                    if (target == null) {
                        Glog.error(gobj, "channel NOT FOUND", "channel", name);
                        Kw.release(kw);
                        return -1;
                    }
                }
            }
        }
        Kw.release(kw);
        if (target != null) {
            if (isOpened(target)) target.send(Ev.EV_DROP, null, gobj);
            return 0;
        }
        Glog.debug(gobj, "Dropping all channels");
        for (GObj ch : gobj.children()) {
            if (isChannel(ch) && isOpened(ch)) ch.send(Ev.EV_DROP, null, gobj);
        }
        return 0;
    }

    /**
     * EV_PAUSE_INPUT / EV_RESUME_INPUT (input flow control: the consumer's credit): to the channel of
     * {@code __temp__} (the one the message came from), else to every open channel. The kw is passed to the one
     * target, or copied per channel.
     */
    private int acFlowControl(String event, ObjectNode kw, GObj src) {
        JsonNode temp = kw.get(Kw.TEMP);
        GObj target = null;
        if (temp != null && temp.isObject()) {
            target = Kw.ref(temp, Kw.TEMP_CHANNEL_GOBJ, GObj.class);
            if (target == null) {
                String name = Kw.getString(temp, Kw.TEMP_CHANNEL, "");
                if (!name.isEmpty()) target = gobj.child(name);
            }
        }
        if (target != null) return target.send(event, kw, gobj);
        for (GObj ch : gobj.children()) {
            if (isChannel(ch) && isOpened(ch)) ch.send(event, Kw.withoutRefs(kw), gobj);
        }
        Kw.release(kw);
        return 0;
    }

    // --- Local methods ---

    private static void checkSendType(long sendType) {
        if (sendType != SEND_ONE && sendType != SEND_ALL && sendType != SEND_ROUND_ROBIN) {
            throw new IllegalArgumentException("send_type must be 0 (one), 1 (all) or 2 (round robin), not " + sendType);
        }
    }

    private void putTemp(ObjectNode kw, GObj channel) {
        kw.set(Kw.TEMP, temp(channel));
    }

    /**
     * The channel's {@code __temp__}: the node kept for it when nobody changed it (a receiver may add to the node it
     * got, which must not reach the next message), else a new one, kept.
     */
    ObjectNode temp(GObj channel) {
        if (channel == null) return newTemp(null);
        int slot = System.identityHashCode(channel) & (TEMP_SLOTS - 1);
        ObjectNode kept = tempNodes[slot];
        if (tempChannels[slot] == channel && unchanged(kept, channel)) return kept;
        ObjectNode made = newTemp(channel);
        tempChannels[slot] = channel;
        tempNodes[slot] = made;
        return made;
    }

    private static ObjectNode newTemp(GObj channel) {
        ObjectNode temp = JsonNodeFactory.instance.objectNode();
        temp.put(Kw.TEMP_CHANNEL, channel == null ? "" : channel.name());
        if (channel != null) Kw.putRef(temp, Kw.TEMP_CHANNEL_GOBJ, channel);
        return temp;
    }

    private static boolean unchanged(ObjectNode temp, GObj channel) {
        if (temp.size() != 2) return false;
        JsonNode name = temp.get(Kw.TEMP_CHANNEL);
        return name != null && channel.name().equals(name.textValue())
                && Kw.ref(temp, Kw.TEMP_CHANNEL_GOBJ, GObj.class) == channel;
    }

    private static boolean isChannel(GObj g) {
        return GClassNames.C_CHANNEL.equals(g.gclassName());
    }

    /** A channel is open in ST_OPENED (api {@link St}): the gate reads no attribute of another gclass. */
    private static boolean isOpened(GObj ch) {
        return ch.inState(St.ST_OPENED);
    }

    private void traceMessage(String what, ObjectNode kw, GObj channel) {
        ByteBuf b = Kw.gbuffer(kw);
        Glog.info(gobj, what, "channel", channel == null ? "" : channel.name(),
                "bytes", b == null ? -1 : b.readableBytes(), "kw", Kw.toJson(kw));
    }
}
