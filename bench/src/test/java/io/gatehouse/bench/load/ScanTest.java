package io.gatehouse.bench.load;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;

class ScanTest {
    private static ByteBuf buf(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.US_ASCII);
    }

    private static final byte[] KEY = "\"k\":".getBytes(StandardCharsets.US_ASCII);

    @Test
    void findsTheFirstAndTheLastOccurrenceWithinTheReadableBytes() {
        ByteBuf b = buf("\"k\":1,\"\"k\":22,\"k\"");
        assertEquals(0, Scan.indexOf(b, KEY));
        assertEquals(7, Scan.indexOf(b, KEY, 1), "past a quote that starts no key");
        assertEquals(7, Scan.lastIndexOf(b, KEY), "the trailing \"k\" has no colon");
        assertEquals(22, Scan.number(b, 7 + KEY.length));
        b.readerIndex(1);
        assertEquals(7, Scan.indexOf(b, KEY), "from the reader index");
        b.readerIndex(8);
        assertEquals(-1, Scan.lastIndexOf(b, KEY));
        assertEquals(-1, Scan.indexOf(buf("\"k\""), KEY), "shorter than the key");
        assertEquals(0, Scan.lastIndexOf(buf("\"k\":"), KEY), "the whole buffer");
    }

    @Test
    void readsTheRowidOfAFrameOrAnAck() {
        assertEquals(12, Scan.rowid(buf("{\"__md_trq__\":{\"__msg_rowid__\": 12,\"result\":0}}")));
        assertEquals(-1, Scan.rowid(buf("{\"__msg_rowid__\":x}")));
        assertEquals(-1, Scan.rowid(buf("{}")));
    }
}
