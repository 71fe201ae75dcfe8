// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.DurableListener;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueException;
import io.gatehouse.api.queue.TrQueueFactory;
import io.gatehouse.api.queue.TrQueueOptions;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;

/**
 * An in-memory {@link TrQueueFactory} for tests: topics survive a close (a "restart" reopens them with their
 * pending rows), durability is automatic or driven by the test, appends can be made to fail (disk full). Two
 * factories can share their topics ({@link #MemTrQueueFactory(MemTrQueueFactory)}): two revisions of the trqueue
 * bundle over the same data directory, as in a live upgrade of trqueue.
 */
public final class MemTrQueueFactory implements TrQueueFactory {

    /** The rows of a topic: what would be on disk. */
    public static final class Topic {
        final String key;
        long generation = 1;
        final List<Row> rows = new ArrayList<>();
        long backupQueueSize;
        long firstRowid;
        int backups;
        boolean open;

        Topic(String key) {
            this.key = key;
        }

        public int pendingOnDisk() {
            int n = 0;
            for (Row r : rows) if ((r.flag & TrQueue.MSG_PENDING) != 0) n++;
            return n;
        }

        public int rows() {
            return rows.size();
        }

        public int backups() {
            return backups;
        }
    }

    static final class Row {
        final long rowid;
        final long t;
        final long tm;
        final String json;
        int flag;

        Row(long rowid, long t, long tm, String json, int flag) {
            this.rowid = rowid;
            this.t = t;
            this.tm = tm;
            this.json = json;
            this.flag = flag;
        }
    }

    private final Map<String, Topic> topics;
    /** Appends fail (answer null) while set: the disk is full. */
    public volatile boolean failAppends;
    /** Appends fail for topics whose key (path) ends with one of these. */
    public final java.util.Set<String> failingTopics = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** Records become durable at append (as NONE/ALWAYS); when false the test calls {@link Mem#makeDurable()}. */
    public volatile boolean autoDurable = true;
    public final List<Mem> opened = new ArrayList<>();

    public MemTrQueueFactory() {
        this.topics = new ConcurrentHashMap<>();
    }

    /**
     * A factory over the same topics as {@code sameDisk}: another revision of the trqueue bundle, opening what the
     * first one wrote. A topic still open in one cannot be opened in the other (its lock), as on disk.
     */
    public MemTrQueueFactory(MemTrQueueFactory sameDisk) {
        this.topics = sameDisk.topics;
    }

    /**
     * Closes every queue this factory opened and did not close yet, as the trqueue bundle's factory does when its
     * component goes away (a {@code Bundle.update()} of trqueue): handles held elsewhere are closed under them.
     */
    public synchronized void close() {
        for (Mem m : opened) m.close();
    }

    @Override
    public synchronized TrQueue open(Path trangerPath, String database, String topicName, String tkey, int systemFlag,
                                     long backupQueueSize, TrQueueOptions options) {
        String key = trangerPath.resolve(database.isEmpty() ? trangerPath.getFileName().toString() : database)
                .resolve(topicName).toString();
        Topic tp = topics.computeIfAbsent(key, Topic::new);
        if (tp.open) throw new TrQueueException("topic locked: " + key);
        tp.open = true;
        if (backupQueueSize > 0) tp.backupQueueSize = backupQueueSize;
        Mem m = new Mem(tp, topicName, tkey, systemFlag, options);
        opened.add(m);
        return m;
    }

    public Topic topic(String keySuffix) {
        for (Map.Entry<String, Topic> e : topics.entrySet()) {
            if (e.getKey().endsWith(keySuffix)) return e.getValue();
        }
        return null;
    }

    public Map<String, Topic> topics() {
        return topics;
    }

    /** One open queue. */
    public final class Mem implements TrQueue {
        final Topic tp;
        final String name;
        final String tkey;
        final int systemFlag;
        final TrQueueOptions options;
        final TreeMap<Long, Boolean> list = new TreeMap<>();
        final Map<Long, Long> softMarks = new HashMap<>();
        final List<Object[]> listeners = new ArrayList<>();
        long durable;
        boolean closed;

        Mem(Topic tp, String name, String tkey, int systemFlag, TrQueueOptions options) {
            this.tp = tp;
            this.name = name;
            this.tkey = tkey;
            this.systemFlag = systemFlag;
            this.options = options;
            this.durable = tp.rows.size();
        }

        final class Msg implements QueueMessage {
            final long gen;
            final long rowid;

            Msg(long gen, long rowid) {
                this.gen = gen;
                this.rowid = rowid;
            }

            Row row() {
                return gen == tp.generation && rowid >= 1 && rowid <= tp.rows.size() ? tp.rows.get((int) rowid - 1) : null;
            }

            @Override public long rowid() { return rowid; }
            @Override public long generation() { return gen; }
            @Override public long t() { Row r = row(); return r == null ? 0 : r.t; }
            @Override public long tm() { Row r = row(); return r == null ? 0 : r.tm; }
            @Override public int userFlag() { Row r = row(); return r == null ? 0 : r.flag; }
            @Override public long softMark() { return gen == tp.generation ? softMarks.getOrDefault(rowid, 0L) : 0; }

            @Override
            public boolean equals(Object o) {
                return o instanceof Msg && ((Msg) o).gen == gen && ((Msg) o).rowid == rowid;
            }

            @Override
            public int hashCode() {
                return Objects.hash(gen, rowid);
            }
        }

        Msg msg(long rowid) {
            return new Msg(tp.generation, rowid);
        }

        @Override public String topicName() { return name; }
        @Override public long generation() { return tp.generation; }

        @Override
        public int load() {
            long start = tp.firstRowid > 0 && tp.firstRowid <= tp.rows.size() ? tp.firstRowid : 1;
            long first = 0;
            for (long r = start; r <= tp.rows.size(); r++) {
                if ((tp.rows.get((int) r - 1).flag & MSG_PENDING) != 0) {
                    if (first == 0) first = r;
                    list.put(r, true);
                }
            }
            tp.firstRowid = first == 0 ? tp.rows.size() : first;
            return 0;
        }

        @Override
        public int loadAll(long fromRowid, long toRowid) {
            long size = tp.rows.size();
            long from = fromRowid < 0 ? Math.max(1, size + fromRowid + 1) : Math.max(1, fromRowid);
            long to = toRowid == 0 ? size : toRowid < 0 ? size + toRowid + 1 : Math.min(toRowid, size);
            for (long r = from; r <= to; r++) list.put(r, true);
            return 0;
        }

        @Override
        public int loadAllByTime(long fromT, long toT) {
            for (Row r : tp.rows) {
                if ((fromT == 0 || r.t >= fromT) && (toT == 0 || r.t <= toT)) list.put(r.rowid, true);
            }
            return 0;
        }

        @Override public boolean loadFailed() { return false; }

        @Override
        public QueueMessage append(long t, ObjectNode kw, int userFlag) {
            if (closed) throw new IllegalStateException("closed");
            if (failAppends) return null;
            for (String f : failingTopics) if (tp.key.endsWith(f)) return null;
            long rowid = tp.rows.size() + 1;
            long tm = 0;
            if (tkey != null && !tkey.isEmpty() && kw.path(tkey).isIntegralNumber()) tm = kw.get(tkey).asLong();
            if (t == 0) t = System.currentTimeMillis() / 1000;
            tp.rows.add(new Row(rowid, t, tm, Kw.toJson(kw), userFlag | MSG_PENDING));
            list.put(rowid, true);
            if (autoDurable) makeDurable();
            return msg(rowid);
        }

        /** Everything appended so far is durable: tell the listeners. */
        public void makeDurable() {
            makeDurable(tp.rows.size());
        }

        /** The records up to {@code rowid} are durable (an fsync that covered part of what was written). */
        public void makeDurable(long rowid) {
            durable = Math.max(durable, Math.min(rowid, tp.rows.size()));
            long gen = tp.generation;
            long d = durable;
            for (Object[] l : listeners) {
                DurableListener dl = (DurableListener) l[0];
                ((Executor) l[1]).execute(() -> dl.durable(gen, d));
            }
        }

        @Override
        public int setHardFlag(QueueMessage m, int mask, boolean set) {
            Row r = ((Msg) m).row();
            if (r == null) return -1;
            r.flag = set ? r.flag | mask : r.flag & ~mask;
            return 0;
        }

        @Override
        public long setSoftMark(QueueMessage m, long mask, boolean set) {
            long v = softMarks.getOrDefault(m.rowid(), 0L);
            v = set ? v | mask : v & ~mask;
            if (v == 0) softMarks.remove(m.rowid());
            else softMarks.put(m.rowid(), v);
            return v;
        }

        @Override
        public int unload(QueueMessage m, int result) {
            if (m.generation() != tp.generation) return -1;
            list.remove(m.rowid());
            softMarks.remove(m.rowid());
            return setHardFlag(m, MSG_PENDING, false);
        }

        @Override
        public QueueMessage getByRowid(long rowid) {
            return list.containsKey(rowid) ? msg(rowid) : null;
        }

        @Override
        public QueueMessage first() {
            return list.isEmpty() ? null : msg(list.firstKey());
        }

        @Override
        public QueueMessage next(QueueMessage m) {
            Long k = list.higherKey(m.rowid());
            return k == null ? null : msg(k);
        }

        @Override
        public int checkPendingRowid(long t, long rowid) {
            return checkPendingRowid(tp.generation, t, rowid);
        }

        @Override
        public int checkPendingRowid(long gen, long t, long rowid) {
            if (gen != tp.generation || rowid < 1 || rowid > tp.rows.size()) return -1;
            Row r = tp.rows.get((int) rowid - 1);
            if (r.t != t) return -1;
            return (r.flag & MSG_PENDING) != 0 ? 1 : 0;
        }

        @Override
        public ObjectNode msgJson(QueueMessage m) {
            Row r = ((Msg) m).row();
            if (r == null) return null;
            try {
                ObjectNode kw = Kw.parse(r.json);
                ObjectNode md = kw.putObject(MD_TRQ);
                md.put(MSG_ROWID, r.rowid);
                md.put(MSG_T, r.t);
                md.put(MSG_GEN, tp.generation);
                return kw;
            } catch (IOException e) {
                return null;
            }
        }

        @Override
        public ObjectNode msgMetadata(QueueMessage m) {
            ObjectNode o = Kw.create();
            o.put("rowid", m.rowid());
            return o;
        }

        @Override
        public QueueMessage matchAck(ObjectNode ack) {
            ObjectNode md = TrQueue.getMetadata(ack);
            JsonNode src = md != null ? md : ack;
            long rowid = src.path(MSG_ROWID).asLong(0);
            JsonNode g = src.get(MSG_GEN);
            if (g != null && g.asLong() != tp.generation) return null;
            QueueMessage m = getByRowid(rowid);
            if (m == null) return null;
            JsonNode t = src.get(MSG_T);
            if (t != null && t.asLong() != m.t()) return null;
            return m;
        }

        @Override public int size() { return list.size(); }
        @Override public long topicSize() { return tp.rows.size(); }
        @Override public long firstRowid() { return tp.firstRowid; }

        @Override
        public int checkBackup() {
            if (!list.isEmpty() || !softMarks.isEmpty()) return -1;
            if (tp.backupQueueSize <= 0 || tp.rows.size() < tp.backupQueueSize) return 0;
            tp.rows.clear();
            tp.generation++;
            tp.firstRowid = 0;
            tp.backups++;
            durable = 0;
            return 0;
        }

        @Override public FsyncPolicy fsyncPolicy() { return options.fsyncPolicy(); }

        /** The options the queue was opened with (what the gate made of its attributes). */
        public TrQueueOptions options() { return options; }

        /** 0 once closed: like the trqueue's, a closed queue has no topic any more. */
        @Override public long lastRowid() { return closed ? 0 : tp.rows.size(); }

        public boolean isClosed() {
            return closed;
        }
        @Override public long durableRowid() { return durable; }

        @Override
        public void onDurable(DurableListener listener, Executor executor) {
            listeners.add(new Object[] {listener, executor});
        }

        @Override
        public void sync() {
            makeDurable();
        }

        @Override
        public void close() {
            if (closed) return;
            closed = true;
            tp.open = false;
        }
    }
}
