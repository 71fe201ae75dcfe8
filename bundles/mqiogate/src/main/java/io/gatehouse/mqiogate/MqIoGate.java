// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
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
import io.gatehouse.support.Glog;
import io.gatehouse.support.Streak;
import io.netty.buffer.ByteBuf;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * C_MQIOGATE: sends each message to one of its C_QIOGATE children, chosen from a key of the message, or to all
 * of them. Each child is a persistent queue towards one destination, so an outage of one destination does not
 * stop the others.
 *
 * <p>Port of {@code kernel/c/root-linux/src/c_mqiogate.c} @6043415, with what the C code lacks: children must be
 * C_QIOGATE, an unknown method is a config error, stats carry each child's queue counters, and a third method,
 * {@code consistent}. The key functions are in {@link KeyRouting}.
 *
 * <p>Methods: {@code lastdigits} (the last {@code digits} characters of {@code kw[key]}, decimal or hexadecimal,
 * modulo the number of children), {@code consistent} (rendezvous hashing by child name) and {@code broadcast}
 * (every child persists its own copy). A message whose key is missing, not a string or empty goes to the first
 * child; that is said once until a message has its key again.
 *
 * <p>C_MQIOGATE {@link GClassSpec#takesJsonRecords() takes JSON records} as its children do: a message handed as
 * its record's bytes ({@link Kw#JSON_RECORD}, from C_RELAY) is routed by a scan of the bytes for its key
 * ({@link RecordKey}, the same value as the dict's) and passed on as it came.
 *
 * <p>Durability: C_MQIOGATE {@link GClassSpec#confirmsDurability() confirms durability} for its children. A
 * routed message goes to its child with the sender's {@link Kw#DURABLE} dict and the sender as source, so the
 * child answers {@link Ev#EV_ON_DURABLE} to the sender itself. With {@code broadcast} every copy carries a join:
 * the children answer this gate, and the sender gets its EV_ON_DURABLE once, when every child has its copy
 * durable, and never if any child could not store its copy. It {@link GClassSpec#answersDurableTokens() answers
 * tokens} the same way: a routed message keeps its {@link Kw#DURABLE_TOKEN} and the child tells the sender (a child
 * whose revision does not answer tokens gets the token in a dict instead, and tells it in an EV_ON_DURABLE); a
 * broadcast's join holds the token, and the sender gets it in an {@link Ev#EV_ON_DURABLE_TOKENS} of its own.
 *
 * <p>Live upgrade: a join lives in the children's durability waits, not in this gate, and is a JSON dict (the
 * copies left, whether one failed) holding the sender and its dict by reference: api and Jackson types, which any
 * revision reads. So a join begun by one revision is completed by the next, with nothing to hand over for it.
 */
public final class MqIoGate implements GObjBehavior {

    // --- Attributes ---

    /** The values of {@code method}. */
    enum Method {
        LASTDIGITS, BROADCAST, CONSISTENT;

        /** The method of a configured name (any case, blanks around it ignored), or null for an unknown one. */
        static Method of(String name) {
            if (name == null) return null;
            switch (name.trim().toLowerCase(Locale.ROOT)) {
                case "lastdigits": return LASTDIGITS;
                case "broadcast": return BROADCAST;
                case "consistent": return CONSISTENT;
                default: return null;
            }
        }

        String configName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    static final Attr<String> METHOD = Attr.string("method", "lastdigits", AttrFlag.RD,
            "How a message finds its child: lastdigits, broadcast or consistent");
    static final Attr<Long> DIGITS = Attr.integer("digits", 1, AttrFlag.RD,
            "lastdigits: number of trailing characters of the key used");
    static final Attr<String> KEY = Attr.string("key", "id", AttrFlag.RD,
            "Path of the key in the message (backquote-separated for nesting)");

    // --- Trace levels ---

    static final String TRACE_MESSAGES = "messages";

    // --- FSM ---

    static final Fsm<MqIoGate> FSM = Fsm.<MqIoGate>builder()
        .state(St.ST_IDLE)
            .on(Ev.EV_SEND_MESSAGE, MqIoGate::acSendMessage)
            .on(Ev.EV_ON_DURABLE,   MqIoGate::acOnDurable)
            .ignore(Ev.EV_STOPPED)
        .build();

    // --- Spec ---

    /** The version of the state {@link #onExport} gives; {@link #onImport} takes this one only. */
    static final int STATE_VERSION = 1;

    public static final GClassSpec<MqIoGate> SPEC = GClassSpec.builder(GClassNames.C_MQIOGATE, MqIoGate.class)
            .description("Sends each message to one of its C_QIOGATE children (lastdigits, consistent) or to all")
            .attrs(METHOD, DIGITS, KEY)
            .fsm(FSM)
            .command("view-channels", "View the channels of every C_IOGATE below", MqIoGate::cmdViewChannels,
                    Param.string("channel_name", "", "Regular expression searched in the channel name"),
                    Param.bool("opened", "false", "Only opened channels"))
            .command("which-child", "Which child a key goes to with the configured method", MqIoGate::cmdWhichChild,
                    Param.string("key", null, "The key value (a string)"))
            .traceLevel(TRACE_MESSAGES, "Trace which child each message is routed to, or how many a broadcast reached")
            .answersDurableTokens()
            .takesJsonRecords()
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .stateVersion(STATE_VERSION)
            .factory(MqIoGate::new)
            .build();

    // --- Private data ---

    /**
     * In the {@link Kw#DURABLE} dict of a broadcast copy: the join of its message, one dict shared by reference by
     * every copy: {@code left} (copies still to be durable), {@code failed} (a child refused its copy), and
     * references to the sender ({@code reply_to}) and to the dict it sent ({@code durable}).
     */
    private static final String JOIN = "join";
    private static final String JOIN_LEFT = "left";
    private static final String JOIN_FAILED = "failed";
    private static final String JOIN_REPLY_TO = "reply_to";
    private static final String JOIN_DURABLE = "durable";

    /** Where a message goes: the child index, and why it went to the first child instead (null: it did not). */
    private record Route(int index, String fault) {}

    private final GObj gobj;
    private final Streak badKey = new Streak();
    private final Streak noDestination = new Streak();
    private final Streak copyRefused = new Streak();
    /** Reads the routing key of a message handed as its record's bytes. */
    private final RecordKey recordKey = new RecordKey();
    /** {@link #method()}: the attribute's string it was resolved from, and the method. */
    private String methodName;
    private Method methodOf;
    /** {@link #destinations()}: the children list they were taken from, and they. */
    private List<GObj> destinationsFrom;
    private List<GObj> destinations = List.of();

    MqIoGate(GObj gobj) {
        this.gobj = gobj;
    }

    // --- Framework methods ---

    @Override
    public void onCreate() {
        Method m = Method.of(gobj.read(METHOD));
        if (m == null) {
            throw new IllegalArgumentException("method '" + gobj.read(METHOD)
                    + "' unknown: use lastdigits, broadcast or consistent");
        }
        // The attribute holds the canonical name from now on: each message reads it as it is.
        gobj.set(METHOD, m.configName());
        if (m != Method.BROADCAST) {
            String key = gobj.read(KEY);
            if (key == null || key.isEmpty()) throw new IllegalArgumentException("key EMPTY");
        }
        if (m == Method.LASTDIGITS && gobj.readLong(DIGITS) < 1) {
            throw new IllegalArgumentException("digits must be >= 1");
        }
    }

    @Override
    public void onChildAdded(GObj child) {
        if (!GClassNames.C_QIOGATE.equals(child.gclassName())) {
            throw new IllegalArgumentException("children of C_MQIOGATE must be C_QIOGATE: '" + child.name()
                    + "' is " + child.gclassName());
        }
    }

    @Override
    public int onStart() {
        if (destinations().isEmpty()) Glog.error(gobj, "NO CHILDS of C_QIOGATE gclass");
        return 0;
    }

    /** A live upgrade: the streaks. The joins in flight need nothing (see the class comment). */
    @Override
    public ObjectNode onExport() {
        ObjectNode s = Kw.create();
        ObjectNode st = s.putObject("streaks");
        st.put("bad_key", badKey.count());
        st.put("no_destination", noDestination.count());
        st.put("copy_refused", copyRefused.count());
        return s;
    }

    @Override
    public void onImport(ObjectNode state, int stateVersion) {
        if (stateVersion != STATE_VERSION) {
            throw new IllegalArgumentException("C_MQIOGATE takes state version " + STATE_VERSION + ", not " + stateVersion);
        }
        JsonNode st = state.path("streaks");
        badKey.resume(st.path("bad_key").asLong(0));
        noDestination.resume(st.path("no_destination").asLong(0));
        copyRefused.resume(st.path("copy_refused").asLong(0));
    }

    /** The envelope with one entry per child: that C_QIOGATE's stats data (its bottom's counters and rates too). */
    @Override
    public ObjectNode onStats(String filter, ObjectNode kw, GObj src) {
        ObjectNode data = Kw.create();
        int i = 0;
        for (GObj c : destinations()) {
            String name = c.name().isEmpty() ? "#" + i : c.name();
            i++;
            ObjectNode st = c.stats(filter, kw, gobj);
            JsonNode d = st != null && st.has("result") && st.has("data") ? st.get("data") : st;
            data.set(name, d == null ? Kw.create() : d);
        }
        return Envelope.ok(data);
    }

    // --- Commands ---

    /** view-channels of every C_IOGATE below, in one table: header, separator, the channel rows of each gate. */
    private ObjectNode cmdViewChannels(ObjectNode kw, GObj src) {
        List<GObj> gates = new ArrayList<>();
        collectIoGates(gobj, gates);
        ArrayNode rows = Kw.MAPPER.createArrayNode();
        int channels = 0;
        int answered = 0;
        String firstError = null;
        for (GObj g : gates) {
            ObjectNode params = Kw.create();
            params.put("channel_name", Kw.getString(kw, "channel_name", ""));
            params.put("opened", Kw.getBool(kw, "opened", false));
            ObjectNode r = g.command("view-channels", params, gobj);
            if (Envelope.result(r) < 0) {
                if (firstError == null) firstError = r.path("comment").asText();
                continue;
            }
            answered++;
            JsonNode d = Envelope.data(r);
            if (d == null || !d.isArray()) continue;
            for (int j = 0; j < d.size(); j++) {
                if (j < 2) {
                    if (rows.size() < 2) rows.add(d.get(j));
                    continue;
                }
                rows.add(d.get(j));
                channels++;
            }
        }
        if (answered == 0 && firstError != null) return Envelope.error(firstError);
        return Envelope.ok(gobj.yuno().role() + "^" + gobj.yuno().name() + ": " + channels + " channels", rows);
    }

    /** Where a key goes with the configured method; a key the method cannot use answers its fault too. */
    private ObjectNode cmdWhichChild(ObjectNode kw, GObj src) {
        JsonNode k = kw.get("key");
        if (k == null || k.isNull()) return Envelope.error("which-child needs key=VALUE");
        List<GObj> dst = destinations();
        if (dst.isEmpty()) return Envelope.error("C_QIOGATE WITHOUT destine");
        ObjectNode d = Kw.create();
        d.put("method", gobj.read(METHOD));
        d.set("key", k.deepCopy());
        if (method() == Method.BROADCAST) {
            ArrayNode all = d.putArray("children");
            for (GObj c : dst) all.add(c.name());
            return Envelope.ok(d);
        }
        ObjectNode probe = Kw.create();
        Kw.set(probe, gobj.read(KEY), k.deepCopy());
        Route r = route(probe, dst);
        d.put("index", r.index());
        d.put("child", dst.get(r.index()).name());
        if (r.fault() != null) d.put("fault", r.fault());
        return Envelope.ok(d);
    }

    // --- Actions ---

    private int acSendMessage(String event, ObjectNode kw, GObj src) {
        List<GObj> dst = destinations();
        if (dst.isEmpty()) {
            if (noDestination.hit()) {
                Glog.error(gobj, "C_QIOGATE WITHOUT destine: messages are refused until a child is there");
            }
            Kw.release(kw);
            return -1;
        }
        if (noDestination.active()) Glog.info(gobj, "C_QIOGATE children back", "refused", noDestination.end());
        if (method() == Method.BROADCAST) return broadcast(dst, kw, src);
        Route r = route(kw, dst);
        if (r.fault() != null) {
            if (badKey.hit()) {
                Glog.error(gobj, r.fault() + ": messages go to the first child (said once until a message has its key)",
                        "key", gobj.read(KEY), "method", gobj.read(METHOD));
            }
        } else if (badKey.active()) {
            Glog.info(gobj, "Messages carry their key again", "sent_to_first_child", badKey.end());
        }
        GObj child = dst.get(r.index());
        if (gobj.isTraced(TRACE_MESSAGES)) {
            Glog.info(gobj, "message routed", "child", child.name(), "method", gobj.read(METHOD));
        }
        if (!child.gclass().answersDurableTokens()) tokenInDict(kw);
        // The sender stays the source: the child answers EV_ON_DURABLE to it, not to this gate.
        return child.send(Ev.EV_SEND_MESSAGE, kw, src);
    }

    /** A child has a broadcast copy durable: the sender is told when the last copy is. */
    private int acOnDurable(String event, ObjectNode kw, GObj src) {
        ObjectNode j = Kw.ref(kw, JOIN, ObjectNode.class);
        if (j == null || j.path(JOIN_FAILED).asBoolean()) return 0;
        int left = j.path(JOIN_LEFT).asInt() - 1;
        j.put(JOIN_LEFT, left);
        if (left > 0) return 0;
        GObj replyTo = Kw.ref(j, JOIN_REPLY_TO, GObj.class);
        ObjectNode durable = Kw.ref(j, JOIN_DURABLE, ObjectNode.class);
        JsonNode token = j.get(Kw.DURABLE_TOKEN);
        if (replyTo == null || replyTo.isDestroyed()) return 0;
        if (durable != null) {
            replyTo.send(Ev.EV_ON_DURABLE, durable, gobj);
        } else if (token != null) {
            ObjectNode told = Kw.create();
            Kw.putRef(told, Kw.TOKENS, new long[] {token.asLong()});
            told.put(Kw.COUNT, 1);
            told.put(Kw.RESULT, 0);
            replyTo.send(Ev.EV_ON_DURABLE_TOKENS, told, gobj);
        }
        return 0;
    }

    /**
     * A child whose revision does not answer tokens: the sender's {@link Kw#DURABLE_TOKEN} goes in a
     * {@link Kw#DURABLE} dict under the same key, which the child hands back in its EV_ON_DURABLE.
     */
    private static void tokenInDict(ObjectNode kw) {
        JsonNode token = kw.remove(Kw.DURABLE_TOKEN);
        if (token != null && !kw.has(Kw.DURABLE)) kw.putObject(Kw.DURABLE).set(Kw.DURABLE_TOKEN, token);
    }

    // --- Local methods ---

    /**
     * The configured method, resolved again only when the attribute holds another string: every message asks, and
     * resolving the name each time (trim, lower case, a switch on its hash) was 4.7 % of the demo's HTTP core loop.
     */
    private Method method() {
        String name = gobj.read(METHOD);
        if (name != methodName) {
            methodOf = Method.of(name);
            methodName = name;
        }
        return methodOf;
    }

    /**
     * The C_QIOGATE children, taken again only when the children list is another one (the framework gives a new
     * list when a child comes or goes) or one of them was destroyed: every message asks, and a new list per
     * message was 3 % of the same loop.
     */
    private List<GObj> destinations() {
        List<GObj> children = gobj.children();
        if (children != destinationsFrom || anyDestroyed(destinations)) {
            List<GObj> out = new ArrayList<>();
            for (GObj c : children) {
                if (GClassNames.C_QIOGATE.equals(c.gclassName()) && !c.isDestroyed()) out.add(c);
            }
            destinations = java.util.Collections.unmodifiableList(out);
            destinationsFrom = children;
        }
        return destinations;
    }

    private static boolean anyDestroyed(List<GObj> gobjs) {
        for (int i = 0; i < gobjs.size(); i++) {
            if (gobjs.get(i).isDestroyed()) return true;
        }
        return false;
    }

    /** The child of a message with {@code lastdigits} or {@code consistent}: the first one when the key is unusable. */
    private Route route(JsonNode kw, List<GObj> dst) {
        ByteBuf record = kw instanceof ObjectNode && kw.path(Kw.JSON_RECORD).asBoolean(false)
                ? Kw.gbuffer((ObjectNode) kw) : null;
        int digits = (int) Math.min(Integer.MAX_VALUE, gobj.readLong(DIGITS));
        JsonNode v;
        if (record != null) {
            // a record's bytes (Kw.JSON_RECORD): the key read by a scan, no tree; the usual key, a string ending in
            // digits, routed from those bytes
            int child = recordKey.lastdigits(record, Kw.ref(kw, Kw.RECORD_FIELDS, int[].class), gobj.read(KEY),
                    digits, method() == Method.CONSISTENT ? 0 : dst.size());
            if (child >= 0) return new Route(child, null);
            v = recordKey.key();
        } else {
            v = Kw.get(kw, gobj.read(KEY));
        }
        if (method() == Method.CONSISTENT) {
            String key = KeyRouting.consistentKey(v);
            if (key == null) return new Route(0, "key missing, empty or not a string/integer");
            List<String> names = new ArrayList<>(dst.size());
            for (GObj c : dst) names.add(c.name());
            return new Route(KeyRouting.rendezvous(key, names), null);
        }
        String fault = KeyRouting.lastdigitsFault(v);
        if (fault != null) return new Route(0, fault);
        return new Route(KeyRouting.lastdigits(v.asText(), digits, dst.size()), null);
    }

    /**
     * Every child gets its own copy (JSON deep-copied, gbuffer duplicated with its own read index); the last
     * child takes the original. The sender's EV_ON_DURABLE waits for every child's copy (a {@link #JOIN join}).
     */
    private int broadcast(List<GObj> dst, ObjectNode kw, GObj src) {
        JsonNode d = kw.remove(Kw.DURABLE);
        JsonNode token = kw.remove(Kw.DURABLE_TOKEN);
        ObjectNode join = d instanceof ObjectNode ? join((ObjectNode) d, src, dst.size())
                : token != null && token.isIntegralNumber() ? join(null, src, dst.size()).put(Kw.DURABLE_TOKEN, token.asLong())
                : null;
        ByteBuf buf = Kw.gbuffer(kw);
        int ret = 0;
        int stored = 0;
        for (int i = 0; i < dst.size(); i++) {
            ObjectNode k = kw;
            if (i < dst.size() - 1) {
                k = kw.deepCopy();
                if (buf != null) Kw.putRef(k, Kw.GBUFFER, buf.retainedDuplicate());
            }
            if (join != null) Kw.putRef(k.putObject(Kw.DURABLE), JOIN, join);
            int r = dst.get(i).send(Ev.EV_SEND_MESSAGE, k, gobj);
            if (r < 0) {
                ret = r;
                if (join != null) join.put(JOIN_FAILED, true);
                if (copyRefused.hit()) {
                    Glog.error(gobj, "Broadcast: a child could not store its copy (said once until every child stores)",
                            "child", dst.get(i).name());
                }
            } else {
                stored++;
            }
        }
        if (stored == dst.size() && copyRefused.active()) {
            Glog.info(gobj, "Broadcast: every child stores its copy again", "refused", copyRefused.end());
        }
        if (gobj.isTraced(TRACE_MESSAGES)) {
            Glog.info(gobj, "message broadcast", "children", dst.size(), "stored", stored);
        }
        return ret;
    }

    /**
     * The join of a broadcast message of {@code copies} copies (see {@link #JOIN}): the sender's dict, or none when
     * it gave a token (the caller puts it in the join).
     */
    private static ObjectNode join(ObjectNode durable, GObj replyTo, int copies) {
        ObjectNode j = Kw.create();
        j.put(JOIN_LEFT, copies);
        j.put(JOIN_FAILED, false);
        if (replyTo != null) Kw.putRef(j, JOIN_REPLY_TO, replyTo);
        if (durable != null) Kw.putRef(j, JOIN_DURABLE, durable);
        return j;
    }

    private static void collectIoGates(GObj g, List<GObj> out) {
        for (GObj c : g.children()) {
            if (GClassNames.C_IOGATE.equals(c.gclassName())) out.add(c);
            collectIoGates(c, out);
        }
    }
}
