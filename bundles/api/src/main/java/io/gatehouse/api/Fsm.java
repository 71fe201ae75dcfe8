// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The states of a gclass and its transition table: per state, rows (event → action, next state).
 *
 * <p>Dispatch rules (Yuneta's, kept exactly):
 * <ul>
 *   <li>A gobj starts in the first state declared.</li>
 *   <li>The next state is set <b>before</b> the action runs; the action may change it again.</li>
 *   <li>An event without a row in the current state is logged ("Event NOT DEFINED in state"), its kw is
 *       released and the sender gets -1.</li>
 *   <li>A row without action ({@link StateBuilder#ignore}) consumes the kw (its gbuffer is released) and
 *       answers 0 after the optional state change.</li>
 *   <li>Actions run on the yuno's single core thread: no locks in gclass code.</li>
 * </ul>
 *
 * <p>{@link Builder#build()} validates: every target state is declared and every state is reachable from the
 * initial one, through rows or because the state is marked {@link StateBuilder#enteredByAction()}.
 *
 * @param <B> the gobj behaviour type whose methods are the actions
 */
public final class Fsm<B> {

    /** One row: the action (null = consume and ignore) and the next state (null = stay). */
    public static final class Transition<B> {
        private final Action<B> action;
        private final String next;

        Transition(Action<B> action, String next) {
            this.action = action;
            this.next = next;
        }

        public Action<B> action() { return action; }
        public String next() { return next; }
    }

    /**
     * The rows of one state as an open-addressing table for the dispatcher: an event name is found by identity
     * (the usual case, event names are constants) or by equality, without a map's wrapper and node hops.
     */
    public static final class Rows<B> {
        private final String[] events;
        private final Transition<B>[] transitions;
        private final int mask;

        @SuppressWarnings("unchecked")
        Rows(Map<String, Transition<B>> rows) {
            int cap = Integer.highestOneBit(Math.max(2, rows.size()) * 2 - 1) << 1;   // load factor <= 0.5
            events = new String[cap];
            transitions = new Transition[cap];
            mask = cap - 1;
            rows.forEach((ev, t) -> {
                int i = ev.hashCode() & mask;
                while (events[i] != null) i = (i + 1) & mask;
                events[i] = ev;
                transitions[i] = t;
            });
        }

        /** The row of {@code event}, or null when the state has none. */
        public Transition<B> get(String event) {
            int h = event.hashCode();
            for (int i = h & mask; ; i = (i + 1) & mask) {
                String e = events[i];
                if (e == event) return transitions[i];
                if (e == null) return null;
                if (e.hashCode() == h && e.equals(event)) return transitions[i];
            }
        }
    }

    private final List<String> states;
    private final Map<String, Map<String, Transition<B>>> table;
    private final Map<String, Rows<B>> rowTables = new HashMap<>();
    private final Rows<B> noRows = new Rows<>(Map.of());
    private final Set<String> inputEvents;
    private final Set<String> outputEvents;

    private Fsm(List<String> states, Map<String, Map<String, Transition<B>>> table, Set<String> outputs) {
        this.states = Collections.unmodifiableList(states);
        this.table = table;
        table.forEach((st, rows) -> rowTables.put(st, new Rows<>(rows)));
        Set<String> in = new LinkedHashSet<>();
        for (Map<String, Transition<B>> rows : table.values()) in.addAll(rows.keySet());
        this.inputEvents = Collections.unmodifiableSet(in);
        this.outputEvents = Collections.unmodifiableSet(outputs);
    }

    public static <B> Builder<B> builder() {
        return new Builder<>();
    }

    public String initialState() { return states.get(0); }
    public List<String> states() { return states; }
    public Set<String> inputEvents() { return inputEvents; }
    public Set<String> outputEvents() { return outputEvents; }
    public boolean hasState(String st) { return table.containsKey(st); }

    /** The row for (state, event), or null when the event is not defined in that state. */
    public Transition<B> lookup(String state, String event) {
        return rowTable(state).get(event);
    }

    /**
     * The rows of a state (empty for an unknown state). A dispatcher keeps the table of its current state and
     * looks an event up once per message instead of state then event.
     */
    public Rows<B> rowTable(String state) {
        Rows<B> r = rowTables.get(state);
        return r == null ? noRows : r;
    }

    /** Events that have a row in the given state. */
    public Set<String> eventsOf(String state) {
        Map<String, Transition<B>> rows = table.get(state);
        return rows == null ? Set.of() : Collections.unmodifiableSet(rows.keySet());
    }

    public static final class Builder<B> {
        private final List<String> states = new ArrayList<>();
        private final Map<String, Map<String, Transition<B>>> table = new LinkedHashMap<>();
        private final Set<String> enteredByAction = new HashSet<>();
        private final Set<String> outputs = new LinkedHashSet<>();

        public StateBuilder<B> state(String name) {
            Objects.requireNonNull(name, "state name");
            if (table.containsKey(name)) throw new IllegalArgumentException("state declared twice: " + name);
            states.add(name);
            Map<String, Transition<B>> rows = new LinkedHashMap<>();
            table.put(name, rows);
            return new StateBuilder<>(this, name, rows);
        }

        /** Events this gclass publishes. */
        public Builder<B> publishes(String... events) {
            Collections.addAll(outputs, events);
            return this;
        }

        public Fsm<B> build() {
            if (states.isEmpty()) throw new IllegalStateException("an FSM needs at least one state");
            for (Map.Entry<String, Map<String, Transition<B>>> st : table.entrySet()) {
                for (Map.Entry<String, Transition<B>> row : st.getValue().entrySet()) {
                    String next = row.getValue().next;
                    if (next != null && !table.containsKey(next)) {
                        throw new IllegalStateException("state " + st.getKey() + ", event " + row.getKey()
                                + ": next state " + next + " is not declared");
                    }
                }
            }
            Set<String> reached = new HashSet<>(enteredByAction);
            Deque<String> todo = new ArrayDeque<>();
            todo.add(states.get(0));
            todo.addAll(enteredByAction);
            while (!todo.isEmpty()) {
                String s = todo.poll();
                reached.add(s);
                for (Transition<B> t : table.get(s).values()) {
                    if (t.next != null && !reached.contains(t.next)) {
                        reached.add(t.next);
                        todo.add(t.next);
                    }
                }
            }
            for (String s : states) {
                if (!reached.contains(s)) {
                    throw new IllegalStateException("state " + s + " is not reachable from " + states.get(0)
                            + " (no row leads to it; mark it enteredByAction() if an action changes to it)");
                }
            }
            Map<String, Map<String, Transition<B>>> frozen = new HashMap<>();
            table.forEach((k, v) -> frozen.put(k, Collections.unmodifiableMap(new HashMap<>(v))));
            return new Fsm<>(new ArrayList<>(states), frozen, outputs);
        }
    }

    public static final class StateBuilder<B> {
        private final Builder<B> owner;
        private final String name;
        private final Map<String, Transition<B>> rows;

        StateBuilder(Builder<B> owner, String name, Map<String, Transition<B>> rows) {
            this.owner = owner;
            this.name = name;
            this.rows = rows;
        }

        /** Row: run {@code action}, stay in this state. */
        public StateBuilder<B> on(String event, Action<B> action) {
            return on(event, action, null);
        }

        /** Row: set {@code next} as the state, then run {@code action}. */
        public StateBuilder<B> on(String event, Action<B> action, String next) {
            Objects.requireNonNull(event, "event");
            if (rows.containsKey(event)) {
                throw new IllegalArgumentException("state " + name + ": event " + event + " declared twice");
            }
            rows.put(event, new Transition<>(action, next));
            return this;
        }

        /** Row without action: the event is accepted and its kw released. */
        public StateBuilder<B> ignore(String event) {
            return on(event, null, null);
        }

        /** Row without action that changes the state. */
        public StateBuilder<B> goTo(String event, String next) {
            return on(event, null, next);
        }

        /** This state is entered by an action ({@link GObj#changeState}), not only by rows. */
        public StateBuilder<B> enteredByAction() {
            owner.enteredByAction.add(name);
            return this;
        }

        public StateBuilder<B> state(String next) {
            return owner.state(next);
        }

        public Builder<B> publishes(String... events) {
            return owner.publishes(events);
        }

        public Fsm<B> build() {
            return owner.build();
        }
    }
}
