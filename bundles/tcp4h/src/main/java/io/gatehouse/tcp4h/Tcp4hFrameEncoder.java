// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.channel.ChannelHandler.Sharable;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.MessageToMessageEncoder;

import java.util.List;

/**
 * Prepends the TCP4H header (big-endian payload length + 4) to each outgoing {@link ByteBuf}: the header goes
 * out as its own small buffer followed by the payload itself, so the payload is never copied.
 *
 * <pre>
 * BEFORE ENCODE (5 bytes)        AFTER ENCODE (4 + 5 bytes)
 * +---------------+              +-------------+---------------+
 * | h e l l o     |  -----&gt;      | 00 00 00 09 | h e l l o     |
 * +---------------+              +-------------+---------------+
 * </pre>
 *
 * Stateless, hence {@link Sharable}. C_PROT_TCP4H uses {@link #header} for payloads it composes without a copy;
 * the codec tests use the encoder itself.
 */
@Sharable
public class Tcp4hFrameEncoder extends MessageToMessageEncoder<ByteBuf> {

    @Override
    protected void encode(ChannelHandlerContext ctx, ByteBuf payload, List<Object> out) {
        out.add(header(ctx.alloc(), payload.readableBytes()));
        out.add(payload.retain());
    }

    /** A 4-byte buffer holding the header for a payload of {@code payloadLength} bytes. */
    public static ByteBuf header(ByteBufAllocator alloc, int payloadLength) {
        return alloc.buffer(Tcp4hFramer.HEADER_SIZE).writeInt(payloadLength + Tcp4hFramer.HEADER_SIZE);
    }

    /** One new buffer holding header and a copy of the payload's readable bytes (the payload is not consumed). */
    public static ByteBuf frame(ByteBufAllocator alloc, ByteBuf payload) {
        int n = payload.readableBytes();
        ByteBuf out = alloc.buffer(Tcp4hFramer.HEADER_SIZE + n);
        out.writeInt(n + Tcp4hFramer.HEADER_SIZE);
        out.writeBytes(payload, payload.readerIndex(), n);
        return out;
    }
}
