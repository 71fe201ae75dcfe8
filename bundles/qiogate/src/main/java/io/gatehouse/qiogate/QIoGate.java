// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.Cancellable;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Gbuffers;
import io.gatehouse.api.Glog;
import io.gatehouse.api.Kw;
import io.gatehouse.api.Param;
import io.gatehouse.api.St;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueException;
import io.gatehouse.api.queue.TrQueueFactory;
import io.gatehouse.api.queue.TrQueueOptions;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufUtil;

import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * C_QIOGATE: a persistent queue with acks in front of one bottom (a C_IOGATE). Every message is appended to
 * its trqueue topic before it is sent; messages go down in rowid order, at most {@code max_pending_acks} in
 * flight (the credit window, replenished by acks); the receiver's ack (the message's {@code __md_trq__} echoed
 * back with {@code result}) clears it from the queue. Port of {@code kernel/c/root-linux/src/c_qiogate.c}
 * @6043415, with the seeds' fixes: a message not acked within {@code timeout_ack} is sent again with a
 * doubling backoff; a negative {@code result} (nack) is retried later instead of dropped; stats answer the
 * envelope and carry {@code msgs_in_queue} and {@code pending_acks}.
 *
 * <p>Single state ST_IDLE. Inputs: EV_SEND_MESSAGE (enqueue, from anyone), EV_ON_OPEN / EV_ON_CLOSE /
 * EV_ON_MESSAGE (from the bottom: link state and acks), EV_TIMEOUT (the {@code timeout_poll} tick). No output
 * events: nothing is published upward.
 *
 * <p>Durability: C_QIOGATE {@link GClassSpec#confirmsDurability() confirms durability}. A message whose kw carries
 * a {@link Kw#DURABLE} dict gets {@link Ev#EV_ON_DURABLE} sent back to its sender, with that dict, once the
 * appended record is durable per the queue's fsync policy: on the core thread, never inside the send call, and
 * never when the append failed.
 */
public final class QIoGate implements GObjBehavior {

    // --- Constants ---

    /** Soft mark of a message in flight (sent, waiting for its ack). */
    static final long MARK_INFLIGHT = 0x0001;
    /** Soft mark of a message whose record cannot be read: it stays pending on disk and is skipped. */
    static final long MARK_UNREADABLE = 0x0100;

    // --- Attributes ---

    static final Attr<Long> TIMEOUT_POLL = Attr.integer("timeout_poll", 1000, AttrFlag.RD,
            "Period of the send/retry/backup tick, ms");
    static final Attr<Long> TIMEOUT_BACKUP = Attr.integer("timeout_backup", 1, AttrFlag.RD,
            "Minimum interval between backup checks, seconds");
    static final Attr<String> TRANGER_PATH = Attr.string("tranger_path", "", AttrFlag.RD,
            "Directory of the queue databases; empty = <data dir>/queues, relative = under the data dir");
    static final Attr<String> TRANGER_DATABASE = Attr.string("tranger_database", "", AttrFlag.RD,
            "Database directory under tranger_path; empty = this gobj's name");
    static final Attr<String> TOPIC_NAME = Attr.string("topic_name", "", AttrFlag.RD | AttrFlag.REQUIRED,
            "Topic (queue) name");
    static final Attr<String> TKEY = Attr.string("tkey", "", AttrFlag.RD,
            "Field of each message holding its time (tm); empty = none");
    static final Attr<String> SYSTEM_FLAG = Attr.string("system_flag", "", AttrFlag.RD,
            "Topic flags, e.g. \"sf_t_ms|sf_tm_ms\"; the key type is always rowid");
    static final Attr<String> ALERT_MESSAGE = Attr.string("alert_message", "ALERT Queuing", AttrFlag.PERSIST,
            "Text of the queue-size alert log");
    static final Attr<Long> MAX_PENDING_ACKS = Attr.integer("max_pending_acks", 10000, AttrFlag.PERSIST,
            "Credit window: messages in flight waiting for their ack; 0 = unlimited");
    static final Attr<Long> MAX_PENDING_BYTES = Attr.integer("max_pending_bytes", 16L << 20, AttrFlag.PERSIST,
            "Credit window in bytes of the messages in flight (at least one is always sent); 0 = unlimited. "
                    + "Keeps large messages under the transport's send-queue bound");
    static final Attr<Long> BACKUP_QUEUE_SIZE = Attr.integer("backup_queue_size", 1000000, AttrFlag.PERSIST,
            "Topic size that makes an empty queue be backed up and started again (read at open)");
    static final Attr<Long> ALERT_QUEUE_SIZE = Attr.integer("alert_queue_size", 2000, AttrFlag.PERSIST,
            "Queue size that raises the alert (warning log, alert=true in stats); 0 = never");
    static final Attr<Long> TIMEOUT_ACK = Attr.integer("timeout_ack", 60, AttrFlag.PERSIST,
            "A message not acked within this many seconds is sent again (doubling per retry, up to 8x)");
    static final Attr<Long> RETRY_DELAY = Attr.integer("retry_delay", 1000, AttrFlag.PERSIST,
            "Delay before a nacked message is sent again, ms (doubling per retry, up to 8 x timeout_ack)");
    static final Attr<Boolean> WITH_METADATA = Attr.bool("with_metadata", false, AttrFlag.RD,
            "Keep the __x keys of a message when it is stored (__md_trq__ and references never are)");
    static final Attr<Boolean> DISABLE_ALERT = Attr.bool("disable_alert", false, AttrFlag.PERSIST,
            "No queue-size alert");
    static final Attr<String> FSYNC_POLICY = Attr.string("fsync_policy", "interval", AttrFlag.RD,
            "When records are forced to the device: none, interval (group commit) or always");
    static final Attr<Long> FSYNC_INTERVAL_MS = Attr.integer("fsync_interval_ms",
            TrQueueOptions.DEFAULT_FSYNC_INTERVAL_MS, AttrFlag.RD, "Group-commit period of fsync_policy interval, ms");

    static final Attr<Long> MSGS_IN_QUEUE = Attr.integer("msgs_in_queue", 0, AttrFlag.STATS,
            "Messages persisted and not acked yet (sent or not)");
    static final Attr<Long> PENDING_ACKS = Attr.integer("pending_acks", 0, AttrFlag.STATS,
            "Messages sent on the current link and waiting for their ack");
    static final Attr<Long> OLDEST_PENDING_AGE_MS = Attr.integer("oldest_pending_age_ms", 0, AttrFlag.STATS,
            "Age of the oldest message of the queue, ms (resolution of the queue's t: seconds unless sf_t_ms)");
    static final Attr<Boolean> ALERT = Attr.bool("alert", false, AttrFlag.STATS,
            "The queue size is at or over alert_queue_size");
    static final Attr<Long> RETRIES = Attr.counter("retries", AttrFlag.RSTATS,
            "Messages sent again after an ack timeout or a nack");
    static final Attr<Long> NACKS = Attr.counter("nacks", AttrFlag.RSTATS, "Acks with a negative result");
    static final Attr<Long> ACKS = Attr.counter("acks", AttrFlag.RSTATS, "Messages acked (cleared)");
    static final Attr<Long> IGNORED_ACKS = Attr.counter("ignored_acks", AttrFlag.RSTATS,
            "Duplicate, stale or unknown acks");
    static final Attr<Long> ENQUEUED = Attr.counter("enqueued", AttrFlag.RSTATS, "Messages appended");
    static final Attr<Long> ENQUEUE_ERRORS = Attr.counter("enqueue_errors", AttrFlag.RSTATS,
            "Messages refused because they could not be stored");

    // --- Trace levels ---

    static final String TRACE_MESSAGES = "messages";
    static final String TRACE_QUEUE_PROT = "trace_queue_prot";

    // --- FSM ---

    static final Fsm<QIoGate> FSM = Fsm.<QIoGate>builder()
        .state(St.ST_IDLE)
            .on(Ev.EV_SEND_MESSAGE, QIoGate::acEnqueueMessage)
            .on(Ev.EV_ON_MESSAGE,   QIoGate::acOnMessage)
            .on(Ev.EV_ON_OPEN,      QIoGate::acOnOpen)
            .on(Ev.EV_ON_CLOSE,     QIoGate::acOnClose)
            .on(Ev.EV_TIMEOUT,      QIoGate::acTimeout)
            .ignore(Ev.EV_STOPPED)
        .build();

    // --- Spec ---

    private static final Param PM_KEY = Param.string("key", "", "Unused (Yuneta compatibility)");
    private static final Param PM_FROM_ROWID = Param.integer("from-rowid", "0", "First rowid");
    private static final Param PM_TO_ROWID = Param.integer("to-rowid", "0", "Last rowid; 0 = the last of the topic");

    /**
     * The gclass with its queues found at start ({@code yuno().lookup(TrQueueFactory.class)}); the DS component
     * hands in the TrQueueFactory service instead ({@link #SPEC}{@code .withFactory}).
     */
    public static final GClassSpec<QIoGate> SPEC = GClassSpec.builder(GClassNames.C_QIOGATE, QIoGate.class)
            .description("Persistent queue with acks in front of one bottom (retries, credit window)")
            .attrs(TIMEOUT_POLL, TIMEOUT_BACKUP, TRANGER_PATH, TRANGER_DATABASE, TOPIC_NAME, TKEY, SYSTEM_FLAG,
                    ALERT_MESSAGE, MAX_PENDING_ACKS, MAX_PENDING_BYTES, BACKUP_QUEUE_SIZE, ALERT_QUEUE_SIZE,
                    TIMEOUT_ACK, RETRY_DELAY, WITH_METADATA, DISABLE_ALERT, FSYNC_POLICY, FSYNC_INTERVAL_MS,
                    MSGS_IN_QUEUE, PENDING_ACKS, OLDEST_PENDING_AGE_MS, ALERT, RETRIES, NACKS, ACKS, IGNORED_ACKS,
                    ENQUEUED, ENQUEUE_ERRORS)
            .fsm(FSM)
            .command("queue_mark_pending",
                    "Mark the messages in [from-rowid, to-rowid] as pending: they are sent again (to-rowid 0 = last)",
                    QIoGate::cmdMarkPending, PM_KEY, PM_FROM_ROWID, PM_TO_ROWID)
            .command("queue_mark_notpending",
                    "Mark the messages in [from-rowid, to-rowid] as not pending: they are dropped from the queue",
                    QIoGate::cmdMarkNotPending, PM_KEY, PM_FROM_ROWID, PM_TO_ROWID)
            .command("view-queue", "The queue's state: size, window, oldest messages in flight with their retries",
                    QIoGate::cmdViewQueue, Param.integer("limit", "20", "Messages in flight to list"))
            .traceLevel(TRACE_MESSAGES, "Trace every message enqueued and sent, with its rowid and retries")
            .traceLevel(TRACE_QUEUE_PROT, "Trace the queue protocol: acks, nacks and resends")
            .acceptUnusedYunetaKeys("on_critical_error", "alert_from", "alert_to")
            .confirmsDurability()
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(g -> new QIoGate(g, null))
            .build();

    // --- Private data ---

    /** One message in flight: sent on the current link, waiting for its ack. */
    private static final class InFlight {
        final QueueMessage msg;
        long sentAtMs;
        long dueMs;
        int retries;
        /** Size of the message on the wire, counted in the byte window while it is in flight. */
        long bytes;
        /** Nacked: sent again at dueMs because of the nack, not because the ack timed out. */
        boolean nacked;

        InFlight(QueueMessage msg) {
            this.msg = msg;
        }
    }

    /** A sender waiting for EV_ON_DURABLE: told once its record is durable. */
    private static final class DurableWait {
        final long generation;
        final long rowid;
        final GObj sender;
        final ObjectNode durable;

        DurableWait(long generation, long rowid, GObj sender, ObjectNode durable) {
            this.generation = generation;
            this.rowid = rowid;
            this.sender = sender;
            this.durable = durable;
        }
    }

    private final GObj gobj;
    private final TrQueueFactory factoryFromService;

    private TrQueue trq;
    private int systemFlag;
    /** Messages in flight by rowid, in send order. Bounded by max_pending_acks. */
    private final LinkedHashMap<Long, InFlight> inflight = new LinkedHashMap<>();
    /** The highest rowid sent since the link opened (every unacked message below it is in flight); -1 none. */
    private long frontierRowid = -1;
    private final ArrayDeque<DurableWait> durableWaits = new ArrayDeque<>();
    private int channelsOpen;
    private Cancellable pollTimer = Cancellable.NONE;
    private long lastBackupCheckMs;
    private boolean backupRefusedSaid;
    private boolean noBottomSaid;
    /** Bytes of the messages in flight (the byte credit window). */
    private long inflightBytes;
    /** Appends refused in a row; the error is said for the first one only. */
    private long refusedStreak;
    /** The largest size seen while the alert is on, said when it ends. */
    private long alertPeak;

    QIoGate(GObj gobj, TrQueueFactory factory) {
        this.gobj = gobj;
        this.factoryFromService = factory;
    }

    // --- Framework methods ---

    @Override
    public void onCreate() {
        systemFlag = parseSystemFlag(gobj.read(SYSTEM_FLAG));
        FsyncPolicy.parse(gobj.read(FSYNC_POLICY)); // a bad value is a config error, here
        if (gobj.readLong(TIMEOUT_POLL) <= 0) throw new IllegalArgumentException("timeout_poll must be > 0 ms");
    }

    @Override
    public int onStart() {
        if (gobj.readLong(TIMEOUT_ACK) <= 0) {
            Glog.error(gobj, "timeout_ack EMPTY, set 60", "timeout_ack", gobj.readLong(TIMEOUT_ACK));
            gobj.setLong(TIMEOUT_ACK, 60);
        }
        if (openQueue() < 0) return -1;
        if (bottom() == null) {
            Glog.error(gobj, "C_QIOGATE without bottom: messages are queued, nothing is sent");
        }
        lastBackupCheckMs = now();
        pollTimer = gobj.setPeriodic(gobj.readLong(TIMEOUT_POLL), Ev.EV_TIMEOUT);
        refreshStats();
        return 0;
    }

    @Override
    public int onStop() {
        pollTimer.cancel();
        pollTimer = Cancellable.NONE;
        closeQueue();
        return 0;
    }

    @Override
    public void onDestroy() {
        pollTimer.cancel();
        closeQueue();
    }

    @Override
    public void onWriting(String attr) {
        if (attr.equals(MAX_PENDING_ACKS.name()) || attr.equals(MAX_PENDING_BYTES.name())) sendBatch();
        if (attr.equals(ALERT_QUEUE_SIZE.name()) || attr.equals(DISABLE_ALERT.name())) checkAlert(false);
    }

    private TrQueueFactory factory() {
        if (factoryFromService != null) return factoryFromService;
        return gobj.yuno().lookup(TrQueueFactory.class);
    }

    /** Opens the topic and loads its pending messages (a restart: they are all sent again). */
    private int openQueue() {
        if (trq != null) return 0;
        TrQueueFactory f = factory();
        if (f == null) {
            Glog.error(gobj, "No TrQueueFactory: the trqueue bundle is missing");
            return -1;
        }
        Path dir = queuesPath();
        String db = database();
        TrQueueOptions opts = TrQueueOptions.defaults()
                .withFsyncPolicy(FsyncPolicy.parse(gobj.read(FSYNC_POLICY)))
                .withFsyncIntervalMs(Math.max(1, gobj.readLong(FSYNC_INTERVAL_MS)));
        TrQueue q;
        try {
            q = f.open(dir, db, gobj.read(TOPIC_NAME), gobj.read(TKEY), systemFlag,
                    gobj.readLong(BACKUP_QUEUE_SIZE), opts);
        } catch (TrQueueException | IllegalArgumentException e) {
            Glog.error(gobj, "Cannot open the queue", "tranger_path", dir.toString(), "tranger_database", db,
                    "topic_name", gobj.read(TOPIC_NAME), "error", String.valueOf(e.getMessage()));
            return -1;
        }
        if (q == null) {
            Glog.error(gobj, "Cannot open the queue", "tranger_path", dir.toString(), "tranger_database", db,
                    "topic_name", gobj.read(TOPIC_NAME));
            return -1;
        }
        trq = q;
        final TrQueue mine = q;
        // Hop to the core thread through its task queue: a callback never runs inside the send that enqueued.
        q.onDurable((gen, rowid) -> drainDurable(mine), r -> gobj.yuno().eventLoop().execute(r));
        if (q.load() < 0) {
            Glog.error(gobj, "Queue loaded without some of its messages", "topic_name", q.topicName(),
                    "msgs_in_queue", q.size());
        }
        clearInflightMap();
        frontierRowid = -1;
        backupRefusedSaid = false;
        if (q.size() > 0) {
            Glog.info(gobj, "Queue loaded", "topic_name", q.topicName(), "msgs_in_queue", q.size());
        }
        checkAlert(true);
        return 0;
    }

    private void closeQueue() {
        TrQueue q = trq;
        if (q == null) return;
        clearInflight();
        q.sync();
        drainDurable(q);
        if (!durableWaits.isEmpty()) {
            Glog.warn(gobj, "Queue closed with messages not known durable: their senders are not told",
                    "count", durableWaits.size());
            durableWaits.clear();
        }
        trq = null;
        try {
            q.close();
        } catch (RuntimeException e) {
            Glog.error(gobj, "Cannot close the queue", "error", String.valueOf(e));
        }
        refreshStats();
    }

    Path queuesPath() {
        String p = gobj.read(TRANGER_PATH);
        if (p == null || p.isEmpty()) return gobj.yuno().dataDir().resolve("queues");
        Path path = Paths.get(p);
        // a relative path lives under the data directory, like everything persistent
        return path.isAbsolute() ? path : gobj.yuno().dataDir().resolve(path);
    }

    String database() {
        String db = gobj.read(TRANGER_DATABASE);
        if (db != null && !db.isEmpty()) return db;
        String n = gobj.name();
        if (n.isEmpty()) n = gobj.fullName();
        return n.replaceAll("[^A-Za-z0-9_.^-]", "_");
    }

    static int parseSystemFlag(String s) {
        int flag = 0;
        if (s == null) return 0;
        for (String part : s.split("[|, ]+")) {
            String f = part.trim().toLowerCase(Locale.ROOT);
            if (f.isEmpty()) continue;
            if (f.equals("sf_t_ms")) flag |= TrQueue.SF_T_MS;
            else if (f.equals("sf_tm_ms")) flag |= TrQueue.SF_TM_MS;
            else if (!f.startsWith("sf_")) throw new IllegalArgumentException("system_flag: unknown flag '" + part + "'");
            // other sf_* flags (key type, zip, cipher...) have no meaning for a queue: the key type is forced
        }
        return flag;
    }

    private GObj bottom() {
        GObj b = gobj.bottom();
        if (b == null) {
            List<GObj> ch = gobj.children();
            if (ch.size() == 1) b = ch.get(0);
        }
        return b;
    }

    private long now() {
        return gobj.yuno().clock().monotonicMillis();
    }

    private boolean opened() {
        return channelsOpen > 0;
    }

    // --- Actions ---

    /** EV_SEND_MESSAGE: persist, then send if the link is open, the window has room and nothing older waits. */
    private int acEnqueueMessage(String event, ObjectNode kw, GObj src) {
        JsonNode durable = kw.remove(Kw.DURABLE);
        ObjectNode msg = messageOf(kw);
        if (msg == null) {
            gobj.inc(ENQUEUE_ERRORS);
            return -1;
        }
        if (trq == null && openQueue() < 0) {
            Glog.error(gobj, "Message NOT SAVED in the queue: queue not open", "topic_name", gobj.read(TOPIC_NAME));
            gobj.inc(ENQUEUE_ERRORS);
            return -1;
        }
        long t = (systemFlag & TrQueue.SF_T_MS) != 0 ? gobj.yuno().clock().epochMillis()
                : gobj.yuno().clock().epochMillis() / 1000;
        QueueMessage m = trq.append(t, msg, 0);
        if (m == null) {
            // Disk full, message too large, I/O error: the sender is told (-1) and never gets EV_ON_DURABLE,
            // so an upstream producer is not acked and sends again. Said once per streak: a full disk refuses
            // thousands of messages a second, and the store has logged why.
            if (refusedStreak++ == 0) {
                Glog.error(gobj, "Message NOT SAVED in the queue", "topic_name", trq.topicName(),
                        "msgs_in_queue", trq.size());
            }
            gobj.inc(ENQUEUE_ERRORS);
            return -1;
        }
        if (refusedStreak > 0) {
            Glog.info(gobj, "Messages saved in the queue again", "refused", refusedStreak);
            refusedStreak = 0;
        }
        gobj.inc(ENQUEUED);
        if (gobj.isTraced(TRACE_MESSAGES)) {
            Glog.info(gobj, "message enqueued", "rowid", m.rowid(), "msgs_in_queue", trq.size());
        }
        if (durable instanceof ObjectNode && src != null) {
            durableWaits.add(new DurableWait(m.generation(), m.rowid(), src, (ObjectNode) durable));
            if (trq.durableRowid() >= m.rowid()) {
                final TrQueue q = trq;
                gobj.yuno().eventLoop().execute(() -> drainDurable(q));
            }
        }
        checkAlert(false);
        sendBatch();
        return 0;
    }

    /** The message to store: the kw's JSON, or the JSON object in its gbuffer. Metadata and references removed. */
    private ObjectNode messageOf(ObjectNode kw) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        ObjectNode src = kw;
        if (buf != null) {
            try {
                src = Kw.parse(buf);
            } catch (IOException e) {
                Glog.error(gobj, "Message NOT SAVED in the queue: its gbuffer is not a JSON object",
                        "error", String.valueOf(e.getMessage()), "dump", dump(buf));
                return null;
            } finally {
                buf.release();
            }
        }
        boolean keepMetadata = gobj.readBool(WITH_METADATA);
        // The kw is ours: when it holds nothing to strip (the usual case, a message just parsed by the relay),
        // it is stored as it is instead of being copied.
        ObjectNode out = !needsStripping(src, keepMetadata) ? src
                : keepMetadata ? Kw.withoutRefs(src) : Kw.withoutMetadata(src);
        out.remove(Kw.MD_TRQ);
        return out;
    }

    /** True when Kw.withoutRefs (or Kw.withoutMetadata) would drop something from the dict: they recurse alike. */
    private static boolean needsStripping(ObjectNode o, boolean keepMetadata) {
        Iterator<Map.Entry<String, JsonNode>> it = o.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode v = e.getValue();
            if (Kw.isRef(v) || (!keepMetadata && Kw.isMetadataKey(e.getKey()))) return true;
            if (v instanceof ObjectNode && needsStripping((ObjectNode) v, keepMetadata)) return true;
        }
        return false;
    }

    /** EV_ON_MESSAGE from the bottom: an ack (or a nack) of a message sent. */
    private int acOnMessage(String event, ObjectNode kw, GObj src) {
        if (src != bottom()) {
            Glog.error(gobj, "source unknown", "event", event, "src", src == null ? "" : src.shortName());
            Kw.release(kw);
            return -1;
        }
        ObjectNode ack = kw;
        ByteBuf buf = Kw.takeGbuffer(kw);
        if (buf != null) {
            try {
                ack = Kw.parse(buf);
            } catch (IOException e) {
                Glog.error(gobj, "Bad ack: not a JSON object", "error", String.valueOf(e.getMessage()),
                        "dump", dump(buf));
                return -1;
            } finally {
                buf.release();
            }
        }
        int r = processAck(ack);
        sendBatch();
        return r;
    }

    private int processAck(ObjectNode ack) {
        if (trq == null) {
            Glog.warn(gobj, "Ack ignored: queue not open");
            return -1;
        }
        ObjectNode md = TrQueue.getMetadata(ack);
        JsonNode mdOrTop = md != null ? md : ack;
        long rowid = mdOrTop.path(TrQueue.MSG_ROWID).asLong(0);
        if (rowid <= 0) {
            Glog.error(gobj, "Ack without __md_trq__.__msg_rowid__, ignored", "ack", abbreviate(Kw.toJson(ack)));
            countIgnored();
            return -1;
        }
        long t = mdOrTop.path(TrQueue.MSG_T).asLong(0);
        JsonNode res = md != null && md.has(Kw.RESULT) ? md.get(Kw.RESULT) : ack.get(Kw.RESULT);
        if (res == null) {
            Glog.error(gobj, "Ack without result, taken as 0", "rowid", rowid);
        }
        int result = res == null ? 0 : res.asInt(0);
        QueueMessage m = trq.matchAck(ack);
        if (m == null) {
            JsonNode genNode = mdOrTop.get(TrQueue.MSG_GEN);
            long gen = genNode == null ? trq.generation() : genNode.asLong();
            int pending = trq.checkPendingRowid(gen, t, rowid);
            countIgnored();
            if (pending == 0) {
                Glog.debug(gobj, "Duplicate ack ignored", "rowid", rowid);
            } else if (pending > 0) {
                Glog.warn(gobj, "Message not found in the queue, ack ignored", "rowid", rowid, "t", t);
            } else {
                Glog.warn(gobj, "Stale or unknown ack ignored", "rowid", rowid, "t", t, "generation", gen,
                        "queue_generation", trq.generation());
            }
            return 0;
        }
        if (gobj.isTraced(TRACE_QUEUE_PROT)) {
            Glog.info(gobj, "ack", "rowid", rowid, "result", result);
        }
        InFlight f = inflight.get(rowid);
        if (result < 0) {
            gobj.inc(NACKS);
            if (f != null) {
                f.retries++;
                f.nacked = true;
                f.dueMs = now() + backoff(gobj.readLong(RETRY_DELAY), f.retries - 1);
            }
            Glog.warn(gobj, "Nack: the message will be sent again", "rowid", rowid, "result", result,
                    "retries", f == null ? 0 : f.retries);
            return 0;
        }
        dropInflight(rowid);
        if (trq.unload(m, result) < 0) {
            Glog.error(gobj, "Cannot clear the pending flag: the message may be sent again after a restart",
                    "rowid", rowid);
        }
        gobj.inc(ACKS);
        checkAlert(false);
        return 0;
    }

    private void countIgnored() {
        gobj.inc(IGNORED_ACKS);
    }

    /** EV_ON_OPEN from the bottom: send from the oldest message, up to the window. */
    private int acOnOpen(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        if (src != bottom()) {
            Glog.error(gobj, "source unknown", "event", event, "src", src == null ? "" : src.shortName());
            return -1;
        }
        channelsOpen++;
        if (channelsOpen == 1) {
            frontierRowid = -1;
        }
        sendBatch();
        refreshStats();
        return 0;
    }

    /**
     * EV_ON_CLOSE from the bottom: whatever was in flight is lost with the link. Every message goes back to
     * "not sent" and is sent again, in rowid order, on the next open (or now, over another open channel of the
     * bottom gate).
     */
    private int acOnClose(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        if (src != bottom()) {
            Glog.error(gobj, "source unknown", "event", event, "src", src == null ? "" : src.shortName());
            return -1;
        }
        channelsOpen = Math.max(0, channelsOpen - 1);
        clearInflight();
        sendBatch();
        refreshStats();
        return 0;
    }

    /** EV_TIMEOUT (timeout_poll): resend what timed out or was nacked, send what waits, check the backup. */
    private int acTimeout(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        if (trq == null) return 0;
        long now = now();
        if (opened() && !inflight.isEmpty()) {
            List<InFlight> due = null;
            for (InFlight f : inflight.values()) {
                if (f.dueMs <= now) {
                    if (due == null) due = new ArrayList<>();
                    due.add(f);
                }
            }
            if (due != null) {
                for (InFlight f : due) {
                    if (!opened()) break;
                    // an ack or a close handled while sending an earlier one may have settled this one
                    if (inflight.get(f.msg.rowid()) != f) continue;
                    if (trq.getByRowid(f.msg.rowid()) == null) {
                        dropInflight(f.msg.rowid());
                        continue;
                    }
                    boolean timedOut = !f.nacked;
                    if (timedOut) f.retries++;
                    f.nacked = false;
                    gobj.inc(RETRIES);
                    if (gobj.isTraced(TRACE_MESSAGES) || gobj.isTraced(TRACE_QUEUE_PROT)) {
                        Glog.info(gobj, timedOut ? "ack timeout: sending again" : "nacked: sending again",
                                "rowid", f.msg.rowid(), "retries", f.retries);
                    }
                    transmit(f);
                }
            }
        }
        sendBatch();
        if (now - lastBackupCheckMs >= gobj.readLong(TIMEOUT_BACKUP) * 1000L) {
            lastBackupCheckMs = now;
            checkBackup();
        }
        refreshStats();
        return 0;
    }

    // --- Local methods ---

    /** The backoff of a message's n-th retry: base doubled per retry, capped at 8 x timeout_ack. */
    long backoff(long baseMs, int retries) {
        long cap = Math.max(baseMs, 8L * timeoutAckMs());
        long d = baseMs;
        for (int i = 0; i < retries && d < cap; i++) d *= 2;
        return Math.min(Math.max(1, d), cap);
    }

    private boolean windowFull() {
        long max = gobj.readLong(MAX_PENDING_ACKS);
        if (max > 0 && inflight.size() >= max) return true;
        long maxBytes = gobj.readLong(MAX_PENDING_BYTES);
        return maxBytes > 0 && inflightBytes >= maxBytes && !inflight.isEmpty();
    }

    private long timeoutAckMs() {
        return gobj.readLong(TIMEOUT_ACK) * 1000L;
    }

    /** Takes a message out of flight (acked, gone, unloaded), giving its bytes back to the window. */
    private void dropInflight(long rowid) {
        InFlight f = inflight.remove(rowid);
        if (f != null) inflightBytes -= f.bytes;
    }

    private void clearInflightMap() {
        inflight.clear();
        inflightBytes = 0;
    }

    /** Sends messages not sent yet, in rowid order, until the window is full. */
    private void sendBatch() {
        if (trq == null || !opened()) return;
        GObj b = bottom();
        if (b == null) {
            if (!noBottomSaid) {
                noBottomSaid = true;
                Glog.error(gobj, "No bottom to send to: messages stay in the queue");
            }
            return;
        }
        while (!windowFull() && opened()) {
            QueueMessage m = nextUnsent();
            if (m == null) return;
            frontierRowid = m.rowid();
            InFlight f = new InFlight(m);
            inflight.put(m.rowid(), f);
            trq.setSoftMark(m, MARK_INFLIGHT, true);
            if (!transmit(f)) {
                dropInflight(m.rowid());
                trq.setSoftMark(m, MARK_INFLIGHT, false);
                trq.setSoftMark(m, MARK_UNREADABLE, true);
            }
        }
    }

    /** The oldest message of the queue not in flight and not known unreadable, after the frontier. */
    private QueueMessage nextUnsent() {
        QueueMessage m;
        if (frontierRowid < 0) {
            m = trq.first();
        } else {
            QueueMessage at = trq.getByRowid(frontierRowid);
            if (at != null) {
                m = trq.next(at);
            } else {
                m = null;
                long last = trq.lastRowid();
                for (long r = frontierRowid + 1; r <= last; r++) {
                    m = trq.getByRowid(r);
                    if (m != null) break;
                }
            }
        }
        while (m != null && (inflight.containsKey(m.rowid()) || (m.softMark() & MARK_UNREADABLE) != 0)) {
            m = trq.next(m);
        }
        return m;
    }

    /**
     * Reads the record and sends it down as compact JSON with its {@code __md_trq__}. Answers false when the
     * record cannot be read (it stays pending on disk and is skipped until the next load).
     */
    private boolean transmit(InFlight f) {
        ByteBuf buf = Gbuffers.allocate(ByteBufAllocator.DEFAULT, 256);
        boolean readable;
        try {
            readable = trq.writeMsgJson(f.msg, buf);
        } catch (RuntimeException e) {
            buf.release();
            Glog.error(gobj, "Message cannot be serialised, skipped", "rowid", f.msg.rowid(), "error", String.valueOf(e));
            return false;
        }
        if (!readable) {
            buf.release();
            Glog.error(gobj, "Message unreadable, skipped (still pending on disk)", "rowid", f.msg.rowid());
            return false;
        }
        if (f.bytes == 0) {
            f.bytes = buf.readableBytes();
            inflightBytes += f.bytes;
        }
        long now = now();
        f.sentAtMs = now;
        f.dueMs = now + backoff(timeoutAckMs(), f.retries);
        if (gobj.isTraced(TRACE_MESSAGES)) {
            Glog.info(gobj, "message sent", "rowid", f.msg.rowid(), "retries", f.retries,
                    "msg", abbreviate(buf.toString(buf.readerIndex(), Math.min(buf.readableBytes(), 200),
                            java.nio.charset.StandardCharsets.UTF_8)));
        }
        int r = bottom().send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(buf), gobj);
        if (r < 0) {
            // The bottom refused it (no channel, output over its limit...): it stays in flight and the ack
            // timeout sends it again, with backoff.
            Glog.warn(gobj, "Bottom refused the message: it will be sent again after timeout_ack",
                    "rowid", f.msg.rowid());
        }
        return true;
    }

    /** Whatever was in flight goes back to "not sent". */
    private void clearInflight() {
        if (trq != null) {
            for (InFlight f : inflight.values()) trq.setSoftMark(f.msg, MARK_INFLIGHT, false);
        }
        clearInflightMap();
        frontierRowid = -1;
    }

    private void drainDurable(TrQueue q) {
        if (q != trq) return;
        long gen = q.generation();
        long durable = q.durableRowid();
        while (!durableWaits.isEmpty()) {
            DurableWait w = durableWaits.peek();
            if (w.generation == gen && w.rowid > durable) return;
            durableWaits.poll();
            if (w.generation != gen) {
                Glog.warn(gobj, "Durable callback of another queue generation dropped", "rowid", w.rowid);
                continue;
            }
            if (!w.sender.isDestroyed()) w.sender.send(Ev.EV_ON_DURABLE, w.durable, gobj);
        }
    }

    /**
     * The queue-size alert: said once when the queue reaches {@code alert_queue_size}, and once when it is back
     * under it (with how large it grew), never per message in between.
     */
    private void checkAlert(boolean atOpen) {
        if (trq == null) return;
        long limit = gobj.readLong(ALERT_QUEUE_SIZE);
        int size = trq.size();
        boolean over = limit > 0 && !gobj.readBool(DISABLE_ALERT) && size >= limit;
        boolean was = gobj.readBool(ALERT);
        if (over && size > alertPeak) alertPeak = size;
        if (over && !was) {
            Glog.warn(gobj, gobj.read(ALERT_MESSAGE) + " " + size + " msgs", "node", hostName(),
                    "yuno", gobj.yuno().role() + "^" + gobj.yuno().name(), "queue", database(),
                    "topic_name", trq.topicName(), "queue_size", size, "alert_queue_size", limit,
                    "at_open", atOpen);
        } else if (!over && was) {
            Glog.info(gobj, "Queue back under alert_queue_size", "queue_size", size, "alert_queue_size", limit,
                    "peak", alertPeak);
            alertPeak = 0;
        }
        if (over != was) gobj.setBool(ALERT, over);
    }

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }

    /** A backup is only tried on an empty queue with nothing in flight and nobody waiting for durability. */
    private void checkBackup() {
        if (trq.size() != 0 || !inflight.isEmpty() || !durableWaits.isEmpty()) return;
        long gen = trq.generation();
        int r = trq.checkBackup();
        if (trq.generation() != gen) {
            // a new topic incarnation: rowids start at 1 again
            frontierRowid = -1;
            Glog.info(gobj, "Queue backed up, new generation", "topic_name", trq.topicName(),
                    "generation", trq.generation());
        }
        if (r < 0) {
            if (!backupRefusedSaid) {
                backupRefusedSaid = true;
                Glog.warn(gobj, "Queue backup refused or failed: the queue goes on in its topic",
                        "topic_name", trq.topicName());
            }
        } else {
            backupRefusedSaid = false;
        }
    }

    /** The attributes are read from outside: the gauges, from the queue. */
    @Override
    public void onReadAttrs() {
        refreshStats();
    }

    /** The gauges (msgs_in_queue, pending_acks, oldest_pending_age_ms) from the queue, for a reader. */
    private void refreshStats() {
        TrQueue q = trq;
        gobj.setLong(MSGS_IN_QUEUE, q == null ? 0 : q.size());
        gobj.setLong(PENDING_ACKS, inflight.size());
        gobj.setLong(OLDEST_PENDING_AGE_MS, oldestAgeMs());
    }

    private long oldestAgeMs() {
        if (trq == null) return 0;
        QueueMessage m = trq.first();
        if (m == null) return 0;
        long tMs = (systemFlag & TrQueue.SF_T_MS) != 0 ? m.t() : m.t() * 1000L;
        return Math.max(0, gobj.yuno().clock().epochMillis() - tMs);
    }

    private static String dump(ByteBuf buf) {
        int n = Math.min(buf.readableBytes(), 64);
        return ByteBufUtil.hexDump(buf, buf.readerIndex(), n) + (buf.readableBytes() > n ? "..." : "");
    }

    private static String abbreviate(String s) {
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }

    // --- Stats ---

    /**
     * The bottom's stats (asked as its parent, the envelope unwrapped) plus the queue's: {@code msgs_in_queue},
     * {@code pending_acks}, {@code oldest_pending_age_ms}, {@code alert}, {@code retries}, {@code nacks},
     * {@code acks}, {@code ignored_acks}, {@code enqueued}, {@code enqueue_errors}; in the envelope.
     */
    @Override
    public ObjectNode onStats(String filter, ObjectNode kw, GObj src) {
        boolean reset = "__reset__".equals(filter);
        ObjectNode data = Kw.create();
        GObj b = bottom();
        if (b != null) {
            ObjectNode bs = b.stats(filter, kw, gobj);
            JsonNode d = bs != null && bs.has("result") && bs.has("data") ? bs.get("data") : bs;
            if (d instanceof ObjectNode) data.setAll((ObjectNode) d);
        }
        if (reset) {
            for (Attr<Long> a : List.of(RETRIES, NACKS, ACKS, IGNORED_ACKS, ENQUEUED, ENQUEUE_ERRORS)) gobj.setLong(a, 0);
        }
        refreshStats();
        data.put(MSGS_IN_QUEUE.name(), gobj.readLong(MSGS_IN_QUEUE));
        data.put(PENDING_ACKS.name(), gobj.readLong(PENDING_ACKS));
        data.put(OLDEST_PENDING_AGE_MS.name(), gobj.readLong(OLDEST_PENDING_AGE_MS));
        data.put(ALERT.name(), gobj.readBool(ALERT));
        for (Attr<Long> a : List.of(RETRIES, NACKS, ACKS, IGNORED_ACKS, ENQUEUED, ENQUEUE_ERRORS)) {
            data.put(a.name(), gobj.readLong(a));
        }
        return Envelope.ok(data);
    }

    // --- Commands ---

    /**
     * queue_mark_pending: rows in the range become pending (loaded into the queue if needed) and are sent again
     * in rowid order. queue_mark_notpending: rows in the range stop being pending and leave the queue (those in
     * flight too). Run live, on the core thread: no pause needed.
     */
    private ObjectNode cmdMarkPending(ObjectNode kw, GObj src) {
        return markPending(kw, true);
    }

    private ObjectNode cmdMarkNotPending(ObjectNode kw, GObj src) {
        return markPending(kw, false);
    }

    private ObjectNode markPending(ObjectNode kw, boolean pending) {
        long from = Kw.getLong(kw, "from-rowid", 0);
        long to = Kw.getLong(kw, "to-rowid", 0);
        if (from <= 0) return Envelope.error("Please, specify some from-rowid.");
        if (trq == null && openQueue() < 0) return Envelope.error("queue not open");
        long last = trq.lastRowid();
        if (to <= 0 || to > last) to = last;
        if (from > to) {
            return Envelope.ok("0 messages marked as " + (pending ? "PENDING" : "NOT-PENDING"), null);
        }
        int n = 0;
        if (pending) {
            for (long r = from; r <= to; r++) {
                QueueMessage m = trq.getByRowid(r);
                if (m == null) {
                    trq.loadAll(r, r);
                    m = trq.getByRowid(r);
                }
                if (m == null) continue;
                if ((m.userFlag() & TrQueue.MSG_PENDING) == 0) {
                    if (trq.setHardFlag(m, TrQueue.MSG_PENDING, true) < 0) continue;
                }
                n++;
            }
            // Rows below the frontier may have come back: walk again from the oldest.
            frontierRowid = -1;
        } else {
            List<QueueMessage> hit = new ArrayList<>();
            for (QueueMessage m = trq.getByRowid(from) != null ? trq.getByRowid(from) : firstAtOrAfter(from);
                 m != null && m.rowid() <= to; m = trq.next(m)) {
                hit.add(m);
            }
            for (QueueMessage m : hit) {
                dropInflight(m.rowid());
                if (trq.unload(m, 0) == 0) n++;
            }
        }
        checkAlert(false);
        sendBatch();
        refreshStats();
        return Envelope.ok(n + " messages marked as " + (pending ? "PENDING" : "NOT-PENDING"), null);
    }

    private QueueMessage firstAtOrAfter(long rowid) {
        for (QueueMessage m = trq.first(); m != null; m = trq.next(m)) {
            if (m.rowid() >= rowid) return m;
        }
        return null;
    }

    private ObjectNode cmdViewQueue(ObjectNode kw, GObj src) {
        refreshStats();
        ObjectNode d = Kw.create();
        d.put("topic_name", gobj.read(TOPIC_NAME));
        d.put("path", queuesPath().resolve(database()).toString());
        d.put("open", trq != null);
        d.put("link_open", opened());
        d.put("msgs_in_queue", gobj.readLong(MSGS_IN_QUEUE));
        d.put("pending_acks", gobj.readLong(PENDING_ACKS));
        d.put("max_pending_acks", gobj.readLong(MAX_PENDING_ACKS));
        d.put("pending_bytes", inflightBytes);
        d.put("max_pending_bytes", gobj.readLong(MAX_PENDING_BYTES));
        d.put("oldest_pending_age_ms", gobj.readLong(OLDEST_PENDING_AGE_MS));
        if (trq != null) {
            d.put("generation", trq.generation());
            d.put("topic_size", trq.topicSize());
            d.put("durable_rowid", trq.durableRowid());
            d.put("fsync_policy", trq.fsyncPolicy().name().toLowerCase(Locale.ROOT));
        }
        long limit = Kw.getLong(kw, "limit", 20);
        var arr = d.putArray("inflight");
        long now = now();
        Iterator<Map.Entry<Long, InFlight>> it = inflight.entrySet().iterator();
        for (int i = 0; i < limit && it.hasNext(); i++) {
            InFlight f = it.next().getValue();
            ObjectNode o = arr.addObject();
            o.put("rowid", f.msg.rowid());
            o.put("retries", f.retries);
            o.put("sent_ms_ago", now - f.sentAtMs);
            o.put("due_in_ms", f.dueMs - now);
        }
        return Envelope.ok(d);
    }

    // --- Test hooks (package-private) ---

    int inflightCount() {
        return inflight.size();
    }

    TrQueue queue() {
        return trq;
    }
}
