// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Header room: a header may be written in front of a payload only where no other buffer can see those bytes.
 * The test JVM runs Netty's leak detector at PARANOID, so every pooled buffer here is a leak-aware wrapper.
 */
class GbuffersTest {

    /** The numbers of queue metadata, acks and message ids (trqueue, C_KAFKA, C_PROT_HTTP_SR) are written by it. */
    @Test
    void shouldWriteLongsInDecimalAsLongToStringDoes() {
        long[] values = {0, 1, 7, 9, 10, 99, 100, 4711, 1_733_000_000_000L, 1764428000123L, Long.MAX_VALUE,
            -1, -10, -4711, Long.MIN_VALUE + 1, Long.MIN_VALUE};
        java.util.List<Long> all = new java.util.ArrayList<>();
        for (long v : values) all.add(v);
        for (long p = 1; p > 0 && p <= Long.MAX_VALUE / 10; p *= 10) {
            for (long v : new long[] {p - 1, p, p + 1, 10 * p - 1}) {
                all.add(v);
                all.add(-v);
            }
        }
        java.util.Random r = new java.util.Random(3);
        for (int i = 0; i < 1000; i++) all.add(r.nextLong() >> r.nextInt(64));
        for (long v = Integer.MAX_VALUE - 200L; v <= Integer.MAX_VALUE + 200L; v++) {   // where the int arithmetic starts
            all.add(v);
            all.add(-v);
        }
        for (long v : all) {
            // a heap buffer that grows on the way from no room at all, one whose array starts past its offset (a
            // slice), and a direct one
            ByteBuf heap = Unpooled.buffer(1, 64);
            ByteBuf slice = Unpooled.buffer(64).writerIndex(5).slice(5, 40).writerIndex(0);
            ByteBuf direct = Unpooled.directBuffer(1, 64);
            for (ByteBuf b : new ByteBuf[] {heap, slice, direct}) {
                b.writeByte('x');
                Gbuffers.writeDecimal(b, v);
                b.writeByte('y');
                assertEquals("x" + v + "y", b.toString(StandardCharsets.US_ASCII), b.getClass().getName());
            }
            heap.release();
            slice.release();
            direct.release();
        }
    }

    @Test
    void shouldReserveRoomAndWriteATcp4hHeaderInPlace() {
        ByteBuf b = Gbuffers.allocate(PooledByteBufAllocator.DEFAULT, 5);
        try {
            assertEquals(Gbuffers.HEADROOM, b.readerIndex());
            b.writeCharSequence("hello", StandardCharsets.US_ASCII);
            assertTrue(Gbuffers.canPrepend(b, 4), b.getClass().getName());
            Gbuffers.prependInt(b, 9);
            assertEquals(9, b.readableBytes());
            assertEquals(9, b.readInt());
            assertEquals("hello", b.toString(StandardCharsets.US_ASCII));
        } finally {
            b.release();
        }
    }

    @Test
    void shouldRefuseBuffersWhoseFrontIsSharedOrMissing() {
        ByteBuf root = Unpooled.copiedBuffer("0123456789", StandardCharsets.US_ASCII);
        try {
            assertFalse(Gbuffers.canPrepend(root, 4), "no consumed bytes: no room");
            root.readerIndex(6);
            assertTrue(Gbuffers.canPrepend(root, 4), "a root buffer with one reference");
            root.retain();
            assertFalse(Gbuffers.canPrepend(root, 4), "two references: someone else may read it");
            root.release();
            ByteBuf slice = root.retainedSlice(0, 10).readerIndex(6);
            assertFalse(Gbuffers.canPrepend(slice, 4), "a slice shares its bytes");
            slice.release();
            ByteBuf dup = root.retainedDuplicate();
            assertFalse(Gbuffers.canPrepend(dup, 4), "a duplicate shares its bytes");
            dup.release();
            assertFalse(Gbuffers.canPrepend(root.asReadOnly(), 4), "read-only");
            CompositeByteBuf comp = Unpooled.compositeBuffer();
            comp.addComponent(true, Unpooled.copiedBuffer("0123456789", StandardCharsets.US_ASCII));
            comp.readerIndex(6);
            assertFalse(Gbuffers.canPrepend(comp, 4), "a composite may hold slices of shared buffers");
            comp.release();
            assertEquals("0123456789", root.toString(0, 10, StandardCharsets.US_ASCII));
        } finally {
            root.release();
        }
    }

    @Test
    void shouldWriteAnObjectWithAKeyAddedLastOrNothingForWhatIsNotAnObject() {
        byte[] head = "\"__md_trq__\":{\"req\":4,\"msg\":".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        io.netty.buffer.ByteBuf src = io.netty.buffer.Unpooled.copiedBuffer(
                "{\"a\":1} \n{ \n }[1]", java.nio.charset.StandardCharsets.US_ASCII);
        io.netty.buffer.ByteBuf out = io.netty.buffer.Unpooled.buffer();
        assertTrue(Gbuffers.writeWithLastKey(out, src, 0, 9, head, 7));
        assertEquals("{\"a\":1,\"__md_trq__\":{\"req\":4,\"msg\":7}}",
                out.toString(java.nio.charset.StandardCharsets.US_ASCII));
        out.clear();
        assertTrue(Gbuffers.writeWithLastKey(out, src, 9, 14, head, 12));
        assertEquals("{\"__md_trq__\":{\"req\":4,\"msg\":12}}",
                out.toString(java.nio.charset.StandardCharsets.US_ASCII));
        out.clear();
        assertFalse(Gbuffers.writeWithLastKey(out, src, 14, 17, head, 0));
        assertEquals(0, out.readableBytes(), "nothing written");
    }
}
