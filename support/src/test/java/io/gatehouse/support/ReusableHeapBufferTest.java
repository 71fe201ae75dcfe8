// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
}
