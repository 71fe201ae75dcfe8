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
import io.gatehouse.api.Kw;
import io.gatehouse.api.Param;
import io.gatehouse.api.St;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueException;
import io.gatehouse.api.queue.TrQueueFactory;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.qiogate.InFlightWindow.InFlight;
import io.gatehouse.support.Batches;
import io.gatehouse.support.Gbuffers;
import io.gatehouse.support.Glog;
import io.gatehouse.support.ReusableHeapBuffer;
import io.gatehouse.support.Streak;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.buffer.ByteBufUtil;

import java.io.IOException;
import java.lang.ref.WeakReference;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * C_QIOGATE: a persistent queue with acks in front of one bottom (a C_IOGATE). Every message is appended to
 * its trqueue topic before it is sent; messages go down in rowid order, at most {@code max_pending_acks} in
 * flight (the credit window, replenished by acks); the receiver's ack (the message's {@code __md_trq__} echoed
 * back with {@code result}) clears it from the queue.
 *
 * <p>Port of {@code kernel/c/root-linux/src/c_qiogate.c} @6043415, with what the C code lacks: a message not
 * acked within {@code timeout_ack} is sent again with a doubling backoff; a negative {@code result} (nack) is
 * retried after {@code retry_delay} instead of dropped; a window in bytes beside the one in messages; stats
 * answer the envelope and carry {@code msgs_in_queue} and {@code pending_acks}.
 *
 * <p>Single state ST_IDLE. Inputs: EV_SEND_MESSAGE (enqueue, from anyone), EV_ON_OPEN / EV_ON_CLOSE /
 * EV_ON_MESSAGE (from the bottom: link state and acks), EV_TIMEOUT (the {@code timeout_poll} tick). No output
 * events: nothing is published upward. The window itself is an {@link InFlightWindow}; the senders waiting for
 * durability are {@link DurableWaits}.
 *
 * <p>Durability: C_QIOGATE {@link GClassSpec#confirmsDurability() confirms durability}. A message whose kw carries
 * a {@link Kw#DURABLE} dict gets {@link Ev#EV_ON_DURABLE} sent back to its sender, with that dict, once the
 * appended record is durable per the queue's fsync policy: on the core thread, never inside the send call, and
 * never for a message that was refused or whose append failed. It {@link GClassSpec#answersDurableTokens() answers
 * tokens} too: a message whose kw carries a {@link Kw#DURABLE_TOKEN} instead is told with every other token of its
 * sender that the same commit covers, in one {@link Ev#EV_ON_DURABLE_TOKENS}; tokens that will never be durable
 * (the queue closed or was backed up first) come back with a negative result.
 *
 * <p>Faults that repeat per message or per ack (appends refused, the bottom refusing, nacks, acks without a
 * result, stray acks, unreadable records, the queue-size alert) are logged once when they start and once when
 * they end, with how many times they happened.
 */
public final class QIoGate implements GObjBehavior {

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
            "Queue size that raises the alert (warning log, alert=true in stats), cleared under half of it; 0 = never");
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
    /**
     * Eight records written are forced at once rather than at the end of the period: a producer that waits for its
     * acks (an HTTP request of a batch, an MQTT client with ten publishes in flight) waits for one fsync instead of
     * the timer, while a trickle of records is still forced once a period. Under sustained load the commits run back
     * to back, each covering what came during the previous one (docs/GATES.md, docs/BENCHMARKS.md).
     */
    static final int DEFAULT_FSYNC_MAX_RECORDS = 8;
    static final Attr<Long> FSYNC_MAX_RECORDS = Attr.integer("fsync_max_records", DEFAULT_FSYNC_MAX_RECORDS, AttrFlag.RD,
            "fsync_policy interval: a group commit starts at once when this many written records wait for it"
                    + " (0 = on the period only)");

    static final Attr<Long> MSGS_IN_QUEUE = Attr.integer("msgs_in_queue", 0, AttrFlag.STATS,
            "Messages persisted and not acked yet (sent or not)");
    static final Attr<Long> PENDING_ACKS = Attr.integer("pending_acks", 0, AttrFlag.STATS,
            "Messages sent on the current link and waiting for their ack");
    static final Attr<Long> OLDEST_PENDING_AGE_MS = Attr.integer("oldest_pending_age_ms", 0, AttrFlag.STATS,
            "Age of the oldest message of the queue, ms (resolution of the queue's t: seconds unless sf_t_ms)");
    static final Attr<Boolean> ALERT = Attr.bool("alert", false, AttrFlag.STATS,
            "The queue reached alert_queue_size and has not yet fallen under half of it");
    static final Attr<Long> RETRIES = Attr.counter("retries", AttrFlag.RSTATS,
            "Messages sent again after an ack timeout or a nack");
    static final Attr<Long> NACKS = Attr.counter("nacks", AttrFlag.RSTATS, "Acks with a negative result");
    static final Attr<Long> ACKS = Attr.counter("acks", AttrFlag.RSTATS, "Messages acked (cleared)");
    static final Attr<Long> IGNORED_ACKS = Attr.counter("ignored_acks", AttrFlag.RSTATS,
            "Duplicate, stale or unknown acks");
    static final Attr<Long> ENQUEUED = Attr.counter("enqueued", AttrFlag.RSTATS, "Messages appended");
    static final Attr<Long> ENQUEUE_ERRORS = Attr.counter("enqueue_errors", AttrFlag.RSTATS,
            "Messages refused because they could not be stored");

    /** The counters that {@code stats=__reset__} zeroes, in the order stats list them. */
    private static final List<Attr<Long>> COUNTERS = List.of(RETRIES, NACKS, ACKS, IGNORED_ACKS, ENQUEUED, ENQUEUE_ERRORS);

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
     * The version of the state {@link #onExport} gives: 2, the in-flight window as arrays
     * ({@link InFlightWindow#exportCompact}). {@link #onImport} takes 2 and 1 (the window as JSON arrays, what
     * revisions before 2 give); a revision that knows 1 only refuses a state of 2, and its gates are rebuilt.
     */
    static final int STATE_VERSION = 2;
    /** The oldest state version {@link #onImport} takes. */
    static final int OLDEST_STATE_VERSION = 1;

    /**
     * The gclass with its queues found at start ({@code yuno().lookup(TrQueueFactory.class)}); the DS component
     * hands in the TrQueueFactory service instead ({@link #SPEC}{@code .withFactory}).
     */
    public static final GClassSpec<QIoGate> SPEC = GClassSpec.builder(GClassNames.C_QIOGATE, QIoGate.class)
            .description("Persistent queue with acks in front of one bottom (retries, credit window)")
            .attrs(TIMEOUT_POLL, TIMEOUT_BACKUP, TRANGER_PATH, TRANGER_DATABASE, TOPIC_NAME, TKEY, SYSTEM_FLAG,
                    ALERT_MESSAGE, MAX_PENDING_ACKS, MAX_PENDING_BYTES, BACKUP_QUEUE_SIZE, ALERT_QUEUE_SIZE,
                    TIMEOUT_ACK, RETRY_DELAY, WITH_METADATA, DISABLE_ALERT, FSYNC_POLICY, FSYNC_INTERVAL_MS,
                    FSYNC_MAX_RECORDS, MSGS_IN_QUEUE, PENDING_ACKS, OLDEST_PENDING_AGE_MS, ALERT, RETRIES, NACKS, ACKS, IGNORED_ACKS,
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
            .traceLevel(TRACE_MESSAGES, "Trace every message enqueued, sent and sent again, with its rowid and retries")
            .traceLevel(TRACE_QUEUE_PROT, "Trace the queue protocol: every ack and nack, and every resend")
            .acceptUnusedYunetaKeys("on_critical_error", "alert_from", "alert_to")
            .answersDurableTokens()
            .takesJsonRecords()
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .takesMessageBatches()
            .stateVersion(STATE_VERSION)
            .factory(g -> new QIoGate(g, null))
            .build();

    // --- Private data ---

    private final GObj gobj;
    private final TrQueueFactory factoryFromService;
    private final DurableWaits durableWaits;

    /** The open queue and its window: both set by openQueue, both null once closed. */
    private TrQueue trq;
    private InFlightWindow window;
    /** The open queue keeps its {@code t} in milliseconds ({@code sf_t_ms}): how it was opened, fixed until closed. */
    private boolean tInMs;
    /** The factory that opened {@link #trq}: a live upgrade tells from it whether the handle is still good. */
    private TrQueueFactory openedBy;
    /**
     * Where the durability listener of {@link #trq} hands its calls. A queue cannot forget a listener, so one is
     * registered per handle, and a live upgrade points this slot at the new behaviour instead of adding another.
     * A JDK type, so that any revision can take it.
     */
    private AtomicReference<Runnable> durableSlot;

    /** Open channels of the bottom gate: the link is up while one is. */
    private int channelsOpen;
    private Cancellable pollTimer = Cancellable.NONE;
    /** When the next poll tick is due (the yuno's monotonic clock); -1 while none is armed (stopped). */
    private long pollDueMs = -1;
    /**
     * Between {@link #onSuspend} and the handover: nothing is sent, no durability is told, the queue's age is not
     * read; the queue may be closed under this behaviour (the trqueue bundle is being updated).
     */
    private boolean suspended;
    private long lastBackupCheckMs;
    /** The largest size seen while the alert is on, said when it ends. */
    private long alertPeak;

    private final Streak openFailed = new Streak();
    private final Streak notJson = new Streak();
    private final Streak notSaved = new Streak();
    private final Streak noBottom = new Streak();
    private final Streak bottomRefused = new Streak();
    private final Streak unreadable = new Streak();
    private final Streak badAck = new Streak();
    private final AckScan ackScan = new AckScan();
    private final Streak noResult = new Streak();
    private final Streak strayAck = new Streak();
    private final Streak nacked = new Streak();
    private final Streak backupRefused = new Streak();

    QIoGate(GObj gobj, TrQueueFactory factory) {
        this.gobj = gobj;
        this.factoryFromService = factory;
        this.durableWaits = new DurableWaits(gobj);
    }

    // --- Framework methods ---

    @Override
    public void onCreate() {
        // Bad values are config errors, said here with the node's path, not at the first message.
        parseSystemFlag(gobj.read(SYSTEM_FLAG));
        FsyncPolicy.parse(gobj.read(FSYNC_POLICY));
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
        armPoll(now() + gobj.readLong(TIMEOUT_POLL));
        return 0;
    }

    @Override
    public int onStop() {
        pollTimer.cancel();
        pollTimer = Cancellable.NONE;
        pollDueMs = -1;
        closeQueue();
        forgetWireBuffer();
        return 0;
    }

    @Override
    public void onDestroy() {
        pollTimer.cancel();
        closeQueue();
        forgetWireBuffer();
    }

    @Override
    public void onWriting(String attr) {
        if (attr.equals(TIMEOUT_ACK.name()) && gobj.readLong(TIMEOUT_ACK) <= 0) {
            throw new IllegalArgumentException("timeout_ack must be > 0 s");
        }
        if (attr.equals(MAX_PENDING_ACKS.name()) || attr.equals(MAX_PENDING_BYTES.name())) sendBatch();
        if (attr.equals(ALERT_QUEUE_SIZE.name()) || attr.equals(DISABLE_ALERT.name())) checkAlert(false);
    }

    /** The gauges, computed from the queue and the window when someone reads them. */
    @Override
    public void onReadAttrs() {
        gobj.setLong(MSGS_IN_QUEUE, trq == null ? 0 : trq.size());
        gobj.setLong(PENDING_ACKS, window == null ? 0 : window.size());
        // Suspended, the queue may be closing under the gate (trqueue being updated): the age reads a record, so it
        // stays as last read until the new revision is there.
        if (!suspended) gobj.setLong(OLDEST_PENDING_AGE_MS, oldestAgeMs());
    }

    /**
     * The bottom's stats (asked as its parent, the envelope unwrapped) plus the queue's: {@code msgs_in_queue},
     * {@code pending_acks}, {@code oldest_pending_age_ms}, {@code alert}, {@code retries}, {@code nacks},
     * {@code acks}, {@code ignored_acks}, {@code enqueued}, {@code enqueue_errors}; in the envelope.
     */
    @Override
    public ObjectNode onStats(String filter, ObjectNode kw, GObj src) {
        ObjectNode data = Kw.create();
        GObj b = bottom();
        if (b != null) {
            ObjectNode bs = b.stats(filter, kw, gobj);
            JsonNode d = bs != null && bs.has("result") && bs.has("data") ? bs.get("data") : bs;
            if (d instanceof ObjectNode) data.setAll((ObjectNode) d);
        }
        if ("__reset__".equals(filter)) {
            for (Attr<Long> a : COUNTERS) gobj.setLong(a, 0);
        }
        onReadAttrs();
        for (Attr<Long> a : List.of(MSGS_IN_QUEUE, PENDING_ACKS, OLDEST_PENDING_AGE_MS)) data.put(a.name(), gobj.readLong(a));
        data.put(ALERT.name(), gobj.readBool(ALERT));
        for (Attr<Long> a : COUNTERS) data.put(a.name(), gobj.readLong(a));
        return Envelope.ok(data);
    }

    /**
     * A {@code Bundle.update()} of qiogate or trqueue has begun: the poll tick stops (its deadline is kept for the
     * next revision) and durability is no longer told; acks and messages wait in core. When trqueue is the bundle
     * being updated, its factory parks the queue under this behaviour right after this call (forced, files kept open
     * for the next trqueue to take over), or closes it (a trqueue before that hook).
     */
    @Override
    public void onSuspend() {
        suspended = true;
        pollTimer.cancel();
    }

    /**
     * The open queue (the handle itself, with the factory that opened it and its durability slot), the in-flight
     * window ({@link InFlightWindow#exportState}), the senders waiting for durability, the link count, the poll
     * deadline, the backup check time, the alert peak and the streaks. This behaviour then holds nothing.
     */
    @Override
    public ObjectNode onExport() {
        forgetWireBuffer();
        ObjectNode s = Kw.create();
        if (trq != null) {
            Kw.putRef(s, "queue", trq);
            // Weak, and not the factory itself: core closes what a failed upgrade leaves in a state, and a factory
            // is closeable (it would close every queue it opened).
            Kw.putRef(s, "opened_by", new WeakReference<>(openedBy));
            if (durableSlot != null) Kw.putRef(s, "durable_slot", durableSlot);
            s.put("t_in_ms", tInMs);
            ObjectNode w = s.putObject("window");
            Kw.putRef(s, "window_arrays", window.exportCompact(w));
        }
        s.set("durable_waits", durableWaits.exportState());
        s.put("channels_open", channelsOpen);
        s.put("poll_due_ms", pollDueMs);
        s.put("last_backup_check_ms", lastBackupCheckMs);
        s.put("alert_peak", alertPeak);
        ObjectNode st = s.putObject("streaks");
        streaks().forEach((name, streak) -> st.put(name, streak.count()));
        pollTimer.cancel();
        suspended = true;
        trq = null;
        window = null;
        openedBy = null;
        durableSlot = null;
        durableWaits.clear();
        return s;
    }

    /**
     * Takes the state of {@link #onExport}. The queue handle is kept when the factory that opened it is the one
     * this revision uses and it still answers for the window's rowids. Otherwise trqueue changed under the gate
     * (updated, or a higher version installed beside it): this revision's factory takes the open queue over
     * ({@link TrQueueFactory#takeOver}: no scan, no load, no fsync), or, when it cannot, the handle is closed and the
     * topic opened again through it; what was in flight stays in flight (not sent again), and the acks that come
     * later clear it.
     */
    @Override
    public void onImport(ObjectNode state, int stateVersion) {
        if (stateVersion < OLDEST_STATE_VERSION || stateVersion > STATE_VERSION) {
            throw new IllegalArgumentException("C_QIOGATE takes state versions " + OLDEST_STATE_VERSION + " to "
                    + STATE_VERSION + ", not " + stateVersion);
        }
        channelsOpen = state.path("channels_open").asInt(0);
        lastBackupCheckMs = state.path("last_backup_check_ms").asLong(now());
        alertPeak = state.path("alert_peak").asLong(0);
        JsonNode st = state.path("streaks");
        streaks().forEach((name, streak) -> streak.resume(st.path(name).asLong(0)));
        TrQueue q = Kw.ref(state, "queue", TrQueue.class);
        if (q != null) takeQueue(q, state);
        durableWaits.importState(state.get("durable_waits"));
        if (!durableWaits.isEmpty() && trq != null) {
            // Records may have become durable while the gate was suspended, and the listener told nobody then.
            final TrQueue mine = trq;
            gobj.yuno().eventLoop().execute(() -> drainDurable(mine));
        }
        long due = state.path("poll_due_ms").asLong(-1);
        if (due >= 0) armPoll(due);
        // a pass the previous revision had asked for ran while it was suspended, and sent nothing
        sendSoon();
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
        if (suspended) return Envelope.error("A live upgrade of the gate is under way: try again when it is done");
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
            window.rewind();
        } else {
            List<QueueMessage> hit = new ArrayList<>();
            for (QueueMessage m = trq.getByRowid(from) != null ? trq.getByRowid(from) : firstAtOrAfter(from);
                 m != null && m.rowid() <= to; m = trq.next(m)) {
                hit.add(m);
            }
            for (QueueMessage m : hit) {
                window.drop(m.rowid());
                if (trq.unload(m, 0) == 0) n++;
            }
        }
        checkAlert(false);
        sendBatch();
        return Envelope.ok(n + " messages marked as " + (pending ? "PENDING" : "NOT-PENDING"), null);
    }

    private QueueMessage firstAtOrAfter(long rowid) {
        for (QueueMessage m = trq.first(); m != null; m = trq.next(m)) {
            if (m.rowid() >= rowid) return m;
        }
        return null;
    }

    private ObjectNode cmdViewQueue(ObjectNode kw, GObj src) {
        if (suspended) return Envelope.error("A live upgrade of the gate is under way: try again when it is done");
        ObjectNode d = Kw.create();
        d.put("topic_name", gobj.read(TOPIC_NAME));
        d.put("path", queuesPath().resolve(database()).toString());
        d.put("open", trq != null);
        d.put("link_open", opened());
        d.put(MSGS_IN_QUEUE.name(), trq == null ? 0 : trq.size());
        d.put(PENDING_ACKS.name(), window == null ? 0 : window.size());
        d.put(MAX_PENDING_ACKS.name(), gobj.readLong(MAX_PENDING_ACKS));
        d.put("pending_bytes", window == null ? 0 : window.bytes());
        d.put(MAX_PENDING_BYTES.name(), gobj.readLong(MAX_PENDING_BYTES));
        d.put(OLDEST_PENDING_AGE_MS.name(), oldestAgeMs());
        var arr = d.putArray("inflight");
        if (trq != null) {
            d.put("generation", trq.generation());
            d.put("topic_size", trq.topicSize());
            d.put("durable_rowid", trq.durableRowid());
            d.put("fsync_policy", trq.fsyncPolicy().name().toLowerCase(Locale.ROOT));
            long limit = Kw.getLong(kw, "limit", 20);
            long now = now();
            for (InFlight f : window.inOrder()) {
                if (arr.size() >= limit) break;
                ObjectNode o = arr.addObject();
                o.put("rowid", f.rowid());
                o.put("retries", f.retries);
                o.put("sent_ms_ago", now - f.sentAtMs);
                o.put("due_in_ms", f.dueMs - now);
            }
        }
        return Envelope.ok(d);
    }

    // --- Actions ---

    /** EV_SEND_MESSAGE: persist, then send if the link is open, the window has room and nothing older waits. */
    private int acEnqueueMessage(String event, ObjectNode kw, GObj src) {
        JsonNode durable = kw.remove(Kw.DURABLE);
        JsonNode token = kw.remove(Kw.DURABLE_TOKEN);
        ByteBuf record = kw.path(Kw.JSON_RECORD).asBoolean(false) ? Kw.gbuffer(kw) : null;
        ObjectNode msg = record != null ? null : messageOf(kw);
        if ((record == null && msg == null) || (trq == null && openQueue() < 0)) {
            Kw.release(kw);
            gobj.inc(ENQUEUE_ERRORS);
            return -1;
        }
        long epochMs = gobj.yuno().clock().epochMillis();
        long t = tInMs ? epochMs : epochMs / 1000;
        QueueMessage m;
        if (record != null) {
            // The record's bytes, in the form append writes for the dict (Kw.JSON_RECORD): stored as they are.
            m = appendRecord(t, record, Kw.ref(kw, Kw.RECORD_FIELDS, int[].class));
            Kw.release(kw);
        } else {
            m = trq.append(t, msg, 0);
        }
        if (m == null) {
            // Disk full, message too large, I/O error: the sender is told (-1) and never gets EV_ON_DURABLE, so an
            // upstream producer is not acked and sends again. A full disk refuses thousands of messages a second,
            // and the store has logged why.
            if (notSaved.hit()) {
                Glog.error(gobj, "Message NOT SAVED in the queue: messages are refused until an append works",
                        "topic_name", trq.topicName(), "msgs_in_queue", trq.size());
            }
            gobj.inc(ENQUEUE_ERRORS);
            return -1;
        }
        if (notSaved.active()) Glog.info(gobj, "Messages saved in the queue again", "refused", notSaved.end());
        gobj.inc(ENQUEUED);
        if (gobj.isTraced(TRACE_MESSAGES)) {
            Glog.info(gobj, "message enqueued", "rowid", m.rowid(), "msgs_in_queue", trq.size());
        }
        boolean waits = src != null && (durable instanceof ObjectNode || (token != null && token.isIntegralNumber()));
        if (waits) {
            if (durable instanceof ObjectNode) {
                durableWaits.add(m.generation(), m.rowid(), src, (ObjectNode) durable);
            } else {
                durableWaits.addToken(m.generation(), m.rowid(), src, token.longValue());
            }
            if (trq.durableRowid() >= m.rowid()) {
                // Already durable (fsync policy none or always): told on a later turn of the loop, never here.
                final TrQueue q = trq;
                gobj.yuno().eventLoop().execute(() -> drainDurable(q));
            }
        }
        checkAlert(false);
        sendSoon();
        return 0;
    }

    /** EV_ON_MESSAGE from the bottom: an ack (or a nack) of a message sent. */
    private int acOnMessage(String event, ObjectNode kw, GObj src) {
        if (src != bottom()) {
            Glog.error(gobj, "source unknown", "event", event, "src", src == null ? "" : src.shortName());
            Kw.release(kw);
            return -1;
        }
        long[] answers = Kw.ref(kw, Kw.QUEUE_ACKS, long[].class);
        if (answers != null) return processAnswers(answers);
        ByteBuf buf = Kw.takeGbuffer(kw);
        if (buf == null) {
            int r = processAck(kw);
            sendSoon();
            return r;
        }
        int[] messages = Batches.messageRangesOf(kw);
        try {
            if (messages == null) {
                int r = ackOf(buf, kw);
                sendSoon();
                return r;
            }
            return acksOf(buf, messages);
        } finally {
            buf.release();
        }
    }

    /**
     * The acks one read completed ({@link Kw#MESSAGES}), each taken in order as if it had come alone, then one pass
     * to send what the window has room for. Answers 0, or -1 when one of them was not an ack.
     */
    private int acksOf(ByteBuf all, int[] ranges) {
        int base = all.readerIndex();
        int size = all.readableBytes();
        ByteBuf view = all.duplicate();
        int answer = 0;
        for (int i = 0; i + 1 < ranges.length; i += 2) {
            if (ranges[i] < 0 || ranges[i] >= ranges[i + 1] || ranges[i + 1] > size) {
                gobj.add(IGNORED_ACKS, (ranges.length - i) / 2);
                if (badAck.hit()) {
                    Glog.error(gobj, "Bad acks: a range is outside their buffer, the rest ignored (said once until a"
                            + " valid ack comes)", "range", ranges[i] + ".." + ranges[i + 1], "size", size);
                }
                answer = -1;
                break;
            }
            view.setIndex(base + ranges[i], base + ranges[i + 1]);
            if (ackOf(view, null) < 0) answer = -1;
        }
        sendSoon();
        return answer;
    }

    /**
     * The ack in {@code buf}'s readable bytes (read, not released), {@code kw} the kw it came in (null: one of a
     * batch, with no other keys).
     */
    private int ackOf(ByteBuf buf, ObjectNode kw) {
        if (ackScan.scan(buf) == AckScan.FOUND) {
            // the usual ack: its rowid, t, generation and result read from the bytes, no tree
            return trq == null ? processAck(kw == null ? Kw.create() : kw)
                    : processAck(null, ackScan.rowid(), ackScan.hasT(), ackScan.t(), ackScan.hasGen(), ackScan.gen(),
                            ackScan.hasResult(), ackScan.result());
        }
        ObjectNode ack;
        try {
            ack = Kw.parse(buf);
        } catch (IOException e) {
            gobj.inc(IGNORED_ACKS);
            if (badAck.hit()) {
                Glog.error(gobj, "Bad ack: not a JSON object (said once until a valid ack comes)",
                        "error", String.valueOf(e.getMessage()), "dump", dump(buf));
            }
            return -1;
        }
        return processAck(ack);
    }

    /**
     * {@link Kw#QUEUE_ACKS} from a bottom that takes queue records: the answers of a burst of records, each taken as
     * the ack naming its numbers, then one pass to send what the window has room for.
     */
    private int processAnswers(long[] answers) {
        if (answers.length % 4 != 0) {
            gobj.inc(IGNORED_ACKS);
            if (badAck.hit()) {
                Glog.error(gobj, "Bad answers: not rowid, t, generation and result fours, ignored (said once until "
                        + "a valid ack comes)", "length", answers.length);
            }
            return -1;
        }
        if (trq == null) {
            Glog.warn(gobj, "Acks ignored: queue not open", "count", answers.length / 4);
            return -1;
        }
        for (int i = 0; i < answers.length && trq != null; i += 4) {
            long rowid = answers[i];
            if (rowid <= 0) {
                gobj.inc(IGNORED_ACKS);
                if (badAck.hit()) Glog.error(gobj, "Answer without a rowid, ignored", "rowid", rowid);
                continue;
            }
            processAck(null, rowid, true, answers[i + 1], true, answers[i + 2], true, (int) answers[i + 3]);
        }
        sendBatch();
        return 0;
    }

    /** EV_ON_OPEN from the bottom: send from the oldest message, up to the window. */
    private int acOnOpen(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        if (src != bottom()) {
            Glog.error(gobj, "source unknown", "event", event, "src", src == null ? "" : src.shortName());
            return -1;
        }
        channelsOpen++;
        if (channelsOpen == 1 && window != null) window.rewind();
        sendBatch();
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
        if (window != null) window.clear();
        sendBatch();
        return 0;
    }

    /** EV_TIMEOUT (timeout_poll): resend what timed out or was nacked, send what waits, check the backup. */
    private int acTimeout(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        long now = now();
        if (pollDueMs >= 0) {
            // First, so that a failing tick does not stop the ticks.
            long period = gobj.readLong(TIMEOUT_POLL);
            long next = pollDueMs + period;
            armPoll(next <= now ? now + period : next);
        }
        if (trq == null) return 0;
        if (opened()) resendDue(now);
        sendBatch();
        if (now - lastBackupCheckMs >= gobj.readLong(TIMEOUT_BACKUP) * 1000L) {
            lastBackupCheckMs = now;
            checkBackup();
        }
        return 0;
    }

    // --- Local methods ---

    private TrQueueFactory factory() {
        if (factoryFromService != null) return factoryFromService;
        return gobj.yuno().lookup(TrQueueFactory.class);
    }

    /**
     * Opens the topic and loads its pending messages (a restart: they are all sent again). A queue that cannot
     * open is said once until it opens: every message tries again, and each would say it.
     */
    private int openQueue() {
        if (trq != null) return 0;
        TrQueueFactory f = factory();
        if (f == null) {
            if (openFailed.hit()) {
                Glog.error(gobj, "No TrQueueFactory: the trqueue bundle is missing; messages are refused");
            }
            return -1;
        }
        Path dir = queuesPath();
        String db = database();
        int systemFlag = parseSystemFlag(gobj.read(SYSTEM_FLAG));
        TrQueueOptions opts = queueOptions();
        TrQueue q;
        String error;
        try {
            q = f.open(dir, db, gobj.read(TOPIC_NAME), gobj.read(TKEY), systemFlag,
                    gobj.readLong(BACKUP_QUEUE_SIZE), opts);
            error = "";
        } catch (TrQueueException | IllegalArgumentException e) {
            q = null;
            error = String.valueOf(e.getMessage());
        }
        if (q == null) {
            if (openFailed.hit()) {
                Glog.error(gobj, "Cannot open the queue: messages are refused until it opens", "tranger_path",
                        dir.toString(), "tranger_database", db, "topic_name", gobj.read(TOPIC_NAME), "error", error);
            }
            return -1;
        }
        if (openFailed.active()) Glog.info(gobj, "Queue opened", "failed_attempts", openFailed.end());
        trq = q;
        openedBy = f;
        window = new InFlightWindow(q);
        tInMs = (systemFlag & TrQueue.SF_T_MS) != 0;
        listen(q);
        if (q.load() < 0) {
            Glog.error(gobj, "Queue loaded without some of its messages", "topic_name", q.topicName(),
                    "msgs_in_queue", q.size());
        }
        if (q.size() > 0) {
            Glog.info(gobj, "Queue loaded", "topic_name", q.topicName(), "msgs_in_queue", q.size());
        }
        checkAlert(true);
        return 0;
    }

    private TrQueueOptions queueOptions() {
        return TrQueueOptions.defaults()
                .withFsyncPolicy(FsyncPolicy.parse(gobj.read(FSYNC_POLICY)))
                .withFsyncIntervalMs(Math.max(1, gobj.readLong(FSYNC_INTERVAL_MS)))
                .withFsyncMaxRecords((int) Math.min(Integer.MAX_VALUE, Math.max(0, gobj.readLong(FSYNC_MAX_RECORDS))));
    }

    private void closeQueue() {
        TrQueue q = trq;
        if (q == null) return;
        window.clear();
        q.sync();
        // Told even while suspended: the gate is going away (no revision came in time) and what it wrote is synced.
        durableWaits.drain(q.generation(), q.durableRowid());
        if (durableSlot != null) durableSlot.set(null);
        durableSlot = null;
        openedBy = null;
        int left = durableWaits.abandon();
        if (left > 0) {
            // a sender that gave tokens got them back with a nack (DurableWaits.abandon)
            Glog.warn(gobj, "Queue closed with messages not known durable: their senders are not told",
                    "count", left);
        }
        trq = null;
        window = null;
        try {
            q.close();
        } catch (RuntimeException e) {
            Glog.error(gobj, "Cannot close the queue", "error", String.valueOf(e));
        }
    }

    /**
     * The poll tick, at a fixed rate like core's periodic timers, armed as one timeout at a time so that its
     * deadline is known: a live upgrade hands it over and the next revision's tick comes when this one's would.
     */
    private void armPoll(long dueMs) {
        pollTimer.cancel();
        pollDueMs = dueMs;
        pollTimer = gobj.setTimeout(Math.max(0, dueMs - now()), Ev.EV_TIMEOUT, null);
    }

    /**
     * Registers the durability listener of a queue just opened, through a slot a live upgrade can point at another
     * behaviour. The listener holds the slot and the gobj, not this behaviour: after an upgrade only the listener's
     * class (of the revision that opened the queue) stays with the handle, until it closes. Its calls hop to the
     * core thread through its task queue: a sender is never told inside the send that enqueued.
     */
    private void listen(TrQueue q) {
        AtomicReference<Runnable> slot = new AtomicReference<>(() -> drainDurable(q));
        durableSlot = slot;
        GObj g = gobj;
        // The loop itself, not a lambda over it: the queue knows its owner by it, and stages its writes there.
        q.onDurable((gen, rowid) -> {
            Runnable r = slot.get();
            if (r != null) r.run();
        }, g.yuno().eventLoop());
    }

    /** The queue handle of a live upgrade: kept, or reopened through this revision's factory (see onImport). */
    private void takeQueue(TrQueue q, ObjectNode state) {
        WeakReference<?> by = Kw.ref(state, "opened_by", WeakReference.class);
        TrQueueFactory mine = factory();
        JsonNode w = state.get("window");
        long highest = Math.max(InFlightWindow.highestRowid(w), DurableWaits.highestRowid(state.get("durable_waits")));
        // A closed handle has no topic any more: it answers a last rowid below what the window knows.
        if (mine != null && by != null && by.get() == mine && q.lastRowid() >= highest) {
            trq = q;
            openedBy = mine;
            tInMs = state.path("t_in_ms").asBoolean(false);
            @SuppressWarnings("unchecked")
            AtomicReference<Runnable> slot = Kw.ref(state, "durable_slot", AtomicReference.class);
            if (slot != null) {
                durableSlot = slot;
                slot.set(() -> drainDurable(q));
            } else {
                listen(q);
            }
            window = restoreWindow(q, state, true, true);
            return;
        }
        // trqueue changed under the gate: the factory now serving takes the open files over (no scan, no load, no
        // fsync in the pause), or, when it cannot (a trqueue without that hook, a state it does not know, a handle
        // closed under the gate), the topic is opened again below.
        TrQueue taken = null;
        if (mine != null) {
            try {
                taken = mine.takeOver(q, queuesPath(), database(), gobj.read(TOPIC_NAME), gobj.read(TKEY),
                        parseSystemFlag(gobj.read(SYSTEM_FLAG)), gobj.readLong(BACKUP_QUEUE_SIZE), queueOptions());
            } catch (RuntimeException e) {
                Glog.warn(gobj, "Upgrade: the trqueue now serving could not take the queue over, its topic is opened again",
                        "error", String.valueOf(e));
                taken = null;
            }
        }
        if (taken != null) {
            trq = taken;
            openedBy = mine;
            tInMs = state.path("t_in_ms").asBoolean(false);
            listen(taken);
            window = restoreWindow(taken, state, false, true);
            Glog.info(gobj, "Upgrade: queue taken over by the trqueue now serving, open files and in-flight window kept",
                    "topic_name", taken.topicName(), "in_flight", window.size(), "msgs_in_queue", taken.size());
            return;
        }
        try {
            // Closed by its factory already, or still open in a trqueue that no longer serves: its topic lock must
            // go before this revision's factory can open the topic.
            q.close();
        } catch (RuntimeException e) {
            Glog.warn(gobj, "Upgrade: the queue handle of the old trqueue could not be closed", "error", String.valueOf(e));
        }
        if (openQueue() < 0) {
            throw new IllegalArgumentException("the queue cannot be opened again through the trqueue now serving");
        }
        window = restoreWindow(trq, state, false, false);
        Glog.info(gobj, "Upgrade: queue opened again through the trqueue now serving, in-flight window kept",
                "topic_name", trq.topicName(), "in_flight", window.size(), "msgs_in_queue", trq.size());
    }

    /**
     * The in-flight window of a live upgrade's state over {@code q}: the arrays of state version 2, or the JSON
     * arrays of version 1. {@code sameHandle}: {@code q} is the handle the window was exported from;
     * {@code marksKept}: its soft marks came with it (the same handle, or one taken over).
     */
    private static InFlightWindow restoreWindow(TrQueue q, ObjectNode state, boolean sameHandle, boolean marksKept) {
        Object[] arrays = Kw.ref(state, "window_arrays", Object[].class);
        if (arrays != null) return InFlightWindow.restoreCompact(q, state.get("window"), arrays, sameHandle, marksKept);
        return InFlightWindow.restore(q, state.get("window"));
    }

    /** The streaks by the name a live upgrade hands them over under. */
    private Map<String, Streak> streaks() {
        Map<String, Streak> m = new LinkedHashMap<>();
        m.put("open_failed", openFailed);
        m.put("not_json", notJson);
        m.put("not_saved", notSaved);
        m.put("no_bottom", noBottom);
        m.put("bottom_refused", bottomRefused);
        m.put("unreadable", unreadable);
        m.put("bad_ack", badAck);
        m.put("no_result", noResult);
        m.put("stray_ack", strayAck);
        m.put("nacked", nacked);
        m.put("backup_refused", backupRefused);
        return m;
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

    private long timeoutAckMs() {
        return gobj.readLong(TIMEOUT_ACK) * 1000L;
    }

    /**
     * Appends a {@link Kw#JSON_RECORD} gbuffer (not consumed): its bytes are the record, {@code fields} its member
     * index ({@link Kw#RECORD_FIELDS}) or null.
     */
    private QueueMessage appendRecord(long t, ByteBuf b, int[] fields) {
        int len = b.readableBytes();
        if (b.hasArray()) return trq.appendJson(t, b.array(), b.arrayOffset() + b.readerIndex(), len, 0, fields);
        byte[] bytes = new byte[len];
        b.getBytes(b.readerIndex(), bytes);
        return trq.appendJson(t, bytes, 0, len, 0, fields);
    }

    /** The message to store: the kw's JSON, or the JSON object in its gbuffer. Metadata and references removed. */
    private ObjectNode messageOf(ObjectNode kw) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        ObjectNode src = kw;
        if (buf != null) {
            try {
                src = Kw.parse(buf);
                if (notJson.active()) {
                    Glog.info(gobj, "Messages are JSON objects again", "refused", notJson.end());
                }
            } catch (IOException e) {
                if (notJson.hit()) {
                    Glog.error(gobj, "Message NOT SAVED in the queue: its gbuffer is not a JSON object "
                            + "(said once until a JSON message comes)", "error", String.valueOf(e.getMessage()),
                            "dump", dump(buf));
                }
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

    private int processAck(ObjectNode ack) {
        if (trq == null) {
            Glog.warn(gobj, "Ack ignored: queue not open");
            return -1;
        }
        ObjectNode md = TrQueue.getMetadata(ack);
        JsonNode mdOrTop = md != null ? md : ack;
        long rowid = mdOrTop.path(TrQueue.MSG_ROWID).asLong(0);
        if (rowid <= 0) {
            gobj.inc(IGNORED_ACKS);
            if (badAck.hit()) {
                Glog.error(gobj, "Ack without __md_trq__.__msg_rowid__, ignored (said once until a valid ack comes)",
                        "ack", abbreviate(Kw.toJson(ack)));
            }
            return -1;
        }
        JsonNode tNode = mdOrTop.get(TrQueue.MSG_T);
        JsonNode genNode = mdOrTop.get(TrQueue.MSG_GEN);
        JsonNode res = md != null && md.has(Kw.RESULT) ? md.get(Kw.RESULT) : ack.get(Kw.RESULT);
        return processAck(ack, rowid, tNode != null, mdOrTop.path(TrQueue.MSG_T).asLong(0), genNode != null,
                genNode == null ? 0 : genNode.asLong(), res != null, res == null ? 0 : res.asInt(0));
    }

    /**
     * An ack with a valid rowid, from its tree ({@code ack}, matched by trqueue) or from {@link AckScan} ({@code ack}
     * null: matched here, as {@link TrQueue#matchAck} does, on the rowid, the generation and t when they are given).
     */
    private int processAck(ObjectNode ack, long rowid, boolean hasT, long t, boolean hasGen, long gen,
                           boolean hasResult, int result) {
        if (badAck.active()) Glog.info(gobj, "Valid acks again", "bad_acks", badAck.end());
        if (!hasResult) {
            // Yuneta's rule, and what an echoing peer does: every ack of that peer lacks it.
            if (noResult.hit()) {
                Glog.error(gobj, "Ack without result, taken as 0 (said once until an ack has one)", "rowid", rowid);
            }
        } else if (noResult.active()) {
            Glog.info(gobj, "Acks carry a result again", "without_result", noResult.end());
        }
        QueueMessage m = ack != null ? trq.matchAck(ack) : matchScanned(rowid, hasT, t, hasGen, gen);
        if (m == null) {
            ignoreAck(rowid, t, hasGen ? gen : trq.generation());
            return 0;
        }
        if (strayAck.active()) Glog.info(gobj, "Acks match the queue again", "ignored", strayAck.end());
        if (gobj.isTraced(TRACE_QUEUE_PROT)) {
            Glog.info(gobj, result < 0 ? "nack" : "ack", "rowid", rowid, "result", result);
        }
        if (result < 0) {
            gobj.inc(NACKS);
            InFlight f = window.nack(rowid, now(), gobj.readLong(RETRY_DELAY), timeoutAckMs());
            if (nacked.hit()) {
                Glog.warn(gobj, "Nack: the message is sent again after retry_delay (said once until a message is acked)",
                        "rowid", rowid, "result", result, "retries", f == null ? 0 : f.retries);
            }
            return 0;
        }
        if (nacked.active()) Glog.info(gobj, "Messages acked again after nacks", "nacks", nacked.end());
        window.drop(rowid);
        if (trq.unload(m, result) < 0) {
            Glog.error(gobj, "Cannot clear the pending flag: the message may be sent again after a restart",
                    "rowid", rowid);
        }
        gobj.inc(ACKS);
        checkAlert(false);
        return 0;
    }

    /** {@link TrQueue#matchAck} of a scanned ack: the listed message of that rowid, generation and t, or null. */
    private QueueMessage matchScanned(long rowid, boolean hasT, long t, boolean hasGen, long gen) {
        if (hasGen && gen != trq.generation()) return null;
        // a message in flight comes from the window, with no handle made per ack; any other rowid (an ack after a
        // reconnect cleared the window, a duplicate) from the queue
        QueueMessage m = window.message(rowid);
        if (m == null || (hasT && t != m.t())) return null;
        return m;
    }

    /** An ack that matches no message of the queue: a duplicate is normal (a resend crossed its ack); the rest is not. */
    private void ignoreAck(long rowid, long t, long gen) {
        gobj.inc(IGNORED_ACKS);
        int pending = trq.checkPendingRowid(gen, t, rowid);
        if (pending == 0) {
            Glog.debug(gobj, "Duplicate ack ignored", "rowid", rowid);
        } else if (strayAck.hit()) {
            if (pending > 0) {
                Glog.warn(gobj, "Message not found in the queue, ack ignored (said once until an ack matches)",
                        "rowid", rowid, "t", t);
            } else {
                Glog.warn(gobj, "Stale or unknown ack ignored (said once until an ack matches)", "rowid", rowid,
                        "t", t, "generation", gen, "queue_generation", trq.generation());
            }
        }
    }

    /**
     * Asks for one {@link #sendBatch} after what the loop is doing now: a read burst enqueues hundreds of messages, or
     * frees hundreds of places in the window with its acks, and one pass then sends them all, with one clock read and
     * one look at the limits, where a pass per message cost 5 % of a durable forward's core loop. The pass runs in
     * the same turn of the loop, after the burst; the bottom's write buffer takes its messages in one run.
     */
    private void sendSoon() {
        if (sendAsked) return;
        sendAsked = true;
        try {
            gobj.yuno().eventLoop().execute(askedSend);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // the loop has stopped: nothing runs on it any more, and the message stays in the queue for the next start
            sendAsked = false;
        }
    }

    private boolean sendAsked;
    private final Runnable askedSend = () -> {
        sendAsked = false;
        if (!suspended) sendBatch();
    };

    /** Sends messages not sent yet, in rowid order, until the window is full. */
    private void sendBatch() {
        if (trq == null || !opened()) return;
        if (bottom() == null) {
            if (noBottom.hit()) Glog.error(gobj, "No bottom to send to: messages stay in the queue");
            return;
        }
        if (noBottom.active()) Glog.info(gobj, "Bottom found: queued messages are sent", "tries", noBottom.end());
        // one clock read and one timeout for the pass: a send takes microseconds, an ack timeout is seconds
        long now = now();
        long timeoutAckMs = timeoutAckMs();
        GObj to = bottom();
        GClassSpec<?> below = to.gclass();
        boolean batched = below.takesSendBatches() && !below.takesQueueRecords() && lastWireBytes <= SMALL_WIRE_BYTES;
        while (opened() && !window.isFull(gobj.readLong(MAX_PENDING_ACKS), gobj.readLong(MAX_PENDING_BYTES))) {
            InFlight f = window.takeNext();
            if (f == null) break;
            if (batched) {
                if (!addToSendBatch(f, now, timeoutAckMs)) window.unreadable(f);
                if (sendBatchCount == SEND_BATCH_MAX || sendBatchBuffer.readableBytes() >= SEND_BATCH_BYTES) {
                    flushSendBatch(to);
                }
            } else if (!transmit(f, now, timeoutAckMs)) {
                window.unreadable(f);
            }
        }
        flushSendBatch(to);
    }

    /**
     * A pass's messages go down in one EV_SEND_MESSAGE ({@link Kw#BATCH}) to a bottom that takes send batches (the
     * gate, channel and protocol of a TCP4H output): one event through those levels and one buffer into the
     * socket's write batch instead of one each per message, a tenth of the durable core loop. Each message is in
     * flight from the moment it is written into the batch, as it is from its send when alone; a refused batch is
     * sent again after timeout_ack, message by message as the window finds them due.
     */
    private static final int SEND_BATCH_MAX = 1024;
    private static final int SEND_BATCH_BYTES = 64 * 1024;
    /** The batch being filled in this pass, or null; its ranges in {@link #sendBatchRanges}. */
    private ByteBuf sendBatchBuffer;
    private int sendBatchCount;
    private int[] sendBatchRanges = new int[64];
    private long sendBatchFirstRowid;
    /** The batches' buffer, taken back once the levels below released it (they copy it into frames). */
    private ReusableHeapBuffer sendBatchSpare;

    private boolean addToSendBatch(InFlight f, long now, long timeoutAckMs) {
        ByteBuf out = sendBatchBuffer;
        if (out == null) {
            sendBatchSpare = ReusableHeapBuffer.reuse(sendBatchSpare, 4096);
            out = sendBatchSpare;
            sendBatchBuffer = out;
            sendBatchCount = 0;
            sendBatchFirstRowid = f.rowid();
        }
        int start = out.writerIndex();
        if (!writeWire(f, out)) {
            out.writerIndex(start);
            return false;
        }
        int end = out.writerIndex();
        int base = out.readerIndex();
        if (2 * sendBatchCount + 2 > sendBatchRanges.length) {
            sendBatchRanges = Arrays.copyOf(sendBatchRanges, sendBatchRanges.length * 2);
        }
        sendBatchRanges[2 * sendBatchCount] = start - base;
        sendBatchRanges[2 * sendBatchCount + 1] = end - base;
        sendBatchCount++;
        lastWireBytes = end - start;
        inFlight(f, out, start, end - start, now, timeoutAckMs);
        return true;
    }

    /** Sends the batch being filled, if any, to {@code to}. */
    private void flushSendBatch(GObj to) {
        ByteBuf out = sendBatchBuffer;
        if (out == null) return;
        sendBatchBuffer = null;
        int count = sendBatchCount;
        if (count == 0) {
            out.release();   // every message of it was unreadable
            return;
        }
        ObjectNode kw = Kw.withGbuffer(out);
        Kw.putRef(kw, Kw.BATCH, Arrays.copyOf(sendBatchRanges, 2 * count));
        sentDown(to.send(Ev.EV_SEND_MESSAGE, kw, gobj), sendBatchFirstRowid, count);
    }

    /** Sends again what timed out or was nacked, oldest first. */
    private void resendDue(long now) {
        for (InFlight f : window.due(now)) {
            if (!opened()) return;
            // an ack or a close handled while sending an earlier one may have settled this one
            if (!window.holds(f)) continue;
            if (trq.getByRowid(f.rowid()) == null) {
                window.drop(f.rowid());
                continue;
            }
            boolean timedOut = window.retry(f);
            gobj.inc(RETRIES);
            if (gobj.isTraced(TRACE_MESSAGES) || gobj.isTraced(TRACE_QUEUE_PROT)) {
                Glog.info(gobj, timedOut ? "ack timeout: sending again" : "nacked: sending again",
                        "rowid", f.rowid(), "retries", f.retries);
            }
            if (!transmit(f, now, timeoutAckMs())) window.unreadable(f);
        }
    }

    /**
     * Messages up to this size go down in a heap buffer: C_TCP copies small ones into its write batch anyway, and a
     * heap buffer reaches no pool arena and is never sampled by the leak detector (the pooled direct buffer was a
     * tenth of the cost of sending one). Larger ones, where a copy to a direct buffer would cost, stay pooled direct.
     * The size of the last message sent decides, so a flow of large messages is not copied twice.
     */
    private static final int SMALL_WIRE_BYTES = 1024;
    private int lastWireBytes;
    /**
     * The small heap buffer the last message went down in. The levels below copy a small message into their write
     * batch and release it as they go, so the buffer is free again when the send returns: it is taken back then
     * instead of a buffer made per message (5 % of the durable core loop). One that somebody below still holds (the
     * first message of a write batch, a socket's queue, a worker hop) is left to them, and the next message gets a
     * new one. This gate holds no reference to it: below, it is a buffer like any other.
     */
    private ReusableHeapBuffer wireBuffer;

    /** A heap buffer for a message of about {@code size} bytes, its one reference the caller's to pass down. */
    private ByteBuf smallWireBuffer(int size) {
        wireBuffer = ReusableHeapBuffer.reuse(wireBuffer, size);
        return wireBuffer;
    }

    /** Forgets the reused buffer (the gate stops, goes away, or hands over): whoever holds it releases it. */
    private void forgetWireBuffer() {
        wireBuffer = null;
        sendBatchSpare = null;
    }

    /**
     * Reads the record and sends it down as compact JSON with its {@code __md_trq__}. Answers false when the
     * record cannot be read (it stays pending on disk and is skipped until the next load).
     */
    private boolean transmit(InFlight f, long now, long timeoutAckMs) {
        GObj to = bottom();
        if (to.gclass().takesQueueRecords()) {
            byte[] record = trq.recordBytes(f.msg);
            if (record != null) {
                ObjectNode kw = Kw.withGbuffer(Unpooled.wrappedBuffer(record));
                Kw.putRef(kw, Kw.QUEUE_MESSAGE, f.msg);
                sendDown(to, f, kw, record.length, now, timeoutAckMs);
                return true;
            }
        }
        ByteBuf buf = lastWireBytes <= SMALL_WIRE_BYTES ? smallWireBuffer(Math.max(256, lastWireBytes))
                : Gbuffers.allocate(ByteBufAllocator.DEFAULT, lastWireBytes);
        if (!writeWire(f, buf)) {
            buf.release();
            return false;
        }
        lastWireBytes = buf.readableBytes();
        sendDown(to, f, Kw.withGbuffer(buf), lastWireBytes, now, timeoutAckMs);
        return true;
    }

    /**
     * Writes the message as it goes on the wire (its record with {@code __md_trq__}) into {@code out}; false, said once
     * per streak, when the record cannot be read (it stays pending on disk), with part of it maybe written.
     */
    private boolean writeWire(InFlight f, ByteBuf out) {
        String cause = null;
        try {
            if (!trq.writeMsgJson(f.msg, out)) cause = "unreadable";
        } catch (RuntimeException e) {
            cause = String.valueOf(e);
        }
        if (cause == null) return true;
        if (unreadable.hit()) {
            Glog.error(gobj, "Message unreadable, skipped (still pending on disk; said once until one is read)",
                    "rowid", f.rowid(), "cause", cause);
        }
        return false;
    }

    /** Sends a message read from the queue to the bottom {@code to}; it is in flight from now. */
    private void sendDown(GObj to, InFlight f, ObjectNode kw, int wireBytes, long now, long timeoutAckMs) {
        ByteBuf wire = Kw.gbuffer(kw);
        inFlight(f, wire, wire.readerIndex(), wireBytes, now, timeoutAckMs);
        sentDown(to.send(Ev.EV_SEND_MESSAGE, kw, gobj), f.rowid(), 1);
    }

    /** {@code f}, whose wire bytes are {@code wire[from, from + len)}, is in flight from now (alone or in a batch). */
    private void inFlight(InFlight f, ByteBuf wire, int from, int len, long now, long timeoutAckMs) {
        if (unreadable.active()) Glog.info(gobj, "Messages readable again", "skipped", unreadable.end());
        window.sent(f, len, now, timeoutAckMs);
        if (gobj.isTraced(TRACE_MESSAGES)) {
            Glog.info(gobj, "message sent", "rowid", f.rowid(), "retries", f.retries,
                    "msg", abbreviate(wire.toString(from, Math.min(len, 200), StandardCharsets.UTF_8)));
        }
    }

    /** What the bottom answered to {@code count} messages sent down in one event, from {@code firstRowid}. */
    private void sentDown(int answer, long firstRowid, int count) {
        if (answer < 0) {
            // No channel, output over its limit...: they stay in flight and the ack timeout sends them again.
            if (bottomRefused.hit()) {
                Glog.warn(gobj, (count == 1 ? "Bottom refused the message: it is sent again" : "Bottom refused the "
                        + "messages: they are sent again") + " after timeout_ack (said once until the bottom takes one)",
                        "rowid", firstRowid, "count", count);
            }
        } else if (bottomRefused.active()) {
            Glog.info(gobj, "Bottom takes messages again", "refused", bottomRefused.end());
        }
    }

    private void drainDurable(TrQueue q) {
        if (suspended || q != trq) return;
        durableWaits.drain(q.generation(), q.durableRowid());
    }

    /**
     * The queue-size alert: said once when the queue reaches {@code alert_queue_size}, and once when it is back
     * under half of it (with how large it grew), never per message in between. Clearing at half, not at the limit
     * itself, keeps a queue that hovers around the limit (a full in-flight window under steady load) from saying
     * the alert and its end every few hundred milliseconds.
     */
    private void checkAlert(boolean atOpen) {
        if (trq == null) return;
        long limit = gobj.readLong(ALERT_QUEUE_SIZE);
        int size = trq.size();
        boolean was = gobj.readBool(ALERT);
        boolean enabled = limit > 0 && !gobj.readBool(DISABLE_ALERT);
        boolean over = enabled && (was ? size >= limit / 2 : size >= limit);
        if (over && size > alertPeak) alertPeak = size;
        if (over && !was) {
            Glog.warn(gobj, gobj.read(ALERT_MESSAGE) + " " + size + " msgs", "node", hostName(),
                    "yuno", gobj.yuno().role() + "^" + gobj.yuno().name(), "queue", database(),
                    "topic_name", trq.topicName(), "queue_size", size, "alert_queue_size", limit,
                    "at_open", atOpen);
        } else if (!over && was) {
            Glog.info(gobj, "Queue back under alert_queue_size", "queue_size", size, "alert_queue_size", limit,
                    "cleared_under", limit / 2, "peak", alertPeak);
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
        if (trq.size() != 0 || !window.isEmpty() || !durableWaits.isEmpty()) return;
        long gen = trq.generation();
        int r = trq.checkBackup();
        if (trq.generation() != gen) {
            // a new topic incarnation: rowids start at 1 again
            window.rewind();
            Glog.info(gobj, "Queue backed up, new generation", "topic_name", trq.topicName(),
                    "generation", trq.generation());
        }
        if (r < 0) {
            if (backupRefused.hit()) {
                Glog.warn(gobj, "Queue backup refused or failed: the queue goes on in its topic",
                        "topic_name", trq.topicName());
            }
        } else if (backupRefused.active()) {
            Glog.info(gobj, "Queue backup check passes again", "topic_name", trq.topicName(),
                    "refused", backupRefused.end());
        }
    }

    private long oldestAgeMs() {
        if (trq == null) return 0;
        QueueMessage m = trq.first();
        if (m == null) return 0;
        long tMs = tInMs ? m.t() : m.t() * 1000L;
        return Math.max(0, gobj.yuno().clock().epochMillis() - tMs);
    }

    private static String dump(ByteBuf buf) {
        int n = Math.min(buf.readableBytes(), 64);
        return ByteBufUtil.hexDump(buf, buf.readerIndex(), n) + (buf.readableBytes() > n ? "..." : "");
    }

    private static String abbreviate(String s) {
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }

    /** The open queue, for tests that drive its durability; null while closed. */
    TrQueue queue() {
        return trq;
    }
}
