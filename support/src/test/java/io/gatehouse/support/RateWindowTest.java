package io.gatehouse.support;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GClock;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RateWindowTest {
    private final AtomicLong now = new AtomicLong(5_000);
    private final GClock clock = new GClock() {
        @Override public long monotonicMillis() { return now.get(); }
        @Override public long epochMillis() { return now.get(); }
    };
    /** The gclass's counter attributes, here plain longs. */
    private final AtomicLong tx = new AtomicLong();
    private final AtomicLong rx = new AtomicLong();
    private final RateWindow w = new RateWindow(clock, tx::get, rx::get);

    private void rx(int n) { rx.addAndGet(n); }

    private void at(long ms) { now.set(5_000 + ms); }

    @Test
    void shouldOpenTheWindowOnTheFirstReadWithRatesZero() {
        rx(500);   // before the first read: in no rate
        ObjectNode s = w.readStats("");
        assertEquals(500, s.get("rxMsgs").asLong());
        assertEquals(0, s.get("rxMsgsec").asLong());
        at(1000);
        assertEquals(0, w.readStats("").get("rxMsgsec").asLong());
    }

    @Test
    void shouldDivideByElapsedMillisecondsWhenReadAfterOnePointNineSeconds() {
        w.read();
        rx(19);
        at(1900);
        ObjectNode s = w.readStats("");
        assertEquals(10, s.get("rxMsgsec").asLong());   // 19 / 1.9, not 19 / 1
        assertEquals(10, s.get("maxrxMsgsec").asLong());
    }

    @Test
    void shouldFollowTheSeedRuleOfAcceptanceCheck24() {
        w.read();                                      // t=0 baseline
        rx(100);
        at(2500);
        assertEquals(40, w.readStats("").get("rxMsgsec").asLong());     // 100*1000/2500
        rx(10);
        at(2800);
        ObjectNode s = w.readStats("");               // < 1 s: last rates, window not moved
        assertEquals(40, s.get("rxMsgsec").asLong());
        rx(20);
        at(3900);
        s = w.readStats("");                          // 30 msgs over 1400 ms
        assertEquals(21, s.get("rxMsgsec").asLong());
        assertEquals(40, s.get("maxrxMsgsec").asLong());
        assertEquals(130, s.get("rxMsgs").asLong());
    }

    @Test
    void shouldMoveMaximaOnlyWhenAWindowCloses() {
        w.read();
        tx.addAndGet(5000);
        at(500);
        ObjectNode s = w.readStats("");               // a burst read early: no window closed, no max
        assertEquals(0, s.get("maxtxMsgsec").asLong());
        at(2000);
        s = w.readStats("");
        assertEquals(2500, s.get("txMsgsec").asLong());
        assertEquals(2500, s.get("maxtxMsgsec").asLong());
        tx.addAndGet(100);
        at(4000);
        s = w.readStats("");
        assertEquals(50, s.get("txMsgsec").asLong());
        assertEquals(2500, s.get("maxtxMsgsec").asLong());
    }

    @Test
    void shouldShareOneWindowBetweenTwoInterleavedReaders() {
        w.read();                                      // reader A opens at 0
        rx(100);
        at(1000);
        assertEquals(100, w.readStats("").get("rxMsgsec").asLong());   // reader B closes [0,1000]
        rx(300);
        at(1500);
        assertEquals(100, w.readStats("").get("rxMsgsec").asLong());   // reader A, 0.5 s after B: last rate
        rx(100);
        at(3000);
        // reader B: the window opened at B's read (1000): 400 msgs over 2 s; A's read did not move it
        assertEquals(200, w.readStats("").get("rxMsgsec").asLong());
    }

    @Test
    void shouldZeroEverythingAndReopenOnReset() {
        w.read();
        rx(100);
        tx.incrementAndGet();
        at(1000);
        w.read();
        tx.set(0);   // the gclass zeroes its counters, then the window
        rx.set(0);
        ObjectNode s = w.readStats("__reset__");
        for (String k : List.of("txMsgs", "rxMsgs", "txMsgsec", "rxMsgsec", "maxtxMsgsec", "maxrxMsgsec")) {
            assertEquals(0, s.get(k).asLong(), k);
        }
        rx(10);
        at(2000);
        assertEquals(10, w.readStats("").get("rxMsgsec").asLong());
    }

    @Test
    void shouldAnswerExactlyTheSixKeys() {
        ObjectNode s = w.readStats("");
        List<String> keys = new java.util.ArrayList<>();
        s.fieldNames().forEachRemaining(keys::add);
        assertEquals(List.of("txMsgs", "rxMsgs", "txMsgsec", "rxMsgsec", "maxtxMsgsec", "maxrxMsgsec"), keys);
    }
}
