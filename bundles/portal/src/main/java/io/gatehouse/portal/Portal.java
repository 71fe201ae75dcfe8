// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.portal;

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
import io.gatehouse.api.Kw;
import io.gatehouse.api.Registry;
import io.gatehouse.api.St;
import io.gatehouse.support.Glog;
import io.gatehouse.support.Streak;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * C_PORTAL: a link from this hub to another hub, for the hub registry (docs/CONTROL.md). It connects to the
 * other hub's control endpoint over a C_PROT_TCP4H child (which makes its C_TCP; both found by gclass name), says
 * this hub's name, learns the other's from its answer, and from then on is the registry's link to that hub (and
 * to what its {@code alias}es name, e.g. {@code DEFAULT}). Messages arriving on it are delivered by the registry;
 * the transport reconnects as C_TCP does ({@code timeout_between_connections}, optional backoff). No C original:
 * after the portals of the Stem registry notes.
 *
 * <pre>
 *  ST_DISCONNECTED --EV_ON_OPEN (hello sent)--&gt; ST_WAIT_HELLO --hello answer--&gt; ST_CONNECTED
 *        ^                                          |  error / timeout_hello: drop    |
 *        +------------------ EV_ON_CLOSE -----------+---------------------------------+
 * </pre>
 *
 * Wire (TCP4H frames, JSON): {@code {"__portal__":"hello","hub":NAME,"token"?:T}} both ways once, then registry
 * messages {@code {"to","from","type","command"?,"kw"?,"id"?,"hops"?}} in both directions.
 *
 * <p>A hello that fails at every reconnect (refused, unanswered, the wrong hub) is said once until the portal
 * links, and the link then says how many attempts failed; frames that are not JSON are said once per streak.
 *
 * <p>Live upgrade: the FSM state, the attributes and the transport child stay in core; the behaviour hands over
 * its timer (hello timeout or transport retry, by deadline), its streaks, and the link object the registry knows.
 * That object stays registered (with its hub, aliases and learnt routes) and, once handed over, forwards to the
 * gobj's current behaviour; the portal registers itself in its place at the next close of the link.
 */
public final class Portal implements GObjBehavior, Registry.Link {
    public static final String GCLASS = "C_PORTAL";

    // --- Attributes ---

    static final Attr<String> URL = Attr.string("url", "", AttrFlag.RD,
            "Control endpoint of the other hub, tcp://host:port");
    static final Attr<String> HUB = Attr.string("hub", "", AttrFlag.RD,
            "Name the other hub must say; empty = whatever it says");
    static final Attr<JsonNode> ALIAS = Attr.json("alias", AttrType.JSON, null, AttrFlag.RD,
            "Link alias(es) of this portal: a name or a list, e.g. \"DEFAULT\"");
    static final Attr<String> TOKEN = Attr.string("token", "", AttrFlag.RD,
            "Token the other hub's control endpoint asks for");
    static final Attr<Long> TIMEOUT_BETWEEN_CONNECTIONS = Attr.integer("timeout_between_connections", 2000,
            AttrFlag.RD, "Reconnect delay, ms (C_TCP's)");
    static final Attr<Long> TIMEOUT_BETWEEN_CONNECTIONS_MAX = Attr.integer("timeout_between_connections_max", 0,
            AttrFlag.RD, "If greater than the base: exponential backoff cap, ms (C_TCP's)");
    static final Attr<Long> TIMEOUT_HELLO = Attr.integer("timeout_hello", 10000, AttrFlag.RD,
            "Time the other hub has to answer the hello, ms");
    static final Attr<Boolean> CONNECTED = Attr.bool("connected", false, AttrFlag.VOLATILE | AttrFlag.STATS,
            "Link open and hello answered");
    static final Attr<String> REMOTE_HUB = Attr.string("remote_hub", "", AttrFlag.STATS,
            "Name the other hub said (kept after a close)");
    static final Attr<Long> TX_MSGS = Attr.counter("txMsgs", AttrFlag.RSTATS, "Messages sent to the other hub");
    static final Attr<Long> RX_MSGS = Attr.counter("rxMsgs", AttrFlag.RSTATS, "Messages received from it");
    static final Attr<Long> BAD_MSGS = Attr.counter("bad_msgs", AttrFlag.RSTATS,
            "Frames received that were not JSON objects (logged, ignored)");
    static final Attr<Long> CONNXS = Attr.counter("connxs", 0, "Links opened (hello answered)");

    // --- Trace levels ---

    static final String TRACE_MESSAGES = "messages";

    // --- FSM ---

    static final String ST_WAIT_HELLO = "ST_WAIT_HELLO";

    static final Fsm<Portal> FSM = Fsm.<Portal>builder()
        .state(St.ST_DISCONNECTED)
            .on(Ev.EV_ON_OPEN,     Portal::acOnOpen,         ST_WAIT_HELLO)
            .on(Ev.EV_ON_CLOSE,    Portal::acOnClose)
            .on(Ev.EV_ON_MESSAGE,  Portal::acDiscard)
            .on(Ev.EV_TIMEOUT,     Portal::acRetryBottom)
        .state(ST_WAIT_HELLO)
            .on(Ev.EV_ON_MESSAGE,  Portal::acHello)
            .on(Ev.EV_ON_CLOSE,    Portal::acOnClose,        St.ST_DISCONNECTED)
            .on(Ev.EV_TIMEOUT,     Portal::acHelloTimeout)
        .state(St.ST_CONNECTED)
            .enteredByAction()
            .on(Ev.EV_ON_MESSAGE,  Portal::acMessage)
            .on(Ev.EV_ON_CLOSE,    Portal::acOnClose,        St.ST_DISCONNECTED)
            .ignore(Ev.EV_TIMEOUT)
        .build();

    // --- Spec ---

    /** The version of the state {@link #onExport} gives; {@link #onImport} takes this one only. */
    static final int STATE_VERSION = 1;

    public static final GClassSpec<Portal> SPEC = GClassSpec.builder(GCLASS, Portal.class)
            .description("Link to another hub for the hub registry: hello with the hub names, then registry messages")
            .attrs(URL, HUB, ALIAS, TOKEN, TIMEOUT_BETWEEN_CONNECTIONS, TIMEOUT_BETWEEN_CONNECTIONS_MAX, TIMEOUT_HELLO,
                    CONNECTED, REMOTE_HUB, TX_MSGS, RX_MSGS, BAD_MSGS, CONNXS)
            .fsm(FSM)
            .traceLevel(TRACE_MESSAGES, "Trace every registry message sent to or received from the other hub")
            .linkUp(CONNECTED)
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .stateVersion(STATE_VERSION)
            .factory(Portal::new)
            .build();

    // --- Private data ---

    /** While the transport gclass is not registered, the portal asks again this often, ms. */
    private static final long TRANSPORT_RETRY_MS = 1000;

    private final GObj gobj;
    private Cancellable timer = Cancellable.NONE;
    /** When {@link #timer} is due (the yuno's monotonic clock); -1 while none is armed. */
    private long timerDueMs = -1;
    /**
     * The link the registry knows for this portal: this behaviour, or the one of an older revision, which forwards
     * to the gobj's current behaviour ({@link #handedOver}) until the link next closes.
     */
    private Registry.Link registryLink = this;
    /** Exported to a newer revision: as a registry link, this behaviour forwards to the gobj's current one. */
    private boolean handedOver;
    private final Streak waitingTransport = new Streak();
    private final Streak refused = new Streak();
    private final Streak badHello = new Streak();
    private final Streak unanswered = new Streak();
    private final Streak badFrames = new Streak();

    public Portal(GObj gobj) {
        this.gobj = gobj;
    }

    // --- Framework methods ---

    @Override
    public void onCreate() {
        String url = gobj.read(URL);
        if (url == null || url.isEmpty()) throw new IllegalArgumentException("C_PORTAL needs 'url' (tcp://host:port)");
    }

    @Override
    public int onStart() {
        Registry r = registry();
        if (r == null) {
            Glog.error(gobj, "No registry in this yuno", "msgset", "internal_error");
            return -1;
        }
        registryLink = this;
        for (String alias : aliases()) r.aliasLink(alias, this);
        startBottom();
        return 0;
    }

    @Override
    public int onStop() {
        clearTimer();
        unlink();
        Registry r = registry();
        if (r != null) for (String alias : aliases()) r.unaliasLink(alias, registryLink);
        GObj bottom = gobj.bottom();
        if (bottom != null && bottom.isRunning()) bottom.stop();
        return 0;
    }

    @Override
    public void onDestroy() {
        clearTimer();
        Registry r = registry();
        if (r != null) {
            r.removeLink(registryLink);
            for (String alias : aliases()) r.unaliasLink(alias, registryLink);
        }
    }

    /** A {@code Bundle.update()} of the portal has begun: the timer stops (its deadline is kept). */
    @Override
    public void onSuspend() {
        timer.cancel();
    }

    /** A live upgrade: the registry's link, the timer's deadline and the streaks (see the class comment). */
    @Override
    public ObjectNode onExport() {
        ObjectNode s = Kw.create();
        Kw.putRef(s, "registry_link", registryLink);
        s.put("timer_due_ms", timerDueMs);
        ObjectNode st = s.putObject("streaks");
        streaks().forEach((name, streak) -> st.put(name, streak.count()));
        timer.cancel();
        handedOver = true;
        return s;
    }

    @Override
    public void onImport(ObjectNode state, int stateVersion) {
        // First: a refused state rebuilds the service, and stopping this behaviour must then unregister that link.
        Registry.Link link = Kw.ref(state, "registry_link", Registry.Link.class);
        if (link != null) registryLink = link;
        if (stateVersion != STATE_VERSION) {
            throw new IllegalArgumentException("C_PORTAL takes state version " + STATE_VERSION + ", not " + stateVersion);
        }
        JsonNode st = state.path("streaks");
        streaks().forEach((name, streak) -> streak.resume(st.path(name).asLong(0)));
        long due = state.path("timer_due_ms").asLong(-1);
        if (due >= 0) setTimer(Math.max(0, due - now()));
        // With no link up, the registry holds nothing of the old link but its aliases: take them now.
        if (!gobj.inState(St.ST_CONNECTED)) takeOverRegistryLink();
    }

    // The registry's side of the link (Registry.Link): called by core's registry on the core thread.

    @Override
    public String describe() {
        if (handedOver) {
            Registry.Link next = successor();
            return next != null ? next.describe() : "portal " + gobj.name() + " (handed over)";
        }
        String remote = gobj.read(REMOTE_HUB);
        return "portal " + gobj.name() + " -> " + gobj.read(URL) + (remote == null || remote.isEmpty() ? "" : " (" + remote + ")");
    }

    @Override
    public boolean isOpen() {
        if (handedOver) {
            Registry.Link next = successor();
            return next != null && next.isOpen();
        }
        return !gobj.isDestroyed() && gobj.inState(St.ST_CONNECTED);
    }

    @Override
    public boolean send(ObjectNode msg) {
        if (handedOver) {
            Registry.Link next = successor();
            return next != null && next.send(msg);
        }
        if (!isOpen() || gobj.bottom() == null) return false;
        if (gobj.isTraced(TRACE_MESSAGES)) Glog.info(gobj, "-> message", "msg", Kw.toJson(msg));
        // C_PROT_TCP4H frames a kw without gbuffer as its JSON; the registry keeps reading msg after this call.
        int r = gobj.bottom().send(Ev.EV_SEND_MESSAGE, msg.deepCopy(), gobj);
        if (r < 0) return false;
        gobj.inc(TX_MSGS);
        return true;
    }

    // --- Actions ---

    private int acOnOpen(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        ObjectNode hello = Kw.create();
        hello.put("__portal__", "hello");
        hello.put("hub", gobj.yuno().name());
        String token = gobj.read(TOKEN);
        if (token != null && !token.isEmpty()) hello.put("token", token);
        setTimer(gobj.readLong(TIMEOUT_HELLO));
        return gobj.bottom().send(Ev.EV_SEND_MESSAGE, hello, gobj);
    }

    private int acHello(String event, ObjectNode kw, GObj src) {
        ObjectNode m = parse(kw);
        if (m == null) return 0;
        String what = Kw.getString(m, "__portal__", "");
        if (what.equals("error")) {
            if (refused.hit()) {
                Glog.error(gobj, "The other hub refused the portal (said once until it links)", "msgset",
                        "protocol_error", "url", gobj.read(URL), "comment", Kw.getString(m, "comment", ""));
            }
            drop();
            return 0;
        }
        String remote = Kw.getString(m, "hub", "");
        if (!what.equals("hello") || remote.isEmpty()) {
            if (badHello.hit()) {
                Glog.error(gobj, "Portal hello expected, link dropped (said once until it links)", "msgset",
                        "protocol_error", "got", Kw.toJson(m));
            }
            drop();
            return 0;
        }
        String expected = gobj.read(HUB);
        if (expected != null && !expected.isEmpty() && !expected.equals(remote)) {
            if (badHello.hit()) {
                Glog.error(gobj, "The other hub has not the expected name, link dropped (said once until it links)",
                        "msgset", "protocol_error", "expected", expected, "remote_hub", remote);
            }
            drop();
            return 0;
        }
        clearTimer();
        if (refused.active() || badHello.active() || unanswered.active()) {
            Glog.info(gobj, "Portal linked after failed hellos", "remote_hub", remote, "refused", refused.end(),
                    "bad_hello", badHello.end(), "unanswered", unanswered.end());
        }
        gobj.changeState(St.ST_CONNECTED);
        gobj.set(REMOTE_HUB, remote);
        gobj.setBool(CONNECTED, true);
        gobj.inc(CONNXS);
        registry().addLink(remote, registryLink);
        return 0;
    }

    private int acHelloTimeout(String event, ObjectNode kw, GObj src) {
        timerDueMs = -1;
        if (unanswered.hit()) {
            Glog.warn(gobj, "The other hub did not answer the hello, link dropped (said once until it links)",
                    "msgset", "protocol_error", "url", gobj.read(URL), "timeout_hello", gobj.readLong(TIMEOUT_HELLO));
        }
        drop();
        return 0;
    }

    private int acMessage(String event, ObjectNode kw, GObj src) {
        if (src != gobj.bottom()) {
            Kw.release(kw);
            Glog.error(gobj, "EV_ON_MESSAGE not from the portal's own transport, ignored", "src",
                    src == null ? "" : src.shortName());
            return -1;
        }
        ObjectNode m = parse(kw);
        if (m == null) return 0;
        gobj.inc(RX_MSGS);
        if (gobj.isTraced(TRACE_MESSAGES)) Glog.info(gobj, "<- message", "msg", Kw.toJson(m));
        if (m.has("__portal__")) {
            if (Kw.getString(m, "__portal__", "").equals("error")) {
                Glog.error(gobj, "The other hub reports an error", "comment", Kw.getString(m, "comment", ""));
            }
            return 0;
        }
        registry().deliverFrom(registryLink, m);
        return 0;
    }

    private int acOnClose(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        clearTimer();
        if (gobj.readBool(CONNECTED)) {
            Glog.info(gobj, "Portal closed", "remote_hub", gobj.read(REMOTE_HUB));
        }
        unlink();
        takeOverRegistryLink();
        return 0;
    }

    private int acDiscard(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        return 0;
    }

    private int acRetryBottom(String event, ObjectNode kw, GObj src) {
        timerDueMs = -1;
        if (gobj.isRunning()) startBottom();
        return 0;
    }

    // --- Local methods ---

    /** The aliases of {@code alias}: a name, or a list of names. */
    private List<String> aliases() {
        List<String> out = new ArrayList<>();
        JsonNode a = gobj.read(ALIAS);
        if (a != null && a.isTextual() && !a.asText().isEmpty()) out.add(a.asText());
        if (a != null && a.isArray()) a.forEach(x -> out.add(x.asText()));
        return out;
    }

    private Registry registry() {
        return gobj.yuno().lookup(Registry.class);
    }

    private void clearTimer() {
        timer.cancel();
        timer = Cancellable.NONE;
        timerDueMs = -1;
    }

    /** Arms the one timer of the portal (hello timeout, or the transport retry) in {@code delayMs}. */
    private void setTimer(long delayMs) {
        clearTimer();
        timerDueMs = now() + delayMs;
        timer = gobj.setTimeout(delayMs, Ev.EV_TIMEOUT, null);
    }

    private long now() {
        return gobj.yuno().clock().monotonicMillis();
    }

    /**
     * The registry knows this behaviour from now on instead of an older revision's (whose link is down, or was
     * never up): the aliases move to it. A stopped portal has no aliases to move.
     */
    private void takeOverRegistryLink() {
        if (registryLink == this) return;
        Registry r = registry();
        if (r != null && gobj.isRunning()) {
            for (String alias : aliases()) {
                r.unaliasLink(alias, registryLink);
                r.aliasLink(alias, this);
            }
        }
        registryLink = this;
    }

    /** The gobj's current behaviour, which a handed-over portal forwards the registry's calls to. */
    private Registry.Link successor() {
        GObjBehavior b = gobj.behavior();
        return b instanceof Registry.Link && b != this ? (Registry.Link) b : null;
    }

    /** The streaks by the name a live upgrade hands them over under. */
    private Map<String, Streak> streaks() {
        Map<String, Streak> m = new LinkedHashMap<>();
        m.put("waiting_transport", waitingTransport);
        m.put("refused", refused);
        m.put("bad_hello", badHello);
        m.put("unanswered", unanswered);
        m.put("bad_frames", badFrames);
        return m;
    }

    /** Creates the C_PROT_TCP4H child (it makes its C_TCP from the url) and starts it; retried while it cannot. */
    private void startBottom() {
        GObj bottom = gobj.bottom();
        if (bottom == null) {
            ObjectNode tcpKw = Kw.create();
            tcpKw.put("timeout_between_connections", gobj.readLong(TIMEOUT_BETWEEN_CONNECTIONS));
            tcpKw.put("timeout_between_connections_max", gobj.readLong(TIMEOUT_BETWEEN_CONNECTIONS_MAX));
            ObjectNode kw = Kw.create();
            kw.put("url", gobj.read(URL));
            kw.set("tcp_kw", tcpKw);
            // At framework start the transport bundles may register after this one: wait for them quietly.
            bottom = gobj.yuno().gclass(GClassNames.C_PROT_TCP4H) == null ? null
                    : gobj.createChild(gobj.name(), GClassNames.C_PROT_TCP4H, kw);
            if (bottom == null) {
                if (waitingTransport.hit()) {
                    Glog.info(gobj, "Waiting for the transport gclass", "gclass", GClassNames.C_PROT_TCP4H);
                }
                setTimer(TRANSPORT_RETRY_MS);
                return;
            }
            if (waitingTransport.active()) {
                Glog.info(gobj, "Transport gclass registered: connecting", "gclass", GClassNames.C_PROT_TCP4H,
                        "tries", waitingTransport.end());
            }
            if (!bottom.subscribers().contains(gobj)) bottom.subscribe(null, gobj);
            gobj.setBottom(bottom);
        }
        if (!bottom.isRunning()) bottom.start();
    }

    private void unlink() {
        Registry r = registry();
        if (r != null) r.removeLink(registryLink);
        gobj.setBool(CONNECTED, false);
    }

    private void drop() {
        GObj bottom = gobj.bottom();
        if (bottom != null && bottom.acceptsEvent(Ev.EV_DROP)) bottom.send(Ev.EV_DROP, null, gobj);
    }

    /** The JSON object of a frame, or null (said once per streak of frames that are not). */
    private ObjectNode parse(ObjectNode kw) {
        ByteBuf b = Kw.takeGbuffer(kw);
        try {
            if (b == null) return kw;
            ObjectNode m = Kw.parse(b);
            if (badFrames.active()) Glog.info(gobj, "Portal frames are JSON again", "bad_frames", badFrames.end());
            return m;
        } catch (IOException e) {
            gobj.inc(BAD_MSGS);
            if (badFrames.hit()) {
                Glog.error(gobj, "Portal message is not a JSON object, ignored (said once until a JSON one comes)",
                        "msgset", "protocol_error", "remote_hub", gobj.read(REMOTE_HUB), "error", e.getMessage());
            }
            return null;
        } finally {
            if (b != null) b.release();
        }
    }
}
