// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.testkit.LogCapture;
import io.netty.util.concurrent.DefaultEventExecutor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.*;

/**
 * The owner's write-behind (Topic's stage): with {@code interval} and a listener on an event loop, frames appended on
 * that loop and the flags of acks wait in memory and reach the file with one write per turn of the loop. What is
 * checked: every read sees them before they are written, the durable mark never covers a row not in the file, a
 * failed write is said once and tried again, and every way the topic leaves its owner (close, sync, park, a live
 * upgrade's takeover, a backup) writes them first.
 */
@Timeout(60)
class StagedWritesTest {
    @TempDir
    Path dir;

    /** Positional writes of the stage and of flag runs (not the headers, nor allocation's zeros). */
    final AtomicInteger segmentWrites = new AtomicInteger();
    /** Makes the writes of the stage and of flag runs fail, as an I/O error would. */
    volatile boolean stageWritesFail;
    final FaultyOps ops = new FaultyOps() {
        @Override
        public int write(Path p, FileChannel ch, ByteBuffer src, long pos) throws IOException {
            boolean staged = src.capacity() == Topic.STAGE_SIZE || src.capacity() == Topic.FLAG_RUN_SIZE;
            if (staged && stageWritesFail) throw new java.nio.file.FileSystemException(p.toString(), null, "Input/output error");
            int n = super.write(p, ch, src, pos);
            if (staged) segmentWrites.incrementAndGet();
            return n;
        }
    };
    final TrQueueFactoryImpl factory = new TrQueueFactoryImpl(ops);
    final DefaultEventExecutor loop = new DefaultEventExecutor();
    final LogCapture log = new LogCapture();
    final AtomicLong told = new AtomicLong();

    @AfterEach
    void tearDown() throws Exception {
        ops.heal();
        factory.close();
        loop.shutdownGracefully(0, 1, TimeUnit.SECONDS).await(5, TimeUnit.SECONDS);
        log.close();
    }

    /** A queue whose flusher does not tick during the test: durability comes from sync(). */
    TrQueue open(TrQueueFactoryImpl f, int segmentSize, int maxMessage) {
        TrQueue q = f.open(dir, "db", "T", "", 0, 0, TrQueueOptions.defaults().withSegmentSize(segmentSize)
                .withMaxMessageSize(maxMessage).withFsyncIntervalMs(3_600_000));
        q.onDurable((gen, rowid) -> told.set(rowid), loop);
        return q;
    }

    <T> T onLoop(Callable<T> c) throws Exception {
        return loop.submit(c).get(20, TimeUnit.SECONDS);
    }

    /** Appends messages of 300 bytes numbered from {@code next[0]} on the loop until one is refused; how many were taken. */
    int appendUntilRefused(TrQueue q, int[] next) throws Exception {
        return onLoop(() -> {
            int n = 0;
            while (q.append(0, msg(next[0], 300), 0) != null) {
                next[0]++;
                assertTrue(++n < 100_000, "refused by now");
            }
            return n;
        });
    }

    static ObjectNode msg(int i, int pad) {
        ObjectNode kw = Kw.create();
        kw.put("id", "m-" + i);
        kw.put("pad", "x".repeat(pad));
        return kw;
    }

    static List<String> ids(TrQueue q) {
        List<String> out = new ArrayList<>();
        for (QueueMessage m = q.first(); m != null; m = q.next(m)) out.add(q.msgJson(m).path("id").asText());
        return out;
    }

    static List<String> range(int from, int to) {
        List<String> out = new ArrayList<>();
        for (int i = from; i <= to; i++) out.add("m-" + i);
        return out;
    }

    /** The bytes of the first segment file as the file holds them (not the stage). */
    byte[] segmentFile() throws IOException {
        try (Stream<Path> s = Files.list(dir.resolve("db/T/keys/__rowid__"))) {
            Path first = s.filter(p -> p.toString().endsWith(".seg")).sorted().findFirst().orElseThrow();
            try (FileChannel ch = FileChannel.open(first, StandardOpenOption.READ)) {
                ByteBuffer b = ByteBuffer.allocate((int) Math.min(ch.size(), 1 << 20));
                ch.read(b, 0);
                return b.array();
            }
        }
    }

    /** Opened again by another factory (the files only), the queue loads exactly {@code ids}, in order. */
    void assertReopenedWith(int maxMessage, List<String> ids) {
        TrQueue again = open(new TrQueueFactoryImpl(ops), 1 << 20, maxMessage);
        assertEquals(0, again.load());
        assertEquals(ids, ids(again));
        again.close();
    }

    static int count(byte[] hay, String needle) {
        byte[] n = needle.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        int c = 0;
        outer:
        for (int i = 0; i + n.length <= hay.length; i++) {
            for (int j = 0; j < n.length; j++) if (hay[i + j] != n[j]) continue outer;
            c++;
        }
        return c;
    }

    @Test
    void shouldWriteATurnsRowsAndAcksOnceEachAndPromiseOnlyWhatIsInTheFile() throws Exception {
        TrQueue q = open(factory, 1 << 20, 4096);
        int before = segmentWrites.get();
        List<QueueMessage> appended = onLoop(() -> {
            List<QueueMessage> ms = new ArrayList<>();
            for (int i = 1; i <= 100; i++) ms.add(q.append(0, msg(i, 40), 0));
            // read back in the same turn: from the stage
            assertEquals("m-7", q.msgJson(ms.get(6)).path("id").asText());
            assertEquals(100, q.size());
            assertEquals(0, count(segmentFile(), "\"id\":\"m-"), "nothing is in the file before the turn ends");
            return ms;
        });
        assertEquals(1, onLoop(() -> segmentWrites.get() - before), "the turn's 100 rows: one write");
        assertEquals(100, count(segmentFile(), "\"id\":\"m-"));
        assertEquals(0, q.durableRowid(), "written is not forced");

        q.sync();
        assertEquals(100, q.durableRowid());

        int afterRows = segmentWrites.get();
        onLoop(() -> {
            for (int i = 0; i < 60; i++) assertEquals(0, q.unload(appended.get(i), 0));
            // the acks are seen before they are written
            QueueMessage m = appended.get(0);
            assertEquals(0, q.checkPendingRowid(m.t(), m.rowid()), "acked: no longer pending");
            assertEquals(0, m.userFlag() & TrQueue.MSG_PENDING);
            assertEquals(TrQueue.MSG_PENDING, appended.get(60).userFlag() & TrQueue.MSG_PENDING);
            return null;
        });
        assertEquals(1, onLoop(() -> segmentWrites.get() - afterRows), "60 neighbouring acks: one write");
        q.close();

        assertReopenedWith(4096, range(61, 100));
    }

    @Test
    void shouldKeepRowsNotWrittenOutOfTheDurableMarkAndWriteThemWhenTheDiskWorksAgain() throws Exception {
        TrQueue q = open(factory, 1 << 20, 4096);
        onLoop(() -> q.append(0, msg(0, 10), 0));
        q.sync();
        assertEquals(1, q.durableRowid());
        stageWritesFail = true;
        onLoop(() -> {
            for (int i = 1; i <= 20; i++) assertNotNull(q.append(0, msg(i, 10), 0));
            return null;
        });
        q.sync();
        q.sync();
        assertEquals(1, q.durableRowid(), "rows that never reached the file are not promised");
        assertEquals(1, log.count("Queue write FAILED, tried again (said once until a write works)"), "said once");
        assertEquals(21, q.size(), "nothing is dropped");

        stageWritesFail = false;
        q.sync();
        assertEquals(21, q.durableRowid());
        assertEquals(1, log.count("Queue writes work again"));
        q.close();
        assertReopenedWith(4096, range(0, 20));
    }

    @Test
    void shouldAllocateAheadOnTheFlusherAndLetTheOwnerDoItWhenTheFlusherCannot() throws Exception {
        java.util.Set<String> allocatingThreads = java.util.concurrent.ConcurrentHashMap.newKeySet();
        java.util.concurrent.atomic.AtomicBoolean flusherFull = new java.util.concurrent.atomic.AtomicBoolean();
        ops.fail((op, p) -> {
            if (!op.equals("allocate")) return false;
            allocatingThreads.add(Thread.currentThread().getName());
            return flusherFull.get() && Thread.currentThread().getName().startsWith("trqueue-flusher-");
        }, "No space left on device");
        TrQueue q = open(factory, 32 << 20, 4096);
        int[] next = {1};
        // 16 MiB of frames in turns of 500: the allocation ahead is asked for many times on the way
        for (int turn = 0; turn < 100; turn++) {
            onLoop(() -> {
                for (int i = 0; i < 500; i++) assertNotNull(q.append(0, msg(next[0]++, 300), 0));
                return null;
            });
        }
        q.sync();
        assertTrue(allocatingThreads.stream().anyMatch(n -> n.startsWith("trqueue-flusher-")),
                "allocated ahead by a flusher: " + allocatingThreads);

        // the flusher cannot allocate (its writes fail): the owner allocates what its frames need, nothing is refused
        allocatingThreads.clear();
        flusherFull.set(true);
        for (int turn = 0; turn < 60; turn++) {
            onLoop(() -> {
                for (int i = 0; i < 500; i++) assertNotNull(q.append(0, msg(next[0]++, 300), 0));
                return null;
            });
        }
        String owner = onLoop(() -> Thread.currentThread().getName());
        assertTrue(allocatingThreads.contains(owner), "the owner allocated itself: " + allocatingThreads);
        assertEquals(0, log.count("Cannot append record, write FAILED"));

        // nobody can: the appends past the allocated space are refused, and taken again once there is space
        ops.fail((op, p) -> op.equals("allocate"), "No space left on device");
        int stored = appendUntilRefused(q, next);
        assertTrue(stored < (Topic.ALLOC_AHEAD * 2 + Topic.ALLOC_CHUNK) / 300, "refused at the end of the space: " + stored);
        assertEquals(1, log.count("Cannot append record, write FAILED"));
        ops.heal();
        onLoop(() -> {
            for (int i = 0; i < 1000; i++) assertNotNull(q.append(0, msg(next[0]++, 300), 0));
            return null;
        });
        q.sync();
        assertEquals(next[0] - 1, q.durableRowid());
        q.close();
        assertReopenedWith(4096, range(1, next[0] - 1));
    }

    /**
     * Root only: a real 24 MiB tmpfs, filled by another writer while the queue stages on its loop (its segments of
     * 8 MiB: a new one needs twice that free, which the space given back must leave).
     */
    @Test
    void shouldRefuseStagedAppendsCleanlyOnARealFullFileSystemAndTakeThemOnceThereIsSpace() throws Exception {
        TrQueueFactoryImpl real = new TrQueueFactoryImpl();
        try (SmallTmpfs small = SmallTmpfs.mount(dir, "24m"); real) {
            Path fs = small.dir;
            TrQueueOptions opts = TrQueueOptions.defaults().withSegmentSize(8 << 20).withMaxMessageSize(2048)
                    .withFsyncIntervalMs(3_600_000);
            TrQueue q = real.open(fs, "db", "T", "", 0, 0, opts);
            q.onDurable((gen, rowid) -> told.set(rowid), loop);
            int[] next = {0};
            onLoop(() -> {
                for (int i = 0; i < 50; i++) assertNotNull(q.append(0, msg(next[0]++, 300), 0));
                return null;
            });
            q.sync();
            assertEquals(50, q.durableRowid());
            small.fill();
            // the frames go into the space allocated ahead (the flusher's next allocation fails, silently), then the
            // owner's own allocation fails: the append is refused and said once, never a fault
            int stored = appendUntilRefused(q, next);
            assertTrue(stored > 0 && stored < (2 * Topic.ALLOC_AHEAD + Topic.ALLOC_CHUNK) / 300,
                    "refused at the end of the space allocated ahead: " + stored);
            assertEquals(1, log.count("Cannot append record, write FAILED"));
            q.sync();
            assertEquals(next[0], q.durableRowid(), "every row taken had its space: it is in the file");
            assertEquals(next[0], q.size(), "nothing appended is dropped");

            small.giveBack();
            onLoop(() -> {
                for (int i = 0; i < 10; i++) assertNotNull(q.append(0, msg(next[0]++, 300), 0), "space is back");
                return null;
            });
            q.sync();
            assertEquals(next[0], q.durableRowid());
            q.close();
            TrQueue again = real.open(fs, "db", "T", "", 0, 0, opts);
            assertEquals(0, again.load());
            assertEquals(range(0, next[0] - 1), ids(again));
            again.close();
        }
    }

    @Test
    void shouldKeepEveryRowInOrderAcrossSegmentsAndAFrameLargerThanTheStage() throws Exception {
        TrQueue q = open(factory, 1 << 20, 600_000);
        onLoop(() -> {
            for (int i = 1; i <= 3000; i++) {
                // a frame larger than the stage goes through, after what is staged
                assertNotNull(q.append(0, msg(i, i == 1500 ? 400_000 : 300), 0), "row " + i);
            }
            return null;
        });
        onLoop(() -> {
            for (int i = 3001; i <= 4000; i++) assertNotNull(q.append(0, msg(i, 300), 0));
            return null;
        });
        try (Stream<Path> s = Files.list(dir.resolve("db/T/keys/__rowid__"))) {
            assertTrue(s.count() > 1, "rolled over segments");
        }
        assertEquals(range(1, 4000), onLoop(() -> ids(q)));
        q.close();
        assertReopenedWith(600_000, range(1, 4000));
    }

    @Test
    void shouldWriteTheStageBeforeAnotherRevisionTakesTheQueueOverOrTheFactoryParksIt() throws Exception {
        TrQueue q = open(factory, 1 << 20, 4096);
        // staged, and no turn ends before the handover: the task holds the loop until the other revision has it
        TrQueueFactoryImpl next = new TrQueueFactoryImpl(ops);
        TrQueue taken = onLoop(() -> {
            for (int i = 1; i <= 50; i++) q.append(0, msg(i, 20), 0);
            return next.takeOver(q, dir, "db", "T", "", 0, 0, TrQueueOptions.defaults().withSegmentSize(1 << 20)
                    .withMaxMessageSize(4096).withFsyncIntervalMs(3_600_000));
        });
        assertNotNull(taken);
        assertEquals(50, count(segmentFile(), "\"id\":\"m-"));
        taken.onDurable((gen, rowid) -> told.set(rowid), loop);
        onLoop(() -> taken.append(0, msg(51, 20), 0));
        assertEquals(range(1, 51), onLoop(() -> ids(taken)));

        // park from another thread than the owner: the owner writes what it staged
        onLoop(() -> taken.append(0, msg(52, 20), 0));
        // the loop is busy when park comes from this thread: park waits for the owner to write what it staged
        // (park comes once 53 is staged: before that, the loop would append it after the park and no write would miss)
        CountDownLatch staged = new CountDownLatch(1);
        loop.execute(() -> {
            taken.append(0, msg(53, 20), 0);
            staged.countDown();
            try {
                Thread.sleep(300);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        assertTrue(staged.await(5, TimeUnit.SECONDS));
        next.park();
        assertEquals(53, count(segmentFile(), "\"id\":\"m-"));
        taken.close();
        assertReopenedWith(4096, range(1, 53));
    }

    @Test
    void shouldForceEveryAppendOfATurnOnceUnderAlwaysBeforeTellingAnyone() throws Exception {
        TrQueue q = factory.open(dir, "db", "T", "", 0, 0, TrQueueOptions.defaults().withSegmentSize(1 << 20)
                .withMaxMessageSize(4096).withFsyncPolicy(io.gatehouse.api.queue.FsyncPolicy.ALWAYS));
        q.onDurable((gen, rowid) -> told.set(rowid), loop);
        onLoop(() -> q.append(0, msg(0, 10), 0));
        int forces = ops.forces.get();
        onLoop(() -> {
            for (int i = 1; i <= 100; i++) q.append(0, msg(i, 10), 0);
            assertEquals(1, q.durableRowid(), "nothing promised inside the turn");
            return null;
        });
        onLoop(() -> null);   // after the turn's write and force
        assertEquals(101, q.durableRowid(), "promised after the turn, without a timer");
        onLoop(() -> null);   // after the listener's call, which the force queued behind the task above
        assertEquals(101, told.get());
        assertTrue(ops.forces.get() - forces <= 2, "one force for the turn's 100 appends: " + (ops.forces.get() - forces));
        // a force that fails promises nothing; the retry tick forces once the disk works
        ops.fail((op, p) -> op.equals("force") && p.toString().endsWith(".seg"), "Input/output error");
        onLoop(() -> q.append(0, msg(200, 10), 0));
        onLoop(() -> null);
        assertEquals(101, q.durableRowid());
        ops.heal();
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (q.durableRowid() != 102 && System.nanoTime() < deadline) Thread.sleep(10);
        assertEquals(102, q.durableRowid(), "forced by the retry tick");
        q.close();
        List<String> all = range(0, 100);
        all.add("m-200");
        assertReopenedWith(4096, all);
    }

    @Test
    void shouldCommitATurnOfManyRowsAtOnceAndLeaveAFewToThePeriodWithFsyncMaxRecords() throws Exception {
        // the period is an hour: only the count can start a commit during the test
        TrQueue q = factory.open(dir, "db", "T", "", 0, 0, TrQueueOptions.defaults().withSegmentSize(1 << 20)
                .withMaxMessageSize(4096).withFsyncIntervalMs(3_600_000).withFsyncMaxRecords(50));
        q.onDurable((gen, rowid) -> told.set(rowid), loop);
        onLoop(() -> {
            for (int i = 1; i <= 49; i++) q.append(0, msg(i, 10), 0);
            return null;
        });
        onLoop(() -> null);   // after the turn's write
        int forces = ops.forces.get();
        Thread.sleep(200);
        assertEquals(0, q.durableRowid(), "49 rows written wait for the period");
        assertEquals(forces, ops.forces.get());

        onLoop(() -> q.append(0, msg(50, 10), 0));
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (told.get() != 50 && System.nanoTime() < deadline) Thread.sleep(5);
        assertEquals(50, q.durableRowid(), "the 50th row written starts the commit");
        assertEquals(50, told.get(), "and the listener is told");

        // a burst: each turn's rows go with the next commit, none waits for the period
        for (int turn = 0; turn < 5; turn++) {
            int base = 100 + 100 * turn;
            onLoop(() -> {
                for (int i = 0; i < 100; i++) q.append(0, msg(base + i, 10), 0);
                return null;
            });
        }
        deadline = System.nanoTime() + 10_000_000_000L;
        while (q.durableRowid() != 550 && System.nanoTime() < deadline) Thread.sleep(5);
        assertEquals(550, q.durableRowid());
        q.close();
    }

    @Test
    void shouldWaitForThePeriodWhenFsyncMaxRecordsIsZero() throws Exception {
        TrQueue q = open(factory, 1 << 20, 4096);
        onLoop(() -> {
            for (int i = 1; i <= 1000; i++) q.append(0, msg(i, 10), 0);
            return null;
        });
        onLoop(() -> null);
        Thread.sleep(200);
        assertEquals(0, q.durableRowid(), "no count: the hour's period decides");
        q.close();
    }

    @Test
    void shouldWriteThroughWhenAppendsComeFromAnotherThreadThanTheListenersLoop() throws Exception {
        TrQueue q = open(factory, 1 << 20, 4096);
        q.append(0, msg(1, 10), 0);
        assertEquals(1, count(segmentFile(), "\"id\":\"m-1\""), "in the file at once");
        q.close();
    }

    @Test
    void shouldWriteStagedAcksBeforeABackupReplacesTheTopic() throws Exception {
        TrQueue q = factory.open(dir, "db", "T", "", 0, 10, TrQueueOptions.defaults().withSegmentSize(1 << 20)
                .withMaxMessageSize(4096).withFsyncIntervalMs(3_600_000));
        q.onDurable((gen, rowid) -> told.set(rowid), loop);
        long gen = q.generation();
        onLoop(() -> {
            List<QueueMessage> ms = new ArrayList<>();
            for (int i = 1; i <= 12; i++) ms.add(q.append(0, msg(i, 10), 0));
            for (QueueMessage m : ms) q.unload(m, 0);
            assertEquals(0, q.size());
            assertEquals(0, q.checkBackup());
            return null;
        });
        assertNotEquals(gen, q.generation(), "backed up: a new incarnation");
        onLoop(() -> q.append(0, msg(100, 10), 0));
        q.close();
        assertReopenedWith(4096, List.of("m-100"));
    }
}
