// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import io.gatehouse.api.GObj;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.support.Glog;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Glog's records reach the open captures through SLF4J, and the lines print as slf4j-simple prints them. */
class LogCaptureTest {
    private static YunoRuntime rt;
    private static GObj rec;

    @BeforeAll
    static void start() {
        rt = YunoRuntime.builder().name("logs").config("{\"services\": []}").build().start();
        rec = Recorder.create(rt, "rec").gobj();
    }

    @AfterAll
    static void stop() {
        rt.close();
    }

    @Test
    void shouldCaptureEveryLevelWhileOpenAndPrintInfoAndAbove() {
        List<LogCapture.Rec> heard = new ArrayList<>();
        String printed;
        try (LogCapture logs = new LogCapture(heard::add)) {
            printed = stderr(() -> {
                Glog.debug(rec, "Connected", "peername", "127.0.0.1:5000");
                Glog.info(rec, "Listening...", "url", "tcp://127.0.0.1:0");
                Glog.error(null, "queue message without metadata");
            });
            assertEquals(1, logs.count("Connected"), logs.toString());
            LogCapture.Rec d = logs.with("Connected").get(0);
            assertEquals(LogCapture.Level.DEBUG, d.level);
            assertEquals(rec.shortName(), d.gobj);
            assertEquals(Map.of("peername", "127.0.0.1:5000"), d.fields);
            assertEquals(1, logs.count(LogCapture.Level.ERROR), logs.toString());
            assertEquals("", logs.with("queue message without metadata").get(0).gobj);
            assertTrue(logs.messages(LogCapture.Level.INFO).containsAll(
                    List.of("INFO Listening...", "ERROR queue message without metadata")), logs.toString());
            assertFalse(logs.messages(LogCapture.Level.INFO).contains("DEBUG Connected"));
            assertTrue(logs.await("Listening...", 1, 0));
            logs.clear();
            assertEquals(0, logs.all().size());
        }
        assertTrue(heard.stream().anyMatch(r -> r.msg.equals("Connected")), "the listener heard it");
        List<String> lines = lines(printed);
        assertTrue(lines.contains(
                "INFO gatehouse.C_RECORDER - " + rec.shortName() + ": Listening..., url=tcp://127.0.0.1:0"), printed);
        assertTrue(lines.contains("ERROR gatehouse - queue message without metadata"), printed);
        assertFalse(printed.contains("Connected"), "DEBUG captured, not printed");
    }

    @Test
    void shouldStopCapturingWhenClosed() {
        LogCapture logs = new LogCapture();
        logs.close();
        Glog.warn(rec, "said after close");
        assertEquals(0, logs.all().size());
        assertFalse(LoggerFactory.getLogger("gatehouse.C_RECORDER").isDebugEnabled(), "DEBUG is off again");
    }

    @Test
    void shouldPrintOtherLoggersAsSlf4jSimpleWithTheirStackTraces() {
        String printed = stderr(() -> {
            LoggerFactory.getLogger("io.netty.x").debug("not printed at the default level");
            LoggerFactory.getLogger("io.netty.x").warn("a {} b {}", 1, 2);
            LoggerFactory.getLogger("io.netty.x").error("failed", new IllegalStateException("boom"));
        });
        List<String> l = lines(printed);
        assertEquals("WARN io.netty.x - a 1 b 2", l.get(0));
        assertEquals("ERROR io.netty.x - failed", l.get(1));
        assertEquals("java.lang.IllegalStateException: boom", l.get(2));
    }

    /** What is printed on System.err while {@code r} runs. */
    private static String stderr(Runnable r) {
        PrintStream original = System.err;
        ByteArrayOutputStream seen = new ByteArrayOutputStream();
        try (PrintStream tee = new PrintStream(seen, true, StandardCharsets.UTF_8)) {
            System.setErr(tee);
            r.run();
        } finally {
            System.setErr(original);
        }
        return seen.toString(StandardCharsets.UTF_8);
    }

    /** The lines without their thread name. */
    private static List<String> lines(String printed) {
        return printed.lines().map(s -> s.replaceFirst("^\\[[^]]*] ", "")).toList();
    }
}
