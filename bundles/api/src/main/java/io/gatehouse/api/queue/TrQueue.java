// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api.queue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;
import org.osgi.annotation.versioning.ProviderType;

import java.util.concurrent.Executor;

/**
 * One persistent queue (Yuneta's tr_queue on a timeranger topic), with the failure rules of the Yuneta
 * tr_queue documentation (load_failed, refused and rolled-back backups, topic taken again by name).
 *
 * <p>Threading: one owner thread calls every method (the core event loop). Only the {@link DurableListener}s
 * run elsewhere, on the executor given to {@link #onDurable}.
 *
 * <p>The in-memory list holds the messages loaded ({@link #load}, {@link #loadAll}, {@link #loadAllByTime}) or
 * appended and not yet unloaded, in rowid order. It costs one bit per row of the topic plus 4 bytes of index per
 * row; message contents stay on disk until {@link #msgJson} reads them.
 */
@ProviderType
public interface TrQueue extends AutoCloseable {
    /** Hard flag: the message is pending (not acked). Set by every append. */
    int MSG_PENDING = 0x0001;

    String MD_TRQ = "__md_trq__";
    String MSG_ROWID = "__msg_rowid__";
    String MSG_T = "__msg_t__";
    String MSG_GEN = "__msg_gen__";

    /** System flag: {@code t} in milliseconds. */
    int SF_T_MS = 0x0100;
    /** System flag: {@code tm} parsed from a date string in milliseconds. */
    int SF_TM_MS = 0x0200;

    String topicName();

    /** The current topic incarnation; a backup starts a new one. */
    long generation();

    // --- loading ---

    /**
     * Loads the pending messages, starting at the saved {@code first_rowid}; saves the rowid of the first pending
     * message found (the topic size when none is). Messages already in the list are not added twice.
     *
     * @return 0, or -1 when some pending messages could not be read: those read are in the list,
     *         {@link #loadFailed()} is true and {@code first_rowid} is neither moved nor saved
     */
    int load();

    /** Adds every row in [from, to] (pending or not) to the list. 0 = open end; negative counts from the end. */
    int loadAll(long fromRowid, long toRowid);

    /** Adds every row whose {@code t} is in [fromT, toT] to the list. 0 = open end. */
    int loadAllByTime(long fromT, long toT);

    /** True when the last {@link #load()} did not read every pending message. */
    boolean loadFailed();

    // --- writing ---

    /**
     * Appends {@code kw} (stored as compact JSON, unchanged: the caller's object is not modified) with hard flags
     * {@code userFlag | MSG_PENDING}, and adds it to the list. The rowid is assigned before this returns. The
     * record is in the page cache when this returns ({@link FsyncPolicy#ALWAYS}: on the device).
     *
     * @param t persistence time; 0 = now
     * @return the message, or null when it could not be written (logged)
     */
    QueueMessage append(long t, ObjectNode kw, int userFlag);

    default QueueMessage append(ObjectNode kw) {
        return append(0, kw, 0);
    }

    /**
     * Appends the record whose bytes are {@code json[off, off + len)}: the compact JSON of an object exactly as
     * {@link #append(long, ObjectNode, int)} would store its dict (Jackson's compact form, no reference; the
     * caller vouches for it, see {@code Kw.JSON_RECORD}). The stored record, what {@link #writeMsgJson} and
     * {@link #msgJson} give back, the message's {@code tm} and the failures are those of {@code append} of the
     * parsed dict; an implementation stores the bytes without a tree. The array is not kept.
     *
     * <p>The default parses the bytes and calls {@code append} (a trqueue built before this method); bytes that
     * are not a JSON object answer null, as a record that cannot be written.
     *
     * @since 1.2
     */
    default QueueMessage appendJson(long t, byte[] json, int off, int len, int userFlag) {
        JsonNode kw;
        try {
            kw = Kw.MAPPER.readTree(json, off, len);
        } catch (java.io.IOException notJson) {
            return null;
        }
        return kw instanceof ObjectNode ? append(t, (ObjectNode) kw, userFlag) : null;
    }

    /**
     * {@link #appendJson(long, byte[], int, int, int)} with the record's top-level members indexed by the caller
     * ({@code Kw.RECORD_FIELDS}: where each member's key starts, counted from {@code off}), or null: an
     * implementation that reads a field of the record (the topic's time key) looks it up there instead of walking
     * the bytes. The caller vouches for the index as for the record. The default ignores it.
     *
     * @since 1.6
     */
    default QueueMessage appendJson(long t, byte[] json, int off, int len, int userFlag, int[] fields) {
        return appendJson(t, json, off, len, userFlag);
    }

    /** Sets or clears hard flag bits on disk. @return 0 or -1 */
    int setHardFlag(QueueMessage msg, int mask, boolean set);

    /** Sets or clears soft mark bits (memory only). @return the new mark */
    long setSoftMark(QueueMessage msg, long mask, boolean set);

    /**
     * The ack: clears {@link #MSG_PENDING} on disk (O(1), in place) and removes the message from the list.
     * {@code result} is not interpreted (as in Yuneta, a negative result is still an ack).
     *
     * @return 0, or -1 when the flag could not be written (the message still leaves the list; it is pending on
     *         disk and will be loaded again: at-least-once)
     */
    int unload(QueueMessage msg, int result);

    // --- reading ---

    /** The message with that rowid if it is in the list, else null. O(1). */
    QueueMessage getByRowid(long rowid);

    /** The oldest message of the list, or null. */
    QueueMessage first();

    /** The message after {@code msg} in the list, or null. */
    QueueMessage next(QueueMessage msg);

    /** Pending state on disk: 1 pending, 0 not pending, -1 no such row (or {@code t} does not match). */
    int checkPendingRowid(long t, long rowid);

    /** As {@link #checkPendingRowid(long, long)}; a {@code generation} other than the current one answers -1. */
    int checkPendingRowid(long generation, long t, long rowid);

    /**
     * A new object (the caller's): the stored message plus {@code __md_trq__} =
     * {@code {"__msg_rowid__", "__msg_t__", "__msg_gen__"}}, ready to send. Null when it cannot be read (logged).
     */
    ObjectNode msgJson(QueueMessage msg);

    /**
     * Writes {@link #msgJson} of the message as compact JSON (what a sender puts on the wire) at the end of
     * {@code out}. False, with nothing written, when the message cannot be read (logged). An implementation may
     * write the stored bytes without parsing them and serialising them again; the JSON is the same.
     */
    default boolean writeMsgJson(QueueMessage msg, ByteBuf out) {
        ObjectNode json = msgJson(msg);
        if (json == null) return false;
        Kw.writeJson(json, out);
        return true;
    }

    /**
     * The message's record as stored: a new array (the caller's) holding the compact JSON of an object, without
     * {@code __md_trq__}, so that {@link #msgJson} is that object with {@code __md_trq__} added. Null when the
     * record cannot be handed so (unreadable, of another generation, or holding the key itself): the caller then
     * uses {@link #writeMsgJson}. An output that reads the record's bytes and the numbers of the
     * {@link QueueMessage} gets what {@link #writeMsgJson} would have written, without writing and reading it.
     *
     * @since 1.5
     */
    default byte[] recordBytes(QueueMessage msg) {
        return null;
    }

    /** A new object with the record's metadata: rowid, generation, t, tm, user_flag, system_flag, segment, offset, size. */
    ObjectNode msgMetadata(QueueMessage msg);

    /**
     * The message of the list an ack refers to: the ack's {@code __md_trq__} (or its top level) must carry the
     * message's {@code __msg_rowid__} and, when present, its {@code __msg_gen__}. A stale generation or a rowid
     * not in the list answers null.
     */
    QueueMessage matchAck(ObjectNode ack);

    /** Number of messages in the list. */
    int size();

    /** Number of rows in the topic (pending or not) = the last rowid. */
    long topicSize();

    /** The saved scan start of {@link #load()}. */
    long firstRowid();

    // --- backup ---

    /**
     * Backs the topic up when it reached {@code backup_queue_size}: it is moved to {@code <topic>.bak} and
     * re-created empty (new generation, first_rowid 0).
     *
     * @return 0 when nothing was due or the backup was done; -1 when refused (the last load failed, or something
     *         is pending or in flight) or failed (rolled back: the queue goes on in its topic), or the queue has no
     *         topic
     */
    int checkBackup();

    // --- durability ---

    FsyncPolicy fsyncPolicy();

    /** The last rowid appended in the current generation. */
    long lastRowid();

    /** The highest rowid of the current generation that is durable in the sense of the fsync policy. */
    long durableRowid();

    /**
     * Registers a listener told (on {@code executor}) when records become durable. With INTERVAL it follows each
     * group commit; with ALWAYS and NONE it follows appends. Calls are coalesced.
     */
    void onDurable(DurableListener listener, Executor executor);

    /** Forces everything written so far (records and acks) to the device; used before a clean stop. */
    void sync();

    /** Forces what was written, releases the files and the topic lock. */
    @Override
    void close();

    // --- live upgrade of trqueue ---

    /**
     * This handle's open files and in-memory state, for another trqueue revision's
     * {@link TrQueueFactory#takeOver} (the handle keeps working until that one detaches it). JDK and third-party
     * types only (the implementation's classes are not those of another revision): {@code "format"} (a
     * {@link String} naming the implementation and its version), open {@link java.nio.channels.FileChannel}s,
     * mapped buffers and the topic's {@link java.nio.channels.FileLock}, arrays of offsets, the list and the soft
     * marks, and a {@link Runnable} under {@code "detach"} that the taker runs once it holds them. The map is only
     * read by a taker that knows its format. Null when there is nothing to take over (closed, no topic); the
     * default answers null.
     *
     * @since 1.1
     */
    default java.util.Map<String, Object> openState() {
        return null;
    }

    // --- __md_trq__ helpers (trq_answer, trq_get_metadata, trq_set_metadata) ---

    /**
     * The ack of a received message: a new {@code {"__md_trq__": <a copy of msg's __md_trq__ plus "result">}}.
     * The input is not modified. A message without metadata answers {@code {}} (nothing to ack with: the caller
     * says so if it matters; the api logs nothing).
     */
    static ObjectNode answer(ObjectNode msg, int result) {
        ObjectNode out = JsonNodeFactory.instance.objectNode();
        ObjectNode md = getMetadata(msg);
        if (md == null) return out;
        ObjectNode copy = md.deepCopy();
        copy.put("result", result);
        out.set(MD_TRQ, copy);
        return out;
    }

    /** The message's {@code __md_trq__} dict (not a copy), or null. */
    static ObjectNode getMetadata(ObjectNode kw) {
        if (kw == null) return null;
        JsonNode md = kw.get(MD_TRQ);
        return md instanceof ObjectNode ? (ObjectNode) md : null;
    }

    /** Sets {@code kw.__md_trq__.key = value}, creating the dict. @return 0, or -1 when kw is null */
    static int setMetadata(ObjectNode kw, String key, JsonNode value) {
        if (kw == null || key == null) return -1;
        ObjectNode md = getMetadata(kw);
        if (md == null) md = kw.putObject(MD_TRQ);
        md.set(key, value);
        return 0;
    }
}
