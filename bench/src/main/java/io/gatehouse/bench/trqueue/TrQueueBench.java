package io.gatehouse.bench.trqueue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * trqueue append + ack (unload) of a 100-byte JSON message, one thread, per fsync policy. Compare with
 * {@link FileChannelBaseline} in the same run: {@code java -jar bench/target/benchmarks.jar 'TrQueueBench|FileChannelBaseline'}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 2, jvmArgs = {"-Xmx1g"})
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 3)
public class TrQueueBench {
    @Param({"NONE", "INTERVAL", "ALWAYS"})
    public String policy;

    private Path dir;
    private TrQueueFactoryImpl factory;
    private TrQueue q;
    private ObjectNode kw;

    /** A message whose compact JSON is exactly 100 bytes. */
    public static ObjectNode message100() {
        ObjectNode kw = Kw.create();
        kw.put("id", 1234567);
        kw.put("event", "telemetry");
        kw.put("payload", "");
        int len = Kw.toJson(kw).length();
        kw.put("payload", "p".repeat(100 - len));
        if (Kw.toJson(kw).length() != 100) throw new IllegalStateException("not 100 bytes");
        return kw;
    }

    @Setup(Level.Trial)
    public void setup() throws IOException {
        dir = Files.createTempDirectory(Path.of(System.getProperty("bench.dir", System.getProperty("java.io.tmpdir"))),
                "trqbench");
        factory = new TrQueueFactoryImpl();
        q = factory.open(dir, "db", "bench", "", 0, 0,
                TrQueueOptions.defaults().withFsyncPolicy(FsyncPolicy.valueOf(policy)));
        kw = message100();
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        factory.close();
        FileChannelBaseline.deleteTree(dir);
    }

    @Benchmark
    public long appendAck() {
        QueueMessage m = q.append(0, kw, 0);
        q.unload(m, 0);
        return m.rowid();
    }
}
