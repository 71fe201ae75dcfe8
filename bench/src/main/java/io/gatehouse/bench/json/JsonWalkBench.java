// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.bench.json;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.gatehouse.support.JsonScan;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * The byte walk every scan of a message is built on ({@link JsonScan}: the relay's, the queue's time key, the
 * routing key, the acks), over a message of the load generator's shape, beside Jackson's streaming parser reading
 * the same bytes token by token (the cheapest way Jackson checks a message). An HTTP ingest walks each object four
 * times (the body's ranges, the relay, the routing key, the queue's time key): the walk's cost per byte is what the
 * ingest pays four times.
 *
 * <pre>java -jar bench/target/benchmarks.jar JsonWalkBench</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 2, jvmArgs = {"-Xmx512m"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 4, time = 2)
public class JsonWalkBench {
    /** The message's size in bytes: the benches' default, a log line, a large payload. */
    @Param({"128", "1024", "16384"})
    public int size;

    private byte[] message;
    private final JsonScan scan = new JsonScan(4096);
    private final JsonFactory jackson = new JsonFactory();

    @Setup
    public void setUp() {
        // {"id":"w1-123456","ts":..,"tm":..,"pad":"xx..","__md_trq__":{"__msg_rowid__":123456}}, padded to size
        String head = "{\"id\":\"w1-123456\",\"ts\":1733520000123456789,\"tm\":1733520000,\"pad\":\"";
        String tail = "\",\"__md_trq__\":{\"__msg_rowid__\":123456}}";
        int pad = Math.max(0, size - head.length() - tail.length());
        message = (head + "x".repeat(pad) + tail).getBytes(StandardCharsets.UTF_8);
    }

    @Benchmark
    public int jsonScanWalk() {
        scan.load(message, 0, message.length);
        return scan.value(scan.ws(0), 0);
    }

    @Benchmark
    public int jacksonStreamingTokens() throws IOException {
        int tokens = 0;
        try (JsonParser p = jackson.createParser(message)) {
            JsonToken t;
            while ((t = p.nextToken()) != null) {
                if (t == JsonToken.VALUE_STRING) p.getTextLength();   // a string's text is decoded only when asked
                tokens++;
            }
        }
        return tokens;
    }
}
