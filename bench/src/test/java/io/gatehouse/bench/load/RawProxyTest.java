package io.gatehouse.bench.load;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RawProxyTest {
    /**
     * Two producer connections number their rowids from 1 each, so every rowid is pending twice in the proxy:
     * each ack must still reach the connection whose frame it acks, or a producer's window never refills.
     */
    @Test
    void acksReachTheirProducerAndEveryMessageIsDeliveredOnce() throws Exception {
        LoadGen.Options o = new LoadGen.Options();
        o.connections = 2;
        o.maxBacklog = 500;
        o.warmup = 0.3;
        o.duration = 0.7;
        Delivery d = new Delivery(o.prefix, o.connections, Delivery.spanFor(o.maxBacklog));
        try (RawSink sink = new RawSink(0)) {
            sink.setDelivery(d);
            try (RawProxy proxy = new RawProxy(0, "127.0.0.1", sink.port())) {
                assertTrue(proxy.awaitSink(5_000));
                o.port = proxy.port();
                LoadGen.Result r = LoadGen.run(o, d);
                // rates are not asserted: the machine may be shared; what the instrument must get right is
                assertTrue(r.messages > 0 && r.ackedPerSec > 0, "delivered and acked: " + r.line());
                assertTrue(r.endBacklog <= (long) o.connections * o.maxBacklog, "backlog bounded: " + r.line());
                assertEquals(0, r.duplicates + r.skipped + r.unknown + r.errors, r.line());
                String stats = proxy.stats();
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
            assertTrue(r.msgsPerSec > 0 && r.msgsPerSec == r.ackedPerSec, r.line());
            assertEquals(-1, r.endBacklog);
        }
    }
}
