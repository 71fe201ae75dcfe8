// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.qiogate.InFlightWindow.InFlight;
import io.gatehouse.testkit.MemTrQueueFactory;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The credit window over an in-memory queue: no yuno, no gobj, time given as numbers. */
class InFlightWindowTest {
    private static final long TIMEOUT_ACK_MS = 1000;

    private TrQueue queue;
    private InFlightWindow window;

    @BeforeEach
    void setUp() {
        queue = new MemTrQueueFactory().open(Path.of("queues"), "db", "t", "", 0, 0, TrQueueOptions.defaults());
        window = new InFlightWindow(queue);
    }

    private void append(int n) {
        for (int i = 0; i < n; i++) queue.append(1, Kw.create().put("i", i), 0);
    }

    private List<Long> takeAll() {
        List<Long> out = new ArrayList<>();
        for (InFlight f = window.takeNext(); f != null; f = window.takeNext()) out.add(f.rowid());
        return out;
    }

    private void ack(long rowid) {
        window.drop(rowid);
        queue.unload(queue.getByRowid(rowid), 0);
    }

    @Test
    void shouldTakeMessagesInRowidOrderAndMarkThemInFlight() {
        append(3);
        assertEquals(List.of(1L, 2L, 3L), takeAll());
        assertEquals(3, window.size());
        for (long r = 1; r <= 3; r++) {
            assertEquals(InFlightWindow.MARK_INFLIGHT, queue.getByRowid(r).softMark() & InFlightWindow.MARK_INFLIGHT);
        }
        assertNull(window.takeNext(), "nothing left to send");
    }

    @Test
    void shouldBeFullByCountWhenMaxMessagesAreInFlight() {
        append(3);
        window.takeNext();
        assertFalse(window.isFull(2, 0));
        window.takeNext();
        assertTrue(window.isFull(2, 0));
        assertFalse(window.isFull(0, 0), "0 = no limit");
    }

    @Test
    void shouldBeFullByBytesButAlwaysLetTheFirstMessageGo() {
        append(3);
        assertFalse(window.isFull(0, 10), "an empty window is never full");
        InFlight big = window.takeNext();
        window.sent(big, 1000, 0, TIMEOUT_ACK_MS);
        assertTrue(window.isFull(0, 10), "one message larger than the window went alone");
        assertTrue(window.isFull(0, 1000));
        assertFalse(window.isFull(0, 1001));
    }

    @Test
    void shouldCountBytesOnceAndGiveThemBackWhenAMessageLeaves() {
        append(2);
        InFlight a = window.takeNext();
        InFlight b = window.takeNext();
        window.sent(a, 100, 0, TIMEOUT_ACK_MS);
        window.sent(b, 50, 0, TIMEOUT_ACK_MS);
        window.sent(a, 100, 5000, TIMEOUT_ACK_MS);
        assertEquals(150, window.bytes(), "a resend is not counted again");
        window.drop(a.rowid());
        assertEquals(50, window.bytes());
        assertFalse(window.holds(a));
        assertTrue(window.holds(b));
        window.drop(a.rowid());
        assertEquals(50, window.bytes(), "dropping twice gives nothing back twice");
    }

    @Test
    void shouldGoOnAfterTheFrontierWhenTheMessageThereWasAcked() {
        append(2);
        assertEquals(List.of(1L, 2L), takeAll());
        ack(2);
        append(2);
        assertEquals(List.of(3L, 4L), takeAll(), "the first row after the acked frontier");
    }

    @Test
    void shouldSkipWhatIsInFlightAfterARewind() {
        append(3);
        window.takeNext();
        window.takeNext();
        window.rewind();
        assertEquals(List.of(3L), takeAll(), "1 and 2 are still in flight");
        assertEquals(3, window.size());
    }

    @Test
    void shouldSkipWhatIsInFlightAboveAndBelowTheFrontierWhateverOrderTheAcksCameIn() {
        append(8);
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), List.of(window.takeNext().rowid(), window.takeNext().rowid(),
                window.takeNext().rowid(), window.takeNext().rowid(), window.takeNext().rowid()));
        ack(5);   // the highest taken acked first: 1 to 4 still in flight
        ack(2);
        window.rewind();
        assertEquals(List.of(6L, 7L, 8L), takeAll(), "1, 3 and 4 in flight, 2 and 5 gone");
        for (long r : new long[] {1, 3, 4, 6, 7, 8}) ack(r);
        assertTrue(window.isEmpty());
        append(2);
        window.rewind();
        assertEquals(List.of(9L, 10L), takeAll(), "an emptied window walks fresh rows as before");
    }

    @Test
    void shouldSkipTheUnreadableMarksOfTheQueueARestoredWindowTakesOver() {
        append(4);
        InFlight first = window.takeNext();
        window.unreadable(window.takeNext());
        com.fasterxml.jackson.databind.node.ObjectNode json = Kw.create();
        Object[] arrays = window.exportCompact(json);
        for (InFlightWindow w : new InFlightWindow[] {InFlightWindow.restoreCompact(queue, json, arrays, true, true),
                InFlightWindow.restore(queue, window.exportState())}) {
            w.rewind();
            List<Long> taken = new ArrayList<>();
            for (InFlight f = w.takeNext(); f != null; f = w.takeNext()) taken.add(f.rowid());
            assertEquals(List.of(3L, 4L), taken, "1 in flight, 2 unreadable: marked by the revision before");
            for (long r : taken) w.drop(r);
            assertEquals(1, w.size());
        }
        assertEquals(1, first.rowid());
    }

    @Test
    void shouldStartAgainFromTheOldestAndSkipUnreadableMessagesAfterAClear() {
        append(3);
        window.takeNext();
        InFlight second = window.takeNext();
        window.sent(second, 10, 0, TIMEOUT_ACK_MS);
        window.unreadable(second);
        assertEquals(1, window.size());
        assertEquals(0, window.bytes());
        QueueMessage m2 = queue.getByRowid(2);
        assertEquals(InFlightWindow.MARK_UNREADABLE, m2.softMark());

        window.clear();
        assertTrue(window.isEmpty());
        assertEquals(0, queue.getByRowid(1).softMark(), "in-flight marks cleared");
        assertEquals(List.of(1L, 3L), takeAll(), "from the oldest again, the unreadable one skipped");
    }

    @Test
    void shouldBeDueAfterTimeoutAckBackedOffByRetries() {
        append(1);
        InFlight f = window.takeNext();
        window.sent(f, 10, 0, TIMEOUT_ACK_MS);
        assertTrue(window.due(999).isEmpty());
        assertEquals(List.of(f), window.due(1000));

        assertTrue(window.retry(f), "a timeout");
        assertEquals(1, f.retries);
        window.sent(f, 10, 1000, TIMEOUT_ACK_MS);
        assertEquals(3000, f.dueMs, "the second wait is twice timeout_ack");
    }

    @Test
    void shouldBeDueAfterTheRetryDelayWhenNacked() {
        append(1);
        InFlight f = window.takeNext();
        window.sent(f, 10, 0, TIMEOUT_ACK_MS);
        assertSame(f, window.nack(f.rowid(), 500, 100, TIMEOUT_ACK_MS));
        assertEquals(1, f.retries, "a nack counts its retry");
        assertEquals(600, f.dueMs);
        assertSame(f, window.nack(f.rowid(), 600, 100, TIMEOUT_ACK_MS));
        assertEquals(800, f.dueMs, "the retry delay doubles");
        assertEquals(List.of(f), window.due(800));
        assertFalse(window.retry(f), "a resend after a nack is not a timeout");
        assertEquals(2, f.retries, "and counts no second retry");
        assertNull(window.nack(99, 0, 100, TIMEOUT_ACK_MS), "not in flight");
    }

    @Test
    void shouldDoubleTheBackoffUpToEightTimesTimeoutAck() {
        assertEquals(1000, InFlightWindow.backoff(1000, 0, 1000));
        assertEquals(2000, InFlightWindow.backoff(1000, 1, 1000));
        assertEquals(4000, InFlightWindow.backoff(1000, 2, 1000));
        assertEquals(8000, InFlightWindow.backoff(1000, 3, 1000));
        assertEquals(8000, InFlightWindow.backoff(1000, 40, 1000), "capped, and no overflow");
        assertEquals(6400, InFlightWindow.backoff(100, 6, 1000));
        assertEquals(8000, InFlightWindow.backoff(100, 7, 1000));
        assertEquals(100_000, InFlightWindow.backoff(100_000, 3, 1000), "a base over the cap is the cap");
        assertEquals(1, InFlightWindow.backoff(0, 0, 1000), "never 0 ms");
    }

    @Test
    void shouldListWhatIsInFlightInSendOrder() {
        append(3);
        takeAll();
        ack(2);
        List<Long> order = new ArrayList<>();
        for (InFlight f : window.inOrder()) order.add(f.rowid());
        assertEquals(List.of(1L, 3L), order);
    }

    // --- Live upgrade: the window handed over ---

    /** Rows 1..4 in flight, 2 nacked, 3 acked: what a handover finds. */
    private void windowWithRetries() {
        append(5);
        for (int i = 0; i < 4; i++) window.sent(window.takeNext(), 100 + i, 10 * i, TIMEOUT_ACK_MS);
        window.nack(2, 50, 300, TIMEOUT_ACK_MS);
        ack(3);
    }

    private static List<String> describe(InFlightWindow w) {
        List<String> out = new ArrayList<>();
        for (InFlight f : w.inOrder()) {
            out.add(f.rowid() + ":" + f.sentAtMs + ":" + f.dueMs + ":" + f.retries + ":" + f.bytes + ":" + f.nacked);
        }
        return out;
    }

    @Test
    void shouldHandTheWindowOverAsArraysOverTheSameHandleWithoutLookingTheMessagesUp() {
        windowWithRetries();
        List<String> before = describe(window);
        com.fasterxml.jackson.databind.node.ObjectNode json = Kw.create();
        Object[] arrays = window.exportCompact(json);
        assertEquals(3, json.get("count").asInt());
        assertEquals(4, json.get("highest").asLong());
        assertEquals(4, InFlightWindow.highestRowid(json));

        InFlightWindow w = InFlightWindow.restoreCompact(queue, json, arrays, true, true);

        assertEquals(before, describe(w), "rowids, times, retries, bytes, nacked, in send order");
        assertEquals(window.bytes(), w.bytes());
        assertSame(((QueueMessage[]) arrays[0])[0], w.get(1).msg, "the queue's own messages, taken as they are");
        assertEquals(5, w.takeNext().rowid(), "the frontier kept: the next send is rowid 5");
    }

    @Test
    void shouldFindTheMessagesAgainAndMarkThemOverAnotherHandle() {
        windowWithRetries();
        List<String> before = describe(window);
        com.fasterxml.jackson.databind.node.ObjectNode json = Kw.create();
        Object[] arrays = window.exportCompact(json);
        // the topic opened again: another handle over the same rows, nothing marked, row 4 acked meanwhile
        TrQueue other = new MemTrQueueFactory().open(Path.of("queues"), "db", "t", "", 0, 0, TrQueueOptions.defaults());
        for (int i = 0; i < 5; i++) other.append(1, Kw.create().put("i", i), 0);
        other.unload(other.getByRowid(3), 0);
        other.unload(other.getByRowid(4), 0);

        InFlightWindow w = InFlightWindow.restoreCompact(other, json, arrays, false, false);

        assertEquals(before.subList(0, 2), describe(w), "row 4 left out: the queue no longer holds it");
        assertEquals(InFlightWindow.MARK_INFLIGHT, other.getByRowid(1).softMark() & InFlightWindow.MARK_INFLIGHT);
        assertEquals(201, w.bytes());
    }

    @Test
    void shouldStillTakeTheJsonWindowOfStateVersion1() {
        windowWithRetries();
        List<String> before = describe(window);
        InFlightWindow w = InFlightWindow.restore(queue, window.exportState());
        assertEquals(before, describe(w));
    }

    @Test
    void shouldRefuseArraysThatAreNotAWindow() {
        com.fasterxml.jackson.databind.node.ObjectNode json = Kw.create();
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> InFlightWindow.restoreCompact(queue, json, new Object[] {new long[1]}, true, true));
        org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
                () -> InFlightWindow.restoreCompact(queue, json, new Object[] {new QueueMessage[1], new long[1],
                        new long[1], new int[1], new long[2], new boolean[1]}, true, true));
    }
}
