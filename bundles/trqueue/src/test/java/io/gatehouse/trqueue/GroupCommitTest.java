// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.testkit.LogCapture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/** GroupCommit over a real topic, without a queue: the flusher's tick is called by the test, never by a thread. */
@Timeout(30)
class GroupCommitTest {
    static final byte[] PAYLOAD = "{\"a\":1}".getBytes(StandardCharsets.UTF_8);

    @TempDir
    Path dir;

    final FaultyOps ops = new FaultyOps();
    final LogCapture log = new LogCapture();
    Topic tp;
    /** What the commit's topic supplier answers: the queue's topic, or null when it has none. */
    Topic queueTopic;
    /** What the listener was told, as "generation:rowid". */
    final List<String> told = new ArrayList<>();

    @BeforeEach
    void openTopic() throws Exception {
        Path t = dir.resolve("T");
        Topic.create(ops, t, Topic.newDesc("T", "", 2, 7), Kw.create());
        tp = TopicRecovery.open(ops, t, "T", 1 << 16, 1024);
        queueTopic = tp;
    }

    @AfterEach
    void tearDown() {
        ops.heal();
        tp.close();
        log.close();
    }

    GroupCommit commit(FsyncPolicy policy, Executor executor) {
        GroupCommit c = new GroupCommit("T", policy, () -> queueTopic, tp.generation, tp.lastRowid);
        c.onDurable((gen, rowid) -> told.add(gen + ":" + rowid), executor);
        return c;
    }

    GroupCommit interval() {
        return commit(FsyncPolicy.INTERVAL, Runnable::run);
    }

    /** An INTERVAL commit whose first tick covered one appended row. */
    GroupCommit committedOneRow() throws IOException {
        GroupCommit c = interval();
        append();
        c.flushTick();
        return c;
    }

    /** Runs one tick of the flusher; answers whether it forced anything. */
    boolean tickForced(GroupCommit c) {
        int before = ops.forces.get();
        c.flushTick();
        return ops.forces.get() > before;
    }

    /** Appends one row and tells {@code c}, as the queue's append does; answers whether that forced anything. */
    boolean appendForced(GroupCommit c) throws IOException {
        long rowid = append();
        int before = ops.forces.get();
        c.appended(tp, 7, rowid);
        return ops.forces.get() > before;
    }

    long append() throws IOException {
        return tp.append(1, 0, TrQueue.MSG_PENDING, PAYLOAD, PAYLOAD.length);
    }

    @Test
    void shouldForceMoveTheMarkAndTellWhenTheTickFindsNewRows() throws Exception {
        GroupCommit c = interval();
        append();
        append();
        long last = append();
        assertEquals(0, c.durableRowid(7), "nothing is durable before a commit");
        assertTrue(tickForced(c), "the segment was forced");
        assertEquals(last, c.durableRowid(7));
        assertEquals(List.of("7:3"), told);
    }

    @Test
    void shouldNotForceWhenNothingWasWrittenSinceTheLastCommit() throws Exception {
        GroupCommit c = committedOneRow();
        assertFalse(tickForced(c));
        assertFalse(tickForced(c));
        assertEquals(List.of("7:1"), told);
    }

    @Test
    void shouldForceAgainWhenOnlyAFlagWasWritten() throws Exception {
        GroupCommit c = committedOneRow();
        c.flagWritten();
        assertTrue(tickForced(c), "the ack is forced although no row was added");
        assertEquals(List.of("7:1", "7:1"), told);
    }

    @Test
    void shouldKeepTheMarkAndSayItOnceWhenTheForceFails() throws Exception {
        GroupCommit c = interval();
        append();
        ops.fail((op, p) -> op.equals("force"), "Input/output error");
        c.flushTick();
        c.flushTick();
        assertEquals(0, c.durableRowid(7));
        assertEquals(List.of(), told);
        assertEquals(1, log.count("Queue fsync FAILED"), "said once per streak");
        ops.heal();
        c.flushTick();
        assertEquals(1, c.durableRowid(7));
        ops.fail((op, p) -> op.equals("force"), "Input/output error");
        append();
        c.flushTick();
        assertEquals(2, log.count("Queue fsync FAILED"), "said again after a force worked");
        assertEquals(1, c.durableRowid(7));
    }

    @Test
    void shouldCoalesceCallsWhenTheListenerHasNotRunYet() throws Exception {
        List<Runnable> waiting = new ArrayList<>();
        GroupCommit c = commit(FsyncPolicy.INTERVAL, waiting::add);
        append();
        c.flushTick();
        append();
        c.flushTick();
        assertEquals(1, waiting.size(), "one call waits for both commits");
        waiting.remove(0).run();
        assertEquals(List.of("7:2"), told, "the call reads the mark when it runs");
        append();
        c.flushTick();
        assertEquals(1, waiting.size(), "a later commit schedules a new call");
    }

    @Test
    void shouldGiveTheExecutorOneTaskPerCommitHoweverManyRowsItCovers() throws Exception {
        List<Runnable> waiting = new ArrayList<>();
        GroupCommit c = commit(FsyncPolicy.INTERVAL, waiting::add);
        for (int i = 0; i < 1000; i++) append();
        c.flushTick();
        assertEquals(1, waiting.size(), "one task to the core loop for the thousand rows of one commit");
        waiting.remove(0).run();
        assertEquals(List.of("7:1000"), told, "carrying the highest rowid it covers");
    }

    @Test
    void shouldTellTheOtherListenersAndKeepCommittingWhenAListenerThrows() throws Exception {
        // On the flusher thread itself (no executor): an exception escaping the tick would cancel the periodic task.
        GroupCommit c = new GroupCommit("T", FsyncPolicy.INTERVAL, () -> queueTopic, tp.generation, tp.lastRowid);
        List<String> second = new ArrayList<>();
        boolean[] throwing = {true};
        c.onDurable((gen, rowid) -> {
            if (throwing[0]) throw new IllegalStateException("listener bug " + rowid);
            told.add(gen + ":" + rowid);
        }, null);
        c.onDurable((gen, rowid) -> second.add(gen + ":" + rowid), null);
        append();
        assertDoesNotThrow(c::flushTick);
        append();
        assertDoesNotThrow(c::flushTick);
        assertEquals(List.of("7:1", "7:2"), second, "the listener after the one that threw is told every commit");
        assertEquals(List.of(), told);
        assertEquals(1, log.count("Queue durability listener failed (said once until it works again)"), "said once per streak");
        throwing[0] = false;
        append();
        c.flushTick();
        assertEquals(List.of("7:3"), told, "told again at the next commit, with everything it covers");
        throwing[0] = true;
        append();
        c.flushTick();
        assertEquals(2, log.count("Queue durability listener failed (said once until it works again)"), "said again after a call worked");
    }

    @Test
    void shouldTellAtTheNextCommitWhenTheExecutorRejectedACall() throws Exception {
        boolean[] reject = {true};
        GroupCommit c = commit(FsyncPolicy.INTERVAL, r -> {
            if (reject[0]) throw new RejectedExecutionException("shut down");
            r.run();
        });
        append();
        c.flushTick();
        assertEquals(List.of(), told);
        reject[0] = false;
        append();
        c.flushTick();
        assertEquals(List.of("7:2"), told);
    }

    @Test
    void shouldDoNothingWhenTheQueueHasNoTopic() throws Exception {
        GroupCommit c = interval();
        append();
        queueTopic = null;
        int before = ops.forces.get();
        c.flushTick();
        c.sync();
        assertEquals(before, ops.forces.get());
        assertEquals(0, c.durableRowid(7));
        assertEquals(List.of(), told);
    }

    @Test
    void shouldAnswerZeroWhenTheMarkIsOfAnotherGeneration() {
        GroupCommit c = interval();
        c.mark(7, 5);
        assertEquals(5, c.durableRowid(7));
        assertEquals(0, c.durableRowid(8));
        assertEquals(List.of(), told, "a mark set by the queue tells no one");
    }

    @Test
    void shouldForceAndTellOnAppendWhenThePolicyIsAlways() throws Exception {
        GroupCommit c = commit(FsyncPolicy.ALWAYS, Runnable::run);
        assertTrue(appendForced(c));
        assertEquals(List.of("7:1"), told);
        assertEquals(1, c.durableRowid(7));
    }

    @Test
    void shouldThrowAndKeepTheMarkWhenTheAlwaysForceFails() throws Exception {
        GroupCommit c = commit(FsyncPolicy.ALWAYS, Runnable::run);
        long rowid = append();
        ops.fail((op, p) -> op.equals("force"), "Input/output error");
        assertThrows(IOException.class, () -> c.appended(tp, 7, rowid));
        assertEquals(0, c.durableRowid(7));
        assertEquals(List.of(), told);
    }

    @Test
    void shouldTellWithoutForcingOnAppendWhenThePolicyIsNone() throws Exception {
        GroupCommit c = commit(FsyncPolicy.NONE, Runnable::run);
        assertFalse(appendForced(c));
        assertEquals(List.of("7:1"), told);
    }

    @Test
    void shouldLeaveTheAppendToTheFlusherWhenThePolicyIsInterval() throws Exception {
        GroupCommit c = interval();
        assertFalse(appendForced(c));
        assertEquals(0, c.durableRowid(7));
        assertEquals(List.of(), told);
    }

    @Test
    void shouldCoverRowsAndFlagsWhenSynced() throws Exception {
        GroupCommit c = interval();
        append();
        append();
        c.flagWritten();
        c.sync();
        assertEquals(2, c.durableRowid(7));
        assertEquals(List.of("7:2"), told);
        assertFalse(tickForced(c), "the tick after a sync has nothing to force");
    }

    @Test
    void shouldNotForceAtTheNextTickWhenTheQueueForcedEverything() throws Exception {
        GroupCommit c = interval();
        long last = append();
        c.flagWritten();
        c.forced(7, last);
        assertEquals(last, c.durableRowid(7));
        assertFalse(tickForced(c));
        assertEquals(List.of(), told, "a mark the queue sets tells no one");
    }

    /** A scheduler whose periodic tick never runs and whose early commits wait in {@link #early} for the test. */
    final List<Runnable> early = new ArrayList<>();
    boolean flusherGone;
    final GroupCommit.Scheduler recording = new GroupCommit.Scheduler() {
        @Override
        public ScheduledFuture<?> every(Runnable tick, long intervalMs) {
            return null;
        }

        @Override
        public boolean now(Runnable task) {
            if (flusherGone) return false;
            early.add(task);
            return true;
        }
    };

    @Test
    void shouldAskOneEarlyCommitWhenMaxRecordsWaitAndAnotherOnlyOnceItStarted() throws Exception {
        GroupCommit c = interval();
        c.start(recording, 5, 3);
        assertFalse(appendForced(c));
        assertFalse(appendForced(c));
        assertEquals(0, early.size(), "2 written, 3 needed");
        assertFalse(appendForced(c), "the append itself never forces");
        assertEquals(1, early.size(), "the third asks the flusher");
        appendForced(c);
        assertEquals(1, early.size(), "one asked and not started: no second");

        early.remove(0).run();
        assertEquals(4, c.durableRowid(7), "it covers what was written when it ran");
        assertEquals(List.of("7:4"), told);
        appendForced(c);
        appendForced(c);
        assertEquals(0, early.size(), "2 wait since that commit");
        appendForced(c);
        assertEquals(1, early.size());
        early.remove(0).run();
        assertEquals(7, c.durableRowid(7));
    }

    @Test
    void shouldAskNoEarlyCommitWithoutACountOrUnderAnotherPolicy() throws Exception {
        GroupCommit none = interval();
        none.start(recording, 5, 0);
        for (int i = 0; i < 10; i++) appendForced(none);
        assertEquals(0, early.size(), "0: the period only");

        GroupCommit nonePolicy = commit(FsyncPolicy.NONE, Runnable::run);
        nonePolicy.start(recording, 5, 1);
        for (int i = 0; i < 10; i++) appendForced(nonePolicy);
        assertEquals(0, early.size(), "NONE forces nothing");
    }

    @Test
    void shouldAskAgainAtTheNextWriteWhenTheFlusherWasGone() throws Exception {
        GroupCommit c = interval();
        c.start(recording, 5, 1);
        flusherGone = true;
        appendForced(c);
        assertEquals(0, early.size());
        flusherGone = false;
        appendForced(c);
        assertEquals(1, early.size(), "a refused ask does not block the next one");
        early.remove(0).run();
        assertEquals(2, c.durableRowid(7));
    }

    @Test
    void shouldScheduleAFlusherForIntervalAndASlowRetryForAlwaysAndNoneForNone() {
        ScheduledExecutorService ses = Executors.newSingleThreadScheduledExecutor();
        try {
            List<Long> intervals = new ArrayList<>();
            List<ScheduledFuture<?>> tasks = new ArrayList<>();
            GroupCommit.Scheduler scheduler = (tick, ms) -> {
                intervals.add(ms);
                ScheduledFuture<?> f = ses.scheduleWithFixedDelay(tick, 1, 1, TimeUnit.HOURS);
                tasks.add(f);
                return f;
            };
            commit(FsyncPolicy.NONE, Runnable::run).start(scheduler, 5, 0);
            assertEquals(List.of(), intervals);
            // ALWAYS forces on its own: its tick only retries a force that failed, at most every 100 ms
            commit(FsyncPolicy.ALWAYS, Runnable::run).start(scheduler, 5, 0);
            assertEquals(List.of(GroupCommit.ALWAYS_RETRY_MS), intervals);
            GroupCommit c = interval();
            c.start(scheduler, 5, 0);
            assertEquals(List.of(GroupCommit.ALWAYS_RETRY_MS, 5L), intervals);
            c.stop();
            assertTrue(tasks.get(1).isCancelled());
        } finally {
            ses.shutdownNow();
        }
    }
}
