// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueException;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.testkit.LogCapture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.*;

@Timeout(30)
class TrQueueCoreTest {
    @TempDir
    Path dir;

    final TrQueueFactoryImpl factory = new TrQueueFactoryImpl();
    final LogCapture log = new LogCapture();

    @AfterEach
    void tearDown() {
        factory.close();
        log.close();
    }

    TrQueue open(long backup) {
        return factory.open(dir, "db", "T", "tm", 0, backup, TrQueueOptions.defaults().withSegmentSize(1 << 16)
                .withMaxMessageSize(4096));
    }

    static ObjectNode msg(int i) {
        ObjectNode kw = Kw.create();
        kw.put("id", String.format("%05d", i));
        kw.put("tm", 946684799L + i);
        kw.put("event", "trace");
        return kw;
    }

    List<Long> rowids(TrQueue q) {
        List<Long> out = new ArrayList<>();
        for (QueueMessage m = q.first(); m != null; m = q.next(m)) out.add(m.rowid());
        return out;
    }

    @Test
    void shouldWriteTheTimerangerLayoutWhenATopicIsCreated() throws Exception {
        TrQueue q = open(1000);
        Path t = dir.resolve("db/T");
        assertTrue(Files.isDirectory(t.resolve("keys")));
        assertFalse(Files.exists(t.resolve("keys/__rowid__")));
        ObjectNode desc = Kw.parse(Files.readString(t.resolve("topic_desc.json")));
        assertEquals("T", desc.get("topic_name").asText());
        assertEquals("__rowid__", desc.get("pkey").asText());
        assertEquals("tm", desc.get("tkey").asText());
        assertEquals(2, desc.get("system_flag").asInt());
        assertEquals(q.generation(), desc.get("generation").asLong());
        assertEquals(1000, Kw.parse(Files.readString(t.resolve("topic_var.json"))).get("backup_queue_size").asInt());
        assertEquals("{}", Files.readString(t.resolve("topic_cols.json")));
        assertEquals(1, log.count("Creating topic"));
        assertEquals(0, q.size());
        assertEquals(0, q.topicSize());
        q.close();
        // a later open with 0 keeps the saved backup size
        TrQueue q2 = open(0);
        assertEquals(1000, ((TrQueueImpl) q2).backupQueueSize());
    }

    @Test
    void shouldAssignContiguousRowidsAndKeepTheCallersKwWhenAppending() {
        TrQueue q = open(0);
        ObjectNode kw = msg(1);
        String before = kw.toString();
        QueueMessage m1 = q.append(946684799L, kw, 0);
        assertEquals(before, kw.toString(), "the caller's kw is not modified");
        QueueMessage m2 = q.append(0, msg(2), 4);
        QueueMessage m3 = q.append(msg(3));
        assertEquals(List.of(1L, 2L, 3L), List.of(m1.rowid(), m2.rowid(), m3.rowid()));
        assertEquals(946684799L, m1.t());
        assertEquals(946684800L, m1.tm());
        assertTrue(Math.abs(m3.t() - System.currentTimeMillis() / 1000) <= 1);
        assertEquals(1, m1.userFlag());
        assertEquals(5, m2.userFlag());
        assertEquals(3, q.size());
        assertEquals(3, q.topicSize());
        ObjectNode j = q.msgJson(m1);
        assertEquals("00001", j.get("id").asText());
        assertEquals(1, j.at("/__md_trq__/__msg_rowid__").asLong());
        assertEquals(946684799L, j.at("/__md_trq__/__msg_t__").asLong());
        assertEquals(q.generation(), j.at("/__md_trq__/__msg_gen__").asLong());
        assertNotSame(j, q.msgJson(m1));
        ObjectNode md = q.msgMetadata(m2);
        assertEquals(2, md.get("rowid").asLong());
        assertEquals(5, md.get("user_flag").asInt());
        assertEquals(2, md.get("system_flag").asInt());
    }

    @Test
    void shouldTakeTmFromTheTkeyFieldWhenItIsANumberOrADate() {
        assertEquals(946684800L, RecordJson.tmOf(kw("tm", "2000-01-01T00:00:00Z"), "tm", 0));
        assertEquals(946684800000L, RecordJson.tmOf(kw("tm", "2000-01-01T00:00:00Z"), "tm", TrQueue.SF_TM_MS));
        assertEquals(0, RecordJson.tmOf(kw("tm", "not a date"), "tm", 0));
        assertEquals(0, RecordJson.tmOf(Kw.create(), "tm", 0));
        ObjectNode b = Kw.create();
        b.put("tm", true);
        assertEquals(0, RecordJson.tmOf(b, "tm", 0));
        assertEquals(0, RecordJson.tmOf(kw("tm", "2000-01-01T00:00:00Z"), "", 0));
    }

    static ObjectNode kw(String k, String v) {
        ObjectNode o = Kw.create();
        o.put(k, v);
        return o;
    }

    @Test
    void shouldClearPendingOnDiskWhenUnloadedAndAnswerMinusOneForUnknownRows() {
        TrQueue q = open(0);
        QueueMessage m1 = q.append(946684799L, msg(1), 4);
        QueueMessage m2 = q.append(946684800L, msg(2), 0);
        assertEquals(1, q.checkPendingRowid(946684799L, 1));
        assertEquals(0, q.unload(m1, -5));
        assertEquals(4, m1.userFlag(), "other bits kept");
        assertEquals(0, q.checkPendingRowid(946684799L, 1));
        assertNull(q.getByRowid(1));
        assertEquals(m2, q.getByRowid(2));
        assertEquals(1, q.size());
        assertEquals(-1, q.checkPendingRowid(946684799L, 5), "missing row is never pending");
        assertEquals(-1, q.checkPendingRowid(1, 1), "t mismatch");
        assertEquals(-1, q.checkPendingRowid(0, 0));
        assertEquals(-1, q.checkPendingRowid(q.generation() + 1, 946684800L, 2), "stale generation");
        assertEquals(1, q.checkPendingRowid(q.generation(), 946684800L, 2));
    }

    @Test
    void shouldKeepHardFlagsOnDiskAndSoftMarksInMemoryWhenSet() {
        TrQueue q = open(0);
        QueueMessage m = q.append(100, msg(1), 0);
        assertEquals(0, q.setHardFlag(m, 2, true));
        assertEquals(3, m.userFlag());
        assertEquals(1, q.size());
        assertEquals(0x10, q.setSoftMark(m, 0x10, true));
        assertEquals(0x11, q.setSoftMark(m, 0x01, true));
        assertEquals(0x01, q.setSoftMark(m, 0x10, false));
        assertEquals(0x01, m.softMark());
        assertEquals(0, q.setHardFlag(m, TrQueue.MSG_PENDING, false));
        assertEquals(1, q.size(), "clearing PENDING keeps it in the list");
        q.close();
        TrQueue q2 = open(0);
        assertEquals(0, q2.load());
        assertEquals(0, q2.size());
        assertEquals(2, q2.checkPendingRowid(100, 1) + 2);
    }

    @Test
    void shouldLoadPendingInOrderAndMoveFirstRowidWhenReopened() throws Exception {
        TrQueue q = open(0);
        assertEquals(0, q.load());
        assertFalse(vars().has("first_rowid"), "empty topic saves no first_rowid");
        List<QueueMessage> ms = new ArrayList<>();
        for (int i = 1; i <= 5; i++) ms.add(q.append(100 + i, msg(i), 0));
        q.unload(ms.get(1), 0);
        q.unload(ms.get(3), 0);
        q.close();

        q = open(0);
        assertEquals(0, q.size());
        assertEquals(0, q.load());
        assertEquals(List.of(1L, 3L, 5L), rowids(q));
        assertEquals(101, q.getByRowid(1).t());
        assertEquals(1, vars().get("first_rowid").asLong());
        assertEquals(0, q.load(), "a second load adds no duplicates");
        assertEquals(3, q.size());
        q.unload(q.getByRowid(1), 0);
        q.unload(q.getByRowid(3), 0);
        q.close();

        q = open(0);
        q.load();
        assertEquals(List.of(5L), rowids(q));
        assertEquals(5, vars().get("first_rowid").asLong());
        q.unload(q.getByRowid(5), 0);
        q.close();

        q = open(0);
        q.load();
        assertEquals(0, q.size());
        assertEquals(5, vars().get("first_rowid").asLong(), "none pending: the topic size");
    }

    @Test
    void shouldStartTheLoadAtFirstRowidWhenItIsInRange() throws Exception {
        TrQueue q = open(0);
        for (int i = 1; i <= 5; i++) q.append(100 + i, msg(i), 0);
        q.close();
        setVar("first_rowid", 3);
        q = open(0);
        q.load();
        assertEquals(List.of(3L, 4L, 5L), rowids(q));
        q.close();
        setVar("first_rowid", 99);
        q = open(0);
        q.load();
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), rowids(q));
    }

    @Test
    void shouldListRowsByRowidOrTimeWhenLoadingAll() {
        TrQueue q = open(0);
        for (int i = 1; i <= 5; i++) q.append(100 + i - 1, msg(i), 0);
        q.unload(q.getByRowid(2), 0);
        q.unload(q.getByRowid(4), 0);
        q.close();
        q = open(0);
        assertEquals(0, q.loadAll(2, 4));
        assertEquals(List.of(2L, 3L, 4L), rowids(q));
        q.close();
        q = open(0);
        q.loadAll(-2, 0);
        assertEquals(List.of(4L, 5L), rowids(q));
        q.loadAll(0, 0);
        assertEquals(5, q.size(), "no duplicates");
        q.close();
        q = open(0);
        q.loadAllByTime(101, 103);
        assertEquals(List.of(2L, 3L, 4L), rowids(q));
        q.loadAll(9, 0);
        assertEquals(3, q.size());
    }

    @Test
    void shouldMatchAnAckToItsMessageWhenRowidAndGenerationAgree() {
        ObjectNode kw = Kw.create();
        assertEquals(0, TrQueue.setMetadata(kw, "a", IntNode.valueOf(1)));
        assertEquals("{\"a\":1}", TrQueue.getMetadata(kw).toString());
        ObjectNode ans = TrQueue.answer(kw, 7);
        assertEquals("{\"__md_trq__\":{\"a\":1,\"result\":7}}", ans.toString());
        assertFalse(kw.get("__md_trq__").has("result"), "the input is not modified");
        assertEquals("{}", TrQueue.answer(Kw.create(), 0).toString(), "no metadata: nothing to ack with");

        TrQueue q = open(0);
        QueueMessage m = q.append(100, msg(1), 0);
        ObjectNode sent = q.msgJson(m);
        ObjectNode ack = TrQueue.answer(sent, 0);
        assertEquals(m, q.matchAck(ack));
        ObjectNode stale = ack.deepCopy();
        ((ObjectNode) stale.get("__md_trq__")).put("__msg_gen__", q.generation() - 1);
        assertNull(q.matchAck(stale), "a stale generation acks nothing");
        ObjectNode top = Kw.create();
        top.put("__msg_rowid__", 1);
        top.put("result", 0);
        assertEquals(m, q.matchAck(top), "a top-level ack is accepted");
        assertEquals(0, q.unload(q.matchAck(ack), 0));
        assertNull(q.matchAck(ack));
    }

    @Test
    void shouldRefuseASecondOpenWhenTheTopicIsLocked() {
        TrQueue q = open(0);
        TrQueueException e = assertThrows(TrQueueException.class, () -> open(0));
        assertTrue(e.getMessage().contains("locked by another process"), e.getMessage());
        q.close();
        open(0).close();
    }

    @Test
    void shouldRefuseTheAppendWhenTheMessageIsTooLarge() {
        TrQueue q = open(0);
        ObjectNode big = Kw.create();
        big.put("x", "y".repeat(5000));
        assertNull(q.append(big));
        assertEquals(1, log.count("Cannot append record, message too large"));
        assertEquals(0, q.topicSize());
    }

    @Test
    void shouldKeepTheRowsOfEverySegmentWhenReopened() throws Exception {
        TrQueue q = open(0);
        for (int i = 1; i <= 2000; i++) assertEquals(i, q.append(i, msg(i), 0).rowid());
        for (int i = 1; i <= 2000; i += 2) q.unload(q.getByRowid(i), 0);
        q.close();
        assertTrue(segFiles().size() >= 3, "segments rolled: " + segFiles());
        q = open(0);
        q.load();
        assertEquals(1000, q.size());
        long expect = 2;
        for (QueueMessage m = q.first(); m != null; m = q.next(m), expect += 2) {
            assertEquals(expect, m.rowid());
            assertEquals(String.format("%05d", expect), q.msgJson(m).get("id").asText());
        }
        assertEquals(2002, expect);
        assertEquals(2001, q.append(1, msg(1), 0).rowid());
    }

    @Test
    void shouldCutAndReportATornTailWhenReopened() throws Exception {
        TrQueue q = open(0);
        for (int i = 1; i <= 3; i++) q.append(i, msg(i), 0);
        q.close();
        Path seg = segFiles().get(0);
        long end = dataEnd(seg);
        try (var ch = java.nio.channels.FileChannel.open(seg, StandardOpenOption.WRITE)) {
            ch.write(java.nio.ByteBuffer.wrap(new byte[] {0x7f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19}), end);
        }
        log.clear();
        q = open(0);
        assertEquals(1, log.count("Queue tail truncated to its last valid record"), log.messages(LogCapture.Level.INFO).toString());
        q.load();
        assertEquals(3, q.size());
        assertEquals(4, q.append(4, msg(4), 0).rowid());
        q.close();
        log.clear();
        q = open(0);
        q.load();
        assertEquals(List.of(1L, 2L, 3L, 4L), rowids(q));
        assertEquals(0, log.count("Queue tail truncated to its last valid record"));
    }

    @Test
    void shouldTellListenersWhenAnIntervalCommitCoversTheAppends() throws Exception {
        TrQueue q = factory.open(dir, "db", "T", "", 0, 0, TrQueueOptions.defaults().withFsyncIntervalMs(2));
        assertEquals(FsyncPolicy.INTERVAL, q.fsyncPolicy());
        AtomicLong seen = new AtomicLong();
        CountDownLatch done = new CountDownLatch(1);
        q.onDurable((gen, rowid) -> {
            assertEquals(q.generation(), gen);
            seen.set(rowid);
            if (rowid >= 100) done.countDown();
        }, Runnable::run);
        for (int i = 0; i < 100; i++) q.append(msg(i));
        assertTrue(done.await(5, TimeUnit.SECONDS));
        assertEquals(100, seen.get());
        assertEquals(100, q.durableRowid());
    }

    @Test
    void shouldBeDurableOnReturnWhenThePolicyIsAlwaysOrNone() {
        for (FsyncPolicy p : new FsyncPolicy[] {FsyncPolicy.ALWAYS, FsyncPolicy.NONE}) {
            TrQueue q = factory.open(dir, "db", "T" + p, "", 0, 0, TrQueueOptions.defaults().withFsyncPolicy(p));
            AtomicLong seen = new AtomicLong();
            q.onDurable((g, r) -> seen.set(r), Runnable::run);
            q.append(msg(1));
            q.append(msg(2));
            assertEquals(2, q.durableRowid());
            assertEquals(2, seen.get());
            q.close();
        }
    }

    ObjectNode vars() throws Exception {
        return Kw.parse(Files.readString(dir.resolve("db/T/topic_var.json")));
    }

    void setVar(String k, long v) throws Exception {
        ObjectNode o = vars();
        o.put(k, v);
        Files.writeString(dir.resolve("db/T/topic_var.json"), o.toString());
    }

    List<Path> segFiles() throws Exception {
        try (var s = Files.list(dir.resolve("db/T/keys/__rowid__"))) {
            return s.filter(p -> p.toString().endsWith(".seg")).sorted().collect(java.util.stream.Collectors.toList());
        }
    }

    /** Offset after the last frame of a segment, walking the frame lengths. */
    static long dataEnd(Path seg) throws Exception {
        byte[] b = Files.readAllBytes(seg);
        java.nio.ByteBuffer bb = java.nio.ByteBuffer.wrap(b);
        int pos = 64;
        while (pos + 40 <= b.length) {
            int len = bb.getInt(pos);
            if (len < 40) break;
            pos += (len + 7) & ~7;
        }
        return pos;
    }
}
