// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.ReferenceCountUtil;

/**
 * The last handler of a C_TCP socket: turns Netty's callbacks into calls on the {@link Tcp} gobj, which only the
 * core loop may make. Subclasses say how a call gets there ({@link #toCore}) and how reads travel:
 * {@link TcpHandler} for a socket on the core loop (straight calls), {@link WorkerLink} for one on a worker loop
 * (batches). The handler never touches gobj state itself.
 */
abstract class TcpBridge extends ChannelInboundHandlerAdapter {
    protected final Tcp tcp;
    private boolean activeSeen;

    TcpBridge(Tcp tcp) {
        this.tcp = tcp;
    }

    /**
     * This handler takes the place of another revision's on a socket that is up (a live upgrade): the connection
     * was reported already, so adding this handler reports nothing.
     */
    void connectionReported() {
        activeSeen = true;
    }

    /** Makes {@code call} on the core loop, after whatever the socket delivered before it. */
    abstract void toCore(Channel c, Runnable call);

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
        toCore(c, () -> tcp.onActive(c));
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof SslHandshakeCompletionEvent) {
            SslHandshakeCompletionEvent e = (SslHandshakeCompletionEvent) evt;
            Channel c = ctx.channel();
            Throwable cause = e.isSuccess() ? null : e.cause();
            toCore(c, () -> tcp.onHandshake(c, cause));
        }
        ReferenceCountUtil.release(evt);
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        Channel c = ctx.channel();
        toCore(c, () -> tcp.onWritabilityChanged(c));
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        Channel c = ctx.channel();
        toCore(c, () -> tcp.onInactive(c));
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        Channel c = ctx.channel();
        toCore(c, () -> tcp.onException(c, cause));
    }
}
