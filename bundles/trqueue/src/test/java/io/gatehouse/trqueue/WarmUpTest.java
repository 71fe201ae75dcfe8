// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import io.gatehouse.testkit.LogCapture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.*;

@Timeout(60)
class WarmUpTest {
    @TempDir
    Path dir;

    @Test
    void shouldRunTheQueuePathOnAScratchQueueAndLeaveNothingBehind() throws Exception {
        try (LogCapture log = new LogCapture()) {
            assertTrue(WarmUp.run(dir) >= 0, "ran");
            try (Stream<Path> left = Files.list(dir)) {
                assertEquals(0, left.count(), "its directory is removed");
            }
            assertEquals(0, log.count(LogCapture.Level.WARN) + log.count(LogCapture.Level.ERROR), log.all().toString());
        }
    }

    @Test
    void shouldSayItOnceAndGoOnWhenItCannotRun() throws Exception {
        Path file = Files.writeString(dir.resolve("not-a-directory"), "x");
        try (LogCapture log = new LogCapture()) {
            assertEquals(-1, WarmUp.run(file));
            assertEquals(1, log.count("trqueue warm-up failed: the first calls after a live upgrade run cold"));
        }
    }
}
