package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Glog;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.DurableListener;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A tr_queue over a {@link Topic}. The list is a bit set over rowids (one bit per row of the topic), soft marks
 * are a map holding only non-zero marks (the in-flight window), and contents stay in the segment files.
 */
final class TrQueueImpl implements TrQueue {
    static final int PENDING = MSG_PENDING;

    private final TrQueueFactoryImpl factory;
    private final FileOps ops;
    private final Path dbDir;
    private final Path topicDir;
    private final Path bakDir;
    private final String name;
    private final TrQueueOptions opts;
    private final FileChannel lockChannel;
    private final FileLock lock;

    private volatile Topic topic;
    private long generation;
    private final RowSet list = new RowSet();
    private final HashMap<Long, Long> softMarks = new HashMap<>();
    private final JsonBytes json = new JsonBytes();

    private boolean loadFailed;
    private boolean refusalSaid;
    private boolean backupFailSaid;
    private boolean noTopicSaid;
    private String failedFingerprint;
    private boolean closed;
    /** Appends refused since the last one that worked; the write error is said once per streak. */
    private long appendRefused;
    /** A fault on a mapped page (InternalError) was said; said again only after an append works. */
    private boolean faultSaid;

    /** Guards the topic's files against the flusher while they are forced, backed up or closed. */
    private final Object flushLock = new Object();
    private ScheduledFuture<?> flushTask;
    private volatile long acks;
    private long acksForced;
    private volatile Durable durable = new Durable(0, 0);
    private boolean fsyncErrorSaid;
    private final List<Reg> listeners = new CopyOnWriteArrayList<>();

    private static final class Durable {
        final long generation;
        final long rowid;

        Durable(long generation, long rowid) {
            this.generation = generation;
            this.rowid = rowid;
        }
    }

    private final class Reg {
        final DurableListener listener;
        final Executor executor;
        final AtomicBoolean scheduled = new AtomicBoolean();

        Reg(DurableListener listener, Executor executor) {
            this.listener = listener;
            this.executor = executor;
        }

        void fire() {
            if (!scheduled.compareAndSet(false, true)) return;
            try {
                executor.execute(() -> {
                    scheduled.set(false);
                    Durable d = durable;
                    listener.durable(d.generation, d.rowid);
                });
            } catch (RejectedExecutionException e) {
                scheduled.set(false);
            }
        }
    }

    TrQueueImpl(TrQueueFactoryImpl factory, FileOps ops, Path dbDir, String name, Topic topic,
                TrQueueOptions opts, FileChannel lockChannel, FileLock lock) {
        this.factory = factory;
        this.ops = ops;
        this.dbDir = dbDir;
        this.topicDir = dbDir.resolve(name);
        this.bakDir = dbDir.resolve(name + ".bak");
        this.name = name;
        this.opts = opts;
        this.lockChannel = lockChannel;
        this.lock = lock;
        this.topic = topic;
        this.generation = topic.generation;
        this.durable = new Durable(generation, topic.lastRowid);
        if (opts.fsyncPolicy() == FsyncPolicy.INTERVAL) {
            flushTask = factory.scheduleFlush(this::flushTick, opts.fsyncIntervalMs());
        }
    }

    // ================================================================== identity

    @Override public String topicName() { return name; }

    @Override public long generation() { return generation; }

    @Override public FsyncPolicy fsyncPolicy() { return opts.fsyncPolicy(); }

    // ================================================================== topic taken again by name

    /**
     * The topic, taken again by name when the queue lost it. Quiet between attempts: the open is tried again only
     * when what stopped the last one changed (the descriptor's bytes, the listing of keys/).
     */
    private Topic topic() {
        Topic tp = topic;
        if (tp != null || closed) return tp;
        String fp = fingerprint();
        if (fp.equals(failedFingerprint)) {
            if (!noTopicSaid) {
                noTopicSaid = true;
                Glog.error(null, "Queue without topic, it cannot be opened", "topic_name", name);
            }
            return null;
        }
        try {
            tp = Topic.open(ops, topicDir, name, opts.segmentSize(), opts.maxMessageSize());
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
        synchronized (flushLock) {
            topic = tp;
            if (tp.generation != generation) {
                // another incarnation: rowids of the old list mean other messages now
                list.clear();
                softMarks.clear();
                generation = tp.generation;
            }
            durable = new Durable(generation, tp.lastRowid);
        }
    }

    /** What an open of the topic would find, read without logging. */
    private String fingerprint() {
        StringBuilder sb = new StringBuilder();
        try {
            byte[] d = ops.readAll(topicDir.resolve(Topic.DESC));
            sb.append("desc:").append(d.length).append(':').append(Arrays.hashCode(d));
        } catch (IOException | RuntimeException e) {
            sb.append("desc-err:").append(e.getClass().getName()).append(':').append(e.getMessage());
        }
        try {
            ops.list(topicDir.resolve("keys"));
            sb.append("|keys");
        } catch (IOException | RuntimeException e) {
            sb.append("|keys-err:").append(e.getClass().getName());
        }
        return sb.toString();
    }

    // ================================================================== load

    @Override
    public int load() {
        Topic tp = topic();
        if (tp == null) return -1;
        boolean failed = !tp.retryUnreadable() || tp.lostRows;
        long size = tp.lastRowid;
        long hint = firstRowid();
        long start = hint != 0 && hint <= size ? hint : 1;
        long first = 0;
        for (Segment s : tp.segments) {
            if (s.unreadable != null) {
                continue;
            }
            long from = Math.max(start, s.base);
            long to = s.lastRowid();
            for (long r = from; r <= to; r++) {
                int off = s.offset(r);
                if (off != 0 && (s.flag(off) & PENDING) != 0) { // 0: a row lost in a gap
                    if (first == 0) first = r;
                    addToList(r);
                }
            }
        }
        if (failed) {
            loadFailed = true;
            Glog.error(null, "Queue loaded without some of its messages: its first_rowid is not moved nor saved",
                    "topic_name", name, "first_rowid", hint, "topic_size", size);
            return -1;
        }
        loadFailed = false;
        refusalSaid = false;
        if (first == 0) first = size;
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
        long size = tp.lastRowid;
        long from = fromRowid < 0 ? Math.max(1, size + fromRowid + 1) : Math.max(1, fromRowid);
        long to = toRowid == 0 ? size : toRowid < 0 ? size + toRowid + 1 : Math.min(toRowid, size);
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

    // ================================================================== append

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
        if (len > opts.maxMessageSize()) {
            Glog.error(null, "Cannot append record, message too large", "topic_name", name, "size", len,
                    "max_message_size", opts.maxMessageSize());
            return null;
        }
        int sf = tp.systemFlag;
        if (t == 0) t = (sf & SF_T_MS) != 0 ? System.currentTimeMillis() : System.currentTimeMillis() / 1000;
        long tm = tmOf(kw, tp.tkey, sf);
        long rowid;
        try {
            rowid = tp.append(t, tm, (userFlag | PENDING) & 0xFFFF, json.buf, len);
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
        FsyncPolicy p = opts.fsyncPolicy();
        if (p == FsyncPolicy.ALWAYS) {
            try {
                tp.forceAll();
            } catch (IOException e) {
                // the record is written but its durability is not promised: the caller gets no message
                Glog.error(null, "Cannot append record, fsync FAILED", "topic_name", name, "cause", e.toString());
                return null;
            }
            acksForced = acks;
            publish(rowid);
        } else if (p == FsyncPolicy.NONE) {
            publish(rowid);
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

    static long tmOf(ObjectNode kw, String tkey, int sf) {
        if (tkey == null || tkey.isEmpty()) return 0;
        JsonNode n = kw.get(tkey);
        if (n == null) return 0;
        if (n.isIntegralNumber()) return n.asLong();
        if (!n.isTextual()) return 0;
        String s = n.asText().trim();
        long sec;
        try {
            sec = Instant.parse(s).getEpochSecond();
        } catch (RuntimeException e1) {
            try {
                sec = OffsetDateTime.parse(s).toEpochSecond();
            } catch (RuntimeException e2) {
                try {
                    sec = LocalDateTime.parse(s).toEpochSecond(ZoneOffset.UTC);
                } catch (RuntimeException e3) {
                    try {
                        sec = LocalDate.parse(s).atStartOfDay().toEpochSecond(ZoneOffset.UTC);
                    } catch (RuntimeException e4) {
                        return 0;
                    }
                }
            }
        }
        return (sf & SF_TM_MS) != 0 ? sec * 1000 : sec;
    }

    // ================================================================== flags

    @Override
    public int setHardFlag(QueueMessage msg, int mask, boolean set) {
        QueueMessageImpl m = own(msg);
        if (m == null) return -1;
        Topic tp = topic();
        if (tp == null || m.generation != generation) return -1;
        Segment s = tp.locate(m.rowid);
        if (s == null) return -1;
        int off = s.offset(m.rowid);
        int old;
        int now;
        try {
            old = s.flag(off);
            now = set ? old | mask : old & ~mask;
            if (now != old) s.setFlag(off, now);
        } catch (InternalError e) {
            // the page of the record cannot be read or written (device error, a copy-on-write file system full):
            // the flag stays as it was on disk (a lost ack only makes a duplicate delivery)
            fault("Cannot set the record's flag, its segment page faulted", m.rowid, e);
            return -1;
        }
        if (now != old) {
            tp.pendingOnDisk += ((now & PENDING) != 0 ? 1 : 0) - ((old & PENDING) != 0 ? 1 : 0);
            acks++;
        }
        return 0;
    }

    int readFlag(QueueMessageImpl m) {
        Topic tp = topic;
        if (tp == null || m.generation != generation) return 0;
        Segment s = tp.locate(m.rowid);
        return s == null ? 0 : s.flag(s.offset(m.rowid));
    }

    @Override
    public long setSoftMark(QueueMessage msg, long mask, boolean set) {
        QueueMessageImpl m = own(msg);
        if (m == null || m.generation != generation) return 0;
        Long old = softMarks.get(m.rowid);
        long v = old == null ? 0 : old;
        v = set ? v | mask : v & ~mask;
        if (v == 0) softMarks.remove(m.rowid);
        else softMarks.put(m.rowid, v);
        return v;
    }

    long softMark(QueueMessageImpl m) {
        if (m.generation != generation) return 0;
        Long v = softMarks.get(m.rowid);
        return v == null ? 0 : v;
    }

    @Override
    public int unload(QueueMessage msg, int result) {
        QueueMessageImpl m = own(msg);
        if (m == null || m.generation != generation) return -1;
        removeFromList(m.rowid);
        softMarks.remove(m.rowid);
        return setHardFlag(m, PENDING, false);
    }

    private QueueMessageImpl own(QueueMessage msg) {
        if (msg instanceof QueueMessageImpl && ((QueueMessageImpl) msg).queue == this) return (QueueMessageImpl) msg;
        if (msg != null) Glog.error(null, "queue message of another queue", "topic_name", name);
        return null;
    }

    // ================================================================== reading

    private QueueMessage handle(long rowid) {
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
        return handle(rowid);
    }

    @Override
    public QueueMessage first() {
        long r = list.next(1);
        return r < 0 ? null : handle(r);
    }

    @Override
    public QueueMessage next(QueueMessage msg) {
        QueueMessageImpl m = own(msg);
        if (m == null || m.generation != generation) return null;
        long r = list.next(m.rowid + 1);
        return r < 0 ? null : handle(r);
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
        return (s.flag(off) & PENDING) != 0 ? 1 : 0;
    }

    @Override
    public ObjectNode msgJson(QueueMessage msg) {
        QueueMessageImpl m = own(msg);
        if (m == null || topic() == null || m.generation != generation) return null;
        byte[] p = storedPayload(m);
        ObjectNode kw = null;
        if (p != null) {
            try {
                JsonNode n = Kw.MAPPER.readTree(p);
                if (n instanceof ObjectNode) kw = (ObjectNode) n;
            } catch (IOException e) {
                kw = null;
            }
        }
        if (kw == null) {
            Glog.error(null, "Bad data, the record cannot be read", "topic_name", name, "rowid", m.rowid);
            return null;
        }
        ObjectNode md = kw.putObject(MD_TRQ);
        md.put(MSG_ROWID, m.rowid);
        md.put(MSG_T, m.t);
        md.put(MSG_GEN, m.generation);
        return kw;
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

    /** The top-level key msgJson adds; a record that already holds it (anywhere) takes the parsing path. */
    private static final byte[] MD_KEY = ("\"" + MD_TRQ + "\"").getBytes(StandardCharsets.US_ASCII);

    /**
     * The stored record is the compact JSON of an object, written by {@link JsonBytes} and checked by its CRC:
     * its bytes are copied as they are, with {@code __md_trq__} appended inside the closing brace, which is what
     * parsing it (msgJson) and serialising it again would write, without the two passes per message.
     */
    @Override
    public boolean writeMsgJson(QueueMessage msg, ByteBuf out) {
        QueueMessageImpl m = own(msg);
        if (m == null || topic() == null || m.generation != generation) return false;
        byte[] p = storedPayload(m);
        if (p == null || p.length < 2 || p[0] != '{' || p[p.length - 1] != '}' || indexOf(p, MD_KEY) >= 0) {
            return TrQueue.super.writeMsgJson(msg, out);   // logs the unreadable record, as msgJson does
        }
        out.writeBytes(p, 0, p.length - 1);
        if (p.length > 2) out.writeByte(',');
        out.writeCharSequence("\"" + MD_TRQ + "\":{\"" + MSG_ROWID + "\":" + m.rowid + ",\"" + MSG_T + "\":" + m.t
                + ",\"" + MSG_GEN + "\":" + m.generation + "}}", StandardCharsets.US_ASCII);
        return true;
    }

    private static int indexOf(byte[] a, byte[] key) {
        outer:
        for (int i = 0; i <= a.length - key.length; i++) {
            for (int j = 0; j < key.length; j++) {
                if (a[i + j] != key[j]) continue outer;
            }
            return i;
        }
        return -1;
    }

    @Override
    public ObjectNode msgMetadata(QueueMessage msg) {
        QueueMessageImpl m = own(msg);
        if (m == null) return null;
        ObjectNode md = Kw.create();
        md.put("rowid", m.rowid);
        md.put("generation", m.generation);
        md.put("t", m.t);
        md.put("tm", m.tm);
        Topic tp = topic;
        Segment s = tp == null || m.generation != generation ? null : tp.locate(m.rowid);
        if (s != null) {
            int off = s.offset(m.rowid);
            md.put("user_flag", s.flag(off));
            md.put("system_flag", s.sysFlag(off));
            md.put("segment", s.path.getFileName().toString());
            md.put("offset", off);
            md.put("size", s.frameLen(off) - Segment.REC_HEADER);
        }
        return md;
    }

    @Override
    public QueueMessage matchAck(ObjectNode ack) {
        if (ack == null) return null;
        ObjectNode md = TrQueue.getMetadata(ack);
        JsonNode src = md != null ? md : ack;
        long rowid = src.path(MSG_ROWID).asLong(0);
        if (rowid <= 0) return null;
        JsonNode g = src.get(MSG_GEN);
        if (g != null && g.asLong() != generation) return null;
        QueueMessage m = getByRowid(rowid);
        if (m == null) return null;
        JsonNode t = src.get(MSG_T);
        if (t != null && t.asLong() != m.t()) return null;
        return m;
    }

    @Override public int size() { return list.size(); }

    @Override
    public long topicSize() {
        Topic tp = topic;
        return tp == null ? 0 : tp.lastRowid;
    }

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

    // ================================================================== backup

    @Override
    public int checkBackup() {
        Topic tp = topic();
        if (tp == null) return -1;
        long bqs = tp.vars.path("backup_queue_size").asLong(0);
        if (bqs <= 0) return 0;
        long sz = tp.lastRowid;
        if (sz < bqs) return 0;
        if (loadFailed) {
            if (!refusalSaid) {
                refusalSaid = true;
                Glog.error(null, "Queue backup refused: its last load did not read every pending message",
                        "topic_name", name, "topic_size", sz, "backup_queue_size", bqs);
            }
            return -1;
        }
        if (list.size() > 0 || !softMarks.isEmpty() || tp.pendingOnDisk > 0) return -1;
        synchronized (flushLock) {
            return backup(tp, sz);
        }
    }

    private int backup(Topic tp, long sz) {
        try {
            tp.forceAll();
            tp.vars.put("first_rowid", sz);
            tp.saveVars();
        } catch (IOException e) {
            // nothing moved yet: the queue simply goes on in its topic
            Glog.error(null, "Queue backup failed: the queue goes on in its topic, not backed up",
                    "topic_name", name, "cause", e.toString());
            return -1;
        }
        durable = new Durable(generation, tp.lastRowid);
        ObjectNode oldDesc = tp.desc;
        ObjectNode vars = tp.vars.deepCopy();
        tp.close();
        topic = null;
        if (ops.isDirectory(bakDir)) {
            Glog.info(null, "Backup timeranger topic, deleting", "topic", name, "path", bakDir.toString());
            try {
                ops.deleteTree(bakDir);
            } catch (IOException e) {
                Glog.error(null, "Cannot delete the previous backup", "topic", name, "cause", e.toString());
            }
        }
        Glog.info(null, "Backup timeranger topic, moving", "database", dbDir.toString(), "topic", name,
                "src", topicDir.toString(), "dst", bakDir.toString());
        try {
            ops.move(topicDir, bakDir);
        } catch (IOException e) {
            if (!backupFailSaid) {
                Glog.error(null, "cannot backup topic", "topic", name, "serrno", reason(e),
                        "src", topicDir.toString(), "dst", bakDir.toString());
            }
            return rollback(tp, false);
        }
        long newGen = Math.max(System.currentTimeMillis(), oldDesc.path("generation").asLong() + 1);
        ObjectNode desc = Topic.newDesc(name, oldDesc.path("tkey").asText(""), oldDesc.path("system_flag").asInt(2),
                newGen);
        vars.put("first_rowid", 0);
        Topic fresh;
        try {
            ops.fsyncDir(dbDir);
            Topic.create(ops, topicDir, desc, vars);
            fresh = Topic.open(ops, topicDir, name, opts.segmentSize(), opts.maxMessageSize());
        } catch (IOException | TopicException e) {
            if (!backupFailSaid) Glog.error(null, "Cannot create topic", "topic", name, "cause", e.toString());
            try {
                ops.deleteTree(topicDir);
                ops.move(bakDir, topicDir);
                ops.fsyncDir(dbDir);
            } catch (IOException e2) {
                Glog.error(null, "Cannot move the backup back", "topic", name, "cause", e2.toString());
            }
            return rollback(tp, true);
        }
        topic = fresh;
        generation = fresh.generation;
        list.clear();
        softMarks.clear();
        acksForced = acks;
        durable = new Durable(generation, 0);
        backupFailSaid = false;
        return 0;
    }

    private static String reason(IOException e) {
        if (e instanceof java.nio.file.FileSystemException && ((java.nio.file.FileSystemException) e).getReason() != null) {
            return ((java.nio.file.FileSystemException) e).getReason();
        }
        return String.valueOf(e.getMessage());
    }

    /** The old topic is opened again as it was; without it the queue has no topic until it can be taken again. */
    private int rollback(Topic old, boolean moved) {
        boolean say = !backupFailSaid;
        backupFailSaid = true;
        if (say) {
            Glog.warn(null, "Backup of topic failed: the topic is opened again as it was, not backed up",
                    "topic_name", name);
        }
        String fp = fingerprint();
        try {
            Topic tp = Topic.open(ops, topicDir, name, opts.segmentSize(), opts.maxMessageSize());
            adopt(tp);
            if (say) {
                Glog.error(null, "Queue backup failed: the queue goes on in its topic, not backed up",
                        "topic_name", name);
            }
        } catch (TopicException e) {
            Glog.error(null, e.getMessage(), "topic_name", name, "cause", e.causeText());
            Glog.error(null, "Queue backup failed, and the queue has no topic", "topic_name", name);
            failedFingerprint = fp;
            noTopicSaid = false;
        }
        return -1;
    }

    // ================================================================== durability

    @Override
    public long lastRowid() {
        Topic tp = topic;
        return tp == null ? 0 : tp.lastRowid;
    }

    @Override
    public long durableRowid() {
        Durable d = durable;
        return d.generation == generation ? d.rowid : 0;
    }

    @Override
    public void onDurable(DurableListener listener, Executor executor) {
        listeners.add(new Reg(listener, executor == null ? Runnable::run : executor));
    }

    private void publish(long rowid) {
        durable = new Durable(generation, rowid);
        for (Reg r : listeners) r.fire();
    }

    /** The flusher thread's group commit. */
    void flushTick() {
        long target;
        synchronized (flushLock) {
            Topic tp = topic;
            if (tp == null || closed) return;
            target = tp.lastRowid;
            long a = acks;
            Durable d = durable;
            if (d.generation == tp.generation && target == d.rowid && a == acksForced) return;
            try {
                tp.forceAll();
                fsyncErrorSaid = false;
            } catch (IOException e) {
                if (!fsyncErrorSaid) {
                    fsyncErrorSaid = true;
                    Glog.error(null, "Queue fsync FAILED", "topic_name", name, "cause", e.toString());
                }
                return;
            }
            acksForced = a;
            durable = new Durable(tp.generation, target);
        }
        for (Reg r : listeners) r.fire();
    }

    @Override
    public void sync() {
        synchronized (flushLock) {
            Topic tp = topic;
            if (tp == null) return;
            try {
                tp.forceAll();
                acksForced = acks;
                durable = new Durable(tp.generation, tp.lastRowid);
            } catch (IOException e) {
                Glog.error(null, "Queue fsync FAILED", "topic_name", name, "cause", e.toString());
                return;
            }
        }
        for (Reg r : listeners) r.fire();
    }

    @Override
    public void close() {
        if (closed) return;
        if (flushTask != null) flushTask.cancel(false);
        sync();
        synchronized (flushLock) {
            closed = true;
            Topic tp = topic;
            if (tp != null) tp.close();
            topic = null;
        }
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
