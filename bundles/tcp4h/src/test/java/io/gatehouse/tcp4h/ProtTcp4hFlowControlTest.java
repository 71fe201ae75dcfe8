// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import io.gatehouse.api.Ev;
import io.gatehouse.api.GClock;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.SlowConsumer;
import io.gatehouse.testkit.Tcp4hFrames;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * C_PROT_TCP4H's input threshold over a real C_TCP: a producer far faster than its consumer. With a threshold the
 * consumer holds at most the threshold's worth of frames and TCP backpressure stops the producer; without one the
 * backlog grows with whatever the producer sends. With the sockets on the core loop (0) and on two worker loops
 * (io_threads 2). The consumer works on real time (a 10 ms tick): what is measured is a rate, not a timer.
 */
@Timeout(60)
class ProtTcp4hFlowControlTest {

    /** A consumer above the channel that processes (releases and credits back) 20 messages every 10 ms. */
    private static YunoRuntime slowServer(int port, String tcp4hKw, int io, SlowConsumer.Stats seen) {
        String cfg = Loopback.serverConfig(port, 1, tcp4hKw).replace("C_RECORDER", "C_SLOW");
        return YunoRuntime.builder().name("t").ioThreads(io).clock(GClock.SYSTEM).gclass(Loopback.specs())
                .gclass(SlowConsumer.spec("C_SLOW", Ev.EV_ON_MESSAGE, 20, 10, seen)).config(cfg).build();
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldKeepMemoryBoundedByTheThresholdWhileBackpressureReachesTheProducer(int io) throws Exception {
        int port = Ports.free();
        SlowConsumer.Stats seen = new SlowConsumer.Stats();
        try (YunoRuntime srv = slowServer(port, "\"input_threshold_msgs\":100,\"input_threshold_bytes\":200000", io, seen)) {
            srv.start();
            long written = Tcp4hFrames.flood(port, 996, 3000, Long.MAX_VALUE);
            long maxHeld = seen.maxHeld.get();
            long consumedBytes = seen.consumedBytes.get();
            long marks = seen.blockedMarks.get();
            // The consumer never holds more than the threshold...
            assertTrue(maxHeld <= 100, "max held " + maxHeld);
            assertTrue(marks > 10, "the crossing messages carry is_blocked: " + marks);
            // ...and the producer was held back by TCP: what it wrote is what was consumed plus the socket buffers
            // (kernel send/receive buffers on loopback: a few MB), not the ~1 GB/s it could write otherwise.
            assertTrue(consumedBytes > 1_000_000, "consumed " + consumedBytes);
            assertTrue(written < consumedBytes + 40_000_000L, "written " + written + ", consumed " + consumedBytes);
        }
    }

    @Test
    void shouldLetTheBacklogGrowWithoutAThreshold() throws Exception {
        int port = Ports.free();
        SlowConsumer.Stats seen = new SlowConsumer.Stats();
        try (YunoRuntime srv = slowServer(port, null, 0, seen)) {
            srv.start();
            Tcp4hFrames.flood(port, 996, 1000, 20_000_000L);
            long maxHeld = seen.maxHeld.get();
            assertTrue(maxHeld > 1000, "without a threshold the consumer is flooded: " + maxHeld);
        }
    }
}
