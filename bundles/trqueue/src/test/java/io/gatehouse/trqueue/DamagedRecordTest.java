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

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;
import java.util.function.BiConsumer;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.*;

/**
 * A record damaged in the middle of the last segment (a flipped byte, a zero-filled run, a garbage length field):
 * recovery resynchronises on the next valid frame, so only the damaged rows are lost. The damaged bytes are set
 * aside and reported once; the gap stays a gap after later opens (no ghost rows), and rowids go on after the
 * last row.
 */
@Timeout(60)
class DamagedRecordTest {
    @TempDir
    Path dir;

    final TrQueueFactoryImpl factory = new TrQueueFactoryImpl();
    final LogCapture log = new LogCapture();
    static final TrQueueOptions OPTS = TrQueueOptions.defaults().withSegmentSize(1 << 16).withMaxMessageSize(2048);
    static final int N = 60;
    static final int HIT = 31;
    static final String DAMAGED = "Queue records damaged, set aside";

    @AfterEach
    void tearDown() {
        factory.close();
        log.close();
    }

    static ObjectNode msg(int i) {
        ObjectNode kw = Kw.create();
        kw.put("i", i);
        kw.put("body", "m".repeat(20 + (i * 7) % 60));
        return kw;
    }

    TrQueue open() {
        return factory.open(dir, "db", "T", "", 0, 0, OPTS);
    }

    Path seg() {
        return dir.resolve("db/T/keys/__rowid__/00000000000000000001.seg");
    }

    /** Frame starts (index = rowid) and the end of the data. */
    static long[] starts(byte[] b, int n) {
        long[] s = new long[n + 2];
        ByteBuffer bb = ByteBuffer.wrap(b);
        int pos = 64;
        for (int r = 1; r <= n; r++) {
            s[r] = pos;
            pos += (bb.getInt(pos) + 7) & ~7;
        }
        s[n + 1] = pos;
        return s;
    }

    /** Writes N records (every third acked), damages the segment, and checks the three opens after it. */
    void damaged(String what, BiConsumer<byte[], long[]> damage, long lostFrom, long lostTo) throws Exception {
        TrQueue q = open();
        TreeSet<Long> pending = new TreeSet<>();
        for (int i = 1; i <= N; i++) {
            QueueMessage m = q.append(1000 + i, msg(i), 0);
            pending.add(m.rowid());
            if (i % 3 == 0) {
                q.unload(m, 0);
                pending.remove(m.rowid());
            }
        }
        q.close();
        byte[] b = Files.readAllBytes(seg());
        long[] st = starts(b, N);
        byte[] orig = b.clone();
        damage.accept(b, st);
        Files.write(seg(), b);
        List<Long> expect = new ArrayList<>();
        for (long r : pending) if (r < lostFrom || r > lostTo) expect.add(r);

        // 1. the open that finds the damage
        log.clear();
        q = open();
        assertEquals(List.of("ERROR " + DAMAGED), log.messages(LogCapture.Level.INFO), what);
        LogCapture.Rec rec = log.with(DAMAGED).get(0);
        assertEquals(lostFrom, ((Number) rec.fields.get("lost_from")).longValue(), what + " " + rec);
        assertEquals(lostTo, ((Number) rec.fields.get("lost_to")).longValue(), what + " " + rec);
        assertEquals(st[(int) lostFrom], ((Number) rec.fields.get("offset")).longValue(), what + " " + rec);
        assertEquals(st[(int) lostTo + 1] - st[(int) lostFrom], ((Number) rec.fields.get("length")).longValue());
        Path aside = Path.of((String) rec.fields.get("set_aside"));
        assertArrayEquals(Arrays.copyOfRange(b, (int) st[(int) lostFrom], (int) st[(int) lostTo + 1]),
                Files.readAllBytes(aside), what + ": the damaged bytes are set aside");
        log.clear();
        assertEquals(-1, q.load(), what + ": this load misses the damaged rows");
        assertEquals(expect, rowids(q), what);
        checkRows(q, orig, lostFrom, lostTo, what);
        assertEquals(N + 1, q.append(5000, msg(N + 1), 0).rowid(), what + ": appends go on after the last row");
        q.close();

        // 2. later opens: the gap is known, said no more, no ghost rows
        for (int round = 2; round <= 3; round++) {
            log.clear();
            q = open();
            assertEquals(0, log.count(DAMAGED), what + " round " + round + " " + log);
            assertEquals(0, q.load(), what + ": the gap was set aside, the queue loads whole");
            List<Long> again = new ArrayList<>(expect);
            for (long r = N + 1; r < N + round; r++) again.add(r);
            assertEquals(again, rowids(q), what + " round " + round);
            checkRows(q, orig, lostFrom, lostTo, what + " round " + round);
            assertEquals(N + round, q.append(5000, msg(N + round), 0).rowid(), what + " round " + round);
            assertEquals(N + round, q.topicSize());
            q.close();
        }
        try (Stream<Path> s = Files.list(seg().getParent())) {
            assertEquals(1, s.filter(p -> p.getFileName().toString().contains(".damaged-")).count(), what);
        }
    }

    void checkRows(TrQueue q, byte[] orig, long lostFrom, long lostTo, String what) {
        for (long r = 1; r <= N; r++) {
            if (r >= lostFrom && r <= lostTo) {
                assertNull(q.getByRowid(r), what + ": row " + r + " was lost");
                assertEquals(-1, q.checkPendingRowid(1000 + r, r), what + ": row " + r);
            } else if (r % 3 == 0) {
                assertNull(q.getByRowid(r), what + ": row " + r + " was acked");
                assertEquals(0, q.checkPendingRowid(1000 + r, r), what + ": row " + r + " stays acked");
            } else {
                QueueMessage m = q.getByRowid(r);
                assertNotNull(m, what + ": row " + r + " survives");
                assertEquals((int) r, q.msgJson(m).get("i").asInt(), what);
                assertEquals(1, q.checkPendingRowid(1000 + r, r), what + ": row " + r + " pending");
            }
        }
        int listed = q.size();
        assertEquals(0, q.loadAllByTime(1000 + lostFrom, 1000 + lostTo));
        assertEquals(listed, q.size(), what + ": no ghost row listed by time");
    }

    static List<Long> rowids(TrQueue q) {
        List<Long> out = new ArrayList<>();
        for (QueueMessage m = q.first(); m != null; m = q.next(m)) out.add(m.rowid());
        return out;
    }

    @Test
    void shouldLoseOnlyThatRecordWhenAPayloadByteFlips() throws Exception {
        damaged("flip", (b, st) -> b[(int) st[HIT] + 40 + 5] ^= 0x5a, HIT, HIT);
    }

    @Test
    void shouldLoseOnlyThatRecordWhenAHeaderByteFlips() throws Exception {
        damaged("flip rowid", (b, st) -> b[(int) st[HIT] + 15] ^= 0x01, HIT, HIT);
    }

    @Test
    void shouldLoseBothRecordsWhenAZeroRunSpansThem() throws Exception {
        // 100 zero bytes: the end of HIT and the header of HIT + 1
        damaged("zero", (b, st) -> {
            assertTrue(st[HIT + 1] - 50 > st[HIT] && st[HIT + 1] + 50 < st[HIT + 2]);
            Arrays.fill(b, (int) st[HIT + 1] - 50, (int) st[HIT + 1] + 50, (byte) 0);
        }, HIT, HIT + 1);
    }

    @Test
    void shouldLoseOnlyThatRecordWhenItIsZeroFilled() throws Exception {
        damaged("zero whole", (b, st) -> Arrays.fill(b, (int) st[HIT], (int) st[HIT + 1], (byte) 0), HIT, HIT);
    }

    @Test
    void shouldNotSkipValidFramesWhenALengthPointsFarAhead() throws Exception {
        // a sane length that lands exactly on a later frame's start: the scan must not follow it
        damaged("len ahead", (b, st) -> ByteBuffer.wrap(b).putInt((int) st[HIT], (int) (st[HIT + 10] - st[HIT])),
                HIT, HIT);
    }

    @Test
    void shouldLoseOnlyThatRecordWhenItsLengthIsHuge() throws Exception {
        damaged("len huge", (b, st) -> ByteBuffer.wrap(b).putInt((int) st[HIT], 0x7fff_fff0), HIT, HIT);
    }

    @Test
    void shouldLoseOnlyThatRecordWhenItsLengthIsTiny() throws Exception {
        damaged("len tiny", (b, st) -> ByteBuffer.wrap(b).putInt((int) st[HIT], 8), HIT, HIT);
    }

    @Test
    void shouldCutATornTailWhenNothingValidFollowsTheDamage() throws Exception {
        // the last record damaged: nothing valid follows, so it is a torn tail (cut), not a gap
        TrQueue q = open();
        for (int i = 1; i <= 10; i++) q.append(1000 + i, msg(i), 0);
        q.close();
        byte[] b = Files.readAllBytes(seg());
        long[] st = starts(b, 10);
        b[(int) st[10] + 45] ^= 0x11;
        Files.write(seg(), b);
        log.clear();
        q = open();
        assertEquals(List.of("WARN Queue tail truncated to its last valid record"), log.messages(LogCapture.Level.INFO));
        assertEquals(0, q.load());
        assertEquals(9, q.topicSize());
        assertEquals(10, q.append(1, msg(10), 0).rowid());
        q.close();
    }

    @Test
    void shouldKeepTheGapWhenItsSegmentIsNoLongerTheLast() throws Exception {
        TrQueue q = open();
        for (int i = 1; i <= N; i++) q.append(1000 + i, msg(i), 0);
        q.close();
        byte[] b = Files.readAllBytes(seg());
        long[] st = starts(b, N);
        b[(int) st[HIT] + 50] ^= 0x33;
        Files.write(seg(), b);
        q = open();
        assertEquals(1, log.count(DAMAGED));
        long r = N;
        // fill the segment so that a new one starts
        while (true) {
            r = q.append(2000, msg((int) r + 1), 0).rowid();
            try (Stream<Path> s = Files.list(seg().getParent())) {
                if (s.filter(p -> p.toString().endsWith(".seg")).count() > 1) break;
            }
        }
        q.close();
        log.clear();
        q = open();
        assertEquals(List.of(), log.messages(LogCapture.Level.WARN));
        assertEquals(0, q.load());
        assertNull(q.getByRowid(HIT));
        for (long k = 1; k <= r; k++) {
            if (k != HIT) assertNotNull(q.getByRowid(k), "row " + k);
        }
        assertEquals(r, q.size() + 1);
        assertEquals(r + 1, q.append(1, msg(1), 0).rowid());
        q.close();
    }
}
