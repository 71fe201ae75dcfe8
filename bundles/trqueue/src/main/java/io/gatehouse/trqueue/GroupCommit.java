// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import io.gatehouse.api.queue.DurableListener;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.support.Glog;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * When what a queue wrote becomes durable, and who is told. With {@link FsyncPolicy#INTERVAL} the factory's flusher
 * thread forces the topic's files once a period (one commit for every append and ack since the last one), and at once
 * when {@code fsyncMaxRecords} written records wait for it; with
 * ALWAYS the append forces them itself; with NONE nothing is forced. Each commit moves the durable mark and tells
 * the {@link DurableListener}s, whose calls are coalesced.
 *
 * <p>{@link #flushTick} runs on a flusher thread (any of the factory's: a tick and an early commit of one queue may
 * run on two at once, and take turns on the lock) and the listeners on their executors; everything else runs on
 * the queue's owner thread, which takes the flusher's lock through {@link #exclusive} when it swaps, backs up or
 * closes the topic.
 */
final class GroupCommit {
    /** Runs {@code tick} every {@code intervalMs} on a flusher thread. */
    interface Scheduler {
        ScheduledFuture<?> every(Runnable tick, long intervalMs);

        /** Runs {@code task} once on a flusher thread, as soon as one is free; false when it cannot. */
        default boolean now(Runnable task) {
            return false;
        }
    }

    private final String name;
    private final FsyncPolicy policy;
    /** The queue's topic, read under the lock: null while the queue has none, and after it closed. */
    private final Supplier<Topic> topic;
    /** Guards the topic's files against the flusher while they are forced, swapped, backed up or closed. */
    private final Object lock = new Object();
    private ScheduledFuture<?> flushTask;
    private Scheduler scheduler;
    /** INTERVAL: a commit starts at once when this many written records wait for one (0 = on the period only). */
    private int maxRecords;
    /** An early commit is on the flusher's way and has not started: the next one is asked only after it starts. */
    private final AtomicBoolean earlyAsked = new AtomicBoolean();
    /** Flag stores written (acks): a commit forces again when they moved, even without a new row. */
    private volatile long acks;
    private long acksForced;
    private volatile DurableMark durable;
    private boolean fsyncErrorSaid;
    private final List<CoalescedListener> listeners = new CopyOnWriteArrayList<>();
    /** Asks the owner to write what its topic holds back (the stage, flag stores): a commit covers only the file. */
    private volatile Runnable ownerFlush = () -> { };

    /** The highest durable rowid, and the generation it belongs to. */
    private record DurableMark(long generation, long rowid) {
    }

    /**
     * A listener and its executor: at most one call waits on the executor, and it reads the mark when it runs, so
     * one call covers every commit since the last one (the executor gets one task per commit at most, however many
     * records it made durable). A listener that throws is said once per streak and told again at the next commit;
     * it does not keep the other listeners from being told, nor stop the flusher (an exception escaping a periodic
     * task would cancel it).
     */
    private final class CoalescedListener {
        final DurableListener listener;
        final Executor executor;
        final CoalescedTask task = new CoalescedTask(this::call);
        /** The listener threw at its last call (read and written by the calls, which never overlap). */
        volatile boolean failed;

        CoalescedListener(DurableListener listener, Executor executor) {
            this.listener = listener;
            this.executor = executor;
        }

        void tell() {
            task.schedule(executor);
        }

        private void call() {
            DurableMark d = durable;
            try {
                listener.durable(d.generation(), d.rowid());
                failed = false;
            } catch (RuntimeException e) {
                if (!failed) {
                    failed = true;
                    Glog.error(null, "Queue durability listener failed (said once until it works again)",
                            "topic_name", name, "generation", d.generation(), "rowid", d.rowid(), "cause", e.toString());
                }
            }
        }
    }

    GroupCommit(String name, FsyncPolicy policy, Supplier<Topic> topic, long generation, long durableRowid) {
        this.name = name;
        this.policy = policy;
        this.topic = topic;
        this.durable = new DurableMark(generation, durableRowid);
    }

    /** What a tick runs when the topic holds rows or flags back from the file: it asks the owner to write them. */
    void onUnwritten(Runnable askOwner) {
        ownerFlush = askOwner;
    }

    /**
     * Starts the flusher when the policy has one; with INTERVAL and {@code maxRecords > 0}, a commit also starts as
     * soon as that many written records wait for one ({@link #written}).
     */
    void start(Scheduler scheduler, long intervalMs, int maxRecords) {
        this.scheduler = scheduler;
        this.maxRecords = policy == FsyncPolicy.INTERVAL ? maxRecords : 0;
        if (policy == FsyncPolicy.INTERVAL) {
            flushTask = scheduler.every(this::flushTick, intervalMs);
        } else if (policy == FsyncPolicy.ALWAYS) {
            // ALWAYS forces at each append, or at the end of the owner's turn: the tick only retries a failed force
            flushTask = scheduler.every(this::flushTick, Math.max(intervalMs, ALWAYS_RETRY_MS));
        }
    }

    /** How often ALWAYS's flusher looks for written records a failed force left unpromised. */
    static final long ALWAYS_RETRY_MS = 100;

    /** Stops the flusher; a tick already under way still takes the lock, and finds no topic once the queue closed. */
    void stop() {
        if (flushTask != null) flushTask.cancel(false);
    }

    /** Runs {@code body} while the flusher cannot touch the topic's files. */
    void exclusive(Runnable body) {
        synchronized (lock) {
            body.run();
        }
    }

    /** As {@link #exclusive(Runnable)}, answering what {@code body} answers. */
    int exclusive(IntSupplier body) {
        synchronized (lock) {
            return body.getAsInt();
        }
    }

    // --- Durable mark ---

    /** A flag changed on disk (an ack): the next commit forces it. Owner thread. */
    void flagWritten() {
        acks++;
    }

    /**
     * What an append of {@code rowid} makes durable under the policy. ALWAYS forces here and may throw: the record is
     * written but its durability is not promised. INTERVAL leaves it to the flusher.
     */
    void appended(Topic tp, long generation, long rowid) throws IOException {
        if (policy == FsyncPolicy.ALWAYS) {
            // staged: the owner's turn writes and forces every append of the turn at once (forceWritten)
            if (tp.staging()) return;
            tp.forceAll();
            acksForced = acks;
            publish(generation, rowid);
        } else if (policy == FsyncPolicy.NONE) {
            publish(generation, rowid);
        } else if (tp.writtenRowid == rowid) {
            // written through (not staged): a staged append is counted when the owner writes its stage
            written(tp);
        }
    }

    /**
     * Records went to the file (the owner's stage was written, or an append went through the mapping). With a
     * {@code maxRecords} and at least that many of them waiting for a force, the flusher commits now instead of at
     * the end of its period: under a burst the producers wait for one fsync, not for the timer, while a trickle is
     * still forced once a period. The flusher runs the commits one after the other, so the records written during
     * one force are asked for again and go with the next: a continuous group commit while the burst lasts. Owner
     * thread (or the appending thread).
     */
    void written(Topic tp) {
        int max = maxRecords;
        if (max == 0) return;
        DurableMark d = durable;
        long waiting = d.generation() == tp.generation ? tp.writtenRowid - d.rowid() : tp.writtenRowid;
        if (waiting < max || earlyAsked.get() || !earlyAsked.compareAndSet(false, true)) return;
        if (!scheduler.now(this::earlyCommit)) earlyAsked.set(false); // the flusher is gone: the queue is closing
    }

    private void earlyCommit() {
        earlyAsked.set(false);
        forceWritten();
    }

    /** Sets the mark without telling anyone: the queue knows it holds (a topic taken, a backup's force). */
    void mark(long generation, long rowid) {
        durable = new DurableMark(generation, rowid);
    }

    /** Everything written so far, acks included, was forced: sets the mark without telling anyone. */
    void forced(long generation, long rowid) {
        acksForced = acks;
        durable = new DurableMark(generation, rowid);
    }

    /** Acks were written since the last force (a live upgrade hands this over with the files). Owner thread. */
    boolean acksUnforced() {
        return acks != acksForced;
    }

    /** The durable rowid of {@code generation}; 0 when the mark belongs to another one. */
    long durableRowid(long generation) {
        DurableMark d = durable;
        return d.generation() == generation ? d.rowid() : 0;
    }

    void onDurable(DurableListener listener, Executor executor) {
        listeners.add(new CoalescedListener(listener, executor == null ? Runnable::run : executor));
    }

    private void publish(long generation, long rowid) {
        durable = new DurableMark(generation, rowid);
        tellListeners();
    }

    private void tellListeners() {
        for (CoalescedListener l : listeners) l.tell();
    }

    // --- Commits ---

    /** A flusher thread's group commit. */
    void flushTick() {
        Topic held = topic.get();
        // what the owner still holds is written by it, and forced by a later tick
        if (held != null && held.unwritten()) ownerFlush.run();
        forceWritten();
    }

    /**
     * Forces what is in the file and not forced yet (records up to {@code writtenRowid}, flags), moves the durable
     * mark and tells the listeners: the flusher's tick, and ALWAYS's end of the owner's turn. Answers false when the
     * force failed (said once until one works; nothing is promised, and the next tick tries again).
     */
    boolean forceWritten() {
        long target;
        synchronized (lock) {
            Topic tp = topic.get();
            if (tp == null) return true;
            target = tp.writtenRowid;
            long a = acks;
            DurableMark d = durable;
            if (d.generation() == tp.generation && target == d.rowid() && a == acksForced) return true;
            try {
                tp.forceAll();
                fsyncErrorSaid = false;
            } catch (IOException e) {
                if (!fsyncErrorSaid) {
                    fsyncErrorSaid = true;
                    Glog.error(null, "Queue fsync FAILED", "topic_name", name, "cause", e.toString());
                }
                return false;
            }
            acksForced = a;
            durable = new DurableMark(tp.generation, target);
        }
        tellListeners();
        return true;
    }

    /** Forces everything written so far, on the owner thread (a clean stop; the owner wrote its stage first). */
    void sync() {
        synchronized (lock) {
            Topic tp = topic.get();
            if (tp == null) return;
            try {
                tp.forceAll();
                acksForced = acks;
                durable = new DurableMark(tp.generation, tp.writtenRowid);
            } catch (IOException e) {
                Glog.error(null, "Queue fsync FAILED", "topic_name", name, "cause", e.toString());
                return;
            }
        }
        tellListeners();
    }
}
