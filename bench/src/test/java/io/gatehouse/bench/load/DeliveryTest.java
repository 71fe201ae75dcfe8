package io.gatehouse.bench.load;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DeliveryTest {
    private static ByteBuf msg(String id, long ts) {
        return Unpooled.copiedBuffer("{\"id\":\"" + id + "\",\"ts\":" + ts + ",\"tm\":1,\"pad\":\"x\","
                + "\"__md_trq__\":{\"__msg_rowid__\":9,\"__msg_t__\":1}}", StandardCharsets.US_ASCII);
    }

    @Test
    void countsFirstCopiesOnlyInAnyOrder() {
        Delivery.Track t = new Delivery("m", 1, 64).track(0);
        assertTrue(t.mark(2));
        assertEquals(1, t.low(), "1 is still missing");
        assertTrue(t.mark(1));
        assertEquals(3, t.low(), "1 and 2 received: the low end moves over both");
        assertFalse(t.mark(2), "below the low end: a duplicate");
        assertTrue(t.mark(5));
        assertFalse(t.mark(5), "inside the ring: a duplicate");
        assertEquals(3, t.received());
    }

    @Test
    void anIdASpanAheadOfAMissingOneSkipsIt() {
        Delivery d = new Delivery("m", 1, 64);
        Delivery.Track t = d.track(0);
        assertEquals(64, t.span());
        assertTrue(t.mark(1));
        assertTrue(t.mark(3));
        assertTrue(t.mark(66), "a span above the missing id 2");
        assertEquals(1, d.skipped(), "2 was given up; 3 was received");
        assertEquals(4, t.low());
        assertTrue(t.mark(1000), "many spans ahead: counted without a loop per id");
        assertEquals(1 + (937 - 4) - 1, d.skipped(), "4..936 given up, but for 66, which was received");
        assertEquals(937, t.low());
        assertFalse(t.mark(66), "below the low end now");
        assertEquals(4, t.received());
    }

    @Test
    void receiverParsesIdAndSendTimeAndIgnoresOtherFrames() {
        Delivery d = new Delivery("m", 2, 64);
        Delivery.Receiver rx = d.receiver();
        d.takeLatency();
        rx.onFrame(msg("m1-1", System.nanoTime() - 5_000_000));
        rx.onFrame(msg("m1-1", System.nanoTime()));
        rx.onFrame(msg("x0-1", System.nanoTime()));
        rx.onFrame(msg("m7-1", System.nanoTime()));
        assertEquals(1, d.firstCopies());
        assertEquals(1, d.duplicates());
        assertEquals(2, d.unknown(), "another prefix, a connection that is not in the run");
        Histogram h = d.takeLatency();
        assertEquals(1, h.getTotalCount(), "only the first copy's latency");
        assertTrue(h.getMaxValue() >= 5_000, "sent 5 ms before it arrived");
    }
}
