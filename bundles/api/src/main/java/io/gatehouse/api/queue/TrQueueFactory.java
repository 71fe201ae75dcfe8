// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api.queue;

import org.osgi.annotation.versioning.ProviderType;

import java.nio.file.Path;

/**
 * Opens persistent queues (Yuneta's trq_open). Published by the trqueue bundle as a service; the same
 * implementation can be created with plain {@code new} outside OSGi.
 */
@ProviderType
public interface TrQueueFactory {

    /**
     * Opens (creating it when missing) the queue topic {@code <trangerPath>/<database>/<topicName>/} and recovers
     * its files: a torn tail is truncated, a corrupt segment set aside. Nothing is loaded: call
     * {@link TrQueue#load()}.
     *
     * @param database         the database directory; empty uses the last segment of {@code trangerPath}
     * @param tkey             field of each message holding its message time ({@code tm}); "" for none
     * @param systemFlag       timeranger system flags; the key type is forced to {@code sf_rowid_key}
     * @param backupQueueSize  topic size that makes {@link TrQueue#checkBackup()} back it up; 0 keeps the saved value
     * @throws TrQueueException when the topic is locked by another process or cannot be opened
     */
    TrQueue open(Path trangerPath, String database, String topicName, String tkey, int systemFlag,
                 long backupQueueSize, TrQueueOptions options);

    /** {@link #open(Path, String, String, String, int, long, TrQueueOptions)} with default options. */
    default TrQueue open(Path trangerPath, String database, String topicName, String tkey, int systemFlag,
                         long backupQueueSize) {
        return open(trangerPath, database, topicName, tkey, systemFlag, backupQueueSize, TrQueueOptions.defaults());
    }

    /**
     * Live upgrade of trqueue: opens the topic that {@code from}, a handle of another factory (another trqueue
     * revision), has open, by taking over its open files and in-memory state ({@link TrQueue#openState()}) instead
     * of reading the topic again: no scan, no load, no fsync. The arguments are those of {@link #open}; the handle
     * answered has the same list (the messages loaded or appended and not unloaded), soft marks, generation and
     * rowids as {@code from}, and {@code from} is left detached: closed, without its files being closed, its
     * durability listeners told nothing more. Call it on the owner thread of {@code from}, with nothing else using
     * it.
     *
     * <p>Null, with {@code from} left as it was, when the state cannot be taken over (a handle without one, of
     * another topic or of a state format this factory does not know): the caller then closes {@code from} and
     * calls {@link #open}. The default answers null.
     *
     * @since 1.1
     */
    default TrQueue takeOver(TrQueue from, Path trangerPath, String database, String topicName, String tkey,
                             int systemFlag, long backupQueueSize, TrQueueOptions options) {
        return null;
    }

    /**
     * Writes to the files (the page cache) what the queues of this factory hold back for the calling thread: the
     * records and flags a queue owned by this thread's event loop keeps until the end of the loop's turn (the
     * trqueue write-behind). After it, every record appended so far on this thread survives a crash of the process
     * (not of the machine: that is what durability, {@link TrQueue#onDurable}, promises).
     *
     * <p>For a caller that notes elsewhere that a message was queued before it is durable, so that a crash never
     * leaves the note without the record: MQTT's QoS 2 packet ids, written to the session store right after the
     * queue took the message. Answers false when a write failed: the records are still held and written later, and
     * the caller must not note them yet. The default (a factory whose queues write through) answers true.
     *
     * @since 1.3
     */
    default boolean writeHeldBack() {
        return true;
    }

    /**
     * Where the queues of this factory owned by the calling thread's loop stand now: a text without whitespace that
     * names each queue with its last rowid, and the time, to be kept elsewhere and given back to
     * {@link #earlierRecordsAfter} after a restart of the process. Empty when there is none (and by default).
     *
     * <p>For a caller that must later know whether a message it is about to hand to the queues, on this thread, was
     * taken before a crash: MQTT's QoS 2 ids, whose session store notes the positions just before the message goes
     * up. A message the queue takes right after lands in the row that follows its queue's position.
     *
     * @since 1.7
     */
    default String positions() {
        return "";
    }

    /**
     * The records that each queue named in {@code positions} (a text of {@link #positions}) holds in the rows after
     * its position, at most {@code max} per queue, and only rows an earlier run of the process wrote (rows up to
     * the last one the queue had when this process opened it) within moments of the positions being taken (an
     * implementation's bound; trqueue's is 2 s). Each is the JSON of the record as stored. A queue that is not open
     * here, a row that cannot be read and a text that is not positions give nothing.
     *
     * <p>A caller compares them with the message it had handed to the queues: found, the crash came after the
     * queue took it. The default, an empty list, makes the caller hand the message over again (a duplicate, never
     * a loss).
     *
     * @since 1.7
     */
    default java.util.List<byte[]> earlierRecordsAfter(String positions, int max) {
        return java.util.List.of();
    }
}
