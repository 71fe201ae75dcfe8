// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;

/**
 * Everything a gclass declares, once: name, attribute table, FSM, command table, trace levels, flags and the
 * factory of per-gobj behaviours. It lives as {@code static final SPEC} in the gobj class, after the tables it
 * names (see docs/CORE.md, "Adding a gclass"):
 *
 * <pre>{@code
 * public static final GClassSpec<ProtTcp4h> SPEC = GClassSpec.builder("C_PROT_TCP4H", ProtTcp4h.class)
 *     .description("4-byte big-endian length-prefixed messages")
 *     .attrs(URL, MAX_PKT_SIZE, TIMEOUT_PAYLOAD)
 *     .fsm(FSM)
 *     .traceLevel(TRACE_TRAFFIC, "Trace the frames read and written")
 *     .command("view-frame", "The frame being read", ProtTcp4h::cmdViewFrame)
 *     .factory(ProtTcp4h::new)
 *     .build();
 * }</pre>
 *
 * <p>{@link Builder#build()} checks the table: every attribute, command, parameter and trace level has a
 * description, and each attribute gets its slot (an attribute declared in another gclass's table is refused).
 */
public final class GClassSpec<B extends GObjBehavior> {

    /** Who a new gobj subscribes to its output events (Yuneta's two models). */
    public enum SubscriptionModel {
        /** The {@code subscriber} attribute if set, else the parent (C_CHANNEL, C_PROT_TCP4H, C_TCP, C_TCP_S). */
        CHILD,
        /** The {@code subscriber} attribute if set, else the parent only for a pure child, else nobody (gates). */
        SERVICE
    }

    private final String name;
    private final String description;
    private final Map<String, Attr<?>> attrs;
    private final Attr<?>[] attrsBySlot;
    private final int numericSlots;
    private final int objectSlots;
    private final Fsm<B> fsm;
    private final List<CommandSpec<B>> commands;
    private final Map<String, String> traceLevels;
    private final Set<String> unusedYunetaKeys;
    private final boolean manualStart;
    private final boolean playable;
    private final boolean confirmsDurability;
    private final boolean takesJsonRecords;
    private final boolean answersDurableTokens;
    private final boolean takesQueueRecords;
    private final boolean takesBatches;
    private final boolean takesSendBatches;
    private final boolean takesMessageBatches;
    private final Attr<Boolean> linkUp;
    private final int stateVersion;
    private final SubscriptionModel subscriptionModel;
    private final Function<GObj, B> factory;

    private GClassSpec(Builder<B> b) {
        this.name = b.name;
        this.description = b.description;
        this.attrs = Collections.unmodifiableMap(new LinkedHashMap<>(b.attrs));
        this.fsm = Objects.requireNonNull(b.fsm, "fsm of " + b.name);
        this.commands = List.copyOf(b.commands);
        this.traceLevels = Collections.unmodifiableMap(new LinkedHashMap<>(b.traceLevels));
        this.unusedYunetaKeys = Set.copyOf(b.unused);
        this.manualStart = b.manualStart;
        this.playable = b.playable;
        this.confirmsDurability = b.confirmsDurability;
        this.takesJsonRecords = b.takesJsonRecords;
        this.answersDurableTokens = b.answersDurableTokens;
        this.takesQueueRecords = b.takesQueueRecords;
        this.takesBatches = b.takesBatches;
        this.takesSendBatches = b.takesSendBatches;
        this.takesMessageBatches = b.takesMessageBatches;
        this.linkUp = b.linkUp;
        this.stateVersion = b.stateVersion;
        this.subscriptionModel = b.subscriptionModel;
        this.factory = Objects.requireNonNull(b.factory, "factory of " + b.name);
        int numeric = 0;
        int objects = 0;
        for (Attr<?> a : attrs.values()) {
            if (a.isNumeric()) numeric++;
            else objects++;
        }
        this.numericSlots = numeric;
        this.objectSlots = objects;
        this.attrsBySlot = new Attr<?>[attrs.size()];
        int n = 0;
        int o = 0;
        for (Attr<?> a : attrs.values()) {
            int slot = a.isNumeric() ? n++ : numeric + o++;
            a.bind(name, slot);
            attrsBySlot[slot] = a;
        }
    }

    private GClassSpec(GClassSpec<B> other, Function<GObj, B> factory) {
        this.name = other.name;
        this.description = other.description;
        this.attrs = other.attrs;
        this.attrsBySlot = other.attrsBySlot;
        this.numericSlots = other.numericSlots;
        this.objectSlots = other.objectSlots;
        this.fsm = other.fsm;
        this.commands = other.commands;
        this.traceLevels = other.traceLevels;
        this.unusedYunetaKeys = other.unusedYunetaKeys;
        this.manualStart = other.manualStart;
        this.playable = other.playable;
        this.confirmsDurability = other.confirmsDurability;
        this.takesJsonRecords = other.takesJsonRecords;
        this.answersDurableTokens = other.answersDurableTokens;
        this.takesQueueRecords = other.takesQueueRecords;
        this.takesBatches = other.takesBatches;
        this.takesSendBatches = other.takesSendBatches;
        this.takesMessageBatches = other.takesMessageBatches;
        this.linkUp = other.linkUp;
        this.stateVersion = other.stateVersion;
        this.subscriptionModel = other.subscriptionModel;
        this.factory = Objects.requireNonNull(factory, "factory of " + name);
    }

    public static <B extends GObjBehavior> Builder<B> builder(String name, Class<B> behaviorType) {
        return new Builder<>(name);
    }

    /**
     * The same gclass with another behaviour factory, for a DS component that hands its gobjs a service it got
     * injected ({@code QIoGate.SPEC.withFactory(g -> new QIoGate(g, queues))}).
     */
    public GClassSpec<B> withFactory(Function<GObj, B> f) {
        return new GClassSpec<>(this, f);
    }

    public String name() { return name; }
    public String description() { return description; }
    /** Attributes by name, in declaration order. */
    public Map<String, Attr<?>> attrs() { return attrs; }
    public Attr<?> attr(String name) { return attrs.get(name); }

    /** The attribute in a slot ({@link Attr#slot()}): numeric attributes first, then the others. */
    public Attr<?> attrAt(int slot) { return attrsBySlot[slot]; }

    /** How many attributes are numeric (their slots are 0 .. numericSlots-1). */
    public int numericSlots() { return numericSlots; }

    /** How many attributes are strings or JSON (slots numericSlots .. numericSlots+objectSlots-1). */
    public int objectSlots() { return objectSlots; }

    /** True when {@code a} is this gclass's own attribute (same object, in its slot). */
    public boolean owns(Attr<?> a) {
        int s = a.slot();
        return s >= 0 && s < attrsBySlot.length && attrsBySlot[s] == a;
    }

    public Fsm<B> fsm() { return fsm; }
    public List<CommandSpec<B>> commands() { return commands; }

    /** Trace levels, name to description, in declaration order. */
    public Map<String, String> traceLevels() { return traceLevels; }

    /** Config keys Yuneta knows for this gclass that Gatehouse accepts and ignores (one info log). */
    public Set<String> unusedYunetaKeys() { return unusedYunetaKeys; }
    /** A manual-start gclass (C_TCP) is never started by a tree walk: its owner starts it. */
    public boolean manualStart() { return manualStart; }
    public boolean playable() { return playable; }

    /**
     * True when this gclass answers {@link Ev#EV_ON_DURABLE}: a message sent to it with a {@link Kw#DURABLE} dict
     * is stored durably, and the sender then gets {@code EV_ON_DURABLE} with that dict as kw (see
     * {@link Builder#confirmsDurability()}).
     */
    public boolean confirmsDurability() { return confirmsDurability; }

    /**
     * True when this gclass takes a message to store as its JSON record's bytes: a kw whose {@link Kw#GBUFFER} is
     * the compact JSON to store, marked by {@link Kw#JSON_RECORD} (see {@link Builder#takesJsonRecords()}).
     *
     * @since 2.1
     */
    public boolean takesJsonRecords() { return takesJsonRecords; }

    /**
     * True when this gclass takes a {@link Kw#DURABLE_TOKEN} in place of a {@link Kw#DURABLE} dict and answers
     * {@link Ev#EV_ON_DURABLE_TOKENS}, one event per commit (see {@link Builder#answersDurableTokens()}).
     *
     * @since 2.2
     */
    public boolean answersDurableTokens() { return answersDurableTokens; }

    /**
     * True when this gclass, below a queue, takes a queued message as its record's stored bytes and the handle of
     * its {@link io.gatehouse.api.queue.QueueMessage} ({@link Kw#QUEUE_MESSAGE}) instead of the message's JSON with
     * {@code __md_trq__} written into it (see {@link Builder#takesQueueRecords()}).
     *
     * @since 2.3
     */
    public boolean takesQueueRecords() { return takesQueueRecords; }

    /**
     * True when this gclass takes an EV_ON_MESSAGE carrying a {@link Kw#BATCH} (see {@link Builder#takesBatches()}).
     *
     * @since 2.4
     */
    public boolean takesBatches() { return takesBatches; }

    /**
     * True when this gclass takes an EV_SEND_MESSAGE carrying a {@link Kw#BATCH} (see
     * {@link Builder#takesSendBatches()}).
     *
     * @since 2.5
     */
    public boolean takesSendBatches() { return takesSendBatches; }

    /**
     * True when this gclass takes an EV_ON_MESSAGE carrying {@link Kw#MESSAGES} (see
     * {@link Builder#takesMessageBatches()}).
     *
     * @since 2.6
     */
    public boolean takesMessageBatches() { return takesMessageBatches; }

    /**
     * The boolean attribute telling whether a gobj of this gclass has its link up (a connected socket, a reachable
     * broker), or null for a gclass that is not a link. Core counts the links that are up (the
     * {@code connections} metric) without knowing the gclass.
     */
    public Attr<Boolean> linkUp() { return linkUp; }

    /**
     * The version of the state this gclass's behaviours export for a live upgrade
     * ({@link GObjBehavior#onExport}); 0 when they do not hand their state over, and a live upgrade then rebuilds
     * the services holding its gobjs. A revision that changes what it exports bumps it; its {@code onImport} says
     * which older versions it still takes.
     */
    public int stateVersion() { return stateVersion; }

    public SubscriptionModel subscriptionModel() { return subscriptionModel; }
    public Function<GObj, B> factory() { return factory; }

    public CommandSpec<B> command(String cmd) {
        for (CommandSpec<B> c : commands) {
            if (c.matches(cmd)) return c;
        }
        return null;
    }

    @Override
    public String toString() {
        return name;
    }

    public static final class Builder<B extends GObjBehavior> {
        private final String name;
        private String description = "";
        private final Map<String, Attr<?>> attrs = new LinkedHashMap<>();
        private Fsm<B> fsm;
        private final List<CommandSpec<B>> commands = new ArrayList<>();
        private final Map<String, String> traceLevels = new LinkedHashMap<>();
        private final Set<String> unused = new LinkedHashSet<>();
        private boolean manualStart;
        private boolean playable;
        private boolean confirmsDurability;
        private boolean takesJsonRecords;
        private boolean answersDurableTokens;
        private boolean takesQueueRecords;
        private boolean takesBatches;
        private boolean takesSendBatches;
        private boolean takesMessageBatches;
        private Attr<Boolean> linkUp;
        private int stateVersion;
        private SubscriptionModel subscriptionModel = SubscriptionModel.CHILD;
        private Function<GObj, B> factory;

        Builder(String name) {
            this.name = Objects.requireNonNull(name, "gclass name");
        }

        public Builder<B> description(String d) { this.description = d; return this; }

        /** The attribute table, in the order the gclass declares it. */
        public Builder<B> attrs(Attr<?>... list) {
            for (Attr<?> a : list) {
                if (attrs.put(a.name(), a) != null) {
                    throw new IllegalArgumentException(name + ": attribute declared twice: " + a.name());
                }
            }
            return this;
        }

        public Builder<B> fsm(Fsm<B> f) { this.fsm = f; return this; }

        /** A row of the command table: {@code handler} is a method of the behaviour, {@code cmdX(kw, src)}. */
        public Builder<B> command(String cmd, String help, CommandHandler<B> handler, Param... params) {
            for (CommandSpec<B> c : commands) {
                if (c.matches(cmd)) throw new IllegalArgumentException(name + ": command declared twice: " + cmd);
            }
            commands.add(new CommandSpec<>(cmd, List.of(), List.of(params), help, handler));
            return this;
        }

        /** Aliases of the command declared last. */
        public Builder<B> alias(String... aliases) {
            if (commands.isEmpty()) throw new IllegalStateException(name + ": alias() before any command()");
            CommandSpec<B> last = commands.remove(commands.size() - 1);
            List<String> all = new ArrayList<>(last.aliases());
            Collections.addAll(all, aliases);
            commands.add(new CommandSpec<>(last.name(), all, last.params(), last.description(), last.handler()));
            return this;
        }

        /** A trace level: {@code set-trace} and the config's {@code trace_levels} turn it on by name. */
        public Builder<B> traceLevel(String level, String help) {
            if (traceLevels.put(Objects.requireNonNull(level, "trace level"), help) != null) {
                throw new IllegalArgumentException(name + ": trace level declared twice: " + level);
            }
            return this;
        }

        public Builder<B> acceptUnusedYunetaKeys(String... keys) {
            Collections.addAll(unused, keys);
            return this;
        }

        public Builder<B> manualStart() { this.manualStart = true; return this; }

        public Builder<B> playable() { this.playable = true; return this; }

        /**
         * This gclass answers durability: when it has stored a message whose kw carries a {@link Kw#DURABLE} dict
         * (per its fsync policy), it sends {@link Ev#EV_ON_DURABLE} with that dict as kw to the gobj that sent it
         * the message; a message it refuses (the send answered below 0) or cannot store never gets it. A gate that
         * hands messages on to such children (C_MQIOGATE) declares it too and keeps the promise for them. The
         * relay acks its producers on this event, whatever the output's gclass.
         */
        public Builder<B> confirmsDurability() { this.confirmsDurability = true; return this; }

        /**
         * This gclass stores a message sent to it as a JSON record ({@link Kw#JSON_RECORD}: the gbuffer holds the
         * compact JSON of the dict to store, as Jackson writes it, with no {@code __x} metadata key and no
         * reference) byte for byte as it would store that dict, without a tree. A sender that has the bytes
         * (C_RELAY, from the producer's) may then hand them instead of a dict; to any other gclass it sends the
         * dict. Every C_QIOGATE revision stores such a kw alike (it parses a gbuffer), which keeps live upgrades
         * of either side working in any order.
         *
         * @since 2.1
         */
        public Builder<B> takesJsonRecords() { this.takesJsonRecords = true; return this; }

        /**
         * This gclass confirms durability ({@link #confirmsDurability()}, which this implies) by token too: a
         * message whose kw carries a {@link Kw#DURABLE_TOKEN} is stored like one with a dict, and once durable its
         * sender gets {@link Ev#EV_ON_DURABLE_TOKENS} with that token and every other one of its tokens the same
         * commit covers, in the order sent; tokens that will never be durable (the queue closed or was backed up
         * first) are told with a negative result. A refused message (the send answered below 0) is never told.
         * A sender (C_RELAY) sends tokens to such a gclass only, and dicts to any other, so live upgrades of
         * either side work in any order.
         *
         * @since 2.2
         */
        public Builder<B> answersDurableTokens() {
            this.answersDurableTokens = true;
            this.confirmsDurability = true;
            return this;
        }

        /**
         * This gclass, below a queue's gate (C_QIOGATE), takes a queued message as a kw whose {@link Kw#GBUFFER}
         * holds the record as stored (the compact JSON of an object, with no {@code __md_trq__}) and whose
         * {@link Kw#QUEUE_MESSAGE} is the handle of its {@link io.gatehouse.api.queue.QueueMessage}: its rowid, t
         * and generation are what {@code __md_trq__} would say. It answers as any bottom does, with an ack naming
         * them, or with several answers at once ({@link Kw#QUEUE_ACKS}) for records it got so. The gate sends the JSON with {@code __md_trq__} to any other gclass, and for a record it cannot
         * hand so; a receiver must take both forms, which keeps live upgrades of either side working in any order.
         * The handle is valid during the send only: a receiver keeps its numbers, not the handle.
         *
         * @since 2.3
         */
        public Builder<B> takesQueueRecords() { this.takesQueueRecords = true; return this; }

        /**
         * This gclass takes an EV_ON_MESSAGE carrying a {@link Kw#BATCH}: it passes it up whole (a channel, a gate;
         * counting its messages, {@link Kw#messages}) or forwards every message of it and answers the batch as
         * {@link Kw#BATCH} says (a relay). A producer sends a batch only when every gobj its EV_ON_MESSAGE reaches
         * declares this, and each message alone otherwise, so live upgrades of any of them work in any order.
         *
         * @since 2.4
         */
        public Builder<B> takesBatches() { this.takesBatches = true; return this; }

        /**
         * This gclass takes an EV_SEND_MESSAGE carrying a {@link Kw#BATCH}, every message of it sent in the order of
         * its ranges: it passes the batch down whole to a bottom that declares this too, or sends its messages one
         * by one to a bottom that does not (a channel, a gate; counting its messages, {@link Kw#messages}), or
         * writes each message as the frame it would write for it alone (a protocol). A sender sends a batch only
         * to a bottom that declares this, so live upgrades of any level work in any order.
         *
         * @since 2.5
         */
        public Builder<B> takesSendBatches() { this.takesSendBatches = true; return this; }

        /**
         * This gclass takes an EV_ON_MESSAGE carrying {@link Kw#MESSAGES}, the messages one read completed: it passes
         * it up whole (a channel, a gate; counting its messages, {@link Kw#messages}) or takes every message of it in
         * order as if each had come alone, answering each alone (a relay, a queue's gate reading acks). A protocol
         * sends one only when every gobj its EV_ON_MESSAGE reaches declares this, and each message alone otherwise,
         * so live upgrades of any of them work in any order.
         *
         * @since 2.6
         */
        public Builder<B> takesMessageBatches() { this.takesMessageBatches = true; return this; }

        /** See {@link GClassSpec#linkUp()}; the attribute must be in this gclass's table. */
        public Builder<B> linkUp(Attr<Boolean> connected) { this.linkUp = connected; return this; }

        /** See {@link GClassSpec#stateVersion()}: at least 1 for a gclass whose behaviours hand their state over. */
        public Builder<B> stateVersion(int v) {
            if (v < 0) throw new IllegalArgumentException(name + ": stateVersion must be >= 0");
            this.stateVersion = v;
            return this;
        }

        public Builder<B> subscriptionModel(SubscriptionModel m) { this.subscriptionModel = m; return this; }

        public Builder<B> factory(Function<GObj, B> f) { this.factory = f; return this; }

        /**
         * Checks the tables and gives each attribute its slot.
         *
         * @throws IllegalArgumentException for a missing description, a link attribute not in the table, or an
         *                                  attribute already declared by another gclass
         */
        public GClassSpec<B> build() {
            if (description == null || description.isBlank()) throw missing("the gclass", name);
            for (Attr<?> a : attrs.values()) {
                if (a.description().isBlank()) throw missing("attribute", a.name());
            }
            for (CommandSpec<B> c : commands) {
                if (c.description().isBlank()) throw missing("command", c.name());
                for (Param p : c.params()) {
                    if (p.description().isBlank()) throw missing("parameter", c.name() + " " + p.name());
                }
            }
            for (Map.Entry<String, String> t : traceLevels.entrySet()) {
                if (t.getValue() == null || t.getValue().isBlank()) throw missing("trace level", t.getKey());
            }
            if (linkUp != null && attrs.get(linkUp.name()) != linkUp) {
                throw new IllegalArgumentException(name + ": linkUp attribute '" + linkUp.name() + "' is not in the table");
            }
            return new GClassSpec<>(this);
        }

        private IllegalArgumentException missing(String what, String which) {
            return new IllegalArgumentException(name + ": " + what + " '" + which + "' has no description");
        }
    }
}
