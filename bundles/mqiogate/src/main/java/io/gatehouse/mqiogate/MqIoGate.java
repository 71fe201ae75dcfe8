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
import io.gatehouse.api.Glog;
import io.gatehouse.api.Kw;
import io.gatehouse.api.Param;
import io.gatehouse.api.St;
import io.netty.buffer.ByteBuf;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * C_MQIOGATE: sends each message to one of its C_QIOGATE children, chosen from a key of the message, or to all
 * of them. Each child is a persistent queue towards one destination, so an outage of one destination does not
 * stop the others. Port of {@code kernel/c/root-linux/src/c_mqiogate.c} @6043415, with the seeds' rules
 * (children must be C_QIOGATE, stats with the queue counters of each child) and a third method,
 * {@code consistent}.
 *
 * <p>Methods:
 * <ul>
 *   <li>{@code lastdigits}: the last {@code digits} characters of {@code kw[key]}, read as decimal if they are
 *       all digits, else as hexadecimal (the longest valid prefix, C {@code strtol} style; nothing valid = 0),
 *       modulo the number of children. A key that is missing, not a string or empty is logged as an error and
 *       goes to the first child.</li>
 *   <li>{@code broadcast}: every child persists its own copy.</li>
 *   <li>{@code consistent}: rendezvous (highest random weight) hashing by child name:
 *       {@code score(child) = fmix64(FNV-1a-64(UTF-8(child name) + 0x00 + UTF-8(key)))}, compared unsigned;
 *       the highest score wins (ties: the earlier child). Adding a child moves only the keys that now score
 *       highest on it (about 1/(N+1) of them); removing or reordering children moves only the removed child's
 *       keys. The key is a string, or an integral number taken as its decimal text.</li>
 * </ul>
 *
 * <p>Durability: C_MQIOGATE {@link GClassSpec#confirmsDurability() confirms durability} for its children. A
 * routed message goes to its child with the sender's {@link Kw#DURABLE} dict and the sender as source, so the
 * child answers {@link Ev#EV_ON_DURABLE} to the sender itself. With {@code broadcast} every copy carries a join:
 * the children answer this gate, and the sender gets its EV_ON_DURABLE once, when every child has its copy
 * durable, and never if any child could not store its copy.
 */
public final class MqIoGate implements GObjBehavior {

    // --- Constants ---

    static final String LASTDIGITS = "lastdigits";
    static final String BROADCAST = "broadcast";
    static final String CONSISTENT = "consistent";

    // --- Attributes ---

    static final Attr<String> METHOD = Attr.string("method", LASTDIGITS, AttrFlag.RD,
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

    public static final GClassSpec<MqIoGate> SPEC = GClassSpec.builder(GClassNames.C_MQIOGATE, MqIoGate.class)
            .description("Sends each message to one of its C_QIOGATE children (lastdigits, consistent) or to all")
            .attrs(METHOD, DIGITS, KEY)
            .fsm(FSM)
            .command("view-channels", "View the channels of every C_IOGATE below", MqIoGate::cmdViewChannels,
                    Param.string("channel_name", "", "Regular expression searched in the channel name"),
                    Param.bool("opened", "false", "Only opened channels"))
            .command("which-child", "Which child a key goes to with the configured method", MqIoGate::cmdWhichChild,
                    Param.string("key", null, "The key value (a string)"))
            .traceLevel(TRACE_MESSAGES, "Trace which child each message is routed to")
            .confirmsDurability()
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(MqIoGate::new)
            .build();

    /** In the {@link Kw#DURABLE} dict of a broadcast copy: the {@link Join} of its message (a reference). */
    private static final String JOIN = "join";

    /** The copies of one broadcast message still to be durable, and whom to tell when they all are. */
    private static final class Join {
        final ObjectNode durable;
        final GObj replyTo;
        int left;
        boolean failed;

        Join(ObjectNode durable, GObj replyTo, int copies) {
            this.durable = durable;
            this.replyTo = replyTo;
            this.left = copies;
        }
    }

    // --- Private data ---

    private final GObj gobj;
    private String method;

    MqIoGate(GObj gobj) {
        this.gobj = gobj;
    }

    // --- Framework methods ---

    @Override
    public void onCreate() {
        method = String.valueOf(gobj.read(METHOD)).trim().toLowerCase(Locale.ROOT);
        if (!method.equals(LASTDIGITS) && !method.equals(BROADCAST) && !method.equals(CONSISTENT)) {
            throw new IllegalArgumentException("method '" + gobj.read(METHOD)
                    + "' unknown: use lastdigits, broadcast or consistent");
        }
        if (!method.equals(BROADCAST)) {
            String key = gobj.read(KEY);
            if (key == null || key.isEmpty()) throw new IllegalArgumentException("key EMPTY");
        }
        if (method.equals(LASTDIGITS) && gobj.readLong(DIGITS) < 1) {
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

    private List<GObj> destinations() {
        List<GObj> out = new ArrayList<>();
        for (GObj c : gobj.children()) {
            if (GClassNames.C_QIOGATE.equals(c.gclassName()) && !c.isDestroyed()) out.add(c);
        }
        return out;
    }

    // --- Actions ---

    private int acSendMessage(String event, ObjectNode kw, GObj src) {
        List<GObj> dst = destinations();
        if (dst.isEmpty()) {
            Glog.error(gobj, "C_QIOGATE WITHOUT destine");
            Kw.release(kw);
            return -1;
        }
        if (method.equals(BROADCAST)) return broadcast(dst, kw, src);
        int i = method.equals(CONSISTENT) ? consistentIndex(kw, dst) : lastdigitsIndex(kw, dst.size());
        GObj child = dst.get(i);
        if (gobj.isTraced(TRACE_MESSAGES)) Glog.info(gobj, "message routed", "child", child.name(), "method", method);
        // The sender stays the source: the child answers EV_ON_DURABLE to it, not to this gate.
        return child.send(Ev.EV_SEND_MESSAGE, kw, src);
    }

    /** A child has a broadcast copy durable: the sender is told when the last copy is. */
    private int acOnDurable(String event, ObjectNode kw, GObj src) {
        Join j = Kw.ref(kw, JOIN, Join.class);
        if (j == null || j.failed || --j.left > 0) return 0;
        if (j.replyTo != null && !j.replyTo.isDestroyed()) j.replyTo.send(Ev.EV_ON_DURABLE, j.durable, gobj);
        return 0;
    }

    /**
     * Every child gets its own copy (JSON deep-copied, gbuffer duplicated with its own read index); the last
     * child takes the original. The sender's EV_ON_DURABLE waits for every child's copy (a {@link Join}).
     */
    private int broadcast(List<GObj> dst, ObjectNode kw, GObj src) {
        JsonNode d = kw.remove(Kw.DURABLE);
        Join join = d instanceof ObjectNode ? new Join((ObjectNode) d, src, dst.size()) : null;
        ByteBuf buf = Kw.gbuffer(kw);
        int ret = 0;
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
                if (join != null) join.failed = true;
                Glog.error(gobj, "Broadcast: a child could not store its copy", "child", dst.get(i).name());
            }
        }
        return ret;
    }

    int lastdigitsIndex(JsonNode kw, int n) {
        String path = gobj.read(KEY);
        JsonNode v = Kw.get(kw, path);
        if (v == null || v.isNull()) {
            Glog.error(gobj, "path NOT FOUND, message goes to the first child", "key", path);
            return 0;
        }
        if (!v.isTextual()) {
            Glog.error(gobj, "path MUST BE a json str, message goes to the first child", "key", path,
                    "type", v.getNodeType().name().toLowerCase(Locale.ROOT));
            return 0;
        }
        String s = v.asText();
        if (s.isEmpty()) {
            Glog.error(gobj, "key value WITHOUT LENGTH, message goes to the first child", "key", path);
            return 0;
        }
        return lastdigits(s, (int) Math.min(Integer.MAX_VALUE, gobj.readLong(DIGITS)), n);
    }

    /** The child index of a non-empty key value with {@code lastdigits}. */
    static int lastdigits(String value, int digits, int n) {
        String tail = value.substring(Math.max(0, value.length() - digits));
        if (tail.length() <= 18 && allDecimal(tail)) {
            return (int) (Long.parseLong(tail) % n);   // fits a long: the usual case, no BigInteger per message
        }
        BigInteger x = allDecimal(tail) ? new BigInteger(tail) : hexPrefix(tail);
        if (x.signum() < 0) return 0;
        return x.mod(BigInteger.valueOf(n)).intValue();
    }

    private static boolean allDecimal(String s) {
        if (s.isEmpty()) return false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') return false;
        }
        return true;
    }

    /** C strtol(s, NULL, 16): leading blanks, a sign, an optional 0x, then hex digits while valid; none = 0. */
    static BigInteger hexPrefix(String s) {
        int i = 0;
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        boolean neg = false;
        if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) {
            neg = s.charAt(i) == '-';
            i++;
        }
        if (i + 2 < s.length() && s.charAt(i) == '0' && (s.charAt(i + 1) == 'x' || s.charAt(i + 1) == 'X')
                && hex(s.charAt(i + 2)) >= 0) {
            i += 2;
        }
        int start = i;
        while (i < s.length() && hex(s.charAt(i)) >= 0) i++;
        if (i == start) return BigInteger.ZERO;
        BigInteger v = new BigInteger(s.substring(start, i), 16);
        return neg ? v.negate() : v;
    }

    private static int hex(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }

    int consistentIndex(JsonNode kw, List<GObj> dst) {
        String path = gobj.read(KEY);
        String key = consistentKey(Kw.get(kw, path));
        if (key == null) {
            Glog.error(gobj, "key missing, empty or not a string/integer: message goes to the first child",
                    "key", path);
            return 0;
        }
        List<String> names = new ArrayList<>(dst.size());
        for (GObj c : dst) names.add(c.name());
        return rendezvous(key, names);
    }

    static String consistentKey(JsonNode v) {
        if (v == null) return null;
        String s;
        if (v.isTextual()) s = v.asText();
        else if (v.isIntegralNumber()) s = v.asText();
        else return null;
        return s.isEmpty() ? null : s;
    }

    /** Rendezvous hashing: the index of the name with the highest score for the key (ties: the first). */
    static int rendezvous(String key, List<String> names) {
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        int best = 0;
        long bestScore = 0;
        for (int i = 0; i < names.size(); i++) {
            long s = score(names.get(i).getBytes(StandardCharsets.UTF_8), k);
            if (i == 0 || Long.compareUnsigned(s, bestScore) > 0) {
                best = i;
                bestScore = s;
            }
        }
        return best;
    }

    /** {@code fmix64(FNV-1a-64(name + 0x00 + key))}. */
    static long score(byte[] name, byte[] key) {
        long h = 0xcbf29ce484222325L;
        for (byte b : name) {
            h ^= (b & 0xff);
            h *= 0x100000001b3L;
        }
        h *= 0x100000001b3L; // the 0x00 separator byte (xor with 0 is a no-op)
        for (byte b : key) {
            h ^= (b & 0xff);
            h *= 0x100000001b3L;
        }
        return fmix64(h);
    }

    /** MurmurHash3's 64-bit finaliser: every input bit affects every output bit. */
    static long fmix64(long h) {
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return h;
    }

    // --- Stats ---

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

    private static void collectIoGates(GObj g, List<GObj> out) {
        for (GObj c : g.children()) {
            if (GClassNames.C_IOGATE.equals(c.gclassName())) out.add(c);
            collectIoGates(c, out);
        }
    }

    private ObjectNode cmdWhichChild(ObjectNode kw, GObj src) {
        JsonNode k = kw.get("key");
        if (k == null || k.isNull()) return Envelope.error("which-child needs key=VALUE");
        List<GObj> dst = destinations();
        if (dst.isEmpty()) return Envelope.error("C_QIOGATE WITHOUT destine");
        ObjectNode probe = Kw.create();
        Kw.set(probe, gobj.read(KEY), k.deepCopy());
        ObjectNode d = Kw.create();
        d.put("method", method);
        d.set("key", k.deepCopy());
        if (method.equals(BROADCAST)) {
            ArrayNode all = d.putArray("children");
            for (GObj c : dst) all.add(c.name());
            return Envelope.ok(d);
        }
        int i = method.equals(CONSISTENT) ? consistentIndex(probe, dst) : lastdigitsIndex(probe, dst.size());
        d.put("index", i);
        d.put("child", dst.get(i).name());
        return Envelope.ok(d);
    }
}
