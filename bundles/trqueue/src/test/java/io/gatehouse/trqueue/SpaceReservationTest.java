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

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The segment's file space is allocated ahead of the frames with real writes (Topic.allocate), so a full file
 * system makes the append answer null with one ERROR per streak ("Cannot append record, write FAILED", reason
 * "no space"), never a fault on a mapped page; appends work again once there is space, and nothing stored is lost.
 */
@Timeout(60)
class SpaceReservationTest {
    static final TrQueueOptions OPTS = TrQueueOptions.defaults().withSegmentSize(8 << 20).withMaxMessageSize(2048);

    @TempDir
    Path dir;

    final FaultyOps ops = new FaultyOps();
    final TrQueueFactoryImpl factory = new TrQueueFactoryImpl(ops);
    final LogCapture log = new LogCapture();

    @AfterEach
    void tearDown() {
        ops.heal();
        factory.close();
        log.close();
    }

    static ObjectNode msg(int i) {
        ObjectNode kw = Kw.create();
        kw.put("id", i);
        kw.put("pad", "x".repeat(1000));
        return kw;
    }

    private long writeFailed() {
        return log.count("Cannot append record, write FAILED");
    }

    private String reasonOfFirstFailure() {
        return log.with("Cannot append record, write FAILED").stream()
                .map(r -> String.valueOf(r.fields.get("reason"))).findFirst().orElse(null);
    }

    @Test
    void shouldRefuseAppendsAndSayItOnceWhenSpaceCannotBeAllocated() {
        TrQueue q = factory.open(dir, "db", "T", "", 0, 0, OPTS);
        // no space from the start: the first segment is made but none of its space can be allocated
        ops.fail((op, p) -> op.equals("allocate"), "No space left on device");
        for (int i = 0; i < 5; i++) assertNull(q.append(0, msg(i), 0), "append " + i + " refused");
        assertEquals(1, writeFailed(), "said once per streak");
        assertEquals("no space", reasonOfFirstFailure());
        assertEquals(0, q.size());
        assertEquals(0, q.topicSize());
        ops.heal();
        assertEquals(1, q.append(0, msg(100), 0).rowid(), "no rowid was spent on the refused appends");
        assertEquals(1, log.count("Queue append works again"));

        // then in the middle of the segment: the space allocated ahead is used up, the next chunk is refused
        int stored = 1;
        ops.fail((op, p) -> op.equals("allocate"), "No space left on device");
        QueueMessage m;
        while ((m = q.append(0, msg(100 + stored), 0)) != null) {
            stored++;
            assertTrue(stored < (Topic.ALLOC_AHEAD + Topic.ALLOC_CHUNK) / 1000, "an allocation was needed by now");
        }
        assertTrue(stored > 100, "the space allocated ahead was used first: " + stored);
        for (int i = 0; i < 100; i++) assertNull(q.append(0, msg(-1), 0));
        assertEquals(2, writeFailed(), "one ERROR for the second streak of 101 refusals");
        assertEquals(stored, q.topicSize());
        ops.heal();
        for (int i = 0; i < 10; i++) assertNotNull(q.append(0, msg(100 + stored++), 0));
        assertEquals(2, log.count("Queue append works again"));
        assertEquals(stored, q.size());
        q.close();

        q = factory.open(dir, "db", "T", "", 0, 0, OPTS);
        assertEquals(0, q.load());
        assertEquals(stored, q.size(), "every stored message is back, none of the refused ones");
        for (int r = 1; r <= stored; r++) {
            ObjectNode kw = q.msgJson(q.getByRowid(r));
            assertEquals(99 + r, kw.get("id").asInt(), "rowid " + r);
        }
        assertTrue(log.messages(LogCapture.Level.INFO).stream().noneMatch(s -> s.contains("damaged") || s.contains("truncated")), log.messages(LogCapture.Level.INFO).toString());
    }

    @Test
    void shouldFailTheAppendCleanlyWhenAMappedPageFaults() {
        TrQueue q = factory.open(dir, "db", "T", "", 0, 0, OPTS);
        QueueMessage m1 = q.append(0, msg(1), 0);
        ops.storeFaults = true;
        for (int i = 0; i < 3; i++) assertNull(q.append(0, msg(2), 0));
        assertEquals(1, writeFailed());
        assertEquals("fault on a mapped page", reasonOfFirstFailure());
        ops.storeFaults = false;
        QueueMessage m2 = q.append(0, msg(3), 0);
        assertEquals(2, m2.rowid());
        assertEquals(3, q.msgJson(m2).get("id").asInt());
        assertEquals(0, q.unload(m1, 0));
        assertEquals(0, q.checkPendingRowid(m1.t(), 1));
    }

    /** Root only: a real 12 MiB tmpfs, filled by another writer while the queue is open. */
    @Test
    void shouldAnswerNullNotFaultWhenAnotherWriterFillsTheFileSystem() throws Exception {
        TrQueueFactoryImpl real = new TrQueueFactoryImpl();
        try (SmallTmpfs small = SmallTmpfs.mount(dir, "12m"); real) {
            Path fs = small.dir;
            TrQueueOptions opts = TrQueueOptions.defaults().withSegmentSize(4 << 20).withMaxMessageSize(2048);
            TrQueue q = real.open(fs, "db", "T", "", 0, 0, opts);
            int stored = 0;
            for (; stored < 50; stored++) assertNotNull(q.append(0, msg(stored), 0));
            small.fill();
            // the frames keep going into the space allocated ahead (2 MiB of the 4 MiB segment), then the
            // allocation of the next chunk fails and the append is refused (never a fault)
            int refused = 0;
            for (int i = 0; i < 10_000 && refused < 100; i++) {
                if (q.append(0, msg(stored), 0) != null) stored++;
                else refused++;
            }
            assertEquals(100, refused, "refused once the allocated space is used up");
            assertTrue(stored > 1000 && stored < 2100, "the space allocated ahead was used: " + stored);
            assertEquals(1, writeFailed());
            assertEquals("no space", reasonOfFirstFailure());
            small.giveBack();
            for (int i = 0; i < 10; i++) assertNotNull(q.append(0, msg(stored++), 0), "space is back");
            q.close();
            q = real.open(fs, "db", "T", "", 0, 0, opts);
            assertEquals(0, q.load());
            assertEquals(stored, q.size());
            for (int r = 1; r <= stored; r++) assertEquals(r - 1, q.msgJson(q.getByRowid(r)).get("id").asInt());
            q.close();
        }
    }
}
