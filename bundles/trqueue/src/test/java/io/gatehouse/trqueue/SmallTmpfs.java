// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import org.junit.jupiter.api.Assumptions;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * A real tmpfs of a few MiB, for the tests of a full file system: mounted under a test's directory (root only; the
 * test is skipped elsewhere), filled by another writer's ballast file, given back, and unmounted on close.
 */
final class SmallTmpfs implements AutoCloseable {
    final Path dir;
    private final Path ballast;

    private SmallTmpfs(Path dir) {
        this.dir = dir;
        this.ballast = dir.resolve("ballast");
    }

    /** A tmpfs of {@code size} (mount's spelling: "12m") at {@code parent}/small; the test is skipped if it cannot be. */
    static SmallTmpfs mount(Path parent, String size) throws IOException, InterruptedException {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "needs root to mount a tmpfs");
        Path fs = Files.createDirectories(parent.resolve("small"));
        Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", fs.toString())
                .redirectErrorStream(true).start();
        Assumptions.assumeTrue(mount.waitFor(20, TimeUnit.SECONDS) && mount.exitValue() == 0, "cannot mount a tmpfs");
        return new SmallTmpfs(fs);
    }

    /** Another writer takes every byte left. */
    void fill() {
        try (FileOutputStream f = new FileOutputStream(ballast.toFile())) {
            byte[] b = new byte[64 << 10];
            while (true) f.write(b);
        } catch (IOException full) {
            // the file system is full
        }
    }

    /** The other writer's bytes are free again. */
    void giveBack() throws IOException {
        Files.delete(ballast);
    }

    @Override
    public void close() throws IOException, InterruptedException {
        new ProcessBuilder("umount", "-l", dir.toString()).redirectErrorStream(true).start().waitFor(20, TimeUnit.SECONDS);
    }
}
