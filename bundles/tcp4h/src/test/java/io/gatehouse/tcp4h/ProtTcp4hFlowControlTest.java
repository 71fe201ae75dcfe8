// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GClock;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.Tcp4hFrames;
import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayDeque;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * C_PROT_TCP4H's input threshold over a real C_TCP: a producer far faster than its consumer. With a threshold the
 * consumer holds at most the threshold's worth of frames and TCP backpressure stops the producer; without one the
 * backlog grows with whatever the producer sends. With the sockets on the core loop (0) and on two worker loops
 * (io_threads 2). The consumer works on real time (a 10 ms tick): what is measured is a rate, not a timer.
 */
@Timeout(60)
class ProtTcp4hFlowControlTest {

    /** A consumer that keeps what it gets and processes (releases and credits back) 20 messages every 10 ms. */
    static final class Slow implements GObjBehavior {
        final GObj gobj;
        final ArrayDeque<ByteBuf> held = new ArrayDeque<>();
        GObj from;
        long heldBytes;
        long maxHeld;
        long maxHeldBytes;
        long consumed;
        long consumedBytes;
        long blockedMarks;

        Slow(GObj g) {
            this.gobj = g;
        }

        @Override
        public int onStart() {
            gobj.setPeriodic(10, Ev.EV_TIMEOUT_PERIODIC);
            return 0;
        }

        @Override
        public void onDestroy() {
            for (ByteBuf b; (b = held.poll()) != null; ) b.release();
        }

        private int acMessage(String ev, ObjectNode kw, GObj src) {
            from = src;
            if (Kw.getBool(kw, "is_blocked", false)) blockedMarks++;
            ByteBuf b = Kw.takeGbuffer(kw);
            held.add(b);
            heldBytes += b.readableBytes();
            maxHeld = Math.max(maxHeld, held.size());
            maxHeldBytes = Math.max(maxHeldBytes, heldBytes);
            return 0;
        }

        private int acTick(String ev, ObjectNode kw, GObj src) {
            int n = 0;
            long bytes = 0;
            for (ByteBuf b; n < 20 && (b = held.poll()) != null; n++) {
                bytes += b.readableBytes();
                b.release();
            }
            heldBytes -= bytes;
            consumed += n;
            consumedBytes += bytes;
            if (n > 0 && from != null) {
                ObjectNode credit = Kw.create().put("msgs", n).put("bytes", bytes);
                from.send(Ev.EV_RESUME_INPUT, credit, gobj);
            }
            return 0;
        }

        static final GClassSpec<Slow> SPEC = GClassSpec.builder("C_SLOW", Slow.class)
            .description("test stand-in C_SLOW (Slow)")
                .fsm(Fsm.<Slow>builder()
                        .state(St.ST_IDLE)
                        .on(Ev.EV_ON_MESSAGE, Slow::acMessage)
                        .on(Ev.EV_TIMEOUT_PERIODIC, Slow::acTick)
                        .ignore(Ev.EV_ON_OPEN)
                        .ignore(Ev.EV_ON_CLOSE)
                        .build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(Slow::new)
                .build();
    }

    private static YunoRuntime slowServer(int port, String tcp4hKw, int io) {
        String cfg = Loopback.serverConfig(port, 1, tcp4hKw).replace("C_RECORDER", "C_SLOW");
        return YunoRuntime.builder().name("t").ioThreads(io).clock(GClock.SYSTEM).gclass(Loopback.specs()).gclass(Slow.SPEC)
                .config(cfg).build();
    }

    private static Slow slow(YunoRuntime rt) {
        return rt.call(() -> (Slow) rt.yuno().service("in").behavior());
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldKeepMemoryBoundedByTheThresholdWhileBackpressureReachesTheProducer(int io) throws Exception {
        int port = Ports.free();
        try (YunoRuntime srv = slowServer(port, "\"input_threshold_msgs\":100,\"input_threshold_bytes\":200000", io)) {
            srv.start();
            long written = Tcp4hFrames.flood(port, 996, 3000, Long.MAX_VALUE);
            Slow s = slow(srv);
            long maxHeld = srv.call(() -> s.maxHeld);
            long consumedBytes = srv.call(() -> s.consumedBytes);
            long marks = srv.call(() -> s.blockedMarks);
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
        try (YunoRuntime srv = slowServer(port, null, 0)) {
            srv.start();
            Tcp4hFrames.flood(port, 996, 1000, 20_000_000L);
            Slow s = slow(srv);
            long maxHeld = srv.call(() -> s.maxHeld);
            assertTrue(maxHeld > 1000, "without a threshold the consumer is flooded: " + maxHeld);
        }
    }
}
