// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The per-instance part of a gclass: its private data and the hooks the framework calls. One instance per
 * gobj, created by {@link GClassSpec#factory()} with the gobj it belongs to. The FSM actions and command
 * handlers are methods of this type. Everything runs on the yuno's core thread.
 *
 * <p>Hooks map to Yuneta's framework methods: {@code onCreate} = mt_create, {@code onChildAdded} =
 * mt_child_added, {@code onStart}/{@code onStop} = mt_start/mt_stop, {@code onPlay}/{@code onPause} =
 * mt_play/mt_pause, {@code onDestroy} = mt_destroy, {@code onWriting} = mt_writing, {@code onStats} = mt_stats.
 *
 * <p>While a config is being built, an {@link IllegalArgumentException} thrown by {@code onCreate} or
 * {@code onChildAdded} is a config error: core reports it with the node's path and builds nothing.
 */
public interface GObjBehavior {
    /** After the attributes are set, before children are created. */
    default void onCreate() {}

    /** A child was created under this gobj. */
    default void onChildAdded(GObj child) {}

    /** Start; answer a negative number to refuse (the gobj stays stopped). */
    default int onStart() { return 0; }

    default int onStop() { return 0; }

    /** Only called for gclasses declared {@link GClassSpec.Builder#playable()}. */
    default int onPlay() { return 0; }

    default int onPause() { return 0; }

    /** Last call; release everything held (buffers, sockets, files). */
    default void onDestroy() {}

    /**
     * A writable attribute was written (at run time or by a Config Admin change). To refuse the new value, throw
     * {@link IllegalArgumentException} with the reason: core puts the previous value back, persists nothing, logs
     * "Attribute value refused", and the writer gets the reason (write-attr answers it as an error).
     */
    default void onWriting(String attr) {}

    /**
     * The attributes are about to be read from outside the gclass ({@link GObj#readAttr}, {@link GObj#attrsJson},
     * the default stats). A gclass whose gauges are computed from its own state (a queue's size) sets them now.
     * Counters need nothing here: {@link GObj#inc} writes the attribute itself.
     */
    default void onReadAttrs() {}

    // --- Live upgrade (state handover) ---

    /**
     * Stop taking input: a live upgrade of this gclass's bundle has begun and the new revision is not there yet
     * (a {@code Bundle.update()} in progress). Stop reading sockets ({@code setAutoRead(false)}) and anything else
     * that makes work arrive on its own. Events sent to the gobj meanwhile are held by core, in order, and delivered
     * to the behaviour that takes over. Not called when the new revision is already running (it then takes over in
     * the same core-loop task, with nothing in between).
     */
    default void onSuspend() {}

    /**
     * The state of this gobj for the behaviour of another revision of its gclass, or null when it cannot be handed
     * over (the gobj's service is then rebuilt from its config, as a restart would). Called on the core thread, in
     * the task that hands over; the behaviour is dropped afterwards without {@code onStop} or {@code onDestroy}, so
     * anything it holds (a socket, a buffer, a queue handle) either goes into the state or is released here. The
     * state holds only api and third-party types: JSON, and references ({@link Kw#putRef}) to Netty channels and
     * buffers, {@link io.gatehouse.api.queue.TrQueue} handles, gobjs. Deadlines are clock times
     * ({@link GClock#monotonicMillis}). The gobj's attributes, FSM state, children, subscriptions and bottom stay in
     * the gobj and need no exporting; its timers are cancelled right after this call.
     */
    default ObjectNode onExport() { return null; }

    /**
     * Takes over the state another revision exported ({@code stateVersion} is that revision's
     * {@link GClassSpec#stateVersion()}), in the same core-loop task, after the factory made this behaviour and
     * before any event reaches it: re-arm timers from the deadlines, take over sockets (replace the old revision's
     * handler in the channel's pipeline), buffers and queue handles, and resume reading. Throw
     * {@link IllegalArgumentException} for a state it cannot take: the gobj's service is then rebuilt from its config,
     * and the reason is logged. What the state references is then released by core.
     */
    default void onImport(ObjectNode state, int stateVersion) {}

    /**
     * Own stats. Answer null to use the default parser (stats attributes of this gobj and its bottom chain in
     * an envelope). {@code src} tells who asks: a C_CHANNEL answers its bare counters to its parent.
     */
    default ObjectNode onStats(String filter, ObjectNode kw, GObj src) { return null; }

    /**
     * The message counters of a gclass that counts with a {@link RateWindow} (C_CHANNEL, C_IOGATE), or null.
     * Readers that must not move the read-driven rate window of seeds/000 take {@link RateWindow#txMsgs()} and
     * {@link RateWindow#rxMsgs()} from here and never call {@link RateWindow#read()}: core's {@code /metrics},
     * its MBeans and the live page's sampler do, so only {@code stats} reads (a person's {@code stats-yuno}, a
     * parent gate) close a window. The name is the accessor C_CHANNEL and C_IOGATE already had.
     */
    default RateWindow msgs() { return null; }
}
