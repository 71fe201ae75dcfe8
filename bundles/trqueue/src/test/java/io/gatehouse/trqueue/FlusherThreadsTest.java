// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.Poll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The factory's flusher threads: a queue whose force is slow (a busy disk, a file system that stalls) does not hold
 * the commits of the other queues, which a request written to two queues waits for.
 */
@Timeout(60)
class FlusherThreadsTest {
    @TempDir
    Path dir;

    /** Forces of the files under {@code slow/} wait for {@link #releaseSlow} once armed. */
    volatile boolean holdSlow;
    final CountDownLatch slowForcing = new CountDownLatch(1);
    final CountDownLatch releaseSlow = new CountDownLatch(1);
    final FaultyOps ops = new FaultyOps() {
        @Override
        public void force(Path p, FileChannel ch) throws IOException {
            if (holdSlow && p.toString().contains("/slow/")) {
                slowForcing.countDown();
                try {
                    releaseSlow.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            super.force(p, ch);
        }
    };
    TrQueueFactoryImpl factory;

    @AfterEach
    void tearDown() {
        releaseSlow.countDown();
        if (factory != null) factory.close();
    }

    TrQueue open(String database, AtomicLong told) {
        TrQueue q = factory.open(dir, database, "T", "", 0, 0, TrQueueOptions.defaults().withFsyncIntervalMs(5));
        q.onDurable((gen, rowid) -> told.set(rowid), null);
        return q;
    }

    static ObjectNode msg(String id) {
        ObjectNode kw = Kw.create();
        kw.put("id", id);
        return kw;
    }

    static void awaitTold(AtomicLong told, long rowid, String what) {
        assertTrue(Poll.until(() -> told.get() >= rowid, 10_000), what + ": told " + told.get() + ", wanted " + rowid);
    }

    @Test
    void shouldCommitOneQueueWhileAnotherQueuesForceHangs() throws Exception {
        factory = new TrQueueFactoryImpl(ops);
        assertEquals(TrQueueFactoryImpl.DEFAULT_FLUSHERS, factory.flushers());
        AtomicLong toldSlow = new AtomicLong();
        AtomicLong toldOther = new AtomicLong();
        TrQueue slow = open("slow", toldSlow);
        TrQueue other = open("other", toldOther);

        holdSlow = true;
        QueueMessage stuck = slow.append(0, msg("s-1"), 0);
        assertNotNull(stuck);
        assertTrue(slowForcing.await(10, TimeUnit.SECONDS), "the slow queue's force started");

        // one flusher is held in the slow force: the other queue's records are still forced and told
        QueueMessage m = other.append(0, msg("o-1"), 0);
        assertNotNull(m);
        awaitTold(toldOther, m.rowid(), "the other queue's commit, while the slow force hangs");
        assertEquals(0, toldSlow.get(), "nothing promised for the slow queue before its force ends");

        releaseSlow.countDown();
        awaitTold(toldSlow, stuck.rowid(), "the slow queue's commit once its force ends");
    }

    @Test
    void shouldTakeOneToSixteenFlusherThreads() {
        assertThrows(IllegalArgumentException.class, () -> new TrQueueFactoryImpl(ops, 0));
        assertThrows(IllegalArgumentException.class, () -> new TrQueueFactoryImpl(ops, TrQueueFactoryImpl.MAX_FLUSHERS + 1));
        assertEquals(1, new TrQueueFactoryImpl(ops, 1).flushers());
    }

    @Test
    void shouldReadTheFlushersPropertyAndSayWhyABadOneIsNotTaken() {
        try (LogCapture log = new LogCapture()) {
            assertEquals(TrQueueFactoryImpl.DEFAULT_FLUSHERS, TrQueueService.flushers(null));
            assertEquals(TrQueueFactoryImpl.DEFAULT_FLUSHERS, TrQueueService.flushers(" "));
            assertEquals(4, TrQueueService.flushers(" 4 "));
            assertEquals(0, log.count("Bad gatehouse.trqueue.flushers, the default is used: it must be a number from 1 to 16"));
            for (String bad : new String[] {"0", "17", "two", "-1"}) {
                assertEquals(TrQueueFactoryImpl.DEFAULT_FLUSHERS, TrQueueService.flushers(bad), bad);
            }
            assertEquals(4, log.count("Bad gatehouse.trqueue.flushers, the default is used: it must be a number from 1 to 16"));
        }
    }
}
