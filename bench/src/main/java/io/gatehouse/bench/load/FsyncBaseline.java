package io.gatehouse.bench.load;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The disk's fsync rate, measured in the same run as the {@code always} config it bounds: one thread writes a
 * record of {@code size} bytes at the end of a file and forces it ({@code FileChannel.force(false)}), as
 * {@code FileChannelBaseline.appendForce} does under JMH. A queue that forces once per record cannot beat it; the
 * issue's goal for {@code fsync_policy} always is to stay within 2× of it.
 */
final class FsyncBaseline {
    private FsyncBaseline() {}

    /** Forces per second over {@code seconds}, after {@code warmupSeconds} of the same, in a file under {@code dir}. */
    static double forcesPerSecond(Path dir, int size, double warmupSeconds, double seconds) throws IOException {
        Path file = dir.resolve("fsync-baseline.dat");
        ByteBuffer rec = ByteBuffer.allocateDirect(size);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            long pos = appendForce(ch, rec, 0, (long) (warmupSeconds * 1e9), null);
            long[] count = new long[1];
            long start = System.nanoTime();
            appendForce(ch, rec, pos, (long) (seconds * 1e9), count);
            return count[0] / ((System.nanoTime() - start) / 1e9);
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private static long appendForce(FileChannel ch, ByteBuffer rec, long pos, long nanos, long[] count)
            throws IOException {
        long end = System.nanoTime() + nanos;
        while (System.nanoTime() < end) {
            rec.clear();
            pos += ch.write(rec, pos);
            ch.force(false);
            if (count != null) count[0]++;
        }
        return pos;
    }
}
