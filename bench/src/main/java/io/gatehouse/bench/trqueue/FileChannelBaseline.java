package io.gatehouse.bench.trqueue;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The floor under any store: plain FileChannel writes of a 100-byte record, measured in the same run as
 * {@link TrQueueBench}. {@code append}: one write() per record (the page cache only); {@code appendMark}: plus an
 * 8-byte positional write to a second file per record (the shape of append + ack); {@code appendForce}: write +
 * force(false) per record (the device's fsync rate).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 2, jvmArgs = {"-Xmx1g"})
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
public class FileChannelBaseline {
    private Path dir;
    private FileChannel data;
    private FileChannel marks;
    private final ByteBuffer rec = ByteBuffer.allocateDirect(100);
    private final ByteBuffer mark = ByteBuffer.allocateDirect(8);
    private long pos;
    private long n;

    @Setup(Level.Trial)
    public void setup() throws IOException {
        dir = Files.createTempDirectory(Path.of(System.getProperty("bench.dir", System.getProperty("java.io.tmpdir"))),
                "fcbench");
        data = FileChannel.open(dir.resolve("data"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        marks = FileChannel.open(dir.resolve("marks"), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        for (int i = 0; i < 100; i++) rec.put((byte) ('a' + i % 26));
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        data.close();
        marks.close();
        deleteTree(dir);
    }

    @Benchmark
    public long append() throws IOException {
        rec.clear();
        pos += data.write(rec, pos);
        return pos;
    }

    @Benchmark
    public long appendMark() throws IOException {
        rec.clear();
        pos += data.write(rec, pos);
        mark.clear();
        mark.putLong(0, n);
        marks.write(mark, 8 * n++);
        return pos;
    }

    @Benchmark
    public long appendForce() throws IOException {
        rec.clear();
        pos += data.write(rec, pos);
        data.force(false);
        return pos;
    }

    static void deleteTree(Path root) throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            for (Path p : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) Files.deleteIfExists(p);
        }
    }
}
