package io.gatehouse.bench.load;

import io.netty.util.ResourceLeakDetector;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RawProxyTest {
    private static ResourceLeakDetector.Level level;

    /**
     * Paranoid leak detection (the build's test default) records a stack trace on every byte read of every
     * buffer, and the bench reads a frame's bytes to find its rowid and id: a second of load would move a few
     * hundred messages. Advanced still reports a leak, with its access records, from one buffer in 128.
     */
    @BeforeAll
    static void sampledLeakDetection() {
        level = ResourceLeakDetector.getLevel();
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.ADVANCED);
    }

    @AfterAll
    static void restoreLeakDetection() {
        ResourceLeakDetector.setLevel(level);
    }

    /**
     * Two producer connections number their rowids from 1 each, so every rowid is pending twice in the proxy:
     * each ack must still reach the connection whose frame it acks, or a producer's window never refills.
     */
    @Test
    void acksReachTheirProducerAndEveryMessageIsDeliveredOnce() throws Exception {
        LoadGen.Options o = new LoadGen.Options();
        o.connections = 2;
        o.maxBacklog = 500;
        o.warmup = 0.5;
        o.duration = 1.5;
        Delivery d = new Delivery(o.prefix, o.connections, Delivery.spanFor(o.maxBacklog));
        try (RawSink sink = new RawSink(0)) {
            sink.setDelivery(d);
            try (RawProxy proxy = new RawProxy(0, "127.0.0.1", sink.port())) {
                assertTrue(proxy.awaitSink(5_000));
                o.port = proxy.port();
                LoadGen.Result r = LoadGen.run(o, d);
                // no rate is asserted (the machine may be shared): what the instrument must get right is
                assertTrue(r.messages > 0, "delivered in the window: " + r.line());
                assertTrue(r.endBacklog <= (long) o.connections * o.maxBacklog, "backlog bounded: " + r.line());
                assertEquals(0, r.duplicates + r.skipped + r.unknown + r.errors, r.line());
                String stats = proxy.stats();
                Matcher acked = Pattern.compile("acked=(\\d+)").matcher(stats);
                assertTrue(acked.find() && Long.parseLong(acked.group(1)) > 0, "acks went back: " + stats);
                assertTrue(stats.contains("out_of_order=0"), stats);
            }
        }
    }

    @Test
    void burstModeRunsWithoutDestinationCounts() throws Exception {
        LoadGen.Options o = new LoadGen.Options();
        o.mode = LoadGen.Mode.BURST;
        o.window = 100;
        o.warmup = 0.2;
        o.duration = 0.5;
        try (RawSink sink = new RawSink(0)) {
            o.port = sink.port();
            LoadGen.Result r = LoadGen.run(o);
            assertEquals(r.ackedPerSec, r.msgsPerSec, "the headline is the acked rate: " + r.line());
            assertTrue(Double.isNaN(r.deliveredPerSec) && r.endBacklog == -1 && r.latency == null, r.line());
        }
    }
}
