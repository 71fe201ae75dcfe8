// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.testkit.LogCapture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A live upgrade of trqueue: the factory of the new revision takes over a queue another factory has open
 * ({@link TrQueueFactoryImpl#takeOver}), with its files, list and soft marks, without reading the topic again; the
 * old handle is detached. When it cannot (no state, another format, a broken state), it answers null and the old
 * handle is left as it was: the caller closes it and opens the topic again, losing nothing. A second factory
 * instance stands for the other revision.
 */
@Timeout(30)
class TrQueueTakeOverTest {
    @TempDir
    Path dir;

    final TrQueueFactoryImpl oldF = new TrQueueFactoryImpl();
    final TrQueueFactoryImpl newF = new TrQueueFactoryImpl();
    final LogCapture log = new LogCapture();

    static final TrQueueOptions OPTS = TrQueueOptions.defaults().withSegmentSize(1 << 16).withMaxMessageSize(4096)
            .withFsyncPolicy(FsyncPolicy.INTERVAL).withFsyncIntervalMs(5);

    @AfterEach
    void tearDown() {
        oldF.close();
        newF.close();
        log.close();
    }

    TrQueue open(TrQueueFactoryImpl f) {
        return f.open(dir, "db", "T", "", 0, 0, OPTS);
    }

    TrQueue takeOver(TrQueueFactoryImpl f, TrQueue from) {
        return f.takeOver(from, dir, "db", "T", "", 0, 0, OPTS);
    }

    static ObjectNode msg(int i) {
        return Kw.create().put("id", i).put("pad", "x".repeat(200));
    }

    static List<Long> rowids(TrQueue q) {
        List<Long> out = new ArrayList<>();
        for (QueueMessage m = q.first(); m != null; m = q.next(m)) out.add(m.rowid());
        return out;
    }

    /** 1..n appended over several segments, every third acked, rows 2 and 5 soft-marked. */
    TrQueue filled(int n) {
        TrQueue q = open(oldF);
        q.load();
        for (int i = 1; i <= n; i++) assertNotNull(q.append(msg(i)));
        for (int r = 3; r <= n; r += 3) assertEquals(0, q.unload(q.getByRowid(r), 0));
        q.setSoftMark(q.getByRowid(2), 0x1, true);
        q.setSoftMark(q.getByRowid(5), 0x100, true);
        return q;
    }

    @Test
    void shouldTakeTheOpenQueueOverWithItsListMarksAndRowidsAndDetachTheOldHandle() throws Exception {
        TrQueue old = filled(1000);   // 1000 frames of ~250 bytes: several segments of 64 KiB
        List<Long> listed = rowids(old);
        long gen = old.generation();
        ObjectNode m7 = old.msgJson(old.getByRowid(7));

        TrQueue q = takeOver(newF, old);

        assertNotNull(q);
        assertNotSame(old, q);
        assertEquals(listed, rowids(q), "the same list, not loaded again");
        assertEquals(gen, q.generation());
        assertEquals(1000, q.lastRowid());
        assertEquals(0x1, q.getByRowid(2).softMark());
        assertEquals(0x100, q.getByRowid(5).softMark());
        assertEquals(m7, q.msgJson(q.getByRowid(7)), "records read through the mappings taken over");
        assertNull(q.getByRowid(3), "acked before the takeover");
        // the old handle is detached: closed to its owner, its files are the new handle's
        assertEquals(0, old.lastRowid());
        assertNull(old.append(msg(0)));
        assertNull(old.openState(), "nothing left to take over twice");

        // the new handle goes on: rowids follow, acks clear, durability is told by the new factory's flusher
        CountDownLatch durable = new CountDownLatch(1);
        AtomicLong seen = new AtomicLong();
        q.onDurable((g, r) -> {
            seen.set(r);
            if (r >= 1001) durable.countDown();
        }, Runnable::run);
        assertEquals(1001, q.append(msg(1001)).rowid());
        assertTrue(durable.await(10, TimeUnit.SECONDS), "durable after a group commit of the new factory: " + seen);
        assertEquals(0, q.unload(q.getByRowid(1), 0));
        q.close();

        // on disk: what either handle wrote and acked
        TrQueueFactoryImpl f = new TrQueueFactoryImpl();
        try {
            TrQueue again = f.open(dir, "db", "T", "", 0, 0, OPTS);
            again.load();
            List<Long> expected = new ArrayList<>(listed);
            expected.remove(Long.valueOf(1));
            expected.add(1001L);
            assertEquals(expected, rowids(again), "pending on disk: the list of both handles");
            again.close();
        } finally {
            f.close();
        }
    }

    @Test
    void shouldTakeOverAQueueParkedByAFactoryThatWentAway() {
        TrQueue old = filled(50);
        List<Long> listed = rowids(old);
        oldF.park();   // Bundle.update() of trqueue: the old revision stops before the new one exists

        TrQueue q = takeOver(newF, old);

        assertNotNull(q, "a parked queue keeps its files open for the next revision");
        assertEquals(listed, rowids(q));
        assertEquals(51, q.append(msg(51)).rowid());
        q.close();
    }

    @Test
    void shouldCloseAParkedQueueThatNoRevisionTookAndReleaseItsTopic() {
        TrQueue old = filled(20);
        List<Long> listed = rowids(old);
        oldF.park();
        old.close();   // the gate gave up waiting: it closes its queue itself

        TrQueue q = open(newF);
        q.load();
        assertEquals(listed, rowids(q), "nothing lost: the parked queue forced what it wrote");
    }

    @Test
    void shouldAnswerNullAndLeaveTheHandleAsItWasWhenThereIsNothingToTakeOver() {
        TrQueue old = filled(10);
        assertNull(takeOver(oldF, old), "a handle of this very factory is not taken over");
        assertEquals(10, old.lastRowid());

        old.close();
        assertNull(takeOver(newF, old), "a closed handle has no state");
        assertNull(newF.takeOver(null, dir, "db", "T", "", 0, 0, OPTS));
    }

    @Test
    void shouldRefuseAStateOfAnotherFormatOrTopicOrABrokenOneAndLeaveTheOldHandleWorking() {
        TrQueue old = filled(30);
        List<Long> listed = rowids(old);

        assertNull(takeOver(newF, handle(old, st -> st.put("format", "some-other-trqueue/9"))));
        assertNull(newF.takeOver(old, dir, "db", "OTHER", "", 0, 0, OPTS), "another topic");
        assertNull(takeOver(newF, handle(old, st -> st.remove("segments"))), "a broken state");
        assertNull(takeOver(newF, handle(old, st -> st.put("list", new long[1]))), "a broken list");
        assertEquals(4, log.count("Queue cannot be taken over, its topic is opened again"), log.all().toString());

        // the old handle was not detached: it still works, and the fallback (close, open again) loses nothing
        assertEquals(listed, rowids(old));
        assertEquals(31, old.append(msg(31)).rowid());
        old.close();
        TrQueue q = open(newF);
        q.load();
        List<Long> expected = new ArrayList<>(listed);
        expected.add(31L);
        assertEquals(expected, rowids(q));
    }

    /** A view of {@code real} whose open state is changed by {@code edit} (another revision's, or a broken one). */
    static TrQueue handle(TrQueue real, java.util.function.Consumer<Map<String, Object>> edit) {
        return (TrQueue) Proxy.newProxyInstance(TrQueue.class.getClassLoader(), new Class<?>[] {TrQueue.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("openState")) {
                        Map<String, Object> st = real.openState();
                        if (st == null) return null;
                        Map<String, Object> copy = new HashMap<>(st);
                        edit.accept(copy);
                        return copy;
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
    }
}
