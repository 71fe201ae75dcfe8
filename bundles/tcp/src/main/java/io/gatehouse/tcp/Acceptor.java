// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;

/**
 * The handler of a C_TCP_S listening socket, on the core loop: every accepted socket goes to the listener, and so
 * does an accept error. It stands where a ServerBootstrap would put its own acceptor because that one cannot be
 * replaced: in a live upgrade the new revision's Acceptor takes this one's place (same name) on the same bound
 * socket, so no connect is refused while the revision changes.
 */
final class Acceptor extends ChannelInboundHandlerAdapter {
    /** The handler's name in the listening socket's pipeline. */
    static final String NAME = "acceptor";

    private final TcpS listener;

    Acceptor(TcpS listener) {
        this.listener = listener;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        listener.accepted((Channel) msg);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        listener.acceptFailed(cause);
    }
}
