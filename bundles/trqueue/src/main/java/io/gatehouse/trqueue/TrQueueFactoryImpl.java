// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueException;
import io.gatehouse.api.queue.TrQueueFactory;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.support.Glog;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Opens {@link TrQueue}s. In OSGi, {@link TrQueueService} publishes one as the {@link TrQueueFactory} service;
 * outside OSGi, {@code new} works the same. The factory's flusher threads ({@link #DEFAULT_FLUSHERS} unless told
 * otherwise) run the group commits of every INTERVAL queue it opened, and write the zeros ahead of their frames.
 */
public class TrQueueFactoryImpl implements TrQueueFactory, AutoCloseable {
    /**
     * Two, so that one queue's force or zeros do not hold another's commit: the demo's C_MQIOGATE writes each HTTP
     * request to two queues, and its answer waited for both forces one after the other (docs/BENCHMARKS.md,
     * "two flusher threads": +15 % HTTP ingest with one request in flight per connection, +17 % with eight).
     */
    public static final int DEFAULT_FLUSHERS = 2;
    /** At most this many: forces beyond what the disk runs at once only wait in the kernel. */
    public static final int MAX_FLUSHERS = 16;

    private final FileOps ops;
    private final int flushers;
    private ScheduledExecutorService flusher;
    private final Set<TrQueueImpl> open = ConcurrentHashMap.newKeySet();
    /**
     * {@link #open} as an array, made again on each open and close: what {@link #writeHeldBack} and
     * {@link #positions} walk for every MQTT QoS 2 message, without an iterator of the set each time.
     */
    private volatile TrQueueImpl[] openNow = new TrQueueImpl[0];
    /**
     * Each topic's last rowid when this factory first opened it: what an earlier run of the process wrote. Kept
     * across a close and open again, so that this run's rows never count as an earlier run's. One entry per topic.
     */
    private final Map<Path, Long> earlierRunLastRowid = new ConcurrentHashMap<>();

    public TrQueueFactoryImpl() {
        this(new FileOps());
    }

    /** A factory whose queues make every file-system call through {@code ops} (tests inject faults with it). */
    public TrQueueFactoryImpl(FileOps ops) {
        this(ops, DEFAULT_FLUSHERS);
    }

    /** With {@code flushers} flusher threads (1 to {@link #MAX_FLUSHERS}). */
    public TrQueueFactoryImpl(FileOps ops, int flushers) {
        if (flushers < 1 || flushers > MAX_FLUSHERS) {
            throw new IllegalArgumentException("flusher threads must be 1 to " + MAX_FLUSHERS + ", not " + flushers);
        }
        this.ops = ops;
        this.flushers = flushers;
    }

    /** How many flusher threads this factory runs. */
    public int flushers() {
        return flushers;
    }

    @Override
    public TrQueue open(Path trangerPath, String database, String topicName, String tkey, int systemFlag,
                        long backupQueueSize, TrQueueOptions options) {
        if (topicName == null || topicName.isEmpty() || topicName.contains("/") || topicName.startsWith(".")) {
            throw new TrQueueException("Bad topic name: " + topicName);
        }
        TrQueueOptions opts;
        try {
            opts = (options == null ? TrQueueOptions.defaults() : options).validate();
        } catch (IllegalArgumentException e) {
            throw new TrQueueException(e.getMessage(), e);
        }
        Path dbDir = database == null || database.isEmpty() ? trangerPath : trangerPath.resolve(database);
        Path topicDir = dbDir.resolve(topicName);
        FileChannel lockCh = null;
        FileLock lock = null;
        try {
            ops.createDirectories(dbDir);
            Path marker = dbDir.resolve("__timeranger2__.json");
            if (!ops.exists(marker)) {
                ObjectNode m = Kw.create();
                m.put("filename_mask", "%Y-%m-%d");
                m.put("rpermission", 432);
                m.put("xpermission", 1528);
                ops.writeAtomic(marker, Topic.pretty(m));
            }
            Path lockPath = dbDir.resolve(topicName + ".lock");
            lockCh = ops.open(lockPath, EnumSet.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE));
            try {
                lock = lockCh.tryLock();
            } catch (OverlappingFileLockException e) {
                lock = null;
            }
            if (lock == null) {
                Glog.error(null, "Cannot open queue: its topic is locked by another process", "topic_name",
                        topicName, "lock", lockPath.toString());
                throw new TrQueueException("Queue topic " + topicDir + " is locked by another process ("
                        + lockPath + ")");
            }
            // the flag nibble of the key type is forced: a queue's key is its rowid
            int sf = (systemFlag & ~0x000F) | 0x0002;
            if (!ops.isDirectory(topicDir)) {
                ObjectNode vars = Kw.create();
                if (backupQueueSize > 0) vars.put("backup_queue_size", backupQueueSize);
                Topic.create(ops, topicDir, Topic.newDesc(topicName, tkey, sf, System.currentTimeMillis()), vars);
            } else if (!ops.exists(topicDir.resolve(Topic.COLS))) {
                ops.writeAtomic(topicDir.resolve(Topic.COLS), "{}".getBytes(StandardCharsets.UTF_8));
            }
            Topic tp;
            try {
                tp = TopicRecovery.open(ops, topicDir, topicName, opts.segmentSize(), opts.maxMessageSize());
            } catch (TopicException e) {
                Glog.error(null, e.getMessage(), "topic_name", topicName, "cause", e.causeText());
                throw new TrQueueException(e.getMessage() + ": " + topicDir, e.getCause());
            }
            if (backupQueueSize > 0 && tp.vars.path("backup_queue_size").asLong(0) != backupQueueSize) {
                tp.vars.put("backup_queue_size", backupQueueSize);
                tp.saveVars();
            }
            long earlier = earlierRunLastRowid.computeIfAbsent(topicDir.toAbsolutePath().normalize(), d -> tp.lastRowid);
            TrQueueImpl q = new TrQueueImpl(this, ops, dbDir, topicName, tp, opts, lockCh, lock, earlier);
            opened(q);
            return q;
        } catch (IOException e) {
            release(lock, lockCh);
            Glog.error(null, "Cannot open queue", "topic_name", topicName, "cause", e.toString());
            throw new TrQueueException("Cannot open queue " + topicDir + ": " + e, e);
        } catch (RuntimeException e) {
            release(lock, lockCh);
            throw e;
        }
    }

    /**
     * Takes over the queue {@code from} has open (a handle of another trqueue revision, {@link TrQueue#openState}):
     * its files, mappings, lock, list and soft marks are this factory's from now on, nothing is read from disk; the
     * old handle is detached. Null, with {@code from} untouched, when its state is missing or not one this revision
     * takes (logged once per call, as a warning: the caller opens the topic again, which loses nothing).
     */
    @Override
    public TrQueue takeOver(TrQueue from, Path trangerPath, String database, String topicName, String tkey,
                            int systemFlag, long backupQueueSize, TrQueueOptions options) {
        if (from == null || (from instanceof TrQueueImpl && open.contains(from))) return null;
        Map<String, Object> st;
        TrQueueOptions opts;
        try {
            opts = (options == null ? TrQueueOptions.defaults() : options).validate();
            st = from.openState();
        } catch (RuntimeException e) {
            Glog.warn(null, "Queue cannot be taken over, its topic is opened again", "topic_name", topicName,
                    "cause", e.toString());
            return null;
        }
        if (st == null) return null;
        Path dbDir = database == null || database.isEmpty() ? trangerPath : trangerPath.resolve(database);
        TrQueueImpl q;
        try {
            q = TrQueueImpl.adopt(this, ops, dbDir, topicName, opts, st);
        } catch (RuntimeException e) {
            Glog.warn(null, "Queue cannot be taken over, its topic is opened again", "topic_name", topicName,
                    "cause", e.toString());
            return null;
        }
        Object detach = st.get("detach");
        if (!(detach instanceof Runnable)) return null;
        ((Runnable) detach).run();
        if (backupQueueSize > 0 && q.backupQueueSize() != backupQueueSize) {
            q.setBackupQueueSize(backupQueueSize);
        }
        earlierRunLastRowid.putIfAbsent(dbDir.resolve(topicName).toAbsolutePath().normalize(), q.earlierRunLastRowid());
        opened(q);
        q.startAdopted();
        return q;
    }

    /** Every open queue owned by the calling thread's loop writes what it holds back; false when a write failed. */
    @Override
    public boolean writeHeldBack() {
        boolean ok = true;
        for (TrQueueImpl q : openNow) ok &= q.writeHeldBackOnOwner();
        return ok;
    }

    /**
     * How long after the positions a row may have been appended and still be found after them by
     * {@link #earlierRecordsAfter}. The caller appends right after it takes them, on the same thread; a row appended
     * later is another run's, started again after a kill (a gateway takes seconds to start).
     */
    static final long POSITIONS_APPEND_WITHIN_MS = 2000;

    /**
     * {@code @<epoch ms>} then, for each open queue owned by the calling thread's loop,
     * {@code <topic dir, base64>.<last rowid>}, comma-separated; "" when there is no such queue.
     */
    @Override
    public String positions() {
        StringBuilder sb = null;
        for (TrQueueImpl q : openNow) {
            long last = q.positionOnOwner();
            if (last < 0) continue;
            if (sb == null) sb = new StringBuilder(96).append('@').append(System.currentTimeMillis());
            sb.append(',').append(q.positionKey()).append('.').append(last);
        }
        return sb == null ? "" : sb.toString();
    }

    @Override
    public List<byte[]> earlierRecordsAfter(String positions, int max) {
        List<byte[]> out = new ArrayList<>();
        if (positions == null || positions.isEmpty()) return out;
        String[] fields = positions.split(",");
        long notAfterMs = Long.MAX_VALUE;
        if (fields.length > 0 && fields[0].startsWith("@")) {
            try {
                notAfterMs = Long.parseLong(fields[0].substring(1)) + POSITIONS_APPEND_WITHIN_MS;
            } catch (NumberFormatException notPositions) {
                return out;
            }
        }
        for (String p : fields) {
            if (p.startsWith("@")) continue;
            int dot = p.lastIndexOf('.');
            long rowid;
            try {
                rowid = dot > 0 ? Long.parseLong(p.substring(dot + 1)) : -1;
            } catch (NumberFormatException notPositions) {
                continue;
            }
            String key = dot > 0 ? p.substring(0, dot) : "";
            for (TrQueueImpl q : openNow) {
                if (q.positionKey().equals(key)) q.earlierRecordsAfter(rowid, max, notAfterMs, out);
            }
        }
        return out;
    }

    /**
     * The bundle stops (a {@code Bundle.update()} of trqueue, or the framework stopping): every open queue forces
     * what it wrote and stops its commits, but stays open and locked ({@link TrQueueImpl#park}) for the next revision
     * to take over, or for its owner to close; the flusher stops. Queues of this factory are not told anything more.
     */
    public void park() {
        List<TrQueueImpl> qs = new ArrayList<>(open);
        for (TrQueueImpl q : qs) {
            q.park();
            closed(q);
        }
        synchronized (this) {
            if (flusher != null) flusher.shutdownNow();
            flusher = null;
        }
    }

    private static void release(FileLock lock, FileChannel ch) {
        try {
            if (lock != null) lock.release();
            if (ch != null) ch.close();
        } catch (IOException ignored) {
            // nothing more to free
        }
    }

    synchronized ScheduledFuture<?> scheduleFlush(Runnable tick, long intervalMs) {
        if (flusher == null) {
            AtomicInteger n = new AtomicInteger();
            flusher = Executors.newScheduledThreadPool(flushers, r -> {
                Thread t = new Thread(r, "trqueue-flusher-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
        }
        return flusher.scheduleWithFixedDelay(tick, intervalMs, intervalMs, TimeUnit.MILLISECONDS);
    }

    /** Runs {@code task} once on a flusher thread; false when there is none (not started, or closed). */
    synchronized boolean flushNow(Runnable task) {
        if (flusher == null) return false;
        try {
            flusher.execute(task);
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }

    void closed(TrQueueImpl q) {
        synchronized (open) {
            open.remove(q);
            openNow = open.toArray(new TrQueueImpl[0]);
        }
    }

    private void opened(TrQueueImpl q) {
        synchronized (open) {
            open.add(q);
            openNow = open.toArray(new TrQueueImpl[0]);
        }
    }

    /** Closes the queues still open (forcing what they wrote) and stops the flusher. */
    @Override
    public void close() {
        List<TrQueueImpl> qs = new ArrayList<>(open);
        for (TrQueueImpl q : qs) q.close();
        synchronized (this) {
            if (flusher != null) flusher.shutdownNow();
            flusher = null;
        }
    }
}
