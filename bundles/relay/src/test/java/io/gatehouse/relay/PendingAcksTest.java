// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.relay;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The acks C_RELAY owes by token: every token given is taken once with what was kept for it, whatever the order
 * the outputs tell them in; the ring follows what is owed, not the traffic; at its maximum the oldest is dropped
 * and counted; a live upgrade's state gives the same table back.
 */
@Timeout(60)
class PendingAcksTest {

    private static byte[] ack(long n) {
        return ("ack-" + n).getBytes(StandardCharsets.US_ASCII);
    }

    private static ObjectNode temp(long n) {
        return JsonNodeFactory.instance.objectNode().put("channel", "c" + (n % 7));
    }

    @Test
    void shouldGiveBackWhatWasKeptForEachTokenWhenTwoOutputsTellThemApart() {
        PendingAcks p = new PendingAcks();
        Random rnd = new Random(17);
        // two queues behind one routing gate: each tells its own tokens in order, one of them lagging far behind
        ArrayDeque<Long> fast = new ArrayDeque<>();
        ArrayDeque<Long> slow = new ArrayDeque<>();
        Map<Long, ObjectNode> temps = new HashMap<>();
        long given = 0;
        long taken = 0;
        for (int round = 0; round < 2_000; round++) {
            for (int k = 0; k < 100; k++) {
                ObjectNode t = temp(given);
                long token = p.add(ack(given + 1), t, null);
                assertEquals(++given, token, "tokens are consecutive from 1");
                temps.put(token, t);
                (rnd.nextInt(3) == 0 ? slow : fast).add(token);
            }
            int fastTells = fast.size();
            int slowTells = round % 10 == 9 ? slow.size() : 0;   // the slow one commits every tenth round
            for (int k = 0; k < fastTells; k++) taken += take(p, fast.poll(), temps);
            for (int k = 0; k < slowTells; k++) taken += take(p, slow.poll(), temps);
            p.trim();
            assertEquals(given - taken, p.size());
            assertTrue(p.capacity() <= 8_192, "the ring follows the tokens in flight: " + p.capacity());
        }
        assertEquals(0, p.forgotten());
        assertFalse(p.take(given), "a token is taken once");
        assertFalse(p.take(given + 1), "a token never given");
        assertFalse(p.take(0));
        assertFalse(p.take(-5));
    }

    private static int take(PendingAcks p, long token, Map<Long, ObjectNode> temps) {
        assertTrue(p.take(token), "token " + token);
        assertArrayEquals(ack(token), p.takenAck);
        assertSame(temps.remove(token), p.takenTemp);
        return 1;
    }

    @Test
    void shouldGiveMemoryBackWhenTheOwedAcksAreTaken() {
        PendingAcks p = new PendingAcks();
        List<Long> tokens = new ArrayList<>();
        for (int i = 0; i < 100_000; i++) tokens.add(p.add(ack(i), null, null));
        assertTrue(p.capacity() >= 100_000);
        for (long t : tokens) assertTrue(p.take(t));
        int grown = p.capacity();
        p.trim();
        assertEquals(grown, p.capacity(), "one trim of an empty ring is not yet a quiet spell");
        for (int i = 1; i < PendingAcks.SHRINK_AFTER_TRIMS; i++) p.trim();
        assertEquals(PendingAcks.MIN_CAPACITY, p.capacity());
        // an old token never told (an output that went silent) keeps its slot: the ring halves only as far as
        // the newer ones let it, and keeps the old one
        long old = p.add(ack(1), null, null);
        for (int i = 0; i < 10 * PendingAcks.MIN_CAPACITY; i++) assertTrue(p.take(p.add(ack(i), null, null)));
        for (int i = 0; i < PendingAcks.SHRINK_AFTER_TRIMS; i++) p.trim();
        assertTrue(p.take(old));
    }

    @Test
    void shouldDropTheOldestAtItsMaximumAndCountIt() {
        PendingAcks p = new PendingAcks(16, 64);
        long first = p.add(ack(1), null, null);
        for (int i = 0; i < 63; i++) p.add(ack(i), null, null);
        assertEquals(64, p.capacity());
        assertEquals(0, p.forgotten());
        long next = p.add(ack(99), null, null);   // the slot of the first one, and the ring cannot grow
        assertEquals(1, p.forgotten());
        assertEquals(64, p.size());
        assertFalse(p.take(first), "the oldest was dropped to make room");
        assertTrue(p.take(next));
        assertArrayEquals(ack(99), p.takenAck);
    }

    @Test
    void shouldHandTheTableToTheNextRevisionAsJson() {
        PendingAcks p = new PendingAcks();
        List<Long> tokens = new ArrayList<>();
        for (int i = 0; i < 3_000; i++) tokens.add(p.add(ack(i + 1), temp(i + 1), null));
        for (int i = 0; i < 3_000; i += 2) assertTrue(p.take(tokens.get(i)));
        ObjectNode state = Kw.create();
        p.exportState(state);
        PendingAcks next = new PendingAcks();
        next.importState(state);
        assertEquals(1_500, next.size());
        for (int i = 1; i < 3_000; i += 2) {
            assertTrue(next.take(tokens.get(i)));
            assertArrayEquals(ack(i + 1), next.takenAck);
            assertEquals(temp(i + 1), next.takenTemp);
        }
        assertEquals(3_001, next.add(ack(0), null, null), "the next token follows the old revision's");
        // a state of a revision before tokens: nothing owed
        PendingAcks fromV1 = new PendingAcks();
        fromV1.importState(Kw.create().put("check_due_ms", 5));
        assertEquals(0, fromV1.size());
        assertEquals(1, fromV1.add(ack(0), null, null));
        // an entry without its bytes is refused: the import fails and core rebuilds the relay
        ObjectNode bad = Kw.create();
        bad.putArray("pending_acks").addObject().put("token", 4);
        assertThrows(IllegalArgumentException.class, () -> new PendingAcks().importState(bad));
    }
    @Test
    void shouldOweABatchsAckAfterItsLastTellOrAtItsFirstRefusalAndKeepTheCountThroughAHandover() {
        PendingAcks p = new PendingAcks(16, 64);
        long batch = p.add(ack(1), temp(1), null, 3);
        long refused = p.add(ack(2), temp(2), null, 4);
        long cut = p.add(ack(3), temp(3), null, 5);
        assertEquals(PendingAcks.WAITING, p.tell(batch, false));
        assertEquals(PendingAcks.WAITING, p.tell(batch, false));
        assertEquals(PendingAcks.ANSWER, p.tell(batch, false));
        assertArrayEquals(ack(1), p.takenAck);
        assertEquals(PendingAcks.UNKNOWN, p.tell(batch, false), "told once per message, no more");

        assertEquals(PendingAcks.ANSWER, p.tell(refused, true), "the first refusal answers the batch");
        assertArrayEquals(ack(2), p.takenAck);
        assertEquals(PendingAcks.WAITING, p.tell(refused, false), "answered, still held for the tells to come");

        assertTrue(p.refuse(cut, 3), "two sent, three never will be: the nack is owed at once");
        assertArrayEquals(ack(3), p.takenAck);
        assertFalse(p.refuse(cut, 0), "answered once");

        ObjectNode state = Kw.create();
        p.exportState(state);
        PendingAcks next = new PendingAcks(16, 64);
        next.importState(state);
        assertEquals(2, next.size());
        assertEquals(PendingAcks.WAITING, next.tell(refused, false));
        assertEquals(PendingAcks.WAITING, next.tell(refused, false), "the last tell of an answered batch answers nothing");
        assertEquals(PendingAcks.UNKNOWN, next.tell(refused, false));
        assertEquals(PendingAcks.WAITING, next.tell(cut, false));
        assertEquals(PendingAcks.WAITING, next.tell(cut, false));
        assertEquals(0, next.size());
        assertThrows(IllegalArgumentException.class, () -> p.add(ack(4), null, null, 0));
    }
}
