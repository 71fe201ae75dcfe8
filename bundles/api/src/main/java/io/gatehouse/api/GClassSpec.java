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
 * factory of per-gobj behaviours.
 *
 * <pre>{@code
 * GClassSpec.builder("C_PROT_TCP4H", ProtTcp4h.class)
 *     .description("4-byte big-endian length-prefixed messages")
 *     .attrs(URL, MAX_PKT_SIZE, TIMEOUT_PAYLOAD)
 *     .fsm(FSM)
 *     .traceLevels("traffic")
 *     .factory(ProtTcp4h::new)
 *     .build();
 * }</pre>
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
    private final Fsm<B> fsm;
    private final List<CommandSpec<B>> commands;
    private final List<String> traceLevels;
    private final Set<String> unusedYunetaKeys;
    private final boolean manualStart;
    private final boolean playable;
    private final SubscriptionModel subscriptionModel;
    private final Function<GObj, B> factory;

    private GClassSpec(Builder<B> b) {
        this.name = b.name;
        this.description = b.description;
        this.attrs = Collections.unmodifiableMap(new LinkedHashMap<>(b.attrs));
        this.fsm = Objects.requireNonNull(b.fsm, "fsm of " + b.name);
        this.commands = List.copyOf(b.commands);
        this.traceLevels = List.copyOf(b.traceLevels);
        this.unusedYunetaKeys = Set.copyOf(b.unused);
        this.manualStart = b.manualStart;
        this.playable = b.playable;
        this.subscriptionModel = b.subscriptionModel;
        this.factory = Objects.requireNonNull(b.factory, "factory of " + b.name);
    }

    public static <B extends GObjBehavior> Builder<B> builder(String name, Class<B> behaviorType) {
        return new Builder<>(name);
    }

    public String name() { return name; }
    public String description() { return description; }
    /** Attributes by name, in declaration order. */
    public Map<String, Attr<?>> attrs() { return attrs; }
    public Attr<?> attr(String name) { return attrs.get(name); }
    public Fsm<B> fsm() { return fsm; }
    public List<CommandSpec<B>> commands() { return commands; }
    public List<String> traceLevels() { return traceLevels; }
    /** Config keys Yuneta knows for this gclass that Gatehouse accepts and ignores (one info log). */
    public Set<String> unusedYunetaKeys() { return unusedYunetaKeys; }
    /** A manual-start gclass (C_TCP) is never started by a tree walk: its owner starts it. */
    public boolean manualStart() { return manualStart; }
    public boolean playable() { return playable; }
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
        private final List<String> traceLevels = new ArrayList<>();
        private final Set<String> unused = new LinkedHashSet<>();
        private boolean manualStart;
        private boolean playable;
        private SubscriptionModel subscriptionModel = SubscriptionModel.CHILD;
        private Function<GObj, B> factory;

        Builder(String name) {
            this.name = Objects.requireNonNull(name, "gclass name");
        }

        public Builder<B> description(String d) { this.description = d; return this; }

        public Builder<B> attrs(Attr<?>... list) {
            for (Attr<?> a : list) {
                if (attrs.put(a.name(), a) != null) {
                    throw new IllegalArgumentException(name + ": attribute declared twice: " + a.name());
                }
            }
            return this;
        }

        public Builder<B> fsm(Fsm<B> f) { this.fsm = f; return this; }

        @SafeVarargs
        public final Builder<B> commands(CommandSpec<B>... list) {
            Collections.addAll(commands, list);
            return this;
        }

        public Builder<B> traceLevels(String... levels) {
            Collections.addAll(traceLevels, levels);
            return this;
        }

        public Builder<B> acceptUnusedYunetaKeys(String... keys) {
            Collections.addAll(unused, keys);
            return this;
        }

        public Builder<B> manualStart() { this.manualStart = true; return this; }

        public Builder<B> playable() { this.playable = true; return this; }

        public Builder<B> subscriptionModel(SubscriptionModel m) { this.subscriptionModel = m; return this; }

        public Builder<B> factory(Function<GObj, B> f) { this.factory = f; return this; }

        public GClassSpec<B> build() {
            return new GClassSpec<>(this);
        }
    }
}
