// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The session store on its own: what is logged comes back, the log stays bounded, a torn line is skipped. */
class SessionsTest {
    @TempDir
    Path data;

    @Test
    void shouldReloadPersistentSessionsAndTheirQos2Ids() {
        Sessions s = Sessions.acquire(data, this, 1000, w -> { });
        Sessions.Session a = s.create("dev a/1", true, 3600, 10, 1000);
        Sessions.Session b = s.create("short", false, 0, 10, 1000);
        s.putQos2(a, 1, Sessions.RECEIVED);
        s.putQos2(a, 2, Sessions.RECEIVED);
        s.putQos2(a, 2, Sessions.DURABLE);
        s.putQos2(a, 3, Sessions.DURABLE);
        s.releaseQos2(a, 3);
        s.putQos2(b, 9, Sessions.DURABLE);
        s.disconnected(a, 2000);
        s.release();

        Sessions again = Sessions.acquire(data, this, 3000, w -> { });
        Sessions.Session back = again.get("dev a/1", 3000);
        assertNotNull(back, "the persistent session came back");
        assertEquals(Sessions.RECEIVED, back.qos2.get(1));
        assertEquals(Sessions.DURABLE, back.qos2.get(2));
        assertNull(back.qos2.get(3), "released");
        assertNull(again.get("short", 3000), "a clean session is not logged");
        assertNull(again.get("dev a/1", 2000 + 3_600_000), "expired an hour after its disconnect");
        again.release();
    }

    @Test
    void shouldKeepTheNoteOfAnIdAKillCutUntilItsResendSettlesIt() throws Exception {
        Sessions s = Sessions.acquire(data, this, 0, w -> { });
        Sessions.Session a = s.create("cut", true, -1, 10, 0);
        s.intend(a, 1, "cXVldWU.10");
        s.putQos2(a, 1, Sessions.RECEIVED);   // the queue took it, noted: the note is done with
        s.intend(a, 2, "cXVldWU.11");
        s.releaseQos2(a, 2);                  // refused
        s.intend(a, 3, "cXVldWU.12");
        s.dropIntent(a, 3);                   // never reached the queue
        s.intend(a, 4, "cXVldWU.13");         // ... and the kill
        Sessions.Session clean = s.create("clean", false, 0, 10, 0);
        s.intend(clean, 5, "cXVldWU.14");     // a clean session is not logged
        s.intend(a, 6, "two words");          // not a one-word text: not noted
        assertEquals(java.util.Set.of(1), a.qos2.keySet());
        assertEquals(java.util.Map.of(4, "cXVldWU.13"), a.intents);

        s.release();

        // the restart: the log gives back the note the kill cut, and a compaction keeps it
        Sessions again = Sessions.acquire(data, this, 0, w -> { });
        assertEquals(java.util.Map.of(4, "cXVldWU.13"), again.get("cut", 0).intents);
        assertNull(again.get("clean", 0));
        again.release();
        Sessions third = Sessions.acquire(data, this, 0, w -> { });
        Sessions.Session back = third.get("cut", 0);
        assertEquals(java.util.Map.of(4, "cXVldWU.13"), back.intents, "kept through the compaction at load");
        third.putQos2(back, 4, Sessions.DURABLE);   // its resend found it in a queue
        third.release();
        Sessions fourth = Sessions.acquire(data, this, 0, w -> { });
        assertTrue(fourth.get("cut", 0).intents.isEmpty());
        assertEquals(Sessions.DURABLE, fourth.get("cut", 0).qos2.get(4));
        // and a live upgrade hands the notes over with the rest
        fourth.intend(fourth.get("cut", 0), 9, "cXVldWU.20");
        com.fasterxml.jackson.databind.node.ObjectNode st = fourth.handOver();
        Sessions adopted = Sessions.adopt(data, this, st, w -> { });
        assertEquals(java.util.Map.of(9, "cXVldWU.20"), adopted.get("cut", 0).intents);
        adopted.release();
        fourth.release();
    }

    @Test
    void shouldHoldAnIdsATillTheNextLineThatMustBeWrittenAndLoseNothingWithoutIt() throws Exception {
        Path log = data.resolve("mqtt/sessions.log");
        Sessions s = Sessions.acquire(data, this, 0, w -> { });
        Sessions.Session a = s.create("held", true, -1, 10, 0);
        s.intend(a, 1, "cXVldWU.10");
        s.putQos2(a, 1, Sessions.RECEIVED);
        s.putQos2(a, 1, Sessions.DURABLE);
        List<String> lines = Files.readAllLines(log);
        assertEquals("I aGVsZA 1 cXVldWU.10", lines.get(lines.size() - 1), "A and D wait: " + lines);

        // a kill now: the copy of the file is what a new process reads; the I line sends the resend to the queue
        Path other = data.resolve("after-kill");
        Files.createDirectories(other.resolve("mqtt"));
        Files.copy(log, other.resolve("mqtt/sessions.log"));
        Sessions killed = Sessions.acquire(other, this, 0, w -> { });
        assertEquals(java.util.Map.of(1, "cXVldWU.10"), killed.get("held", 0).intents);
        assertTrue(killed.get("held", 0).qos2.isEmpty());
        killed.release();

        s.intend(a, 2, "cXVldWU.11");   // written at once, with what waited, in order
        lines = Files.readAllLines(log);
        assertEquals(List.of("I aGVsZA 1 cXVldWU.10", "A aGVsZA 1", "D aGVsZA 1", "I aGVsZA 2 cXVldWU.11"),
                lines.subList(lines.size() - 4, lines.size()));
        s.putQos2(a, 2, Sessions.RECEIVED);
        s.release();   // a clean close writes what waits
        lines = Files.readAllLines(log);
        assertEquals("A aGVsZA 2", lines.get(lines.size() - 1));

        Sessions again = Sessions.acquire(data, this, 0, w -> { });
        again.putQos2(again.get("held", 0), 2, Sessions.DURABLE);
        again.handOver();   // a live upgrade: the next revision appends after what waited
        lines = Files.readAllLines(log);
        assertEquals("D aGVsZA 2", lines.get(lines.size() - 1));
        again.release();
    }

    @Test
    void shouldCompactTheLogAndKeepItBounded() throws Exception {
        Sessions s = Sessions.acquire(data, this, 0, w -> { });
        Sessions.Session a = s.create("busy", true, -1, 10, 0);
        for (int i = 0; i < 50_000; i++) {
            s.putQos2(a, i % 65535 + 1, Sessions.RECEIVED);
            s.putQos2(a, i % 65535 + 1, Sessions.DURABLE);
            s.releaseQos2(a, i % 65535 + 1);
        }
        s.putQos2(a, 77, Sessions.DURABLE);
        long lines = Files.readAllLines(data.resolve("mqtt/sessions.log")).size();
        assertTrue(lines < 4 * 4096 + 4096, "compacted as it grew: " + lines + " lines");
        s.release();
        Sessions again = Sessions.acquire(data, this, 0, w -> { });
        assertEquals(1, again.get("busy", 0).qos2.size());
        assertEquals(Sessions.DURABLE, again.get("busy", 0).qos2.get(77));
        again.release();
    }

    @Test
    void shouldSkipATornLastLineAndSaySo() throws Exception {
        Sessions s = Sessions.acquire(data, this, 0, w -> { });
        Sessions.Session a = s.create("torn", true, -1, 10, 0);
        s.putQos2(a, 5, Sessions.RECEIVED);
        s.release();
        Files.writeString(data.resolve("mqtt/sessions.log"), "A dG9ybg 6\nD dG9y", StandardCharsets.US_ASCII,
                StandardOpenOption.APPEND);
        List<String> warnings = new ArrayList<>();
        Sessions again = Sessions.acquire(data, this, 0, warnings::add);
        assertEquals(2, again.get("torn", 0).qos2.size(), "ids 5 and 6, the torn line skipped");
        assertEquals(1, warnings.size(), warnings.toString());
        again.release();
    }

    @Test
    void shouldMakeRoomByDroppingTheSessionDisconnectedLongestAgo() {
        Sessions s = Sessions.acquire(null, this, 0, w -> { });
        Sessions.Session old = s.create("old", true, -1, 2, 0);
        s.disconnected(old, 10);
        s.create("live", true, -1, 2, 0);
        assertNotNull(s.create("new", true, -1, 2, 20));
        assertNull(s.get("old", 20), "the eldest disconnected session made room");
        s.release();
    }
}
