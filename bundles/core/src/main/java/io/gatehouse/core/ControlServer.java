package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Kw;
import io.gatehouse.api.Registry;
import io.gatehouse.support.Glog;
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
import io.netty.util.concurrent.ScheduledFuture;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The control endpoint of a yuno, which is also where other hubs' portals connect. TCP4H frames (4-byte
 * big-endian length + 4, then the payload), one JSON object each:
 *
 * <ul>
 *   <li>{@code {"command": "stats-yuno service=x", "kw"?: {...}, "token"?: T}}: a command of this yuno, answered
 *       with one envelope frame (the plain request of {@code gatehouse cmd}). With {@code "hub": NAME} (another
 *       hub) the connection acts as a short-lived hub named {@code <this hub>~cli-N}: the command travels to
 *       NAME through the portals as a {@code cmd} message and the reply's envelope is written back (or an error
 *       envelope after {@value #REMOTE_TIMEOUT_MS} ms without answer).</li>
 *   <li>{@code {"__portal__": "hello", "hub": NAME, "token"?: T}}: a portal opens; answered with
 *       {@code {"__portal__": "hello", "hub": <this hub>}} and the connection becomes the link to NAME in the
 *       registry (a wrong token or a taken name: {@code {"__portal__": "error", "comment"}} and the connection is
 *       closed).</li>
 *   <li>after the hello, registry messages ({@code {"to", "from", "type", "command"?, "kw"?, "id"?}}) in both
 *       directions. A frame that is not JSON, or a message without {@code to}, is logged; the link stays up.</li>
 * </ul>
 *
 * <p>It binds to 127.0.0.1 by default and refuses peers that are not on loopback unless told otherwise.
 */
public final class ControlServer implements AutoCloseable {
    static final int MAX_REQUEST = 1 << 20;
    static final long REMOTE_TIMEOUT_MS = 20_000;
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private final YunoRuntime runtime;
    private final String token;
    private final boolean allowRemote;
    private Channel listener;
    private int cliSeq;

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
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast(new LengthFieldBasedFrameDecoder(MAX_REQUEST + 4, 0, 4, -4, 4, true),
                                new Conn());
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

    private Registry registry() {
        return runtime.yuno().lookup(Registry.class);
    }

    private boolean tokenOk(ObjectNode req) {
        return token == null || token.equals(Kw.getString(req, "token", ""));
    }

    /** One connection: a command client, a portal from another hub, or both. Runs on the core thread. */
    private final class Conn extends SimpleChannelInboundHandler<ByteBuf> implements Registry.Link {
        private ChannelHandlerContext ctx;
        private String peer = "";
        /** The hub that said hello on this connection, or null. */
        private String hub;
        /** The short-lived hub name of plain requests for other hubs, or null. */
        private String cliHub;
        private long nextId;
        private final Map<Long, ScheduledFuture<?>> pending = new HashMap<>();

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            this.ctx = ctx;
            InetSocketAddress p = (InetSocketAddress) ctx.channel().remoteAddress();
            peer = p.toString();
            if (!allowRemote && !p.getAddress().isLoopbackAddress()) {
                Glog.warn(null, "Control connection refused: not a loopback peer", "peer", peer);
                ctx.close();
                return;
            }
            ctx.fireChannelActive();
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            Registry r = registry();
            if (r != null && (hub != null || cliHub != null)) r.removeLink(this);
            pending.values().forEach(f -> f.cancel(false));
            pending.clear();
            ctx.fireChannelInactive();
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, ByteBuf frame) {
            if (!frame.isReadable()) {
                // The TCP4H contract: a header of 4 (empty payload) closes the connection with an error.
                Glog.error(null, "frame_length cannot be 0", "peer", String.valueOf(ctx.channel().remoteAddress()));
                ctx.close();
                return;
            }
            ObjectNode req;
            try {
                req = Kw.parse(frame);
            } catch (IOException e) {
                if (hub != null) {
                    Glog.error(null, "Portal message is not a JSON object, ignored", "hub", hub, "peer", peer,
                            "error", e.getMessage());
                } else {
                    write(Envelope.error("request is not a JSON object: " + e.getMessage()));
                }
                return;
            }
            try {
                handle(req);
            } catch (RuntimeException e) {
                Glog.error(null, "Control request failed", "peer", peer, "error", String.valueOf(e));
                if (hub == null) write(Envelope.error("request failed: " + e.getMessage()));
            }
        }

        private void handle(ObjectNode req) {
            String portal = Kw.getString(req, "__portal__", "");
            if (!portal.isEmpty()) {
                portalFrame(portal, req);
                return;
            }
            if (hub != null && req.has("to")) {
                registry().deliverFrom(this, req);
                return;
            }
            if (!tokenOk(req) && hub == null) {
                Glog.warn(null, "Control request refused: wrong token", "peer", peer);
                write(Envelope.error("wrong or missing token"));
                return;
            }
            String command = Kw.getString(req, "command", "");
            if (command.isEmpty()) {
                if (hub != null) {
                    Glog.error(null, "Portal message without 'to' nor 'command', ignored", "hub", hub, "peer", peer);
                } else {
                    write(Envelope.error("request without 'command'"));
                }
                return;
            }
            String toHub = Kw.getString(req, "hub", "");
            if (!toHub.isEmpty() && !toHub.equals(runtime.yuno().name())) {
                remoteCommand(toHub, command, req);
                return;
            }
            JsonNode kw = req.get("kw");
            ObjectNode params = kw instanceof ObjectNode ? (ObjectNode) kw : null;
            if (externalCommand(command, params)) return;
            write(localCommand(command, params));
        }

        /** A container command (update-bundle) runs off the loop; its answer is written when it comes. */
        private boolean externalCommand(String line, ObjectNode kw) {
            CommandLine cl;
            try {
                cl = CommandLine.parse(line);
            } catch (IllegalArgumentException e) {
                return false;
            }
            YunoRuntime.ExternalCommand ext = runtime.externalCommand(cl.command);
            if (ext == null) return false;
            if (kw != null) cl.kw.setAll(kw);
            ext.run(cl.kw).whenComplete((answer, error) -> ctx.executor().execute(() -> write(error == null ? answer
                    : Envelope.error("command '" + cl.command + "' failed: " + error))));
            return true;
        }

        private ObjectNode localCommand(String line, ObjectNode kw) {
            CommandLine cl;
            try {
                cl = CommandLine.parse(line);
            } catch (IllegalArgumentException e) {
                return Envelope.error(e.getMessage());
            }
            if (kw != null) cl.kw.setAll(kw);
            try {
                return runtime.yuno().command(cl.command, cl.kw);
            } catch (RuntimeException e) {
                return Envelope.error("command failed: " + e.getMessage());
            }
        }

        private void portalFrame(String what, ObjectNode req) {
            switch (what) {
                case "hello":
                    hello(req);
                    break;
                case "error":
                    Glog.error(null, "Portal peer reports an error", "hub", hub == null ? "" : hub, "peer", peer,
                            "comment", Kw.getString(req, "comment", ""));
                    break;
                default:
                    Glog.error(null, "Unknown portal frame, ignored", "frame", what, "peer", peer);
            }
        }

        private void hello(ObjectNode req) {
            String name = Kw.getString(req, "hub", "");
            String me = runtime.yuno().name();
            String refuse = null;
            if (!tokenOk(req)) refuse = "wrong or missing token";
            else if (name.isEmpty()) refuse = "hello without 'hub'";
            else if (name.equals(me)) refuse = "hub name '" + name + "' is this hub's own name";
            else if (hub != null && !hub.equals(name)) refuse = "this link already said it is hub '" + hub + "'";
            if (refuse != null) {
                Glog.warn(null, "Portal refused", "peer", peer, "hub", name, "reason", refuse);
                ObjectNode e = F.objectNode();
                e.put("__portal__", "error");
                e.put("comment", refuse);
                writeJson(e).addListener(f -> ctx.close());
                return;
            }
            hub = name;
            registry().addLink(name, this);
            ObjectNode answer = F.objectNode();
            answer.put("__portal__", "hello");
            answer.put("hub", me);
            writeJson(answer);
        }

        /** A plain request for another hub: travels as a {@code cmd} message; the reply's envelope comes back. */
        private void remoteCommand(String toHub, String command, ObjectNode req) {
            Registry r = registry();
            if (cliHub == null) {
                cliHub = runtime.yuno().name() + "~cli-" + (++cliSeq);
                r.addLink(cliHub, this);
            }
            long id = ++nextId;
            ObjectNode msg = F.objectNode();
            ObjectNode to = msg.putObject("to");
            to.put("hub", toHub);
            to.put("service", Kw.getString(req, "service", Registry.YUNO));
            msg.putObject("from").put("hub", cliHub);
            msg.put("type", "cmd");
            msg.put("command", command);
            JsonNode kw = req.get("kw");
            if (kw instanceof ObjectNode) msg.set("kw", kw);
            msg.put("id", id);
            pending.put(id, ctx.executor().schedule(() -> {
                if (pending.remove(id) != null) {
                    write(Envelope.error("no answer from hub '" + toHub + "' within " + REMOTE_TIMEOUT_MS + " ms"));
                }
            }, REMOTE_TIMEOUT_MS, TimeUnit.MILLISECONDS));
            // An unreachable hub is answered at once: the registry bounces the cmd back to cliHub (send below).
            r.deliver(msg);
        }

        // --- Registry.Link ---

        @Override
        public String describe() {
            return (hub != null ? "peer " + hub : "client " + cliHub) + " at " + peer;
        }

        @Override
        public boolean isOpen() {
            return ctx != null && ctx.channel().isActive();
        }

        @Override
        public boolean send(ObjectNode msg) {
            if (!isOpen()) return false;
            JsonNode to = msg.get("to");
            if (cliHub != null && to != null && cliHub.equals(Kw.getString(to, "hub", ""))) {
                // The answer of a plain request: the client gets the bare envelope.
                ScheduledFuture<?> f = pending.remove(Kw.getLong(msg, "id", -1));
                if (f == null) {
                    Glog.info(null, "Late or unknown reply for a command client, dropped", "id",
                            Kw.getLong(msg, "id", -1), "peer", peer);
                    return true;
                }
                f.cancel(false);
                JsonNode env = msg.get("reply");
                write(env instanceof ObjectNode ? (ObjectNode) env : Envelope.error("answer without envelope: " + msg));
                return true;
            }
            writeJson(msg);
            return true;
        }

        // --- Writing ---

        private void write(ObjectNode envelope) {
            writeJson(envelope);
        }

        private io.netty.channel.ChannelFuture writeJson(ObjectNode o) {
            ByteBuf out = ctx.alloc().buffer(256);
            out.writeInt(0);
            Kw.writeJson(o, out);
            out.setInt(0, out.readableBytes());
            return ctx.writeAndFlush(out);
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            if (cause instanceof TooLongFrameException || cause.getCause() instanceof TooLongFrameException) {
                Glog.warn(null, "Control request too long, connection closed", "max", MAX_REQUEST, "peer", peer);
            }
            ctx.close();
        }
    }
}
