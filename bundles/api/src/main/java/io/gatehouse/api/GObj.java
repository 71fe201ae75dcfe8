// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.osgi.annotation.versioning.ProviderType;

import java.util.List;

/**
 * A gobj: an instance of a gclass in a yuno's tree. Core implements it; gclasses use it. Every method must be
 * called on the yuno's core thread ({@link Yuno#inCoreThread()}); other threads hand work in with
 * {@link Yuno#execute}.
 */
@ProviderType
public interface GObj {

    // --- Identity and tree ---

    String name();

    /** The path from the yuno down to this gobj, names joined by {@code `}. */
    String fullName();

    /** {@code gclass^name}, Yuneta's short form used in logs. */
    String shortName();

    GClassSpec<?> gclass();

    String gclassName();

    Yuno yuno();

    GObj parent();

    /** Children in creation order (an unmodifiable snapshot). */
    List<GObj> children();

    GObj child(String name);

    /** The next gobj down the stack, or null. */
    GObj bottom();

    void setBottom(GObj bottom);

    /** Follows the bottom chain down to its last gobj (this one when it has no bottom). */
    GObj lastBottom();

    boolean isService();

    /** Created by a gclass at run time (not from the config), and destroyed when its owner decides. */
    boolean isVolatile();

    boolean isPureChild();

    boolean isDestroyed();

    /** The behaviour object of this gobj (of the gclass's own type). */
    GObjBehavior behavior();

    // --- Lifecycle ---

    boolean isRunning();

    boolean isPlaying();

    boolean isDisabled();

    /** Starts this gobj (not its children). Answers the onStart result, or -1 if already running. */
    int start();

    int stop();

    /** Starts this gobj and its subtree, skipping manual-start and disabled gobjs and their subtrees. */
    int startTree();

    int stopTree();

    int play();

    int pause();

    /** Enable = start the tree if not running; disable = stop it and mark it disabled. */
    int enable();

    int disable();

    /** Creates a child by gclass name (pure child: subscribes its parent per the SERVICE model). */
    GObj createChild(String name, String gclass, ObjectNode kw);

    /** Creates a volatile child: not persisted, owned by the gclass that creates it. */
    GObj createVolatileChild(String name, String gclass, ObjectNode kw);

    /** Stops (if running) and destroys this gobj and its subtree. */
    void destroy();

    // --- Events ---

    String state();

    /** Changes the state from inside an action. */
    void changeState(String state);

    boolean inState(String state);

    /** True when the gclass has a row for the event in any state. */
    boolean hasInputEvent(String event);

    /** True when the current state has a row for the event. */
    boolean acceptsEvent(String event);

    /**
     * Sends an event to this gobj: runs the action of (state, event). The receiver owns {@code kw}.
     * Answers the action's result, -1 when the event is not defined in the current state.
     */
    int send(String event, ObjectNode kw, GObj src);

    /**
     * Publishes an event of this gobj to its subscribers, synchronously and in subscription order. With
     * several subscribers, each gets its own copy of the JSON and the gbuffer is retained for each extra one.
     * Answers the last negative result of a subscriber, else 0.
     */
    int publish(String event, ObjectNode kw);

    /** Subscribes {@code subscriber} to {@code event} of this gobj (null = every output event). */
    void subscribe(String event, GObj subscriber);

    void unsubscribe(String event, GObj subscriber);

    /** Subscribers of this gobj (a snapshot). */
    List<GObj> subscribers();

    // --- Attributes ---

    <T> T read(Attr<T> attr);

    /** An integer or counter attribute: an array load, no boxing. */
    long readLong(Attr<Long> attr);

    default int readInt(Attr<Long> attr) {
        return (int) readLong(attr);
    }

    boolean readBool(Attr<Boolean> attr);

    double readReal(Attr<Double> attr);

    /** Writes a typed value. The {@code onWriting} hook is called; a persistent attribute is saved. */
    <T> void write(Attr<T> attr, T value);

    /** Sets a value without calling {@code onWriting} (the gclass updating its own stats or state). */
    <T> void set(Attr<T> attr, T value);

    /** {@link #set} of an integer attribute without boxing. */
    void setLong(Attr<Long> attr, long value);

    void setBool(Attr<Boolean> attr, boolean value);

    /** Adds one to a counter (or integer) attribute; every reader sees it at once. */
    void inc(Attr<Long> counter);

    /** Adds {@code n} to a counter (or integer) attribute. */
    void add(Attr<Long> counter, long n);

    /** Reads an attribute by name as JSON; null if the gclass has no such attribute. */
    JsonNode readAttr(String name);

    /**
     * Writes an attribute by name from JSON, checking its type and its writable flag.
     *
     * @throws IllegalArgumentException with a clear message when the name is unknown, the attribute is not
     *                                  writable or the value does not fit its type
     */
    void writeAttr(String name, JsonNode value);

    /** All attributes as JSON (live values). */
    ObjectNode attrsJson();

    /** Sets every VOLATILE attribute back to its default. */
    void resetVolatiles();

    // --- Stats and commands ---

    /** Stats as {@code src} sees them: the gclass's own answer, else the default envelope. */
    ObjectNode stats(String filter, ObjectNode kw, GObj src);

    /** The default stats parser's envelope: stats attributes of this gobj and its bottom chain. */
    ObjectNode defaultStats(String filter);

    /** Runs a command of this gobj's gclass; a gclass without commands proxies to the bottom. Answers an envelope. */
    ObjectNode command(String command, ObjectNode kw, GObj src);

    // --- Timers ---

    /**
     * Sends {@code event} (with {@code kw}, may be null) to this gobj after {@code delayMs}, on the core thread.
     * Timers run on the yuno's clock ({@link Yuno#clock()}): a test that gives the yuno a manual clock moves them
     * by advancing it, without waiting.
     */
    Cancellable setTimeout(long delayMs, String event, ObjectNode kw);

    /** Sends {@code event} every {@code periodMs} until cancelled or the gobj is destroyed. */
    Cancellable setPeriodic(long periodMs, String event);

    // --- Trace ---

    boolean isTraced(String level);

    void setTrace(String level, boolean on);
}
