// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import io.gatehouse.testkit.Tcp4hFrames;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderException;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Randomized deframing: streams of valid frames, sometimes followed by a garbage header (0..4 or over the
 * limit) and garbage bytes, sometimes cut short (connection lost mid-frame), split at random points. At least
 * 1,000,000 input chunks go through the framer; every frame is compared with what was framed, every error with
 * the garbage that caused it, and the allocator must end holding zero bytes (exact accounting, stronger than
 * the sampling leak detector). A smaller run goes through the Netty decoder with the PARANOID detector.
 */
class Tcp4hFramerRandomTest {

    private static final int MIN_CHUNKS = 1_000_000;

    /** One generated stream: its bytes, the payloads expected before the garbage, the expected error. */
    private static final class Stream {
        final byte[] bytes;
        final List<byte[]> frames;
        final Tcp4hFramer.Error error;
        final boolean truncated;

        Stream(byte[] bytes, List<byte[]> frames, Tcp4hFramer.Error error, boolean truncated) {
            this.bytes = bytes;
            this.frames = frames;
            this.error = error;
            this.truncated = truncated;
        }
    }

    private static Stream generate(Random r, int max) {
        int nFrames = 1 + r.nextInt(6);
        List<byte[]> frames = new ArrayList<>();
        List<byte[]> parts = new ArrayList<>();
        for (int i = 0; i < nFrames; i++) {
            int len = r.nextInt(10) == 0 ? 1 + r.nextInt(Math.min(max, 3000)) : 1 + r.nextInt(Math.min(max, 64));
            if (max <= 4096 && r.nextInt(50) == 0) len = max;
            byte[] p = new byte[len];
            r.nextBytes(p);
            frames.add(p);
            parts.add(Tcp4hFrames.of(p));
        }
        Tcp4hFramer.Error error = Tcp4hFramer.Error.NONE;
        int garbage = r.nextInt(8);
        if (garbage == 0) {
            int l = r.nextInt(4) == 0 ? 4 : r.nextInt(4);
            error = l == 4 ? Tcp4hFramer.Error.ZERO_LENGTH : Tcp4hFramer.Error.TOO_LONG;
            parts.add(header(l, r));
        } else if (garbage == 1) {
            long over = (long) max + 5 + (long) (r.nextDouble() * (0xFFFFFFFFL - max - 5));
            error = Tcp4hFramer.Error.TOO_LONG;
            parts.add(header((int) over, r));
        }
        boolean truncated = false;
        byte[] bytes = Tcp4hFrameDecoderTest.concat(parts.toArray(new byte[0][]));
        if (error == Tcp4hFramer.Error.NONE && r.nextInt(10) == 0) {
            int lastLen = parts.get(parts.size() - 1).length;
            int cut = 1 + r.nextInt(lastLen - 1);
            byte[] t = new byte[bytes.length - cut];
            System.arraycopy(bytes, 0, t, 0, t.length);
            bytes = t;
            frames.remove(frames.size() - 1);
            truncated = true;
        }
        return new Stream(bytes, frames, error, truncated);
    }

    /** A bad header followed by random garbage bytes. */
    private static byte[] header(int l, Random r) {
        byte[] tail = new byte[r.nextInt(20)];
        r.nextBytes(tail);
        byte[] h = {(byte) (l >>> 24), (byte) (l >>> 16), (byte) (l >>> 8), (byte) l};
        return Tcp4hFrameDecoderTest.concat(h, tail);
    }

    /** Random cut points, mostly small chunks, sometimes one byte, sometimes the whole rest. */
    private static int nextChunk(Random r, int remaining) {
        switch (r.nextInt(4)) {
            case 0: return 1;
            case 1: return Math.min(remaining, 1 + r.nextInt(8));
            case 2: return Math.min(remaining, 1 + r.nextInt(256));
            default: return remaining;
        }
    }

    @Test
    void shouldDeframeAMillionRandomChunksExactlyAndLeaveNothingHeld() {
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            Random r = new Random(0x7C94L);
            UnpooledByteBufAllocator alloc = new UnpooledByteBufAllocator(false, true);
            int[] maxes = {0, 100, 1000, 4096};
            long chunks = 0;
            long frames = 0;
            long errors = 0;
            while (chunks < MIN_CHUNKS) {
                int max = maxes[r.nextInt(maxes.length)];
                Tcp4hFramer framer = new Tcp4hFramer();
                Stream s = generate(r, Tcp4hFramer.limit(max));
                ByteBuf whole = alloc.buffer(s.bytes.length).writeBytes(s.bytes);
                int off = 0;
                int got = 0;
                while (off < s.bytes.length) {
                    int n = nextChunk(r, s.bytes.length - off);
                    ByteBuf chunk = whole.retainedSlice(off, n);
                    off += n;
                    chunks++;
                    for (;;) {
                        ByteBuf f = framer.decode(alloc, chunk, max);
                        if (f == null) break;
                        byte[] want = s.frames.get(got++);
                        assertEquals(want.length, f.readableBytes());
                        assertTrue(ByteBufUtil.equals(f, io.netty.buffer.Unpooled.wrappedBuffer(want)));
                        f.release();
                        frames++;
                    }
                    chunk.release();
                    if (framer.error() != Tcp4hFramer.Error.NONE) {
                        break;
                    }
                }
                assertEquals(s.frames.size(), got, "frames delivered before the end/garbage");
                assertEquals(s.error, framer.error());
                if (s.error != Tcp4hFramer.Error.NONE) {
                    errors++;
                } else if (!s.truncated) {
                    assertFalse(framer.hasPartial(), "a complete stream leaves nothing held");
                }
                framer.reset();
                whole.release();
                assertEquals(0, whole.refCnt());
            }
            assertEquals(0, alloc.metric().usedHeapMemory(), "bytes still held: leak");
            assertTrue(frames > 100_000 && errors > 1000, "frames " + frames + ", errors " + errors);
        });
    }

    @Test
    void shouldDeframeRandomChunksInANettyPipelineWithoutALeak() {
        assertTimeoutPreemptively(Duration.ofSeconds(60), () -> {
            Random r = new Random(42);
            UnpooledByteBufAllocator alloc = new UnpooledByteBufAllocator(false);
            int chunks = 0;
            while (chunks < 20_000) {
                int max = r.nextBoolean() ? 0 : 500;
                EmbeddedChannel ch = new EmbeddedChannel();
                ch.config().setAllocator(alloc);
                ch.pipeline().addLast(new Tcp4hFrameDecoder(max));
                Stream s = generate(r, max == 0 ? Tcp4hFramer.DEFAULT_MAX_PKT_SIZE : max);
                int off = 0;
                boolean failed = false;
                while (off < s.bytes.length && ch.isOpen()) {
                    int n = nextChunk(r, s.bytes.length - off);
                    ByteBuf chunk = alloc.buffer(n).writeBytes(s.bytes, off, n);
                    off += n;
                    chunks++;
                    try {
                        ch.writeInbound(chunk);
                    } catch (DecoderException e) {
                        failed = true;
                    }
                }
                int got = 0;
                for (ByteBuf f; (f = ch.readInbound()) != null; got++) {
                    assertTrue(ByteBufUtil.equals(f, io.netty.buffer.Unpooled.wrappedBuffer(s.frames.get(got))));
                    f.release();
                }
                assertEquals(s.frames.size(), got);
                assertEquals(s.error != Tcp4hFramer.Error.NONE, failed);
                ch.finishAndReleaseAll();
                assertNull(ch.readInbound());
            }
            assertEquals(0, alloc.metric().usedHeapMemory(), "bytes still held: leak");
        });
    }
}
