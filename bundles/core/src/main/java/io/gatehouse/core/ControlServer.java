package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Glog;
import io.gatehouse.api.Kw;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.LengthFieldBasedFrameDecoder;
import io.netty.handler.codec.TooLongFrameException;

import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * The control endpoint of a yuno: TCP4H frames (4-byte big-endian length + 4, then the payload) carrying one
 * JSON request each, {@code {"command": "stats-yuno service=x"}} or {@code {"command": "stats-yuno",
 * "kw": {...}}}, plus {@code "token"} when one is configured. Each request gets one envelope back.
 *
 * <p>It binds to 127.0.0.1 by default and refuses peers that are not on loopback unless told otherwise;
 * a bad request gets an error envelope and the connection stays up.
 */
public final class ControlServer implements AutoCloseable {
    static final int MAX_REQUEST = 1 << 20;

    private final YunoRuntime runtime;
    private final String token;
    private final boolean allowRemote;
    private Channel listener;

    public ControlServer(YunoRuntime runtime, String token, boolean allowRemote) {
        this.runtime = runtime;
        this.token = token == null || token.isEmpty() ? null : token;
        this.allowRemote = allowRemote;
    }

    /** Binds on the yuno's core thread; answers the bound port. */
    public int start(String host, int port) throws IOException {
        ServerBootstrap b = new ServerBootstrap()
                .group(runtime.yuno().eventLoop())
                .channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_REUSEADDR, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(MAX_REQUEST + 4, 0, 4, -4, 4, true),
                                new Handler());
                    }
                });
        try {
            listener = b.bind(host, port).sync().channel();
        } catch (Exception e) {
            throw new IOException("cannot listen for control on " + host + ":" + port + ": " + e.getMessage(), e);
        }
        return ((InetSocketAddress) listener.localAddress()).getPort();
    }

    @Override
    public void close() {
        if (listener != null) listener.close().awaitUninterruptibly(2000);
    }

    private final class Handler extends SimpleChannelInboundHandler<ByteBuf> {
        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            InetSocketAddress peer = (InetSocketAddress) ctx.channel().remoteAddress();
            if (!allowRemote && !peer.getAddress().isLoopbackAddress()) {
                Glog.warn(null, "Control connection refused: not a loopback peer", "peer", peer.toString());
                ctx.close();
                return;
            }
            ctx.fireChannelActive();
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
            ObjectNode answer = answer(frame);
            ByteBuf out = ctx.alloc().buffer(256);
            out.writeInt(0);
            Kw.writeJson(answer, out);
            out.setInt(0, out.readableBytes());
            ctx.writeAndFlush(out);
        }

        private ObjectNode answer(ByteBuf frame) {
            ObjectNode req;
            try {
                req = Kw.parse(frame);
            } catch (IOException e) {
                return Envelope.error("request is not a JSON object: " + e.getMessage());
            }
            if (token != null && !token.equals(Kw.getString(req, "token", ""))) {
                Glog.warn(null, "Control request refused: wrong token");
                return Envelope.error("wrong or missing token");
            }
            String command = Kw.getString(req, "command", "");
            if (command.isEmpty()) return Envelope.error("request without 'command'");
            JsonNode kw = req.get("kw");
            try {
                if (kw instanceof ObjectNode) return runtime.command(command, (ObjectNode) kw);
                return runtime.command(command);
            } catch (RuntimeException e) {
                return Envelope.error("command failed: " + e.getMessage());
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (cause instanceof TooLongFrameException || cause.getCause() instanceof TooLongFrameException) {
                Glog.warn(null, "Control request too long, connection closed", "max", MAX_REQUEST);
            }
            ctx.close();
        }
    }
}
