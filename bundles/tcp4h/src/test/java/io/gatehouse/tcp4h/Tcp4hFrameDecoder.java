// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.TooLongFrameException;

import java.util.List;

/**
 * TCP4H frames as a Netty decoder, for the tests: each complete frame goes up as one {@link ByteBuf} holding exactly
 * the payload (the 4-byte header stripped). A thin wrapper around {@link Tcp4hFramer}, so the codec tests drive the
 * gclass's own byte rules through an EmbeddedChannel, with Netty's cumulation and leak detection around them.
 * Nothing in the bundle uses it (C_PROT_TCP4H calls the framer directly); the benchmark's raw-Netty baseline uses
 * Netty's {@code LengthFieldBasedFrameDecoder}.
 *
 * <pre>
 * BEFORE DECODE (9 bytes)                 AFTER DECODE (5 bytes)
 * +-------------+---------------+         +---------------+
 * | 00 00 00 09 | h e l l o     |  -----&gt; | h e l l o     |
 * +-------------+---------------+         +---------------+
 * </pre>
 *
 * A header of 4 (empty payload) raises {@link CorruptedFrameException} "frame_length cannot be 0"; a payload
 * over {@code maxPktSize} (header values 0..3 included) raises {@link TooLongFrameException}
 * "tcp4h head too long". Either way the rest of the input is discarded and the channel is closed.
 *
 * @see Tcp4hFrameEncoder
 */
class Tcp4hFrameDecoder extends ByteToMessageDecoder {

    private final Tcp4hFramer framer = new Tcp4hFramer();
    private final long maxPktSize;

    /**
     * @param maxPktSize the largest payload accepted, in bytes (0 = 16 MiB)
     */
    Tcp4hFrameDecoder(long maxPktSize) {
        this.maxPktSize = maxPktSize;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        for (;;) {
            ByteBuf frame = framer.decode(ctx.alloc(), in, maxPktSize);
            if (frame != null) {
                out.add(frame);
                continue;
            }
            if (framer.error() != Tcp4hFramer.Error.NONE) {
                fail(ctx, in);
            }
            return;
        }
    }

    private void fail(ChannelHandlerContext ctx, ByteBuf in) {
        in.skipBytes(in.readableBytes());
        Tcp4hFramer.Error e = framer.error();
        long l = framer.badHeader();
        framer.reset();
        ctx.close();
        if (e == Tcp4hFramer.Error.ZERO_LENGTH) {
            throw new CorruptedFrameException("frame_length cannot be 0");
        }
        throw new TooLongFrameException("tcp4h head too long: " + l);
    }

    @Override
    protected void handlerRemoved0(ChannelHandlerContext ctx) {
        framer.reset();
    }
}
