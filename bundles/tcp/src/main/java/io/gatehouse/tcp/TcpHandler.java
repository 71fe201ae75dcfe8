// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.api.Yuno;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.util.ReferenceCountUtil;

/**
 * The bridge of a C_TCP socket on the core loop (io_threads 0, the default): every callback calls the {@link Tcp}
 * gobj straight away, one EV_RX_DATA per read; a call from any other thread is handed to the core loop. A socket
 * on a worker loop (io_threads > 0) has a {@link WorkerLink} instead, which batches.
 */
final class TcpHandler extends TcpBridge {
    private final Yuno yuno;

    TcpHandler(Tcp tcp, Yuno yuno) {
        super(tcp);
        this.yuno = yuno;
    }

    @Override
    void toCore(Channel c, Runnable call) {
        if (yuno.inCoreThread()) {
            call.run();
        } else {
            yuno.execute(call);
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf)) {
            ReferenceCountUtil.release(msg);
            return;
        }
        Channel c = ctx.channel();
        ByteBuf b = (ByteBuf) msg;
        if (yuno.inCoreThread()) {
            tcp.onRead(c, b);   // the message path: no task object per read
        } else {
            yuno.execute(() -> tcp.onRead(c, b));
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        Channel c = ctx.channel();
        toCore(c, () -> tcp.onReadComplete(c));
    }
}
