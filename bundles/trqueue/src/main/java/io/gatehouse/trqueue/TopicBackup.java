// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.support.Glog;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Path;

/**
 * The backup of a queue's topic (trq_check_backup): once the topic reached {@code backup_queue_size} and nothing of
 * it is pending, it is moved to {@code <topic>.bak} and created again empty, in a new generation. A backup is
 * refused while the last load missed messages or something is pending or listed; a backup that fails is rolled back
 * and the queue goes on in its old topic. The refusal after a failed load is said once until a load reads every
 * pending message; a failure is said once until a backup works.
 */
final class TopicBackup {
    /** The queue whose topic a backup replaces. */
    interface Owner {
        /** The topic backed up was closed: the queue holds none until {@link #adopt} or {@link #lost}. */
        void detach();

        /** The queue goes on with {@code tp}: the fresh topic, or the old one opened again. */
        void adopt(Topic tp);

        /** No topic could be opened again: the queue takes it by name once its {@code fingerprint} changed. */
        void lost(String fingerprint);
    }

    private final FileOps ops;
    private final Path dbDir;
    private final Path topicDir;
    private final Path bakDir;
    private final String name;
    private final TrQueueOptions opts;
    private final GroupCommit commit;
    private final Owner owner;
    private boolean refusalSaid;
    private boolean failSaid;

    TopicBackup(FileOps ops, Path dbDir, String name, TrQueueOptions opts, GroupCommit commit, Owner owner) {
        this.ops = ops;
        this.dbDir = dbDir;
        this.topicDir = dbDir.resolve(name);
        this.bakDir = dbDir.resolve(name + ".bak");
        this.name = name;
        this.opts = opts;
        this.commit = commit;
        this.owner = owner;
    }

    /** A load read every pending message: a later refusal for a failed load is said again. */
    void loadedWhole() {
        refusalSaid = false;
    }

    /**
     * {@link io.gatehouse.api.queue.TrQueue#checkBackup} of the queue's topic {@code tp}; {@code loadFailed} and
     * {@code busy} (messages listed or soft-marked) are the queue's state.
     */
    int check(Topic tp, boolean loadFailed, boolean busy) {
        long bqs = tp.vars.path("backup_queue_size").asLong(0);
        if (bqs <= 0) return 0;
        long last = tp.lastRowid;
        if (last < bqs) return 0;
        if (loadFailed) {
            if (!refusalSaid) {
                refusalSaid = true;
                Glog.error(null, "Queue backup refused: its last load did not read every pending message",
                        "topic_name", name, "topic_size", last, "backup_queue_size", bqs);
            }
            return -1;
        }
        if (busy || tp.pendingOnDisk > 0) return -1;
        return commit.exclusive(() -> backup(tp, last));
    }

    private int backup(Topic tp, long last) {
        try {
            tp.forceAll();
            tp.vars.put("first_rowid", last);
            tp.saveVars();
        } catch (IOException e) {
            // nothing moved yet: the queue simply goes on in its topic
            Glog.error(null, "Queue backup failed: the queue goes on in its topic, not backed up",
                    "topic_name", name, "cause", e.toString());
            return -1;
        }
        commit.mark(tp.generation, tp.lastRowid);
        ObjectNode oldDesc = tp.desc;
        ObjectNode vars = tp.vars.deepCopy();
        tp.close();
        owner.detach();
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
            if (!failSaid) {
                Glog.error(null, "cannot backup topic", "topic", name, "serrno", reason(e),
                        "src", topicDir.toString(), "dst", bakDir.toString());
            }
            return rollback();
        }
        Topic fresh = createFresh(oldDesc, vars);
        if (fresh == null) return rollback();
        owner.adopt(fresh);
        commit.forced(fresh.generation, 0);
        failSaid = false;
        return 0;
    }

    /** The empty topic of the next generation, opened; null when it cannot be made (the backup is moved back). */
    private Topic createFresh(ObjectNode oldDesc, ObjectNode vars) {
        long newGen = Math.max(System.currentTimeMillis(), oldDesc.path("generation").asLong() + 1);
        ObjectNode desc = Topic.newDesc(name, oldDesc.path("tkey").asText(""), oldDesc.path("system_flag").asInt(2),
                newGen);
        vars.put("first_rowid", 0);
        try {
            ops.fsyncDir(dbDir);
            Topic.create(ops, topicDir, desc, vars);
            return TopicRecovery.open(ops, topicDir, name, opts.segmentSize(), opts.maxMessageSize());
        } catch (IOException | TopicException e) {
            if (!failSaid) Glog.error(null, "Cannot create topic", "topic", name, "cause", e.toString());
            try {
                ops.deleteTree(topicDir);
                ops.move(bakDir, topicDir);
                ops.fsyncDir(dbDir);
            } catch (IOException e2) {
                Glog.error(null, "Cannot move the backup back", "topic", name, "cause", e2.toString());
            }
            return null;
        }
    }

    private static String reason(IOException e) {
        if (e instanceof FileSystemException && ((FileSystemException) e).getReason() != null) {
            return ((FileSystemException) e).getReason();
        }
        return String.valueOf(e.getMessage());
    }

    /** The old topic is opened again as it was; without it the queue has no topic until it can be taken again. */
    private int rollback() {
        boolean say = !failSaid;
        failSaid = true;
        if (say) {
            Glog.warn(null, "Backup of topic failed: the topic is opened again as it was, not backed up",
                    "topic_name", name);
        }
        String fp = TopicRecovery.fingerprint(ops, topicDir);
        try {
            owner.adopt(TopicRecovery.open(ops, topicDir, name, opts.segmentSize(), opts.maxMessageSize()));
            if (say) {
                Glog.error(null, "Queue backup failed: the queue goes on in its topic, not backed up",
                        "topic_name", name);
            }
        } catch (TopicException e) {
            Glog.error(null, e.getMessage(), "topic_name", name, "cause", e.causeText());
            Glog.error(null, "Queue backup failed, and the queue has no topic", "topic_name", name);
            owner.lost(fp);
        }
        return -1;
    }
}
