// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ReusableHeapBufferTest {
    @Test
    void shouldBeAnOrdinaryBufferBelowAndComeBackOnlyOnceEveryHolderReleasedIt() {
        ReusableHeapBuffer b = new ReusableHeapBuffer(64);
        assertEquals(1, b.refCnt());
        assertTrue(Gbuffers.canPrepend(b, 4), "room for a header, one reference: a level below may prepend");
        assertFalse(b.reclaim(), "held by the one it was given to");

        b.writeCharSequence("{\"id\":1}", StandardCharsets.US_ASCII);
        Gbuffers.prependInt(b, b.readableBytes() + 4);
        ByteBuf view = b.retainedSlice();   // a second holder, as a socket's queue
        b.release();
        assertFalse(b.reclaim(), "a holder is left");
        assertEquals(12, view.readableBytes());
        view.release();

        assertTrue(b.reclaim());
        assertEquals(1, b.refCnt());
        assertEquals(Gbuffers.HEADROOM, b.readerIndex());
        assertEquals(Gbuffers.HEADROOM, b.writerIndex());
        b.writeCharSequence("{\"id\":2}", StandardCharsets.US_ASCII);
        assertEquals("{\"id\":2}", b.toString(StandardCharsets.US_ASCII), "the array survived the last release");
        assertTrue(Gbuffers.canPrepend(b, 4));
        assertFalse(b.reclaim());

        // it grows like any heap buffer, and the grown array is the one taken back
        b.writeZero(1000);
        int grown = b.capacity();
        b.release();
        assertTrue(b.reclaim());
        assertEquals(grown, b.capacity());
        b.release();
    }

    @Test
    void shouldReuseTheLastBufferOnlyWhenItIsFreeAndLargeEnough() {
        ReusableHeapBuffer first = ReusableHeapBuffer.reuse(null, 64);
        assertNotSame(first, ReusableHeapBuffer.reuse(first, 64), "still held by the one it was given to");
        first.release();
        assertSame(first, ReusableHeapBuffer.reuse(first, 64), "released: taken back");
        first.release();
        ReusableHeapBuffer larger = ReusableHeapBuffer.reuse(first, 4096);
        assertNotSame(first, larger, "too small for what comes");
        assertTrue(larger.capacity() - Gbuffers.HEADROOM >= 4096);
        larger.release();
    }
}
