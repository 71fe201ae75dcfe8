// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Tests and embedders that give no data directory get a temp one, gone with the runtime; a given one is theirs. */
class RuntimeDataDirTest {
    @TempDir
    Path given;

    @Test
    void shouldRemoveTheDataDirectoryItMadeWhenClosedWithWhatWasWrittenThere() throws Exception {
        Path made;
        try (YunoRuntime rt = YunoRuntime.builder().name("dd").build()) {
            made = rt.call(() -> rt.yuno().dataDir());
            Files.writeString(Files.createDirectories(made.resolve("queues/q1")).resolve("seg"), "x");
        }
        assertFalse(Files.exists(made), made.toString());
    }

    @Test
    void shouldRemoveTheDataDirectoryItMadeWhenTheConfigIsRefused() throws Exception {
        long before = countMade("dd-bad");
        assertThrows(RuntimeException.class,
                () -> YunoRuntime.builder().name("dd-bad").config("{\"services\":[{\"name\":\"x\",\"gclass\":\"C_NONE\"}]}").build());
        assertTrue(countMade("dd-bad") <= before, "no temp data directory left behind");
    }

    @Test
    void shouldLeaveAGivenDataDirectoryAndItsFiles() throws Exception {
        try (YunoRuntime rt = YunoRuntime.builder().name("dd").dataDir(given).build()) {
            Files.writeString(given.resolve("kept"), "x");
        }
        assertTrue(Files.exists(given.resolve("kept")));
    }

    private static long countMade(String name) throws Exception {
        try (var s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return s.filter(p -> p.getFileName().toString().startsWith("gatehouse-" + name)).count();
        }
    }
}
