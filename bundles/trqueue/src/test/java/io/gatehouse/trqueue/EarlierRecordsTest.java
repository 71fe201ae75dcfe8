// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.testkit.LogCapture;
import io.netty.util.concurrent.DefaultEventExecutor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.*;

/**
 * {@code positions} and {@code earlierRecordsAfter}: where the queues stand, and, after the process is started
 * again, the records written after those positions by the earlier run, never this run's. What MQTT QoS 2 uses to
 * tell whether the message it was handing over at a kill -9 reached the queue. A second factory instance over the
 * same files stands for the process started again.
 */
@Timeout(30)
class EarlierRecordsTest {
    @TempDir
    Path dir;

    final LogCapture log = new LogCapture();
    TrQueueFactoryImpl earlier = new TrQueueFactoryImpl();
    TrQueueFactoryImpl now = new TrQueueFactoryImpl();

    static final TrQueueOptions OPTS = TrQueueOptions.defaults().withSegmentSize(1 << 16).withMaxMessageSize(4096)
            .withFsyncPolicy(FsyncPolicy.INTERVAL).withFsyncIntervalMs(5);

    @AfterEach
    void tearDown() {
        earlier.close();
        now.close();
        log.close();
    }

    TrQueue open(TrQueueFactoryImpl f, String topic) {
        TrQueue q = f.open(dir, "db", topic, "", 0, 0, OPTS);
        q.load();
        return q;
    }

    static ObjectNode msg(String id) {
        return Kw.create().put("id", id).put("mqtt_topic", "devices/7");
    }

    static List<String> texts(List<byte[]> records) {
        return records.stream().map(b -> new String(b, StandardCharsets.UTF_8)).collect(Collectors.toList());
    }

    /** An earlier run of the process: queue A took a1, the positions were noted, A took a2, and the run ended. */
    String earlierRunTookA2AfterThePositions() {
        TrQueue a = open(earlier, "A");
        a.append(msg("a1"));
        String positions = earlier.positions();
        a.append(msg("a2"));
        earlier.close();
        return positions;
    }

    @Test
    void shouldAnswerTheRowsAnEarlierRunWroteAfterThePositionsAndNoneOfThisRun() {
        TrQueue a = open(earlier, "A");
        TrQueue b = open(earlier, "B");
        for (int i = 1; i <= 3; i++) a.append(msg("a" + i));
        b.append(msg("b1"));
        String positions = earlier.positions();
        assertEquals(3, positions.split(",").length, "the time, then two queues: " + positions);
        assertTrue(positions.startsWith("@"), positions);
        assertFalse(positions.contains(" "), positions);
        a.append(msg("a4"));
        a.append(msg("a5"));
        assertEquals(List.of(), earlier.earlierRecordsAfter(positions, 8), "this run's rows are not an earlier run's");
        earlier.close();   // the process ends (what matters is in the files: a kill -9 leaves them so too)

        TrQueue a2 = open(now, "A");
        open(now, "B");
        assertEquals(List.of("{\"id\":\"a4\",\"mqtt_topic\":\"devices/7\"}", "{\"id\":\"a5\",\"mqtt_topic\":\"devices/7\"}"),
                texts(now.earlierRecordsAfter(positions, 8)));
        assertEquals(1, now.earlierRecordsAfter(positions, 1).size(), "at most max per queue");
        a2.append(msg("a6"));
        String after = now.positions();
        assertEquals(List.of(), now.earlierRecordsAfter(after, 8), "row 6 is this run's");
        a2.close();
        open(now, "A");
        assertEquals(List.of(), now.earlierRecordsAfter(after, 8),
                "opened again in the same process: its rows are still this run's");
        assertEquals(2, now.earlierRecordsAfter(positions, 8).size());
    }

    @Test
    void shouldAnswerNothingForTextThatIsNotPositionsOrAQueueNotOpen() {
        String positions = earlierRunTookA2AfterThePositions();
        open(now, "B");
        assertEquals(List.of(), now.earlierRecordsAfter(positions, 8), "queue A is not open in this process");
        open(now, "A");
        String key = positions.substring(0, positions.lastIndexOf('.'));
        for (String bad : new String[] {"", ",", "x", "x.1", key, key + ".", key + ".z", key + ".-5",
                key + "." + Long.MAX_VALUE, key + ".99"}) {
            assertEquals(List.of(), now.earlierRecordsAfter(bad, 8), bad);
        }
        assertEquals(List.of(), now.earlierRecordsAfter(positions, 0));
        assertEquals(1, now.earlierRecordsAfter("x.1," + positions, 8).size());
        assertEquals(List.of(), now.earlierRecordsAfter(null, 8));
        assertEquals(List.of(), now.earlierRecordsAfter("@soon," + positions.substring(positions.indexOf(',') + 1), 8));
        assertEquals(1, now.earlierRecordsAfter(positions.substring(positions.indexOf(',') + 1), 8).size(),
                "positions without their time: no bound on the rows' time");
    }

    @Test
    void shouldLeaveOutRowsAppendedLongAfterThePositionsByARunStartedAgain() {
        TrQueue a = open(earlier, "A");
        a.append(msg("a1"));
        String positions = earlier.positions();
        long noteS = Long.parseLong(positions.substring(1, positions.indexOf(','))) / 1000;
        earlier.close();   // killed before the message reached the queue

        // the run started again writes after those positions, seconds later (this topic's times are seconds)
        TrQueueFactoryImpl second = new TrQueueFactoryImpl();
        TrQueue again = open(second, "A");
        again.append(noteS + 10, msg("same"), 0);
        second.close();
        // a third run sees that row as an earlier run's, but not as one appended right after the positions
        TrQueue third = open(now, "A");
        assertEquals(List.of(), now.earlierRecordsAfter(positions, 8));
        third.close();

        // the same row at the positions' own second is found
        TrQueueFactoryImpl fourth = new TrQueueFactoryImpl();
        TrQueue at = open(fourth, "A");
        at.append(noteS, msg("then"), 0);
        fourth.close();
        TrQueueFactoryImpl fifth = new TrQueueFactoryImpl();
        open(fifth, "A");
        assertEquals(List.of("{\"id\":\"then\",\"mqtt_topic\":\"devices/7\"}"),
                texts(fifth.earlierRecordsAfter(positions.replace(".1", ".2"), 8)));
        fifth.close();
    }

    @Test
    void shouldNameOnlyTheQueuesOfTheCallingThreadsLoop() throws Exception {
        DefaultEventExecutor loop = new DefaultEventExecutor();
        try {
            TrQueue owned = open(earlier, "A");
            open(earlier, "B");
            owned.onDurable((generation, rowid) -> { }, loop);   // A is the loop's from now on
            String outside = earlier.positions();
            String inside = loop.submit(earlier::positions).get();
            assertEquals(2, outside.split(",").length, outside);
            assertEquals(3, inside.split(",").length, inside);
            assertTrue(inside.contains(TrQueueImpl.positionKey(dir.resolve("db").resolve("A"))), inside);
            assertFalse(outside.contains(TrQueueImpl.positionKey(dir.resolve("db").resolve("A"))), outside);
        } finally {
            loop.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS).sync();
        }
    }

    @Test
    void shouldKeepWhatAnEarlierRunWroteAcrossALiveUpgrade() {
        String positions = earlierRunTookA2AfterThePositions();

        TrQueueFactoryImpl before = now;
        TrQueue running = open(before, "A");
        running.append(msg("a3"));   // this run's
        String thisRun = before.positions();
        now = new TrQueueFactoryImpl();   // the next trqueue revision takes the open queue over
        TrQueue taken = now.takeOver(running, dir, "db", "A", "", 0, 0, OPTS);
        assertNotNull(taken);
        assertEquals(List.of("{\"id\":\"a2\",\"mqtt_topic\":\"devices/7\"}"), texts(now.earlierRecordsAfter(positions, 8)));
        assertEquals(List.of(), now.earlierRecordsAfter(thisRun.replace(".3", ".2"), 8), "row 3 stays this run's");
        before.close();
    }
}
