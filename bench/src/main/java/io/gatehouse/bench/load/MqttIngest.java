package io.gatehouse.bench.load;

import io.gatehouse.api.GClassSpec;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.mqtt.ProtMqttGClass;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.handler.codec.mqtt.MqttDecoder;
import io.netty.handler.codec.mqtt.MqttEncoder;
import io.netty.handler.codec.mqtt.MqttMessage;
import io.netty.handler.codec.mqtt.MqttMessageBuilders;
import io.netty.handler.codec.mqtt.MqttMessageType;
import io.netty.handler.codec.mqtt.MqttQoS;
import io.netty.handler.codec.mqtt.MqttVersion;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * MQTT QoS 1 ingest, the same client load in the same run against:
 * <ol type="a">
 *   <li>{@code mosquitto}: Debian's broker (a child process on a free loopback port, no persistence, no
 *       subscriber), which answers PUBACK as soon as it has parsed the PUBLISH;</li>
 *   <li>{@code gatehouse}: C_PROT_MQTT under a C_IOGATE → C_RELAY → C_MQIOGATE (lastdigits of id) → two C_QIOGATE
 *       ({@code fsync_policy} interval, 5 ms group commit) → two acking raw sinks, the demo gateway's shape:
 *       PUBACK only once the record is durable. With {@code --sinks false} the sinks are left out: the queues only
 *       fill on disk (the output's connection is refused and retried), which measures the ingest to the queues
 *       alone, as the goal names it, without the delivery sharing the machine's CPUs.</li>
 * </ol>
 * The client is Netty's codec-mqtt: {@code --connections} MQTT 3.1.1 connections, each keeping {@code --window}
 * QoS 1 PUBLISHes (128-byte JSON, {@code {"id":"N",...}}) unacked, a new one sent per PUBACK. Rate = PUBACKs per
 * second over {@code --duration} seconds after {@code --warmup}, and the server's CPU per PUBACK over the same
 * window (mosquitto: the process's utime + stime; Gatehouse: its core-loop and queue-flusher threads), which a
 * loaded machine moves less than the rate. Rounds alternate the two targets.
 *
 * {@code --qos 2} sends QoS 2 instead: a message counts at its PUBCOMP (PUBLISH, PUBREC, PUBREL, PUBCOMP), and
 * {@code --clean false} connects with persistent sessions, whose QoS 2 ids Gatehouse writes to its session store.
 *
 * <pre>MqttIngest [--rounds 3] [--connections 4] [--window 1000] [--warmup 2] [--duration 5] [--size 128]
 *            [--mosquitto /usr/sbin/mosquitto] [--queue-kw fsync_max_records=0] [--sinks true|false]
 *            [--qos 1|2] [--clean true|false]</pre>
 */
public final class MqttIngest {
    private MqttIngest() {}

    static final class Options {
        int connections = 4;
        int window = 1000;
        double warmup = 2;
        double duration = 5;
        int size = 128;
        int port;
        /** false: no sinks, the queues only fill (ingest and durable enqueue alone). */
        boolean sinks = true;
        /** 1: PUBLISH, PUBACK; 2: PUBLISH, PUBREC, PUBREL, PUBCOMP. */
        int qos = 1;
        /** false: persistent sessions (clean session 0), whose QoS 2 ids the server keeps across reconnects. */
        boolean clean = true;
    }

    public static void main(String[] args) throws Exception {
        int rounds = 3;
        String mosquitto = "/usr/sbin/mosquitto";
        Options o = new Options();
        for (int i = 0; i < args.length; i += 2) {
            switch (args[i]) {
                case "--rounds": rounds = Integer.parseInt(args[i + 1]); break;
                case "--connections": o.connections = Integer.parseInt(args[i + 1]); break;
                case "--window": o.window = Integer.parseInt(args[i + 1]); break;
                case "--warmup": o.warmup = Double.parseDouble(args[i + 1]); break;
                case "--duration": o.duration = Double.parseDouble(args[i + 1]); break;
                case "--size": o.size = Integer.parseInt(args[i + 1]); break;
                case "--mosquitto": mosquitto = args[i + 1]; break;
                case "--sinks": o.sinks = Boolean.parseBoolean(args[i + 1]); break;
                case "--qos": o.qos = Integer.parseInt(args[i + 1]); break;
                case "--clean": o.clean = Boolean.parseBoolean(args[i + 1]); break;
                case "--queue-kw": SideBySide.queueKw = SideBySide.queueKw(args[i + 1]); break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (o.qos != 1 && o.qos != 2) throw new IllegalArgumentException("--qos must be 1 or 2");
        System.out.printf(Locale.ROOT, "# mqtt ingest QoS %d%s: %d rounds, %d connections x window %d, %d-byte JSON,"
                        + " sinks %s, warmup %.0f s, measured %.0f s; JVM %s, %d cpus, load average %s%n", o.qos,
                o.clean ? "" : ", persistent sessions", rounds, o.connections,
                o.window, o.size, o.sinks ? "in this JVM" : "none (the queues fill)", o.warmup, o.duration, System.getProperty("java.version"),
                Runtime.getRuntime().availableProcessors(), SideBySide.loadAverage());
        Map<String, List<Double>> rates = new LinkedHashMap<>();
        Map<String, List<Double>> cpu = new LinkedHashMap<>();
        for (int r = 1; r <= rounds; r++) {
            Result m = runMosquitto(mosquitto, o);
            Result g = runGatehouse(o);
            rates.computeIfAbsent("mosquitto", k -> new ArrayList<>()).add(m.rate);
            rates.computeIfAbsent("gatehouse", k -> new ArrayList<>()).add(g.rate);
            cpu.computeIfAbsent("mosquitto", k -> new ArrayList<>()).add(m.cpuUsPerMsg);
            cpu.computeIfAbsent("gatehouse", k -> new ArrayList<>()).add(g.cpuUsPerMsg);
            System.out.printf(Locale.ROOT, "round %d: mosquitto %,.0f msgs/s (%.1f us CPU/msg), gatehouse (durable acks)"
                    + " %,.0f msgs/s (%.1f us CPU/msg), ratio %.2f; load average %s%n", r, m.rate, m.cpuUsPerMsg, g.rate,
                    g.cpuUsPerMsg, g.rate / m.rate, SideBySide.loadAverage());
        }
        double mm = median(rates.get("mosquitto"));
        double gm = median(rates.get("gatehouse"));
        double mc = median(cpu.get("mosquitto"));
        double gc = median(cpu.get("gatehouse"));
        System.out.printf(Locale.ROOT, "median: mosquitto %,.0f msgs/s, gatehouse %,.0f msgs/s, ratio %.2f;"
                + " CPU per message: mosquitto %.1f us, gatehouse %.1f us (messages per CPU-second ratio %.2f)%n",
                mm, gm, gm / mm, mc, gc, mc / gc);
    }

    /** A rate, and the server's CPU per message over the same window (the client's CPU is not counted). */
    static final class Result {
        final double rate;
        final double cpuUsPerMsg;

        Result(double rate, double cpuUsPerMsg) {
            this.rate = rate;
            this.cpuUsPerMsg = cpuUsPerMsg;
        }
    }

    /** CPU used so far by the server under test, ns. */
    interface CpuMeter {
        long cpuNanos();
    }

    /** utime + stime of a process, from /proc (clock ticks of 10 ms). */
    static CpuMeter processCpu(long pid) {
        return () -> {
            try {
                String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                return (Long.parseLong(f[11]) + Long.parseLong(f[12])) * 10_000_000L;
            } catch (java.io.IOException e) {
                return 0;
            }
        };
    }

    /** The CPU of this JVM's Gatehouse threads: the yuno's core loop and the queue flusher. */
    static CpuMeter gatehouseThreadsCpu(String yunoName) {
        java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        return () -> {
            long sum = 0;
            for (java.lang.management.ThreadInfo t : mx.getThreadInfo(mx.getAllThreadIds())) {
                if (t == null) continue;
                String n = t.getThreadName();
                if (n.startsWith("gatehouse-core-" + yunoName) || n.startsWith("trqueue-flusher")) {
                    long c = mx.getThreadCpuTime(t.getThreadId());
                    if (c > 0) sum += c;
                }
            }
            return sum;
        };
    }

    static double median(List<Double> v) {
        List<Double> s = new ArrayList<>(v);
        s.sort(Double::compare);
        return s.get(s.size() / 2);
    }

    /** Debian's mosquitto on a free loopback port, stopped by its own process handle afterwards. */
    static Result runMosquitto(String binary, Options o) throws Exception {
        int port = SideBySide.freePort();
        Path conf = Files.createTempFile("bench-mosquitto-", ".conf");
        Files.writeString(conf, "listener " + port + " 127.0.0.1\nallow_anonymous true\npersistence false\n");
        Process p = new ProcessBuilder(binary, "-c", conf.toString()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            SideBySide.awaitListening(port, 10_000);
            Options x = copy(o);
            x.port = port;
            return load(x, processCpu(p.pid()));
        } finally {
            p.destroy();
            if (!p.waitFor(5, TimeUnit.SECONDS)) p.destroyForcibly();
            Files.deleteIfExists(conf);
        }
    }

    /** The demo gateway's shape with an MQTT input, in this JVM, on a fresh data directory. */
    static Result runGatehouse(Options o) throws Exception {
        Path data = Files.createTempDirectory("gatehouse-bench-mqtt-");
        List<RawSink> sinks = new ArrayList<>();
        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl()) {
            if (o.sinks) {
                for (int i = 0; i < 2; i++) sinks.add(new RawSink(0));
            }
            int port = SideBySide.freePort();
            // without sinks the outputs point at free ports nobody listens on: refused, retried, the queues fill
            int sink0 = o.sinks ? sinks.get(0).port() : SideBySide.freePort();
            int sink1 = o.sinks ? sinks.get(1).port() : SideBySide.freePort();
            List<GClassSpec<?>> gclasses = new ArrayList<>(SideBySide.gclasses(queues));
            gclasses.add(new ProtMqttGClass().spec());
            // as in a gateway, where the mqtt bundle finds the trqueue service (QoS 2 ids noted once written)
            try (YunoRuntime rt = YunoRuntime.builder().name("bench-mqtt").dataDir(data).gclasses(gclasses)
                    .extension(io.gatehouse.api.queue.TrQueueFactory.class, queues)
                    .config(config(port, sink0, sink1)).build().start()) {
                SideBySide.awaitListening(port, 20_000);
                long deadline = System.currentTimeMillis() + 20_000;
                while (sinks.stream().anyMatch(s -> s.connections.get() == 0) && System.currentTimeMillis() < deadline) {
                    Thread.sleep(20);
                }
                Options x = copy(o);
                x.port = port;
                return load(x, gatehouseThreadsCpu("bench-mqtt"));
            }
        } finally {
            for (RawSink s : sinks) s.close();
            SideBySide.deleteTree(data);
        }
    }

    static String config(int mqttPort, int sink0, int sink1) {
        String output = "{\"name\":\"__output_side__\",\"gclass\":\"C_MQIOGATE\",\"priority\":3,"
                + "\"kw\":{\"method\":\"lastdigits\",\"digits\":1,\"key\":\"id\"},\"children\":["
                + SideBySide.queue("output-0", "interval", sink0) + "," + SideBySide.queue("output-1", "interval", sink1) + "]}";
        return "{\"yuno\":{\"yuno_role\":\"gatehouse\",\"yuno_name\":\"bench\"},\"services\":[" + output + ","
                + "{\"name\":\"relay\",\"gclass\":\"C_RELAY\",\"priority\":4,\"kw\":{\"input\":\"__mqtt_side__\","
                + "\"output\":\"__output_side__\"}},"
                + "{\"name\":\"__mqtt_side__\",\"gclass\":\"C_IOGATE\",\"priority\":5,\"children\":["
                + "{\"name\":\"__mqtt_side__-listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"mqtt://127.0.0.1:" + mqttPort
                + "\",\"max_connections\":20000,\"channel_template\":{\"gclass\":\"C_CHANNEL\",\"children\":"
                + "[{\"gclass\":\"C_PROT_MQTT\",\"kw\":{\"receive_maximum\":65535}}]}}}]}]}";
    }

    static Options copy(Options o) {
        Options x = new Options();
        x.connections = o.connections;
        x.window = o.window;
        x.warmup = o.warmup;
        x.duration = o.duration;
        x.size = o.size;
        x.port = o.port;
        x.sinks = o.sinks;
        x.qos = o.qos;
        x.clean = o.clean;
        return x;
    }

    /** The client load: PUBACKs per second over the measured window. */
    static Result load(Options o, CpuMeter meter) throws Exception {
        NioEventLoopGroup group = new NioEventLoopGroup(1);
        AtomicLong acks = new AtomicLong();
        AtomicLong seq = new AtomicLong();
        String pad = "x".repeat(Math.max(0, o.size - 40));
        List<Channel> chans = new ArrayList<>();
        try {
            Bootstrap b = new Bootstrap().group(group).channel(NioSocketChannel.class)
                    .option(ChannelOption.TCP_NODELAY, true)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(SocketChannel ch) {
                            ch.pipeline().addLast(new MqttDecoder(), MqttEncoder.INSTANCE, new Client(o, acks, seq, pad));
                        }
                    });
            for (int i = 0; i < o.connections; i++) chans.add(b.connect("127.0.0.1", o.port).sync().channel());
            Thread.sleep((long) (o.warmup * 1000));
            long a0 = acks.get();
            long c0 = meter.cpuNanos();
            long t0 = System.nanoTime();
            Thread.sleep((long) (o.duration * 1000));
            long a1 = acks.get();
            long c1 = meter.cpuNanos();
            long t1 = System.nanoTime();
            long n = Math.max(1, a1 - a0);
            return new Result((a1 - a0) * 1e9 / (t1 - t0), (c1 - c0) / 1e3 / n);
        } finally {
            for (Channel c : chans) c.close();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).sync();
        }
    }

    /** One connection: CONNECT, then {@code window} PUBLISHes in flight, one more per PUBACK (QoS 2: PUBCOMP). */
    static final class Client extends SimpleChannelInboundHandler<MqttMessage> {
        private static final AtomicLong IDS = new AtomicLong();
        private final int window;
        private final MqttQoS qos;
        private final boolean clean;
        private final AtomicLong acks;
        private final AtomicLong seq;
        private final String pad;
        private int nextPacketId = 1;

        Client(Options o, AtomicLong acks, AtomicLong seq, String pad) {
            this.window = o.window;
            this.qos = o.qos == 2 ? MqttQoS.EXACTLY_ONCE : MqttQoS.AT_LEAST_ONCE;
            this.clean = o.clean;
            this.acks = acks;
            this.seq = seq;
            this.pad = pad;
        }

        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            ctx.writeAndFlush(MqttMessageBuilders.connect().protocolVersion(MqttVersion.MQTT_3_1_1)
                    .clientId("bench-" + IDS.incrementAndGet()).cleanSession(clean).keepAlive(60).build());
        }

        @Override
        protected void channelRead0(ChannelHandlerContext ctx, MqttMessage m) {
            MqttMessageType t = m.fixedHeader().messageType();
            if (t == MqttMessageType.CONNACK) {
                for (int i = 0; i < window; i++) publish(ctx);
                ctx.flush();
            } else if (t == MqttMessageType.PUBACK || t == MqttMessageType.PUBCOMP) {
                acks.incrementAndGet();
                publish(ctx);
            } else if (t == MqttMessageType.PUBREC) {
                int id = ((io.netty.handler.codec.mqtt.MqttMessageIdVariableHeader) m.variableHeader()).messageId();
                ctx.write(new MqttMessage(new io.netty.handler.codec.mqtt.MqttFixedHeader(MqttMessageType.PUBREL, false,
                        MqttQoS.AT_LEAST_ONCE, false, 2), io.netty.handler.codec.mqtt.MqttMessageIdVariableHeader.from(id)),
                        ctx.voidPromise());
            }
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            ctx.flush();
        }

        private void publish(ChannelHandlerContext ctx) {
            long n = seq.incrementAndGet();
            ByteBuf payload = Unpooled.copiedBuffer("{\"id\":\"" + n + "\",\"pad\":\"" + pad + "\"}", StandardCharsets.US_ASCII);
            int id = nextPacketId;
            nextPacketId = nextPacketId == 65535 ? 1 : nextPacketId + 1;
            ctx.write(MqttMessageBuilders.publish().topicName("devices/" + (n % 100)).qos(qos)
                    .messageId(id).payload(payload).build(), ctx.voidPromise());
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            ctx.close();
        }
    }
}
