// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.*;

/** One million pending messages load and drain in a JVM limited to a 64 MiB heap. */
class MillionPendingTest {
    @TempDir
    Path dir;

    @Test
    @Timeout(60)
    void shouldLoadAndDrainAMillionPendingWhenTheHeapIs64MiB() throws Exception {
        String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(javaBin, "-Xmx64m", "-cp", System.getProperty("java.class.path"),
                MillionPending.class.getName(), dir.toString(), "1000000").redirectErrorStream(true)
                .redirectOutput(dir.resolve("child.log").toFile()).start();
        assertTrue(p.waitFor(55, TimeUnit.SECONDS), "finished in time");
        String out = java.nio.file.Files.readString(dir.resolve("child.log"));
        System.out.println(out.trim());
        assertEquals(0, p.exitValue(),
                "exit code (2 append, 3 load, 4 read, 5 drain, 6 reload, 1 exception/OOM): " + out);
    }
}
