// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.queue.DurableListener;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.support.Glog;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A tr_queue over a {@link Topic}. The list is a bit set over rowids (one bit per row of the topic), soft marks
 * are a map holding only non-zero marks (the in-flight window), and contents stay in the segment files. When
 * records become durable is {@link GroupCommit}'s; the backup of the topic is {@link TopicBackup}'s; the JSON of a
 * record is {@link RecordJson}'s.
 */
final class TrQueueImpl implements TrQueue {
    private final TrQueueFactoryImpl factory;
    private final FileOps ops;
    private final Path topicDir;
    private final String name;
    private final TrQueueOptions opts;
    private final FileChannel lockChannel;
    private final FileLock lock;
    private final GroupCommit commit;
    private final TopicBackup backup;

    private volatile Topic topic;
    private long generation;
    /**
     * The topic's last rowid when this process first opened it: the rows up to it were written by an earlier run
     * ({@link #earlierRecordsAfter}). Carried to the next revision by a live upgrade.
     */
    private final long earlierRunLastRowid;
    /** This queue in the factory's positions: its topic directory in URL-safe base64 (no whitespace, no dot). */
    private final String positionKey;
    private final RowSet list = new RowSet();
    /** Not final: a live upgrade hands the map itself to the next revision's queue, no copy. */
    private final SoftMarks softMarks = new SoftMarks();
    private final RecordJson json = new RecordJson();
    /** Reads the message time of a record appended as its bytes. */
    private final RecordTm recordTm = new RecordTm();
    /** The digits of the time of the last message read back to send. */
    private final RecentDecimal recentT = new RecentDecimal();

    private boolean loadFailed;
    private boolean noTopicSaid;
    private String failedFingerprint;
    private boolean closed;
    /** Appends refused since the last one that worked; the write error is said once per streak. */
    private long appendRefused;
    /** A fault on a mapped page (InternalError) was said; said again only after an append works. */
    private boolean faultSaid;

    /**
     * The event loop of the first listener given with one ({@link #onDurable}): the queue's owner. With
     * {@link FsyncPolicy#INTERVAL} or {@link FsyncPolicy#ALWAYS}, appends made on it stage their frames and flag
     * stores ({@link Topic#startStaging}), written once per turn of that loop by {@link #flushTask} (and, ALWAYS,
     * forced there); null: the topic writes through its mapping.
     */
    private volatile io.netty.util.concurrent.EventExecutor ownerLoop;
    private final CoalescedTask flushTask = new CoalescedTask(this::flushTurn);
    /** A write of the stage failed; said again only after one works. */
    private boolean stageErrorSaid;
    /** How long a thread other than the owner waits for the owner to write its stage (a park, a close). */
    static final long OWNER_FLUSH_WAIT_MS = 10_000;

    TrQueueImpl(TrQueueFactoryImpl factory, FileOps ops, Path dbDir, String name, Topic topic,
                TrQueueOptions opts, FileChannel lockChannel, FileLock lock, long earlierRunLastRowid) {
        this(factory, ops, dbDir, name, topic, opts, lockChannel, lock, topic.lastRowid, earlierRunLastRowid);
        startCommits();
    }

    /** A queue whose commits are not started yet ({@link #startCommits}), durable up to {@code durableRowid}. */
    private TrQueueImpl(TrQueueFactoryImpl factory, FileOps ops, Path dbDir, String name, Topic topic,
                        TrQueueOptions opts, FileChannel lockChannel, FileLock lock, long durableRowid,
                        long earlierRunLastRowid) {
        this.factory = factory;
        this.ops = ops;
        this.topicDir = dbDir.resolve(name);
        this.earlierRunLastRowid = earlierRunLastRowid;
        this.positionKey = positionKey(topicDir);
        this.name = name;
        this.opts = opts;
        this.lockChannel = lockChannel;
        this.lock = lock;
        this.topic = topic;
        this.generation = topic.generation;
        this.commit = new GroupCommit(name, opts.fsyncPolicy(), () -> this.topic, generation, durableRowid);
        this.backup = new TopicBackup(ops, dbDir, name, opts, commit, new TopicBackup.Owner() {
            @Override public void detach() { TrQueueImpl.this.topic = null; }

            @Override public void adopt(Topic tp) { TrQueueImpl.this.adopt(tp); }

            @Override
            public void lost(String fingerprint) {
                failedFingerprint = fingerprint;
                noTopicSaid = false;
            }
        });
    }

    private void startCommits() {
        commit.onUnwritten(this::scheduleFlush);
        commit.start(new GroupCommit.Scheduler() {
            @Override
            public ScheduledFuture<?> every(Runnable tick, long intervalMs) {
                return factory.scheduleFlush(tick, intervalMs);
            }

            @Override
            public boolean now(Runnable task) {
                return factory.flushNow(task);
            }
        }, opts.fsyncIntervalMs(), opts.fsyncMaxRecords());
    }

    // --- Write-behind (the owner's stage) ---

    /** Asks the owner loop for one {@link #flushTurn}, unless one is on its way. Any thread. */
    private void scheduleFlush() {
        io.netty.util.concurrent.EventExecutor loop = ownerLoop;
        if (loop != null) flushTask.schedule(loop);
    }

    /** After the owner loop's turn: what the turn staged goes to the file. */
    private void flushTurn() {
        Topic tp = topic;
        if (tp != null && !closed) writeStage(tp, opts.fsyncPolicy() == FsyncPolicy.ALWAYS);
    }

    /** Owner thread. {@code force}: ALWAYS's end of turn, which also forces what it wrote before anyone is told. */
    private void writeStage(Topic tp, boolean force) {
        if (!tp.staging() || (!tp.unwritten() && !force)) return;
        try {
            if (tp.unwritten()) {
                if (tp.flushStage()) commit.flagWritten();
                commit.written(tp);
            }
            // ALWAYS: one force for every append of the turn, before anyone is told they are durable (acks alone
            // are not forced, as ever: they go with the next force)
            if (force && commit.durableRowid(generation) != tp.writtenRowid) commit.forceWritten();
            if (stageErrorSaid) {
                stageErrorSaid = false;
                Glog.info(null, "Queue writes work again", "topic_name", name);
            }
        } catch (IOException | RuntimeException e) {
            // nothing written is promised: the next turn (or tick) tries again, the senders wait for durability
            if (!stageErrorSaid) {
                stageErrorSaid = true;
                Glog.error(null, "Queue write FAILED, tried again (said once until a write works)", "topic_name",
                        name, "reason", reasonOf(e), "cause", e.toString());
            }
        }
    }

    /**
     * {@link io.gatehouse.api.queue.TrQueueFactory#writeHeldBack}: on the owner's loop, what the stage holds goes to
     * the file now; false when that write failed. Other threads' calls leave this queue alone (true).
     */
    boolean writeHeldBackOnOwner() {
        Topic tp = topic;
        io.netty.util.concurrent.EventExecutor loop = ownerLoop;
        if (tp == null || closed || loop == null || !loop.inEventLoop() || !tp.staging()) return true;
        // the page cache is what the caller needs: ALWAYS's force stays with the end of the turn
        writeStage(tp, false);
        return tp.writtenRowid == tp.lastRowid;
    }

    /**
     * Writes the stage before its topic is handed over, backed up, forced or closed. From another thread than the
     * owner (a trqueue bundle stopping) the owner loop does it, waited for; a loop that does not answer in time (it
     * is blocked, so it touches nothing) or is gone leaves it to this thread.
     */
    private void writeStageNow() {
        Topic tp = topic;
        if (tp == null || !tp.staging() || !tp.unwritten()) return;
        io.netty.util.concurrent.EventExecutor loop = ownerLoop;
        boolean force = opts.fsyncPolicy() == FsyncPolicy.ALWAYS;
        if (loop == null || loop.inEventLoop() || loop.isShuttingDown()) {
            writeStage(tp, force);
            return;
        }
        try {
            loop.submit(() -> writeStage(tp, force)).get(OWNER_FLUSH_WAIT_MS, TimeUnit.MILLISECONDS);
            return;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException | RejectedExecutionException e) {
            Glog.warn(null, "Queue owner did not write its stage, written here", "topic_name", name,
                    "cause", e.toString());
        }
        writeStage(tp, force);
    }

    // --- Identity ---

    @Override public String topicName() { return name; }

    @Override public long generation() { return generation; }

    @Override public FsyncPolicy fsyncPolicy() { return opts.fsyncPolicy(); }

    // --- Topic taken again by name ---

    /**
     * The topic, taken again by name when the queue lost it. Quiet between attempts: the open is tried again only
     * when what stopped the last one changed (the descriptor's bytes, the listing of keys/).
     */
    private Topic topic() {
        Topic tp = topic;
        if (tp != null || closed) return tp;
        String fp = TopicRecovery.fingerprint(ops, topicDir);
        if (fp.equals(failedFingerprint)) {
            if (!noTopicSaid) {
                noTopicSaid = true;
                Glog.error(null, "Queue without topic, it cannot be opened", "topic_name", name);
            }
            return null;
        }
        try {
            tp = TopicRecovery.open(ops, topicDir, name, opts.segmentSize(), opts.maxMessageSize());
        } catch (TopicException e) {
            Glog.error(null, e.getMessage(), "topic_name", name, "cause", e.causeText());
            failedFingerprint = fp;
            if (!noTopicSaid) {
                noTopicSaid = true;
                Glog.error(null, "Queue without topic, it cannot be opened", "topic_name", name);
            }
            return null;
        }
        adopt(tp);
        noTopicSaid = false;
        failedFingerprint = null;
        Glog.info(null, "Queue topic taken again", "topic_name", name, "generation", tp.generation);
        return tp;
    }

    private void adopt(Topic tp) {
        commit.exclusive(() -> {
            topic = tp;
            if (tp.generation != generation) {
                // another incarnation: rowids of the old list mean other messages now
                list.clear();
                softMarks.clear();
                generation = tp.generation;
            }
            commit.mark(generation, tp.lastRowid);
        });
    }

    // --- Load ---

    @Override
    public int load() {
        Topic tp = topic();
        if (tp == null) return -1;
        boolean failed = !TopicRecovery.retryUnreadable(tp) || tp.lostRows;
        long last = tp.lastRowid;
        long hint = firstRowid();
        long start = hint != 0 && hint <= last ? hint : 1;
        long first = 0;
        for (Segment s : tp.segments) {
            if (s.unreadable != null) {
                continue;
            }
            long from = Math.max(start, s.base);
            long to = s.lastRowid();
            for (long r = from; r <= to; r++) {
                int off = s.offset(r);
                if (off != 0 && (tp.flag(s, r, off) & MSG_PENDING) != 0) { // 0: a row lost in a gap
                    if (first == 0) first = r;
                    addToList(r);
                }
            }
        }
        if (failed) {
            loadFailed = true;
            Glog.error(null, "Queue loaded without some of its messages: its first_rowid is not moved nor saved",
                    "topic_name", name, "first_rowid", hint, "topic_size", last);
            return -1;
        }
        loadFailed = false;
        backup.loadedWhole();
        if (first == 0) first = last;
        if (first != 0) {
            tp.vars.put("first_rowid", first);
            try {
                tp.saveVars();
            } catch (IOException e) {
                Glog.error(null, "Cannot write topic_var.json", "topic_name", name, "cause", e.toString());
            }
        }
        return 0;
    }

    @Override
    public int loadAll(long fromRowid, long toRowid) {
        Topic tp = topic();
        if (tp == null) return -1;
        long last = tp.lastRowid;
        long from = fromRowid < 0 ? Math.max(1, last + fromRowid + 1) : Math.max(1, fromRowid);
        long to = toRowid == 0 ? last : toRowid < 0 ? last + toRowid + 1 : Math.min(toRowid, last);
        int rc = 0;
        for (long r = from; r <= to; r++) {
            if (tp.locate(r) != null) addToList(r);
            else if (unreadableHas(tp, r)) rc = -1;
        }
        return rc;
    }

    @Override
    public int loadAllByTime(long fromT, long toT) {
        Topic tp = topic();
        if (tp == null) return -1;
        int rc = 0;
        for (Segment s : tp.segments) {
            if (s.unreadable != null) {
                rc = -1;
                continue;
            }
            for (long r = s.base; r <= s.lastRowid(); r++) {
                if (s.offset(r) == 0) continue; // a row lost in a gap
                long t = s.t(s.offset(r));
                if ((fromT == 0 || t >= fromT) && (toT == 0 || t <= toT)) addToList(r);
            }
        }
        return rc;
    }

    private static boolean unreadableHas(Topic tp, long rowid) {
        for (int i = 0; i < tp.segments.size(); i++) {
            Segment s = tp.segments.get(i);
            long next = i + 1 < tp.segments.size() ? tp.segments.get(i + 1).base : Long.MAX_VALUE;
            if (s.unreadable != null && rowid >= s.base && rowid < next) return true;
        }
        return false;
    }

    @Override public boolean loadFailed() { return loadFailed; }

    private void addToList(long rowid) {
        list.add(rowid);
    }

    private boolean removeFromList(long rowid) {
        return list.remove(rowid);
    }

    // --- Append ---

    @Override
    public QueueMessage append(long t, ObjectNode kw, int userFlag) {
        if (kw == null) {
            Glog.error(null, "kw NULL", "topic_name", name);
            return null;
        }
        Topic tp = topic();
        if (tp == null) return null;
        int len;
        try {
            len = json.encode(kw);
        } catch (IOException | RuntimeException e) {
            Glog.error(null, "Cannot append record, json encoding FAILED", "topic_name", name, "cause", e.toString());
            return null;
        }
        return appendRecord(tp, t, RecordJson.tmOf(kw, tp.tkey, tp.systemFlag), json.bytes(), 0, len, userFlag);
    }

    /**
     * The record's bytes stored as they are: what {@link #append} stores for the parsed dict when they are its
     * compact JSON (the caller vouches for it). A topic with a {@code tkey} reads the message time from the bytes
     * ({@link RecordTm}); bytes that scan does not read go the default's way (parsed, then appended).
     */
    @Override
    public QueueMessage appendJson(long t, byte[] bytes, int off, int len, int userFlag) {
        return appendJson(t, bytes, off, len, userFlag, null);
    }

    /** {@link #appendJson(long, byte[], int, int, int)}, the time key found in the record's member index when given. */
    @Override
    public QueueMessage appendJson(long t, byte[] bytes, int off, int len, int userFlag, int[] fields) {
        Topic tp = topic();
        if (tp == null) return null;
        if (bytes == null || len < 2 || off < 0 || off + len > bytes.length || bytes[off] != '{'
                || bytes[off + len - 1] != '}') {
            Glog.error(null, "Cannot append record, not the JSON of an object", "topic_name", name);
            return null;
        }
        long tm = 0;
        if (tp.tkey != null && !tp.tkey.isEmpty()) {
            // the message time, read from the bytes; bytes the scan does not read go the dict's way
            tm = recordTm.tm(bytes, off, len, fields, tp.tkey, tp.systemFlag);
            if (tm == Long.MIN_VALUE) return TrQueue.super.appendJson(t, bytes, off, len, userFlag);
        }
        return appendRecord(tp, t, tm, bytes, off, len, userFlag);
    }

    private QueueMessage appendRecord(Topic tp, long t, long tm, byte[] bytes, int off, int len, int userFlag) {
        if (len > opts.maxMessageSize()) {
            Glog.error(null, "Cannot append record, message too large", "topic_name", name, "size", len,
                    "max_message_size", opts.maxMessageSize());
            return null;
        }
        int sf = tp.systemFlag;
        if (t == 0) t = (sf & SF_T_MS) != 0 ? System.currentTimeMillis() : System.currentTimeMillis() / 1000;
        if (!tp.staging() && opts.fsyncPolicy() != FsyncPolicy.NONE) {
            io.netty.util.concurrent.EventExecutor loop = ownerLoop;
            if (loop != null && loop.inEventLoop()) {
                tp.startStaging();
                tp.allocateAheadWith(factory::flushNow);
            }
        }
        long rowid;
        try {
            rowid = tp.append(t, tm, (userFlag | MSG_PENDING) & 0xFFFF, bytes, off, len);
        } catch (IOException | InternalError e) {
            // InternalError: a fault on a mapped page that the JVM raised late, after the store (see Topic.append)
            if (appendRefused++ == 0) {
                Glog.error(null, "Cannot append record, write FAILED", "topic_name", name, "reason", reasonOf(e),
                        "cause", e.toString());
            }
            return null;
        }
        if (appendRefused != 0) {
            Glog.info(null, "Queue append works again", "topic_name", name, "refused", appendRefused);
            appendRefused = 0;
            faultSaid = false;
        }
        addToList(rowid);
        // staged, or (ALWAYS) written through but not forced: the end of the turn does it
        if (tp.staging() && (tp.writtenRowid != rowid || opts.fsyncPolicy() == FsyncPolicy.ALWAYS)) scheduleFlush();
        try {
            commit.appended(tp, generation, rowid);
        } catch (IOException e) {
            // the record is written but its durability is not promised: the caller gets no message
            Glog.error(null, "Cannot append record, fsync FAILED", "topic_name", name, "cause", e.toString());
            return null;
        }
        return new QueueMessageImpl(this, generation, rowid, t, tm);
    }

    /** "no space" for a full file system, else what failed. */
    static String reasonOf(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            String m = c instanceof java.nio.file.FileSystemException
                    ? ((java.nio.file.FileSystemException) c).getReason() : c.getMessage();
            if (m != null && (m.contains("No space left") || m.contains("Disk quota exceeded"))) return "no space";
            if (c instanceof InternalError) return "fault on a mapped page";
        }
        return "I/O error";
    }

    /** A fault on a mapped page of a segment (the JVM's InternalError): an ERROR, said once per streak. */
    private void fault(String what, long rowid, InternalError e) {
        if (faultSaid) return;
        faultSaid = true;
        Glog.error(null, what, "topic_name", name, "rowid", rowid, "reason", "fault on a mapped page",
                "cause", e.toString());
    }

    // --- Flags ---

    @Override
    public int setHardFlag(QueueMessage msg, int mask, boolean set) {
        QueueMessageImpl m = ofThisQueue(msg);
        if (m == null) return -1;
        Topic tp = topic();
        if (tp == null || m.generation != generation) return -1;
        Segment s = tp.locate(m.rowid);
        if (s == null) return -1;
        int off = s.offset(m.rowid);
        int old;
        int now;
        boolean written = false;
        try {
            old = tp.flag(s, m.rowid, off);
            now = set ? old | mask : old & ~mask;
            if (now != old) written = tp.setFlag(s, m.rowid, off, now);
        } catch (IOException e) {
            Glog.error(null, "Cannot set the record's flag", "topic_name", name, "rowid", m.rowid, "cause",
                    e.toString());
            return -1;
        } catch (InternalError e) {
            // the page of the record cannot be read or written (device error, a copy-on-write file system full):
            // the flag stays as it was on disk (a lost ack only makes a duplicate delivery)
            fault("Cannot set the record's flag, its segment page faulted", m.rowid, e);
            return -1;
        }
        if (now != old) {
            tp.pendingOnDisk += ((now & MSG_PENDING) != 0 ? 1 : 0) - ((old & MSG_PENDING) != 0 ? 1 : 0);
            if (written) commit.flagWritten();
            else scheduleFlush();
        }
        return 0;
    }

    int readFlag(QueueMessageImpl m) {
        Topic tp = topic;
        if (tp == null || m.generation != generation) return 0;
        Segment s = tp.locate(m.rowid);
        return s == null ? 0 : tp.flag(s, m.rowid, s.offset(m.rowid));
    }

    @Override
    public long setSoftMark(QueueMessage msg, long mask, boolean set) {
        QueueMessageImpl m = ofThisQueue(msg);
        if (m == null || m.generation != generation) return 0;
        long old = softMarks.get(m.rowid);
        long v = set ? old | mask : old & ~mask;
        if (v != old) softMarks.put(m.rowid, v);
        return v;
    }

    long softMark(QueueMessageImpl m) {
        if (m.generation != generation) return 0;
        return softMarks.get(m.rowid);
    }

    @Override
    public int unload(QueueMessage msg, int result) {
        QueueMessageImpl m = ofThisQueue(msg);
        if (m == null || m.generation != generation) return -1;
        removeFromList(m.rowid);
        softMarks.remove(m.rowid);
        return setHardFlag(m, MSG_PENDING, false);
    }

    /** {@code msg} as this queue's own message; null (logged unless null) when it is another queue's. */
    private QueueMessageImpl ofThisQueue(QueueMessage msg) {
        if (msg instanceof QueueMessageImpl && ((QueueMessageImpl) msg).queue == this) return (QueueMessageImpl) msg;
        if (msg != null) Glog.error(null, "queue message of another queue", "topic_name", name);
        return null;
    }

    // --- Reading ---

    /** The message at {@code rowid}, with its times read from its record (0 when the row is not readable). */
    private QueueMessage messageAt(long rowid) {
        Topic tp = topic;
        if (tp == null) return new QueueMessageImpl(this, generation, rowid, 0, 0);
        Segment s = tp.locate(rowid);
        if (s == null) return new QueueMessageImpl(this, generation, rowid, 0, 0);
        int off = s.offset(rowid);
        return new QueueMessageImpl(this, generation, rowid, s.t(off), s.tm(off));
    }

    @Override
    public QueueMessage getByRowid(long rowid) {
        if (rowid < 1 || !list.get(rowid)) return null;
        return messageAt(rowid);
    }

    @Override
    public QueueMessage first() {
        long r = list.next(1);
        return r < 0 ? null : messageAt(r);
    }

    @Override
    public QueueMessage next(QueueMessage msg) {
        QueueMessageImpl m = ofThisQueue(msg);
        if (m == null || m.generation != generation) return null;
        long r = list.next(m.rowid + 1);
        return r < 0 ? null : messageAt(r);
    }

    @Override
    public int checkPendingRowid(long t, long rowid) {
        return checkPendingRowid(generation, t, rowid);
    }

    @Override
    public int checkPendingRowid(long gen, long t, long rowid) {
        Topic tp = topic();
        if (tp == null || gen != generation) return -1;
        Segment s = tp.locate(rowid);
        if (s == null) return -1;
        int off = s.offset(rowid);
        if (s.t(off) != t) return -1;
        return (tp.flag(s, rowid, off) & MSG_PENDING) != 0 ? 1 : 0;
    }

    @Override
    public ObjectNode msgJson(QueueMessage msg) {
        QueueMessageImpl m = ofThisQueue(msg);
        if (m == null || topic() == null || m.generation != generation) return null;
        ObjectNode kw = RecordJson.parse(storedPayload(m), m);
        if (kw == null) Glog.error(null, "Bad data, the record cannot be read", "topic_name", name, "rowid", m.rowid);
        return kw;
    }

    @Override
    public boolean writeMsgJson(QueueMessage msg, ByteBuf out) {
        QueueMessageImpl m = ofThisQueue(msg);
        Topic tp = m == null ? null : topic();
        if (tp == null || m.generation != generation) return false;
        Segment s = tp.locate(m.rowid);
        int len;
        try {
            len = s == null ? -1 : tp.readFrame(s, m.rowid);
        } catch (InternalError e) {
            fault("Cannot read the record, its segment page faulted", m.rowid, e);
            return false;
        }
        // the payload straight from the frame read into the buffer that goes down: no copy of it of its own
        if (len >= 0 && RecordJson.write(tp.lastRead(), Segment.REC_HEADER, len, m, out, recentT)) return true;
        return TrQueue.super.writeMsgJson(msg, out);   // logs the unreadable record, as msgJson does
    }

    static String positionKey(Path topicDir) {
        return java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(
                topicDir.toAbsolutePath().normalize().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    /** This queue's key in the factory's positions. */
    String positionKey() {
        return positionKey;
    }

    long earlierRunLastRowid() {
        return earlierRunLastRowid;
    }

    /**
     * {@link io.gatehouse.api.queue.TrQueueFactory#positions}: the last rowid, when the calling thread's loop owns
     * this queue or nobody owns it yet (its appends write through); -1 for a queue of another loop, or closed.
     */
    long positionOnOwner() {
        Topic tp = topic;
        io.netty.util.concurrent.EventExecutor loop = ownerLoop;
        if (tp == null || closed || (loop != null && !loop.inEventLoop())) return -1;
        return tp.lastRowid;
    }

    /**
     * {@link io.gatehouse.api.queue.TrQueueFactory#earlierRecordsAfter}: the stored JSON of the rows after
     * {@code rowid} that an earlier run wrote, at most {@code max}, into {@code out}, leaving out a row appended
     * after {@code notAfterMs} (epoch ms; the row's time is in this topic's unit). A gap, a row that does not check
     * and a faulted page are skipped.
     */
    void earlierRecordsAfter(long rowid, int max, long notAfterMs, java.util.List<byte[]> out) {
        Topic tp = topic();
        if (tp == null || rowid < 0 || max <= 0) return;
        long to = Math.min(earlierRunLastRowid, rowid + max);
        long notAfter = notAfterMs == Long.MAX_VALUE || (tp.systemFlag & SF_T_MS) != 0 ? notAfterMs : notAfterMs / 1000;
        for (long r = rowid + 1; r <= to; r++) {
            Segment s = tp.locate(r);
            if (s == null || s.offset(r) == 0) continue;   // gone with its segment, or a gap
            if (s.t(s.offset(r)) > notAfter) continue;     // appended too long after the positions to be theirs
            try {
                byte[] p = tp.payload(s, r);
                if (p != null) out.add(p);
            } catch (InternalError e) {
                fault("Cannot read the record, its segment page faulted", r, e);
            }
        }
    }

    @Override
    public byte[] recordBytes(QueueMessage msg) {
        QueueMessageImpl m = ofThisQueue(msg);
        if (m == null || topic() == null || m.generation != generation) return null;
        byte[] p = storedPayload(m);
        return RecordJson.copiesAsStored(p) ? p : null;
    }

    /**
     * The stored JSON bytes of a message of the current topic and generation; null when its row is a gap or its
     * page faulted (logged).
     */
    private byte[] storedPayload(QueueMessageImpl m) {
        Topic tp = topic();
        if (tp == null) return null;
        Segment s = tp.locate(m.rowid);
        try {
            return s == null ? null : tp.payload(s, m.rowid);
        } catch (InternalError e) {
            fault("Cannot read the record, its segment page faulted", m.rowid, e);
            return null;
        }
    }

    @Override
    public ObjectNode msgMetadata(QueueMessage msg) {
        QueueMessageImpl m = ofThisQueue(msg);
        if (m == null) return null;
        Topic tp = topic;
        return RecordJson.metadata(m, tp, tp == null || m.generation != generation ? null : tp.locate(m.rowid));
    }

    @Override
    public QueueMessage matchAck(ObjectNode ack) {
        return RecordJson.matchAck(ack, generation, this::getByRowid);
    }

    @Override public int size() { return list.size(); }

    /** The API's second name for {@link #lastRowid()}: the rows of a topic are numbered 1 to its last rowid. */
    @Override public long topicSize() { return lastRowid(); }

    @Override
    public long firstRowid() {
        Topic tp = topic;
        return tp == null ? 0 : tp.vars.path("first_rowid").asLong(0);
    }

    /** backup_queue_size as saved in topic_var.json. */
    long backupQueueSize() {
        Topic tp = topic;
        return tp == null ? 0 : tp.vars.path("backup_queue_size").asLong(0);
    }

    /** backup_queue_size saved in topic_var.json, as an open with another value does. */
    void setBackupQueueSize(long v) {
        Topic tp = topic;
        if (tp == null) return;
        tp.vars.put("backup_queue_size", v);
        try {
            tp.saveVars();
        } catch (IOException e) {
            Glog.error(null, "Cannot write topic_var.json", "topic_name", name, "cause", e.toString());
        }
    }

    // --- Backup ---

    @Override
    public int checkBackup() {
        Topic tp = topic();
        if (tp == null) return -1;
        writeStageNow();
        return backup.check(tp, loadFailed, list.size() > 0 || !softMarks.isEmpty());
    }

    // --- Durability ---

    @Override
    public long lastRowid() {
        Topic tp = topic;
        return tp == null ? 0 : tp.lastRowid;
    }

    @Override
    public long durableRowid() {
        return commit.durableRowid(generation);
    }

    @Override
    public void onDurable(DurableListener listener, Executor executor) {
        if (ownerLoop == null && executor instanceof io.netty.util.concurrent.EventExecutor) {
            ownerLoop = (io.netty.util.concurrent.EventExecutor) executor;
        }
        commit.onDurable(listener, executor);
    }

    @Override
    public void sync() {
        writeStageNow();
        commit.sync();
    }

    // --- Live upgrade: the open queue handed to another trqueue revision ---

    /** The format of {@link #openState}: a taker of another format opens the topic again instead. */
    static final String OPEN_STATE_FORMAT = "io.gatehouse.trqueue/open-state-1";

    /**
     * The open files and state, as JDK and Jackson values ({@link TrQueue#openState}), read under the flusher's lock
     * so that no commit is half-way. The queue goes on working until the taker runs {@code "detach"}.
     */
    @Override
    public Map<String, Object> openState() {
        if (closed || topic == null) return null;
        // the taker reads the files: nothing may stay in this revision's stage
        writeStageNow();
        Topic held = topic;
        if (held != null && held.unwritten()) return null;
        Map<String, Object> out = new HashMap<>();
        commit.exclusive(() -> {
            Topic tp = topic;
            if (tp == null) return;
            out.put("format", OPEN_STATE_FORMAT);
            out.put("topic_dir", topicDir.toAbsolutePath().normalize().toString());
            out.put("topic_name", name);
            out.put("lock_channel", lockChannel);
            out.put("lock", lock);
            out.put("generation", generation);
            out.put("earlier_run_last_rowid", earlierRunLastRowid);
            tp.export(out);
            out.put("list", list.export());
            out.put("soft_marks", softMarks.toMap());
            out.put("durable_rowid", commit.durableRowid(generation));
            out.put("acks_unforced", commit.acksUnforced());
            out.put("load_failed", loadFailed);
            out.put("failed_fingerprint", failedFingerprint);
            out.put("append_refused", appendRefused);
            out.put("fault_said", faultSaid);
            out.put("detach", (Runnable) this::detach);
        });
        return out.isEmpty() ? null : out;
    }

    /**
     * Another revision holds the files now: this handle stops (no commit, no durability told, closed to its
     * owner) without closing them or releasing the topic's lock.
     */
    private void detach() {
        if (closed) return;
        commit.stop();
        commit.exclusive(() -> {
            closed = true;
            topic = null;
        });
        factory.closed(this);
    }

    /**
     * The queue of another revision's {@link #openState}, over the same open files: no scan, no load, no fsync.
     * The caller detaches the old handle and then starts this one's commits ({@link #startAdopted}).
     *
     * @throws IllegalArgumentException (or ClassCastException, NullPointerException) when the state is not one this
     *         revision takes
     */
    @SuppressWarnings("unchecked")
    static TrQueueImpl adopt(TrQueueFactoryImpl factory, FileOps ops, Path dbDir, String name, TrQueueOptions opts,
                             Map<String, Object> st) {
        if (!OPEN_STATE_FORMAT.equals(st.get("format"))) {
            throw new IllegalArgumentException("open state of another format: " + st.get("format"));
        }
        Path dir = dbDir.resolve(name);
        if (!dir.toAbsolutePath().normalize().toString().equals(st.get("topic_dir")) || !name.equals(st.get("topic_name"))) {
            throw new IllegalArgumentException("open state of another topic: " + st.get("topic_dir"));
        }
        FileChannel lockCh = (FileChannel) st.get("lock_channel");
        FileLock lk = (FileLock) st.get("lock");
        if (lockCh == null || lk == null || !lk.isValid()) throw new IllegalArgumentException("the topic's lock is not held");
        Topic tp = Topic.adopt(ops, dir, name, opts.segmentSize(), opts.maxMessageSize(), st);
        if (tp.generation != (Long) st.get("generation")) throw new IllegalArgumentException("generation mismatch");
        // a state without it (a revision before 1.7 of the queue api): no row counts as an earlier run's
        Object earlier = st.get("earlier_run_last_rowid");
        TrQueueImpl q = new TrQueueImpl(factory, ops, dbDir, name, tp, opts, lockCh, lk, (Long) st.get("durable_rowid"),
                earlier instanceof Long ? (Long) earlier : 0L);
        q.list.replaceWith(RowSet.of((long[]) st.get("list")));
        q.softMarks.putAll((Map<Long, Long>) st.get("soft_marks"));
        if ((Boolean) st.get("acks_unforced")) q.commit.flagWritten();
        q.loadFailed = (Boolean) st.get("load_failed");
        q.failedFingerprint = (String) st.get("failed_fingerprint");
        q.appendRefused = (Long) st.get("append_refused");
        q.faultSaid = (Boolean) st.get("fault_said");
        if (!q.loadFailed) q.backup.loadedWhole();
        return q;
    }

    /** An adopted queue goes: its flusher forces what the old handle had not forced, then every period. */
    void startAdopted() {
        startCommits();
    }

    /**
     * The factory goes away (its bundle stops; the gates over this queue are suspended): what was written is
     * forced and the flusher stops, but the files stay open and the topic locked, so that the next trqueue revision
     * can take the queue over ({@link TrQueueFactoryImpl#takeOver}). Its owner may still close it.
     */
    void park() {
        if (closed) return;
        writeStageNow();
        commit.stop();
        commit.sync();
    }

    @Override
    public void close() {
        if (closed) return;
        writeStageNow();
        commit.stop();
        commit.sync();
        commit.exclusive(() -> {
            closed = true;
            Topic tp = topic;
            if (tp != null) tp.close();
            topic = null;
        });
        try {
            lock.release();
        } catch (IOException ignored) {
            // the lock goes with the channel below
        }
        try {
            lockChannel.close();
        } catch (IOException ignored) {
            // nothing left to release
        }
        factory.closed(this);
    }
}
