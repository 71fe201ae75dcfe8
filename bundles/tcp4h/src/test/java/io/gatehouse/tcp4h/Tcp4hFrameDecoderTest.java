// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import io.gatehouse.testkit.Tcp4hFrames;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.util.ResourceLeakDetector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * EmbeddedChannel tests of the TCP4H codec: every split, the errors and the limits. Every buffer is allocated
 * from a counting allocator and the test ends by asserting that it holds no memory (no leak on any path).
 */
class Tcp4hFrameDecoderTest {

    private UnpooledByteBufAllocator alloc;
    private final List<ByteBuf> inputs = new ArrayList<>();

    @BeforeEach
    void setUp() {
        alloc = new UnpooledByteBufAllocator(false);
    }

    @AfterEach
    void noLeak() {
        for (ByteBuf b : inputs) {
            assertEquals(0, b.refCnt(), "an input buffer was not released");
        }
        assertEquals(0, alloc.metric().usedHeapMemory(), "heap buffers leaked");
        assertEquals(0, alloc.metric().usedDirectMemory(), "direct buffers leaked");
    }

    @Test
    void shouldRunWithTheLeakDetectorAtParanoidLevel() {
        assertEquals(ResourceLeakDetector.Level.PARANOID, ResourceLeakDetector.getLevel());
    }

    private EmbeddedChannel channel(long max) {
        EmbeddedChannel ch = new EmbeddedChannel();
        ch.config().setAllocator(alloc);
        ch.pipeline().addLast(new Tcp4hFrameDecoder(max));
        return ch;
    }

    private ByteBuf in(int... bytes) {
        ByteBuf b = alloc.buffer(bytes.length);
        for (int v : bytes) b.writeByte(v);
        inputs.add(b);
        return b;
    }

    private ByteBuf in(byte[] bytes, int from, int to) {
        ByteBuf b = alloc.buffer(Math.max(1, to - from));
        b.writeBytes(bytes, from, to - from);
        inputs.add(b);
        return b;
    }

    private static byte[] frame(String payload) {
        return Tcp4hFrames.of(payload);
    }

    private static byte[] frame(byte[] payload) {
        return Tcp4hFrames.of(payload);
    }

    static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) n += p.length;
        byte[] out = new byte[n];
        int o = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, o, p.length);
            o += p.length;
        }
        return out;
    }

    private static String readString(EmbeddedChannel ch) {
        ByteBuf f = ch.readInbound();
        if (f == null) return null;
        try {
            return f.toString(StandardCharsets.UTF_8);
        } finally {
            f.release();
        }
    }

    @Test
    void shouldDecodeOneFrameToItsPayload() {
        EmbeddedChannel ch = channel(0);
        assertTrue(ch.writeInbound(in(0x00, 0x00, 0x00, 0x09, 'h', 'e', 'l', 'l', 'o')));
        assertEquals("hello", readString(ch));
        assertNull(ch.readInbound());
        assertFalse(ch.finish());
    }

    @Test
    void shouldDecodeTwoFramesInOneRead() {
        EmbeddedChannel ch = channel(0);
        byte[] all = concat(frame("ab"), frame("cde"));
        ch.writeInbound(in(all, 0, all.length));
        assertEquals("ab", readString(ch));
        assertEquals("cde", readString(ch));
        assertNull(ch.readInbound());
        assertFalse(ch.finish());
    }

    @Test
    void shouldDecodeTwoFramesWhereverTheReadsSplitThem() {
        byte[] all = concat(frame("ab"), frame("cde"), frame("fghij"));
        for (int cut1 = 0; cut1 <= all.length; cut1++) {
            for (int cut2 = cut1; cut2 <= all.length; cut2++) {
                EmbeddedChannel ch = channel(0);
                ch.writeInbound(in(all, 0, cut1));
                ch.writeInbound(in(all, cut1, cut2));
                ch.writeInbound(in(all, cut2, all.length));
                assertEquals("ab", readString(ch), "cuts " + cut1 + "," + cut2);
                assertEquals("cde", readString(ch));
                assertEquals("fghij", readString(ch));
                assertNull(ch.readInbound());
                assertFalse(ch.finish());
            }
        }
    }

    @Test
    void shouldDecodeAFrameReadOneByteAtATime() {
        EmbeddedChannel ch = channel(0);
        byte[] all = frame("hello");
        for (int i = 0; i < all.length; i++) {
            ch.writeInbound(in(all, i, i + 1));
            if (i < all.length - 1) assertNull(ch.readInbound());
        }
        assertEquals("hello", readString(ch));
        assertFalse(ch.finish());
    }

    @Test
    void shouldCloseWithAnErrorWhenTheHeaderIsFour() {
        EmbeddedChannel ch = channel(0);
        byte[] all = concat(new byte[] {0, 0, 0, 4}, frame("next"));
        CorruptedFrameException e = assertThrows(CorruptedFrameException.class,
                () -> ch.writeInbound(in(all, 0, all.length)));
        assertEquals("frame_length cannot be 0", e.getMessage());
        assertNull(ch.readInbound());
        assertFalse(ch.isOpen());
        ch.finishAndReleaseAll();
    }

    @Test
    void shouldDeliverTheGoodFrameBeforeAHeaderOfFourInTheSameRead() {
        EmbeddedChannel ch = channel(0);
        byte[] all = concat(frame("ok"), new byte[] {0, 0, 0, 4});
        assertThrows(CorruptedFrameException.class, () -> ch.writeInbound(in(all, 0, all.length)));
        assertEquals("ok", readString(ch));
        assertNull(ch.readInbound());
        assertFalse(ch.isOpen());
        ch.finishAndReleaseAll();
    }

    @Test
    void shouldRejectHeaderValuesUnderFourAsTooLong() {
        for (int l = 0; l < 4; l++) {
            EmbeddedChannel ch = channel(0);
            ByteBuf b = in(0, 0, 0, l, 'x', 'y');
            TooLongFrameException e = assertThrows(TooLongFrameException.class, () -> ch.writeInbound(b));
            assertTrue(e.getMessage().startsWith("tcp4h head too long"));
            assertNull(ch.readInbound());
            assertFalse(ch.isOpen());
            ch.finishAndReleaseAll();
        }
    }

    @Test
    void shouldRejectATooLongHeaderSplitAcrossReads() {
        EmbeddedChannel ch = channel(1024);
        ch.writeInbound(in(0x00, 0x00));
        assertThrows(TooLongFrameException.class, () -> ch.writeInbound(in(0x04, 0x05)));
        assertFalse(ch.isOpen());
        ch.finishAndReleaseAll();
    }

    @Test
    void shouldAcceptAPayloadOfExactlyMaxPktSize() {
        EmbeddedChannel ch = channel(1024);
        byte[] p = new byte[1024];
        for (int i = 0; i < p.length; i++) p[i] = (byte) i;
        byte[] all = frame(p);
        assertEquals(1028, (all[2] & 0xFF) << 8 | (all[3] & 0xFF));
        ch.writeInbound(in(all, 0, 700));
        assertNull(ch.readInbound());
        ch.writeInbound(in(all, 700, all.length));
        ByteBuf f = ch.readInbound();
        assertArrayEquals(p, ByteBufUtil.getBytes(f));
        f.release();
        assertFalse(ch.finish());
    }

    @Test
    void shouldRejectAPayloadOneByteOverMaxPktSize() {
        EmbeddedChannel ch = channel(1024);
        byte[] all = frame(new byte[1025]);
        assertThrows(TooLongFrameException.class, () -> ch.writeInbound(in(all, 0, all.length)));
        assertNull(ch.readInbound());
        assertFalse(ch.isOpen());
        ch.finishAndReleaseAll();
    }

    @Test
    void shouldAcceptTenThousandBytesUnderTheDefaultLimit() {
        EmbeddedChannel ch = channel(0);
        byte[] p = new byte[10_000];
        java.util.Arrays.fill(p, (byte) 'z');
        byte[] all = frame(p);
        ch.writeInbound(in(all, 0, 3000));
        ch.writeInbound(in(all, 3000, 6001));
        ch.writeInbound(in(all, 6001, all.length));
        ByteBuf f = ch.readInbound();
        assertEquals(10_000, f.readableBytes());
        f.release();
        assertFalse(ch.finish());
    }

    @Test
    void shouldLimitPayloadsTo16MiBByDefault() {
        assertEquals(16_777_216, Tcp4hFramer.limit(0));
        Tcp4hFramer fr = new Tcp4hFramer();
        ByteBuf ok = Unpooled.buffer(4).writeInt(16_777_216 + 4);
        assertNull(fr.decode(alloc, ok, 0));
        assertEquals(Tcp4hFramer.Error.NONE, fr.error());
        assertTrue(fr.inPayload());
        ByteBuf bad = Unpooled.buffer(4).writeInt(16_777_216 + 5);
        Tcp4hFramer fr2 = new Tcp4hFramer();
        assertNull(fr2.decode(alloc, bad, 0));
        assertEquals(Tcp4hFramer.Error.TOO_LONG, fr2.error());
        ok.release();
        bad.release();
        fr.reset();
    }

    @Test
    void shouldReleaseAPartialPayloadWhenTheChannelCloses() {
        EmbeddedChannel ch = channel(0);
        byte[] all = frame("0123456789");
        ch.writeInbound(in(all, 0, 7));
        assertNull(ch.readInbound());
        assertFalse(ch.finish());
    }

    @Test
    void shouldRoundTripThroughTheEncoderAndTheDecoder() {
        EmbeddedChannel out = new EmbeddedChannel(new Tcp4hFrameEncoder());
        out.config().setAllocator(alloc);
        EmbeddedChannel ch = channel(0);
        for (String s : new String[] {"a", "hello", "{\"a\": 1}"}) {
            ByteBuf p = alloc.buffer().writeBytes(s.getBytes(StandardCharsets.UTF_8));
            assertTrue(out.writeOutbound(p));
            ByteBuf h = out.readOutbound();
            ByteBuf body = out.readOutbound();
            assertEquals(s.length() + 4, h.getInt(0));
            ch.writeInbound(h);
            ch.writeInbound(body);
            assertEquals(s, readString(ch));
        }
        ByteBuf p = alloc.buffer().writeBytes("hello".getBytes(StandardCharsets.UTF_8));
        ByteBuf f = Tcp4hFrameEncoder.frame(alloc, p);
        assertEquals("0000000968656c6c6f", ByteBufUtil.hexDump(f));
        f.release();
        p.release();
        assertFalse(out.finish());
        assertFalse(ch.finish());
    }
}
