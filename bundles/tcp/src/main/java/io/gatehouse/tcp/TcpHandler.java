// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.api.Yuno;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.ReferenceCountUtil;

/**
 * The last handler of a C_TCP socket on the core loop (io_threads 0, the default): forwards Netty's callbacks
 * straight to the {@link Tcp} gobj; a call from any other thread is handed to the core loop. It never touches gobj
 * state itself. A socket on a worker loop (io_threads > 0) has a {@link WorkerLink} instead, which batches.
 */
final class TcpHandler extends ChannelInboundHandlerAdapter {
    private final Tcp tcp;
    private final Yuno yuno;
    private boolean activeSeen;

    TcpHandler(Tcp tcp, Yuno yuno) {
        this.tcp = tcp;
        this.yuno = yuno;
    }

    private void run(Runnable r) {
        if (yuno.inCoreThread()) {
            r.run();
        } else {
            yuno.execute(r);
        }
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        // An accepted socket handed over later (it waited for a free channel) is already active.
        if (ctx.channel().isActive()) active(ctx.channel());
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        active(ctx.channel());
        ctx.fireChannelActive();
    }

    private void active(Channel c) {
        if (activeSeen) return;
        activeSeen = true;
        run(() -> tcp.onActive(c));
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof SslHandshakeCompletionEvent) {
            SslHandshakeCompletionEvent e = (SslHandshakeCompletionEvent) evt;
            Channel c = ctx.channel();
            Throwable cause = e.isSuccess() ? null : e.cause();
            run(() -> tcp.onHandshake(c, cause));
        }
        ReferenceCountUtil.release(evt);
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
            tcp.onRead(c, b);
        } else {
            yuno.execute(() -> tcp.onRead(c, b));
        }
    }

    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        Channel c = ctx.channel();
        run(() -> tcp.onReadComplete(c));
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        Channel c = ctx.channel();
        run(() -> tcp.onWritabilityChanged(c));
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        Channel c = ctx.channel();
        run(() -> tcp.onInactive(c));
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Channel c = ctx.channel();
        run(() -> tcp.onException(c, cause));
    }
}
