// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.testkit.LogCapture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.*;

@Timeout(30)
class TrQueueBackupTest {
    @TempDir
    Path dir;

    final FaultyOps ops = new FaultyOps();
    final TrQueueFactoryImpl factory = new TrQueueFactoryImpl(ops);
    final LogCapture log = new LogCapture();

    Path db() { return dir.resolve("db"); }

    Path topicDir() { return db().resolve("T"); }

    @AfterEach
    void tearDown() {
        ops.heal();
        factory.close();
        log.close();
    }

    TrQueue open(long backup) {
        return factory.open(dir, "db", "T", "", 0, backup,
                TrQueueOptions.defaults().withSegmentSize(4096).withMaxMessageSize(1024));
    }

    static ObjectNode msg(int i) {
        ObjectNode kw = Kw.create();
        kw.put("id", i);
        kw.put("pad", "x".repeat(40));
        return kw;
    }

    void fillAndAck(TrQueue q, int n) {
        for (int i = 0; i < n; i++) q.unload(q.append(100 + i, msg(i), 0), 0);
    }

    ObjectNode vars(Path topic) throws Exception {
        return Kw.parse(Files.readString(topic.resolve("topic_var.json")));
    }

    List<String> infoAndUp() {
        return log.messages(LogCapture.Level.INFO);
    }

    @Test
    void shouldNotBackUpWhenBelowTheThresholdOrWithoutASize() {
        TrQueue q = open(10);
        fillAndAck(q, 9);
        assertEquals(0, q.checkBackup());
        assertFalse(Files.exists(db().resolve("T.bak")));
        q.close();
        Path other = dir.resolve("db2");
        TrQueue q2 = factory.open(dir, "db2", "U", "", 0, 0);
        fillAndAck(q2, 20);
        assertEquals(0, q2.checkBackup());
        assertFalse(Files.exists(other.resolve("U.bak")));
    }

    @Test
    void shouldStartANewGenerationWhenBackedUpAtTheThreshold() throws Exception {
        TrQueue q = open(10);
        long gen = q.generation();
        fillAndAck(q, 10);
        log.clear();
        assertEquals(0, q.checkBackup());
        assertEquals(List.of("INFO Backup timeranger topic, moving", "INFO Creating topic"), infoAndUp());
        assertEquals(10, vars(db().resolve("T.bak")).get("first_rowid").asLong());
        assertEquals(10, vars(db().resolve("T.bak")).get("backup_queue_size").asLong());
        assertEquals(0, vars(topicDir()).get("first_rowid").asLong());
        assertEquals(10, vars(topicDir()).get("backup_queue_size").asLong());
        assertNotEquals(gen, q.generation());
        assertEquals(0, q.topicSize());
        QueueMessage m = q.append(msg(1));
        assertEquals(1, m.rowid());
        assertEquals(q.generation(), m.generation());
        assertEquals(-1, q.checkPendingRowid(gen, m.t(), 1), "an ack from before the backup finds nothing");
        ObjectNode oldAck = Kw.create();
        ObjectNode md = oldAck.putObject(TrQueue.MD_TRQ);
        md.put(TrQueue.MSG_ROWID, 1);
        md.put(TrQueue.MSG_GEN, gen);
        md.put("result", 0);
        assertNull(q.matchAck(oldAck), "a late ack cannot ack the new rowid 1");
        q.unload(m, 0);
        fillAndAck(q, 9);
        log.clear();
        assertEquals(0, q.checkBackup());
        assertEquals(List.of("INFO Backup timeranger topic, deleting", "INFO Backup timeranger topic, moving",
                "INFO Creating topic"), infoAndUp());
        q.close();
        TrQueue q2 = open(10);
        assertEquals(0, q2.topicSize());
    }

    /** Yuneta's test_tr_queue1: each message acked as it is appended, the topic backed up every 1000 rows. */
    @Test
    void shouldBackUpEveryThousandRowsWhenAppendingAndAckingInALoop() {
        TrQueue q = open(1000);
        log.clear();
        for (int i = 0; i < 2500; i++) {
            QueueMessage m = q.append(946684799L + i, msg(i), 0);
            q.unload(m, 0);
            assertEquals(0, q.checkPendingRowid(m.t(), m.rowid()));
            if (q.size() == 0) assertEquals(0, q.checkBackup());
        }
        assertEquals(500, q.topicSize());
        assertEquals(4, log.messages(LogCapture.Level.INFO).stream().filter(s -> !s.startsWith("INFO Backup timeranger topic, deleting")).count(),
                log.messages(LogCapture.Level.INFO).toString());
    }

    @Test
    void shouldRefuseTheBackupWhenAMessageIsPendingOrListed() {
        TrQueue q = open(3);
        QueueMessage a = q.append(msg(1));
        q.unload(q.append(msg(2)), 0);
        q.unload(q.append(msg(3)), 0);
        assertEquals(-1, q.checkBackup(), "a message is pending");
        q.unload(a, 0);
        q.loadAll(1, 1);
        assertEquals(-1, q.checkBackup(), "a message is in the list");
        q.unload(q.getByRowid(1), 0);
        assertEquals(0, q.checkBackup());
        assertTrue(Files.isDirectory(db().resolve("T.bak")));
    }

    /** Three segments; the first cannot be read: the load keeps what it read and says load_failed. */
    @Test
    void shouldKeepFirstRowidAndRefuseTheBackupWhenTheLoadFailed() throws Exception {
        TrQueue q = open(60);
        for (int i = 0; i < 60; i++) q.append(100 + i, msg(i), 0);
        q.load();
        assertEquals(1, vars(topicDir()).get("first_rowid").asLong());
        for (int i = 1; i <= 60; i++) q.unload(q.getByRowid(i), 0);
        q.close();
        List<Path> segs;
        try (var s = Files.list(topicDir().resolve("keys/__rowid__"))) {
            segs = s.sorted().collect(Collectors.toList());
        }
        assertTrue(segs.size() >= 2, segs.toString());
        // all acked; now make rows pending again in the first segment and the last one to see what the load reads
        Path first = segs.get(0);
        ops.fail((op, p) -> op.equals("open") && p.equals(first), "Input/output error");
        log.clear();
        q = open(60);
        assertEquals(1, log.count("Queue segment cannot be read"));
        QueueMessage late = q.append(500, msg(500), 0);
        assertEquals(-1, q.load());
        assertTrue(q.loadFailed());
        assertEquals(1, log.count("Queue loaded without some of its messages: its first_rowid is not moved nor saved"));
        assertEquals(1, vars(topicDir()).get("first_rowid").asLong(), "first_rowid kept");
        assertEquals(late, q.getByRowid(61), "what it read is in the list");
        q.unload(late, 0);
        assertEquals(0, q.size());
        assertEquals(-1, q.checkBackup());
        assertEquals(-1, q.checkBackup());
        assertEquals(1, log.count("Queue backup refused: its last load did not read every pending message"),
                "said once");
        assertFalse(Files.exists(db().resolve("T.bak")));
        ops.heal();
        assertEquals(0, q.load());
        assertFalse(q.loadFailed());
        assertEquals(61, vars(topicDir()).get("first_rowid").asLong());
        assertEquals(0, q.checkBackup());
        assertTrue(Files.isDirectory(db().resolve("T.bak")));
    }

    @Test
    void shouldRollBackWhenTheBackupNameIsTakenByAFile() throws Exception {
        TrQueue q = open(10);
        fillAndAck(q, 10);
        Files.writeString(db().resolve("T.bak"), "a file");
        log.clear();
        assertEquals(-1, q.checkBackup());
        assertEquals(List.of("INFO Backup timeranger topic, moving", "ERROR cannot backup topic",
                "WARN Backup of topic failed: the topic is opened again as it was, not backed up",
                "ERROR Queue backup failed: the queue goes on in its topic, not backed up"), infoAndUp());
        assertEquals(10, q.topicSize());
        QueueMessage m = q.append(200, msg(11), 0);
        assertEquals(11, m.rowid());
        assertNotNull(q.msgJson(m));
        assertEquals(0, q.unload(m, 0));
        log.clear();
        assertEquals(-1, q.checkBackup(), "the next period tries again");
        assertEquals(0, log.all().stream().filter(r -> r.level.compareTo(LogCapture.Level.WARN) <= 0).count(),
                "the same failure is said once: " + log.messages(LogCapture.Level.INFO));
        Files.delete(db().resolve("T.bak"));
        assertEquals(0, q.checkBackup());
        assertEquals(0, q.topicSize());
    }

    @Test
    void shouldRollBackWhenTheNewTopicCannotBeCreated() throws Exception {
        TrQueue q = open(10);
        fillAndAck(q, 10);
        long gen = q.generation();
        ops.fail((op, p) -> op.equals("mkdir") && p.equals(topicDir()), "No space left on device");
        log.clear();
        assertEquals(-1, q.checkBackup());
        assertTrue(log.count("Queue backup failed: the queue goes on in its topic, not backed up") == 1, log.messages(LogCapture.Level.INFO).toString());
        assertEquals(gen, q.generation());
        assertEquals(10, q.topicSize());
        assertFalse(Files.exists(db().resolve("T.bak")), "moved back");
        assertEquals(11, q.append(msg(11)).rowid());
        ops.heal();
        q.unload(q.getByRowid(11), 0);
        assertEquals(0, q.checkBackup());
    }

    /** The backup fails and the topic cannot be opened again: the queue takes it again by name, quietly. */
    @Test
    void shouldTakeTheTopicAgainByNameWhenItOpensAgain() throws Exception {
        TrQueue q = open(10);
        for (int i = 0; i < 10; i++) q.append(100 + i, msg(i), 0);
        QueueMessage keep = q.getByRowid(10);
        for (int i = 1; i < 10; i++) q.unload(q.getByRowid(i), 0);
        // keep row 10 pending? a backup is refused then; ack it through setHardFlag but keep the handle
        q.unload(keep, 0);
        Path desc = topicDir().resolve("topic_desc.json");
        ops.fail((op, p) -> (op.equals("mkdir") && p.equals(topicDir())) || (op.equals("readAll") && p.equals(desc)),
                "Input/output error");
        log.clear();
        assertEquals(-1, q.checkBackup());
        assertEquals(1, log.count("Queue backup failed, and the queue has no topic"), log.messages(LogCapture.Level.INFO).toString());
        log.clear();
        for (int i = 0; i < 10; i++) {
            assertEquals(-1, q.checkBackup());
            assertNull(q.msgJson(keep));
            assertEquals(-1, q.setHardFlag(keep, 2, true));
        }
        assertEquals(List.of("ERROR Queue without topic, it cannot be opened"), log.messages(LogCapture.Level.INFO), "said once, then quiet");
        log.clear();
        ops.heal();
        assertNotNull(q.msgJson(keep));
        assertEquals(List.of("INFO Queue topic taken again"), log.messages(LogCapture.Level.INFO));
        assertEquals(10, q.topicSize());
    }

    @Test
    void shouldTryTheOpenOnceWhenABrokenDescriptorChanges() throws Exception {
        TrQueue q = open(10);
        fillAndAck(q, 10);
        Path desc = topicDir().resolve("topic_desc.json");
        byte[] good = Files.readAllBytes(desc);
        ops.fail((op, p) -> (op.equals("mkdir") && p.equals(topicDir())) || (op.equals("readAll") && p.equals(desc)),
                "Input/output error");
        assertEquals(-1, q.checkBackup());
        ops.heal();
        Files.writeString(desc, "{");
        log.clear();
        for (int i = 0; i < 5; i++) assertEquals(-1, q.checkBackup());
        assertEquals(List.of("ERROR Cannot open topic: topic_desc.json does not load",
                "ERROR Queue without topic, it cannot be opened"), log.messages(LogCapture.Level.INFO));
        log.clear();
        Files.writeString(desc, "{\"x\":");
        for (int i = 0; i < 5; i++) assertNull(q.append(msg(i)));
        assertEquals(List.of("ERROR Cannot open topic: topic_desc.json does not load"), log.messages(LogCapture.Level.INFO),
                "a new broken content: the open's error again, not the queue's line");
        log.clear();
        Files.write(desc, good);
        assertEquals(11, q.append(msg(11)).rowid());
        assertEquals(List.of("INFO Queue topic taken again"), log.messages(LogCapture.Level.INFO));
    }

    @Test
    void shouldTakeTheTopicAgainWhenItsKeysBecomeListable() throws Exception {
        TrQueue q = open(10);
        fillAndAck(q, 10);
        Path keys = topicDir().resolve("keys");
        ops.fail((op, p) -> (op.equals("mkdir") && p.equals(topicDir())) || (op.equals("list") && p.equals(keys)),
                "Permission denied");
        assertEquals(-1, q.checkBackup());
        log.clear();
        assertEquals(-1, q.checkBackup());
        assertEquals(-1, q.checkBackup());
        assertEquals(List.of("ERROR Queue without topic, it cannot be opened"), log.messages(LogCapture.Level.INFO));
        log.clear();
        ops.heal();
        assertEquals(0, q.checkBackup(), "taken again, then backed up");
        assertEquals("INFO Queue topic taken again", log.messages(LogCapture.Level.INFO).get(0));
    }

    @Test
    void shouldSetAsideACorruptSegmentWhenItIsNotTheLast() throws Exception {
        TrQueue q = open(0);
        for (int i = 0; i < 60; i++) q.append(100 + i, msg(i), 0);
        q.close();
        List<Path> segs;
        try (var s = Files.list(topicDir().resolve("keys/__rowid__"))) {
            segs = s.sorted().collect(Collectors.toList());
        }
        Path first = segs.get(0);
        byte[] b = Files.readAllBytes(first);
        b[64 + 3 * 104 + 50] ^= 0x55; // inside the 4th frame's payload
        Files.write(first, b);
        log.clear();
        q = open(0);
        assertEquals(1, log.count("Queue segment corrupt, set aside"), log.messages(LogCapture.Level.INFO).toString());
        assertEquals(-1, q.load(), "the rows set aside were not read");
        assertNotNull(q.getByRowid(3));
        assertNull(q.getByRowid(4));
        assertNotNull(q.getByRowid(60));
        assertEquals(-1, q.checkPendingRowid(103, 4));
        q.close();
        try (var s = Files.list(topicDir().resolve("keys/__rowid__"))) {
            assertEquals(1, s.filter(p -> p.getFileName().toString().contains(".corrupt-")).count());
        }
        q = open(0);
        assertEquals(0, q.load(), "after the set-aside the queue loads whole");
        assertEquals(60 - (segs.size() > 0 ? countLost(q) : 0), q.size());
    }

    private static int countLost(TrQueue q) {
        int lost = 0;
        for (long r = 1; r <= q.topicSize(); r++) if (q.getByRowid(r) == null) lost++;
        return lost;
    }

    @Test
    void shouldRefuseTheAppendCleanlyWhenTheDiskIsFull() {
        TrQueue q = open(0);
        q.append(msg(1));
        ops.fail((op, p) -> op.equals("write"), "No space left on device");
        assertNull(q.append(msg(2)));
        assertEquals(1, log.count("Cannot append record, write FAILED"));
        assertEquals(1, q.size());
        ops.heal();
        assertEquals(2, q.append(msg(3)).rowid());
        q.close();
        q = open(0);
        q.load();
        assertEquals(2, q.size());
        assertEquals(3, q.msgJson(q.getByRowid(2)).get("id").asInt());
    }
}
