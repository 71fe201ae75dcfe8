// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.AttrType;
import io.gatehouse.api.Cancellable;
import io.gatehouse.api.CommandSpec;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.Param;
import io.gatehouse.api.Yuno;
import io.gatehouse.support.Glog;
import io.netty.buffer.ByteBuf;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/**
 * The gobj: a node of a yuno's tree running the FSM of its gclass. Single-threaded by design: every method
 * runs on the yuno's core thread. Subscription changes still take the gobj's lock: the array is copy on write,
 * and a change made off the core thread by mistake must not lose another one.
 */
final class GObjImpl implements GObj {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private final YunoImpl yuno;
    /** The gclass revision this gobj runs; a live upgrade hands the gobj to another one ({@link #handOver}). */
    private GClassSpec<GObjBehavior> spec;
    private Fsm<GObjBehavior> fsm;
    private final String name;
    private final GObjImpl parent;
    private final boolean service;
    private final boolean volatileChild;
    private final boolean pureChild;
    /** The config node this gobj was built from (null for gobjs that gclasses create at run time). */
    final ObjectNode configNode;

    private final List<GObj> children = new ArrayList<>(2);
    private static final Subscription[] NO_SUBSCRIPTIONS = new Subscription[0];
    /**
     * Copy on write: a change makes a new array, so publish reads one array per message and a subscriber that
     * unsubscribes while being published to does not disturb the loop. Changed under the gobj's lock.
     */
    private volatile Subscription[] subscriptions = NO_SUBSCRIPTIONS;
    /** Publishers this gobj subscribed to, so destroy can undo them. */
    private final List<GObjImpl> subscribedTo = new ArrayList<>(1);
    /**
     * Attribute values by slot ({@link Attr#slot()}): numbers and booleans as bits in {@code nums}, strings and
     * JSON in {@code refs} (at slot - numericSlots). A gclass reads them where it needs them, an array load, so it
     * keeps no copies in fields.
     */
    private long[] nums;
    private Object[] refs;
    private Attr<?>[] attrTable;
    private int numericSlots;
    private final Set<String> traces = new HashSet<>(2);
    private final List<Cancellable> timers = new ArrayList<>(1);

    private GObjBehavior behavior;
    /**
     * Set while a live upgrade waits for the new revision of this gobj's gclass: events sent to the gobj are held
     * in {@link #held}, in order, for the behaviour that takes over.
     */
    private boolean suspended;
    private ArrayDeque<Held> held;

    /** An event sent to a suspended gobj. */
    private static final class Held {
        final String event;
        final ObjectNode kw;
        final GObj src;

        Held(String event, ObjectNode kw, GObj src) {
            this.event = event;
            this.kw = kw;
            this.src = src;
        }
    }

    /**
     * Most events held for one suspended gobj. Whatever sends to it (a relay forwarding producers' messages) gets
     * -1 beyond it, as from a full queue, so a slow upgrade costs retries, not memory.
     */
    static final int MAX_HELD_EVENTS = 100_000;
    private GObj bottom;
    private String state;
    /** The FSM rows of {@link #state}, kept with it: send looks an event up once instead of state then event. */
    private Fsm.Rows<GObjBehavior> rows;
    private boolean running;
    private boolean playing;
    private boolean disabled;
    private boolean destroyed;

    @SuppressWarnings("unchecked")
    GObjImpl(YunoImpl yuno, GClassSpec<?> spec, String name, GObjImpl parent, boolean service,
             boolean volatileChild, boolean pureChild, ObjectNode configNode) {
        this.yuno = yuno;
        this.spec = (GClassSpec<GObjBehavior>) spec;
        this.fsm = this.spec.fsm();
        this.name = name == null ? "" : name;
        this.parent = parent;
        this.service = service;
        this.volatileChild = volatileChild;
        this.pureChild = pureChild;
        this.configNode = configNode;
        setState(fsm.initialState());
        this.numericSlots = spec.numericSlots();
        this.nums = new long[numericSlots];
        this.refs = new Object[spec.objectSlots()];
        this.attrTable = new Attr<?>[numericSlots + spec.objectSlots()];
        for (Attr<?> a : spec.attrs().values()) {
            attrTable[a.slot()] = a;
            reset(a);
        }
    }

    private static Object defaultOf(Attr<?> a) {
        Object d = a.defaultValue();
        return d instanceof JsonNode ? ((JsonNode) d).deepCopy() : d;
    }

    private void reset(Attr<?> a) {
        if (a.isNumeric()) nums[a.slot()] = a.defaultBits();
        else refs[a.slot() - numericSlots] = defaultOf(a);
    }

    /** The boxed value of this gclass's own attribute. */
    private Object valueOf(Attr<?> a) {
        int s = a.slot();
        return a.isNumeric() ? a.fromBits(nums[s]) : refs[s - numericSlots];
    }

    private void store(Attr<?> a, Object value) {
        int s = a.slot();
        if (a.isNumeric()) nums[s] = a.toBits(value);
        else refs[s - numericSlots] = value;
    }

    /**
     * {@code a} itself when it is this gclass's attribute (the usual case, two loads and a compare), else this
     * gclass's attribute of the same name (a test or another bundle holding its own handle), else an error.
     */
    private Attr<?> own(Attr<?> a) {
        int s = a.slot();
        if (s >= 0 && s < attrTable.length && attrTable[s] == a) return a;
        Attr<?> byName = spec.attr(a.name());
        if (byName == null || byName.type() != a.type()) {
            throw new IllegalArgumentException("attribute '" + a.name() + "' unknown in gclass " + spec.name());
        }
        return byName;
    }

    // --- Creation steps, called by YunoImpl ---

    /** Sets the attributes from a creation kw; unknown names are errors, Yuneta's unused keys an info. */
    void applyKw(ObjectNode kw, String path) {
        if (kw == null) return;
        var it = kw.fields();
        while (it.hasNext()) {
            var e = it.next();
            String k = e.getKey();
            if (k.equals("subscriber")) continue;
            Attr<?> a = spec.attr(k);
            if (a == null) {
                if (spec.unusedYunetaKeys().contains(k) || ConfigReader.GENERIC_UNUSED_KEYS.contains(k)) {
                    yuno.infoUnusedOnce(this, k);
                    continue;
                }
                throw new ConfigException(path, "attribute '" + k + "' unknown in gclass " + spec.name());
            }
            try {
                store(a, a.fromJson(e.getValue()));
            } catch (IllegalArgumentException ex) {
                throw new ConfigException(path, ex.getMessage());
            }
        }
        for (Attr<?> a : spec.attrs().values()) {
            if (a.is(AttrFlag.REQUIRED)) {
                Object v = valueOf(a);
                if (v == null || (v instanceof String && ((String) v).isEmpty())) {
                    throw new ConfigException(path, "attribute '" + a.name() + "' of " + spec.name() + " is required");
                }
            }
        }
    }

    /** Values restored from the data directory (persistent attributes), silently skipping stale names. */
    void applyPersistent(ObjectNode saved) {
        if (saved == null) return;
        var it = saved.fields();
        while (it.hasNext()) {
            var e = it.next();
            Attr<?> a = spec.attr(e.getKey());
            if (a == null || !a.is(AttrFlag.PERSIST)) continue;
            try {
                store(a, a.fromJson(e.getValue()));
            } catch (IllegalArgumentException ex) {
                Glog.warn(this, "Persistent attribute ignored", "attr", a.name(), "error", ex.getMessage());
            }
        }
    }

    void createBehavior() {
        behavior = spec.factory().apply(this);
    }

    void addChild(GObjImpl child) {
        children.add(child);
        childrenSnapshot = null;
    }

    void removeChild(GObjImpl child) {
        children.remove(child);
        childrenSnapshot = null;
        if (bottom == child) bottom = null;
    }

    // --- Identity and tree ---

    @Override public String name() { return name; }

    @Override
    public String fullName() {
        if (parent == null) return name;
        String p = parent.fullName();
        return p.isEmpty() ? name : p + "`" + name;
    }

    @Override public String shortName() { return spec.name() + "^" + name; }
    @Override public GClassSpec<?> gclass() { return spec; }
    @Override public String gclassName() { return spec.name(); }
    @Override public Yuno yuno() { return yuno; }
    @Override public GObj parent() { return parent; }
    /** Children snapshot, rebuilt only when the children change: gates walk it once per message. */
    private List<GObj> childrenSnapshot;

    @Override
    public List<GObj> children() {
        List<GObj> s = childrenSnapshot;
        if (s == null) {
            s = Collections.unmodifiableList(new ArrayList<>(children));
            childrenSnapshot = s;
        }
        return s;
    }

    /** Live view for internal walks that do not modify the tree. */
    List<GObj> childrenView() { return children; }

    @Override
    public GObj child(String childName) {
        for (GObj c : children) {
            if (c.name().equals(childName)) return c;
        }
        return null;
    }

    @Override public GObj bottom() { return bottom; }
    @Override public void setBottom(GObj b) { this.bottom = b; }

    @Override
    public GObj lastBottom() {
        GObj g = this;
        int guard = 0;
        while (g.bottom() != null && guard++ < 64) g = g.bottom();
        return g;
    }

    @Override public boolean isService() { return service; }
    @Override public boolean isVolatile() { return volatileChild; }
    @Override public boolean isPureChild() { return pureChild; }
    @Override public boolean isDestroyed() { return destroyed; }
    @Override public GObjBehavior behavior() { return behavior; }

    // --- Lifecycle ---

    @Override public boolean isRunning() { return running; }
    @Override public boolean isPlaying() { return playing; }
    @Override public boolean isDisabled() { return disabled; }

    @Override
    public int start() {
        if (destroyed || running) return -1;
        running = true;
        int r;
        try {
            r = behavior.onStart();
        } catch (RuntimeException e) {
            Glog.error(this, "onStart failed", "error", String.valueOf(e));
            r = -1;
        }
        if (r < 0) running = false;
        return r;
    }

    @Override
    public int stop() {
        if (destroyed || !running) return -1;
        if (playing) pause();
        running = false;
        try {
            return behavior.onStop();
        } catch (RuntimeException e) {
            Glog.error(this, "onStop failed", "error", String.valueOf(e));
            return -1;
        }
    }

    @Override
    public int startTree() {
        if (spec.manualStart() || disabled || destroyed) return 0;
        int r = 0;
        if (!running) r = start();
        if (r < 0) return r;
        for (GObj c : children()) {
            if (!c.isDestroyed()) ((GObjImpl) c).startTreeChild();
        }
        return 0;
    }

    private void startTreeChild() {
        // A manual-start or disabled gobj is not started, and neither is its subtree (Yuneta's start_tree).
        if (spec.manualStart() || disabled || destroyed) return;
        // A gobj that refuses to start keeps its subtree stopped: a queue that cannot open its store
        // must not let its link connect.
        if (!running && start() < 0) return;
        for (GObj c : children()) {
            if (!c.isDestroyed()) ((GObjImpl) c).startTreeChild();
        }
    }

    @Override
    public int stopTree() {
        if (destroyed) return -1;
        if (running) stop();
        for (GObj c : children()) {
            if (!c.isDestroyed()) c.stopTree();
        }
        return 0;
    }

    @Override
    public int play() {
        if (destroyed || playing) return -1;
        if (!running) {
            int r = start();
            if (r < 0) return r;
        }
        playing = true;
        if (!spec.playable()) return 0;
        try {
            int r = behavior.onPlay();
            if (r < 0) playing = false;
            return r;
        } catch (RuntimeException e) {
            playing = false;
            Glog.error(this, "onPlay failed", "error", String.valueOf(e));
            return -1;
        }
    }

    @Override
    public int pause() {
        if (destroyed || !playing) return -1;
        playing = false;
        if (!spec.playable()) return 0;
        try {
            return behavior.onPause();
        } catch (RuntimeException e) {
            Glog.error(this, "onPause failed", "error", String.valueOf(e));
            return -1;
        }
    }

    @Override
    public int enable() {
        disabled = false;
        return startTree();
    }

    @Override
    public int disable() {
        disabled = true;
        return stopTree();
    }

    @Override
    public GObj createChild(String childName, String gclass, ObjectNode kw) {
        return yuno.createRuntimeChild(this, childName, gclass, kw, false);
    }

    @Override
    public GObj createVolatileChild(String childName, String gclass, ObjectNode kw) {
        return yuno.createRuntimeChild(this, childName, gclass, kw, true);
    }

    @Override
    public void destroy() {
        if (destroyed) return;
        if (playing) pause();
        if (running) stop();
        for (GObj c : children()) c.destroy();
        destroyed = true;
        dropHeld();
        cancelTimers();
        try {
            if (behavior != null) behavior.onDestroy();
        } catch (RuntimeException e) {
            Glog.error(this, "onDestroy failed", "error", String.valueOf(e));
        }
        for (GObjImpl pub : subscribedTo) pub.dropSubscriber(this);
        subscribedTo.clear();
        subscriptions = NO_SUBSCRIPTIONS;
        if (parent != null) parent.removeChild(this);
        yuno.forget(this);
    }

    // --- Live upgrade ---

    /** Holds the gobj's input for the revision to come: the behaviour stops reading, events wait in order. */
    void suspend() {
        if (suspended || destroyed) return;
        suspended = true;
        held = new ArrayDeque<>();
        try {
            behavior.onSuspend();
        } catch (RuntimeException e) {
            Glog.error(this, "onSuspend failed", "error", String.valueOf(e));
        }
    }

    boolean isSuspended() {
        return suspended;
    }

    private int hold(String event, ObjectNode kw, GObj src) {
        if (held.size() >= MAX_HELD_EVENTS) {
            if (held.size() == MAX_HELD_EVENTS) {
                Glog.error(this, "Upgrade: too many events held, refusing more until it ends", "held", held.size());
                held.add(new Held(null, null, null));   // marks that the refusal was said
            }
            Kw.release(kw);
            return -1;
        }
        held.add(new Held(event, kw, src));
        return 0;
    }

    /** Events held while suspended, delivered in order to the behaviour now in place. */
    void resumeHeld() {
        ArrayDeque<Held> h = held;
        held = null;
        suspended = false;
        if (h == null) return;
        for (Held e; (e = h.poll()) != null; ) {
            if (e.event != null) send(e.event, e.kw, e.src);
        }
    }

    /** Gives the held events back unsent (the gobj is destroyed instead of handed over). */
    void dropHeld() {
        ArrayDeque<Held> h = held;
        held = null;
        suspended = false;
        if (h != null) for (Held e; (e = h.poll()) != null; ) Kw.release(e.kw);
    }

    /**
     * First step of a handover: the old behaviour's state, or an exception saying why it cannot be handed over to
     * {@code to}. Nothing changes in the gobj yet.
     */
    @SuppressWarnings("unchecked")
    ObjectNode exportFor(GClassSpec<?> to) {
        if (spec.stateVersion() == 0) {
            throw new IllegalStateException(spec.name() + " of this revision does not hand its state over");
        }
        if (to.stateVersion() == 0) {
            throw new IllegalStateException("the new revision of " + spec.name() + " does not take state over");
        }
        if (!to.fsm().hasState(state)) {
            throw new IllegalStateException("state " + state + " unknown in the new revision");
        }
        ObjectNode exported;
        try {
            exported = behavior.onExport();
        } catch (RuntimeException e) {
            throw new IllegalStateException("onExport failed: " + e, e);
        }
        if (exported == null) throw new IllegalStateException("the old revision gave no state");
        return exported;
    }

    /**
     * Second step: the gobj runs {@code to} from now on. Attributes keep their values by name (a new attribute
     * gets its default, a dropped one is gone), the FSM state by name, the old behaviour's timers are cancelled and
     * a behaviour of the new revision is made; it takes the state in {@link #importState}.
     */
    @SuppressWarnings("unchecked")
    void swapTo(GClassSpec<?> to) {
        GClassSpec<GObjBehavior> next = (GClassSpec<GObjBehavior>) to;
        cancelTimers();
        long[] nextNums = new long[next.numericSlots()];
        Object[] nextRefs = new Object[next.objectSlots()];
        Attr<?>[] nextTable = new Attr<?>[next.numericSlots() + next.objectSlots()];
        for (Attr<?> a : next.attrs().values()) {
            nextTable[a.slot()] = a;
            Attr<?> old = spec.attr(a.name());
            boolean keep = old != null && old.type() == a.type();
            if (a.isNumeric()) {
                nextNums[a.slot()] = keep ? nums[old.slot()] : a.defaultBits();
            } else {
                nextRefs[a.slot() - next.numericSlots()] = keep ? refs[old.slot() - numericSlots] : defaultOf(a);
            }
        }
        for (String level : new ArrayList<>(traces)) {
            if (!TRACE_MACHINE.equals(level) && !next.traceLevels().containsKey(level)) traces.remove(level);
        }
        spec = next;
        fsm = next.fsm();
        nums = nextNums;
        refs = nextRefs;
        attrTable = nextTable;
        numericSlots = next.numericSlots();
        setState(state);
        behavior = next.factory().apply(this);
    }

    /** Last step: the new behaviour takes the state; an IllegalArgumentException says it cannot. */
    void importState(ObjectNode exported, int fromVersion) {
        behavior.onImport(exported, fromVersion);
    }

    // --- Events ---

    @Override public String state() { return state; }

    @Override
    public void changeState(String st) {
        if (!fsm.hasState(st)) {
            Glog.error(this, "State NOT FOUND", "state", st);
            return;
        }
        if (traces.contains(TRACE_MACHINE)) Glog.info(this, "state change", "from", state, "to", st);
        setState(st);
    }

    private void setState(String st) {
        state = st;
        rows = fsm.rowTable(st);
    }

    @Override public boolean inState(String st) { return state.equals(st); }
    @Override public boolean hasInputEvent(String event) { return fsm.inputEvents().contains(event); }
    @Override public boolean acceptsEvent(String event) { return rows.get(event) != null; }

    @Override
    public int send(String event, ObjectNode kw, GObj src) {
        if (kw == null) kw = F.objectNode();
        if (destroyed) {
            Kw.release(kw);
            return -1;
        }
        if (suspended) return hold(event, kw, src);
        Fsm.Transition<GObjBehavior> t = rows.get(event);
        if (t == null) {
            Glog.error(this, "Event NOT DEFINED in state", "state", state, "event", event,
                    "src", src == null ? "" : src.shortName());
            Kw.release(kw);
            return -1;
        }
        if (!traces.isEmpty() && traces.contains(TRACE_MACHINE)) {
            Glog.info(this, "event", "state", state, "event", event, "src", src == null ? "" : src.shortName());
        }
        if (t.next() != null) setState(t.next());
        if (t.action() == null) {
            Kw.release(kw);
            return 0;
        }
        try {
            return t.action().run(behavior, event, kw, src);
        } catch (RuntimeException | InternalError | StackOverflowError | LinkageError e) {
            // InternalError: a fault in a mapped file (a disk filled under us). The action fails, the yuno goes on:
            // an error escaping to the event loop would also cancel the periodic timers silently. LinkageError: a
            // class that a revision running after its bundle stopped never loaded (its class loader is refreshed).
            Glog.error(this, "Action failed", "state", state, "event", event, "error", String.valueOf(e));
            if (YunoImpl.DEBUG_EXCEPTIONS) e.printStackTrace();
            Kw.release(kw);
            return -1;
        }
    }

    @Override
    public int publish(String event, ObjectNode kw) {
        if (kw == null) kw = F.objectNode();
        if (destroyed) {
            Kw.release(kw);
            return -1;
        }
        Subscription[] subs = subscriptions;
        if (subs.length == 1 && subs[0].matches(event)) {
            return subs[0].subscriber.send(event, kw, this);   // the usual case: one parent
        }
        int n = 0;
        for (Subscription s : subs) {
            if (s.matches(event)) n++;
        }
        if (n == 0) {
            Kw.release(kw);
            return 0;
        }
        int ret = 0;
        int seen = 0;
        for (Subscription s : subs) {
            if (!s.matches(event)) continue;
            seen++;
            ObjectNode k = kw;
            if (seen < n) {
                // Every subscriber but the last gets its own JSON and its own view of the buffer (independent
                // read index, shared content), so one subscriber's reading does not empty it for another.
                k = kw.deepCopy();
                ByteBuf b = Kw.gbuffer(kw);
                if (b != null) Kw.putRef(k, Kw.GBUFFER, b.retainedDuplicate());
            }
            int r = s.subscriber.send(event, k, this);
            if (r < 0) ret = r;
        }
        return ret;
    }

    @Override
    public void subscribe(String event, GObj subscriber) {
        for (Subscription s : subscriptions) {
            if (s.subscriber == subscriber && (s.event == null ? event == null : s.event.equals(event))) return;
        }
        addSubscription(new Subscription(event, subscriber));
        if (subscriber instanceof GObjImpl) ((GObjImpl) subscriber).subscribedTo.add(this);
    }

    @Override
    public void unsubscribe(String event, GObj subscriber) {
        removeSubscriptions(s -> s.subscriber == subscriber && (event == null || event.equals(s.event)));
    }

    private void dropSubscriber(GObj subscriber) {
        removeSubscriptions(s -> s.subscriber == subscriber);
    }

    private synchronized void addSubscription(Subscription s) {
        Subscription[] a = Arrays.copyOf(subscriptions, subscriptions.length + 1);
        a[a.length - 1] = s;
        subscriptions = a;
    }

    private synchronized void removeSubscriptions(Predicate<Subscription> which) {
        List<Subscription> kept = new ArrayList<>(subscriptions.length);
        for (Subscription s : subscriptions) {
            if (!which.test(s)) kept.add(s);
        }
        if (kept.size() != subscriptions.length) subscriptions = kept.toArray(NO_SUBSCRIPTIONS);
    }

    @Override
    public List<GObj> subscribers() {
        List<GObj> out = new ArrayList<>();
        for (Subscription s : subscriptions) {
            if (!out.contains(s.subscriber)) out.add(s.subscriber);
        }
        return out;
    }

    // --- Attributes ---

    @Override
    @SuppressWarnings("unchecked")
    public <T> T read(Attr<T> attr) {
        return (T) valueOf(own(attr));
    }

    @Override
    public long readLong(Attr<Long> attr) {
        int s = attr.slot();
        if (s >= 0 && s < attrTable.length && attrTable[s] == attr) return nums[s];
        return nums[own(attr).slot()];
    }

    @Override
    public boolean readBool(Attr<Boolean> attr) {
        int s = attr.slot();
        if (s >= 0 && s < attrTable.length && attrTable[s] == attr) return nums[s] != 0;
        return nums[own(attr).slot()] != 0;
    }

    @Override
    public double readReal(Attr<Double> attr) {
        return Double.longBitsToDouble(nums[own(attr).slot()]);
    }

    @Override
    public <T> void write(Attr<T> attr, T value) {
        Attr<?> a = own(attr);
        Object previous = valueOf(a);
        store(a, value);
        notifyWriting(a, previous);
    }

    @Override
    public <T> void set(Attr<T> attr, T value) {
        store(own(attr), value);
    }

    @Override
    public void setLong(Attr<Long> attr, long value) {
        int s = attr.slot();
        if (s >= 0 && s < attrTable.length && attrTable[s] == attr) nums[s] = value;
        else nums[own(attr).slot()] = value;
    }

    @Override
    public void setBool(Attr<Boolean> attr, boolean value) {
        nums[own(attr).slot()] = value ? 1 : 0;
    }

    @Override
    public void inc(Attr<Long> counter) {
        int s = counter.slot();
        if (s >= 0 && s < attrTable.length && attrTable[s] == counter) nums[s]++;
        else nums[own(counter).slot()]++;
    }

    @Override
    public void add(Attr<Long> counter, long n) {
        int s = counter.slot();
        if (s >= 0 && s < attrTable.length && attrTable[s] == counter) nums[s] += n;
        else nums[own(counter).slot()] += n;
    }

    /** Tells the gclass; a refusal (IllegalArgumentException) puts {@code previous} back and goes to the writer. */
    private void notifyWriting(Attr<?> attr, Object previous) {
        if (behavior != null) {
            try {
                behavior.onWriting(attr.name());
            } catch (IllegalArgumentException e) {
                store(attr, previous);
                Glog.error(this, "Attribute value refused", "attr", attr.name(), "error", String.valueOf(e.getMessage()));
                throw e;
            } catch (RuntimeException e) {
                Glog.error(this, "onWriting failed", "attr", attr.name(), "error", String.valueOf(e));
            }
        }
        if (attr.is(AttrFlag.PERSIST)) yuno.savePersistent(this);
    }

    /** Lets the behaviour set its computed gauges before the attributes are read from outside. */
    void syncAttrs() {
        if (behavior == null || destroyed) return;
        try {
            behavior.onReadAttrs();
        } catch (RuntimeException e) {
            Glog.error(this, "onReadAttrs failed", "error", String.valueOf(e));
        }
    }

    @Override
    public JsonNode readAttr(String attrName) {
        syncAttrs();
        Attr<?> a = spec.attr(attrName);
        return a == null ? null : a.toJson(valueOf(a));
    }

    @Override
    public void writeAttr(String attrName, JsonNode value) {
        Attr<?> a = spec.attr(attrName);
        if (a == null) throw new IllegalArgumentException("attribute '" + attrName + "' unknown in gclass " + spec.name());
        if (!a.is(AttrFlag.WR)) throw new IllegalArgumentException("attribute '" + attrName + "' is not writable");
        Object previous = valueOf(a);
        store(a, a.fromJson(value));
        notifyWriting(a, previous);
    }

    @Override
    public ObjectNode attrsJson() {
        syncAttrs();
        ObjectNode o = F.objectNode();
        for (Attr<?> a : spec.attrs().values()) o.set(a.name(), a.toJson(valueOf(a)));
        return o;
    }

    /** Persistent attributes as JSON, for the data directory. */
    ObjectNode persistentJson() {
        ObjectNode o = F.objectNode();
        for (Attr<?> a : spec.attrs().values()) {
            if (a.is(AttrFlag.PERSIST)) o.set(a.name(), a.toJson(valueOf(a)));
        }
        return o;
    }

    @Override
    public void resetVolatiles() {
        for (Attr<?> a : spec.attrs().values()) {
            if (a.is(AttrFlag.VOLATILE)) reset(a);
        }
    }

    // --- Stats and commands ---

    @Override
    public ObjectNode stats(String filter, ObjectNode kw, GObj src) {
        ObjectNode own;
        try {
            own = behavior.onStats(filter, kw, src);
        } catch (RuntimeException e) {
            Glog.error(this, "onStats failed", "error", String.valueOf(e));
            return Envelope.error("stats failed: " + e.getMessage());
        }
        return own != null ? own : defaultStats(filter);
    }

    @Override
    public ObjectNode defaultStats(String filter) {
        boolean reset = "__reset__".equals(filter);
        ObjectNode data = F.objectNode();
        GObj g = this;
        int guard = 0;
        while (g != null && guard++ < 64) {
            GObjImpl gi = (GObjImpl) g;
            gi.syncAttrs();
            for (Attr<?> a : gi.spec.attrs().values()) {
                if (!a.is(AttrFlag.STATS)) continue;
                if (reset && a.is(AttrFlag.RSTATS)) gi.reset(a);
                if (data.has(a.name())) continue;
                if (!reset && filter != null && !filter.isEmpty() && !statsNameMatches(filter, a.name())) continue;
                JsonNode v = a.toJson(gi.valueOf(a));
                if (a.type() == AttrType.BOOLEAN) v = F.numberNode(v.asBoolean() ? 1 : 0);
                data.set(a.name(), v);
            }
            g = g.bottom();
        }
        return Envelope.ok(data);
    }

    /** Yuneta's filter: keep the attribute when the filter contains its name or the part before its first '_'. */
    private static boolean statsNameMatches(String filter, String attr) {
        if (filter.contains(attr)) return true;
        int i = attr.indexOf('_');
        if (i <= 0) return true;
        return filter.contains(attr.substring(0, i));
    }

    @Override
    public ObjectNode command(String cmd, ObjectNode kw, GObj src) {
        if (kw == null) kw = F.objectNode();
        CommandSpec<GObjBehavior> c = spec.command(cmd);
        if (c == null) {
            // A gclass without a command table (C_CHANNEL) proxies every command, help included, to its bottom.
            if (spec.commands().isEmpty() && bottom != null) return bottom.command(cmd, kw, src);
            if (cmd.equals("help") || cmd.equals("h") || cmd.equals("?")) return help();
            return Envelope.error("command '" + cmd + "' not available in " + shortName());
        }
        ObjectNode params = F.objectNode();
        var it = kw.fields();
        while (it.hasNext()) {
            var e = it.next();
            params.set(e.getKey(), e.getValue());
        }
        for (Param p : c.params()) {
            JsonNode v = kw.get(p.name());
            if (v == null || v.isNull()) {
                if (p.defaultValue() == null) continue;
                v = F.textNode(p.defaultValue());
            }
            try {
                params.set(p.name(), convertParam(p, v));
            } catch (IllegalArgumentException e) {
                return Envelope.error("command '" + cmd + "': " + e.getMessage());
            }
        }
        try {
            ObjectNode r = c.handler().run(behavior, params, src);
            return r == null ? Envelope.ok(null) : r;
        } catch (RuntimeException e) {
            Glog.error(this, "Command failed", "command", cmd, "error", String.valueOf(e));
            return Envelope.error("command '" + cmd + "' failed: " + e.getMessage());
        }
    }

    private static JsonNode convertParam(Param p, JsonNode v) {
        switch (p.type()) {
            case INTEGER:
            case COUNTER: return F.numberNode(Attr.integer(p.name(), 0, 0, "").fromJson(v));
            case REAL: return F.numberNode(Attr.real(p.name(), 0, 0, "").fromJson(v));
            case BOOLEAN: return F.booleanNode(Attr.bool(p.name(), false, 0, "").fromJson(v));
            case STRING: return F.textNode(v.isTextual() ? v.asText() : v.toString());
            default: return v;
        }
    }

    /** The generated help: one line per command with its parameters, from the command table. */
    ObjectNode help() {
        ArrayNode lines = F.arrayNode();
        for (CommandSpec<GObjBehavior> c : spec.commands()) {
            StringBuilder sb = new StringBuilder(c.name());
            for (String a : c.aliases()) sb.append(" (").append(a).append(")");
            for (Param p : c.params()) {
                sb.append(" [").append(p.name()).append('=').append(p.defaultValue() == null ? "?" : p.defaultValue())
                        .append("]");
            }
            sb.append(": ").append(c.description());
            lines.add(sb.toString());
        }
        return Envelope.ok(shortName() + ": " + spec.commands().size() + " commands", lines);
    }

    // --- Timers ---

    @Override
    public Cancellable setTimeout(long delayMs, String event, ObjectNode kw) {
        Cancellable[] holder = new Cancellable[1];
        boolean[] fired = new boolean[1];
        holder[0] = yuno.timers().schedule(Math.max(0, delayMs), () -> {
            fired[0] = true;
            timers.remove(holder[0]);
            if (!destroyed) send(event, kw, this);
            else Kw.release(kw);
        });
        timers.add(holder[0]);
        return () -> {
            if (!fired[0]) {
                fired[0] = true;
                holder[0].cancel();
                Kw.release(kw);
            }
            timers.remove(holder[0]);
        };
    }

    @Override
    public Cancellable setPeriodic(long periodMs, String event) {
        long p = Math.max(1, periodMs);
        Cancellable c = yuno.timers().schedulePeriodic(p, () -> {
            // A periodic task that throws is never run again by the executor: nothing may escape from it.
            try {
                if (!destroyed) send(event, null, this);
            } catch (RuntimeException | Error e) {
                Glog.error(this, "Periodic timer action failed, the timer goes on", "event", event, "error", String.valueOf(e));
                if (e instanceof VirtualMachineError && !(e instanceof InternalError)
                        && !(e instanceof StackOverflowError)) throw (Error) e;
            }
        });
        timers.add(c);
        return () -> {
            c.cancel();
            timers.remove(c);
        };
    }

    private void cancelTimers() {
        for (Cancellable c : new ArrayList<>(timers)) c.cancel();
        timers.clear();
    }

    // --- Trace ---

    /** On the hot path of every gclass: an empty set (the usual case) answers without hashing. */
    @Override public boolean isTraced(String level) { return !traces.isEmpty() && traces.contains(level); }

    /** The level core itself traces for every gclass: events and state changes. */
    static final String TRACE_MACHINE = "machine";

    /**
     * @throws IllegalArgumentException for a level the gclass does not declare (a typo would otherwise trace
     *                                  nothing, silently)
     */
    @Override
    public void setTrace(String level, boolean on) {
        if (!TRACE_MACHINE.equals(level) && !spec.traceLevels().containsKey(level)) {
            throw new IllegalArgumentException("trace level '" + level + "' unknown in gclass " + spec.name()
                    + "; known: " + TRACE_MACHINE + (spec.traceLevels().isEmpty() ? "" : ", "
                    + String.join(", ", spec.traceLevels().keySet())));
        }
        if (on) traces.add(level);
        else traces.remove(level);
    }

    Set<String> traceLevels() { return traces; }

    @Override
    public String toString() {
        return shortName();
    }
}
