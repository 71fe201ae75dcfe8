package io.gatehouse.bench.load;

import io.gatehouse.api.GClassSpec;
import io.gatehouse.channel.ChannelGClass;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.iogate.IoGateGClass;
import io.gatehouse.mqiogate.MqIoGateGClass;
import io.gatehouse.qiogate.QIoGateGClass;
import io.gatehouse.relay.RelayGClass;
import io.gatehouse.sink.SinkGClass;
import io.gatehouse.tcp.TcpGClass;
import io.gatehouse.tcp.TcpSGClass;
import io.gatehouse.tcp4h.ProtTcp4hGClass;
import io.gatehouse.trqueue.TrQueueFactoryImpl;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The same load, in the same JVM run, through:
 * <ol type="a">
 *   <li>{@code raw-proxy}: the baseline every other config is a ratio to: a raw Netty TCP4H forwarder on one
 *       event loop ({@link RawProxy}) in front of one acking raw sink, the cheapest correct hop; it copies the
 *       small frames of one flush into one buffer, as C_TCP does;</li>
 *   <li>{@code raw-proxy-per-frame}: the same forwarder with one Netty write per frame (the baseline before
 *       C_TCP coalesced its writes, kept to compare with earlier figures);</li>
 *   <li>{@code raw}: the producer straight into an acking raw sink (no hop: half the work of any forwarder);</li>
 *   <li>{@code iogate}: Gatehouse, producer → C_IOGATE (C_TCP_S) → C_RELAY → C_IOGATE (send_type 2, one channel
 *       per sink) → 2 raw sinks; the relay acks once the output took the message; nothing stored;</li>
 *   <li>{@code qiogate-none|interval|always}: the output is one C_QIOGATE with that {@code fsync_policy} → 1 sink;
 *       the relay acks once the record is durable per the policy;</li>
 *   <li>{@code mq2}, {@code mq4}: C_MQIOGATE (lastdigits on id) over 2 / 4 C_QIOGATE (interval) → 2 / 4 sinks;
 *       mq2 is the demo gateway's shape.</li>
 * </ol>
 * Modes ({@link LoadGen.Mode}): {@code sustained} (the default: each connection keeps at most
 * {@code --max-backlog} messages the sinks have not received), {@code burst} (the former {@code pipelined}:
 * a window of unacked messages, ingest), {@code pingpong}. The sinks count first copies by message id
 * ({@link Delivery}), so {@code msgs/s} is always what the destinations received.
 *
 * <p>Reporting: every round runs each mode's configs back to back, {@code raw-proxy} first (it is added when
 * {@code --configs} leaves it out); a config's ratio is taken to the {@code raw-proxy} run of the same round and
 * mode, and the summary gives the median over the rounds (default 5) of the rates, the ratios, the acked rate,
 * the end backlog and the end-to-end latency percentiles (producer send → destination receipt).
 *
 * <p>{@code --io-threads N} runs the gateway configs with the yuno's {@code io_threads} N (its sockets on N worker
 * loops, the gobjs on the core loop; 0, the default, keeps everything on the core loop); raw-proxy and raw do not
 * have it.
 *
 * <pre>SideBySide [--rounds 5] [--size 128] [--connections 4] [--max-backlog 20000] [--window 2000]
 *            [--warmup 2] [--duration 4] [--rate MSGS_PER_S, 0 = max] [--configs raw-proxy,iogate,...] [--modes sustained,burst,pingpong]
 *            [--io-threads 0] [--jit-warmup 1]</pre>
 *
 * <p>{@code --jit-warmup S}: each config's throwaway run before the rounds lasts S seconds after a warm-up of S
 * seconds (default 1). The configs share the gateway's code, and each one changes what the compiler sees: with 1 s
 * the compiler is still busy in the first rounds, on the CPUs the configs share.
 */
public final class SideBySide {
    public static final String BASELINE = "raw-proxy";
    static final String BASELINE_PER_FRAME = "raw-proxy-per-frame";
    /** The config that forces once per record: each of its runs is followed by the disk's fsync rate. */
    static final String ALWAYS = "qiogate-always";
    static final List<String> ALL = List.of(BASELINE, BASELINE_PER_FRAME, "raw", "iogate", "qiogate-none", "qiogate-interval",
            "qiogate-always", "mq2", "mq4");
    /** Issue 17's paths: the relay that stores nothing, one durable queue, the demo's two queues. */
    public static final List<String> DEFAULT = List.of(BASELINE, "iogate", "qiogate-interval", "mq2");

    private SideBySide() {}

    public static void main(String[] args) throws Exception {
        int rounds = 5;
        LoadGen.Options base = new LoadGen.Options();
        base.connections = 4;
        base.window = 2000;
        base.warmup = 2;
        base.duration = 4;
        List<String> configs = DEFAULT;
        List<LoadGen.Mode> modes = List.of(LoadGen.Mode.SUSTAINED);
        int ioThreads = 0;
        double jitWarmup = 1;
        for (int i = 0; i < args.length; i += 2) {
            switch (args[i]) {
                case "--rounds": rounds = Integer.parseInt(args[i + 1]); break;
                case "--size": base.size = Integer.parseInt(args[i + 1]); break;
                case "--connections": base.connections = Integer.parseInt(args[i + 1]); break;
                case "--window": base.window = Integer.parseInt(args[i + 1]); break;
                case "--max-backlog": base.maxBacklog = Integer.parseInt(args[i + 1]); break;
                case "--warmup": base.warmup = Double.parseDouble(args[i + 1]); break;
                case "--duration": base.duration = Double.parseDouble(args[i + 1]); break;
                case "--rate": base.rate = Long.parseLong(args[i + 1]); break;   // msgs/s over all connections, 0 = max
                case "--configs": configs = List.of(args[i + 1].split(",")); break;
                case "--io-threads": ioThreads = Integer.parseInt(args[i + 1]); break;
                case "--jit-warmup": jitWarmup = Double.parseDouble(args[i + 1]); break;
                case "--queue-kw": queueKw = queueKw(args[i + 1]); break;
                case "--modes": case "--mode":
                    modes = Stream.of(args[i + 1].split(",")).map(LoadGen.Mode::parse).collect(Collectors.toList());
                    break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        for (String c : configs) {
            if (!ALL.contains(c)) throw new IllegalArgumentException("unknown config " + c + "; known: " + ALL);
        }
        List<String> order = new ArrayList<>(configs);
        order.remove(BASELINE);
        order.add(0, BASELINE);
        System.out.printf(Locale.ROOT, "# side by side: %d rounds, modes %s, size %d, %d connections, sustained"
                        + " max backlog %d, burst window %d, warmup %.1f s, window %.1f s, jit warmup %.1f s, gateway io_threads %d;"
                        + " JVM %s, %d cpus, load average %s%n", rounds, modes, base.size, base.connections,
                base.maxBacklog, base.window, base.warmup, base.duration, jitWarmup, ioThreads, System.getProperty("java.version"),
                Runtime.getRuntime().availableProcessors(), loadAverage());
        // One throwaway run of every config first, so that no measured run pays the JIT: the baseline's alone warmed
        // only the shared code (Netty, the load generator, the sinks), and a gateway config's first round then spent
        // about 23 us of process CPU per message against 11-14 in later rounds.
        for (String cfg : order) {
            LoadGen.Options warm = base.copy();
            warm.mode = LoadGen.Mode.SUSTAINED;
            warm.warmup = jitWarmup;
            warm.duration = jitWarmup;
            warm.label = cfg + "/jit-warmup";
            System.out.println(runOne(cfg, warm, ioThreads).line() + " (not counted)");
        }
        Map<String, List<LoadGen.Result>> results = new LinkedHashMap<>();
        Map<String, List<Double>> fsyncRates = new LinkedHashMap<>();
        for (int r = 1; r <= rounds; r++) {
            for (LoadGen.Mode mode : modes) {
                for (String cfg : order) {
                    LoadGen.Options o = base.copy();
                    o.mode = mode;
                    if (mode == LoadGen.Mode.PINGPONG) {
                        o.connections = 1;
                        o.window = 1;
                    }
                    o.label = cfg + "/" + mode;
                    LoadGen.Result res = runOne(cfg, o, ioThreads);
                    System.out.println(res.line() + " round=" + r + " load=" + loadAverage().split(" ")[0]);
                    results.computeIfAbsent(o.label, k -> new ArrayList<>()).add(res);
                    if (cfg.equals(ALWAYS)) fsyncRates.computeIfAbsent(o.label, k -> new ArrayList<>()).add(fsyncBaseline(o));
                }
            }
        }
        summary(results, order, modes);
        fsyncSummary(results, fsyncRates);
    }

    /**
     * The disk's fsync rate right after the {@code always} run of the round, on the same file system (the temp
     * directory the gateways' queues use), for as long as that run's window.
     */
    static double fsyncBaseline(LoadGen.Options o) throws IOException {
        Path dir = Files.createTempDirectory("gatehouse-bench-fsync-");
        try {
            double rate = FsyncBaseline.forcesPerSecond(dir, o.size, o.warmup, o.duration);
            System.out.printf(Locale.ROOT, "# fsync baseline (write %d B + force per record): %,.0f forces/s%n", o.size, rate);
            return rate;
        } finally {
            Files.deleteIfExists(dir);
        }
    }

    /** The {@code always} rows against the disk's fsync rate of the same rounds (the goal: within 2×). */
    static void fsyncSummary(Map<String, List<LoadGen.Result>> results, Map<String, List<Double>> fsyncRates) {
        for (Map.Entry<String, List<Double>> e : fsyncRates.entrySet()) {
            List<LoadGen.Result> rs = results.get(e.getKey());
            double[] forces = e.getValue().stream().mapToDouble(Double::doubleValue).toArray();
            double[] ratio = new double[forces.length];
            for (int k = 0; k < forces.length; k++) ratio[k] = rs.get(k).msgsPerSec / forces[k];
            System.out.printf(Locale.ROOT, "%s against the disk's fsync rate of the same rounds: %,.0f forces/s median"
                            + " (%,.0f-%,.0f), ratio %.2f median (%.2f-%.2f)%n", e.getKey(), median(forces), min(forces),
                    max(forces), median(ratio), min(ratio), max(ratio));
        }
    }

    public static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (IOException e) {
            return "?";
        }
    }

    static void summary(Map<String, List<LoadGen.Result>> results, List<String> configs, List<LoadGen.Mode> modes) {
        System.out.println();
        System.out.println("msgs/s: first copies the destinations received per second in the window; ratio: to the"
                + " raw-proxy run of the same round; medians over the rounds; latency end to end (send -> receipt);"
                + " CPU per first copy over the whole run: the hop's event loop (raw-proxy's, or the core loop) and"
                + " the process (load generator and sinks included)");
        System.out.println();
        System.out.println("| mode | config | msgs/s median (min-max) | ratio to raw-proxy median (min-max)"
                + " | acked msgs/s | end backlog | p50 us | p99 us | loop CPU us/msg | process CPU us/msg"
                + " | of it load generator | of it sinks |");
        System.out.println("|---|---|---|---|---|---|---|---|---|---|---|---|");
        for (LoadGen.Mode mode : modes) {
            List<LoadGen.Result> base = results.get(BASELINE + "/" + mode);
            for (String cfg : configs) {
                List<LoadGen.Result> rs = results.get(cfg + "/" + mode);
                if (rs == null) continue;
                double[] ratio = new double[rs.size()];
                for (int k = 0; k < rs.size(); k++) ratio[k] = rs.get(k).msgsPerSec / base.get(k).msgsPerSec;
                double[] rate = rs.stream().mapToDouble(x -> x.msgsPerSec).toArray();
                System.out.printf(Locale.ROOT, "| %s | %s | %,.0f (%,.0f-%,.0f) | %.2f (%.2f-%.2f) | %,.0f | %,.0f"
                                + " | %,.0f | %,.0f | %.2f | %.2f | %.2f | %.2f |%n",
                        mode, cfg, median(rate), min(rate), max(rate), median(ratio), min(ratio), max(ratio),
                        median(rs, x -> x.ackedPerSec), median(rs, x -> x.endBacklog), median(rs, x -> x.p(50)),
                        median(rs, x -> x.p(99)), median(rs, x -> x.loopCpuUs), median(rs, x -> x.processCpuUs),
                        median(rs, x -> x.loadgenCpuUs), median(rs, x -> x.sinkCpuUs));
            }
        }
        System.out.println("load average at the end: " + loadAverage());
    }

    interface Metric {
        double of(LoadGen.Result r);
    }

    static double median(List<LoadGen.Result> rs, Metric m) {
        return median(rs.stream().mapToDouble(m::of).toArray());
    }

    /** Median of the values that are not NaN (a run that failed), NaN if none. */
    public static double median(double[] values) {
        double[] v = Arrays.stream(values).filter(x -> !Double.isNaN(x)).sorted().toArray();
        if (v.length == 0) return Double.NaN;
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    public static double min(double[] v) {
        return Arrays.stream(v).filter(x -> !Double.isNaN(x)).min().orElse(Double.NaN);
    }

    public static double max(double[] v) {
        return Arrays.stream(v).filter(x -> !Double.isNaN(x)).max().orElse(Double.NaN);
    }

    public static int freePortPublic() throws IOException {
        return freePort();
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    public static List<GClassSpec<?>> gclasses(TrQueueFactoryImpl queues) {
        return List.of(new TcpGClass().spec(), new TcpSGClass().spec(), new ProtTcp4hGClass().spec(),
                new ChannelGClass().spec(), new IoGateGClass().spec(), new QIoGateGClass(queues).spec(),
                new MqIoGateGClass().spec(), new RelayGClass().spec(), new SinkGClass().spec());
    }

    /**
     * Runs one configuration with a fresh gateway (or proxy), sinks and data directory; the sinks mark what they
     * receive in a {@link Delivery} of this run.
     */
    public static LoadGen.Result runOne(String cfg, LoadGen.Options o) throws Exception {
        return runOne(cfg, o, 0);
    }

    /**
     * {@link #runOne(String, LoadGen.Options)} with the gateway's yuno on {@code ioThreads} worker loops for its
     * sockets ({@code YunoRuntime.builder().ioThreads}; 0 = every socket on the core loop, the default). Ignored by
     * raw-proxy and raw, which have no yuno. With workers, the result also gives their CPU per first copy
     * ({@link LoadGen.Result#ioCpuUs}).
     */
    public static LoadGen.Result runOne(String cfg, LoadGen.Options o, int ioThreads) throws Exception {
        return runOne(cfg, o, ioThreads, (x, d, sinks) -> LoadGen.run(x, d));
    }

    /** What a run does once the gateway (or proxy) and its sinks are up: {@link LoadGen#run} by default. */
    public interface Body {
        LoadGen.Result run(LoadGen.Options o, Delivery d, List<RawSink> sinks) throws Exception;
    }

    /** {@link #runOne(String, LoadGen.Options)} with another load than LoadGen's ({@link Drain}'s phases). */
    public static LoadGen.Result runOne(String cfg, LoadGen.Options o, Body body) throws Exception {
        return runOne(cfg, o, 0, body);
    }

    /** {@link #runOne(String, LoadGen.Options, Body)} with the gateway's {@code io_threads}. */
    public static LoadGen.Result runOne(String cfg, LoadGen.Options o, int ioThreads, Body body) throws Exception {
        int sinks = cfg.equals("mq4") ? 4 : cfg.equals("iogate") || cfg.equals("mq2") ? 2 : 1;
        Delivery delivery = new Delivery(o.prefix, o.connections, Delivery.spanFor(o.maxBacklog));
        List<RawSink> sinkList = new ArrayList<>();
        Path data = Files.createTempDirectory("gatehouse-bench-");
        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl()) {
            for (int i = 0; i < sinks; i++) {
                RawSink s = new RawSink(0);
                s.setAck(!cfg.equals("iogate"));   // a plain gate does not speak the queue protocol downstream
                s.setDelivery(delivery);
                sinkList.add(s);
            }
            LoadGen.Options x = o.copy();
            if (cfg.equals("raw")) {
                x.port = sinkList.get(0).port();
                Cost cost = new Cost(null, null, delivery, sinkList);
                return cost.of(body.run(x, delivery, sinkList));
            }
            if (cfg.equals(BASELINE) || cfg.equals(BASELINE_PER_FRAME)) {
                try (RawProxy proxy = new RawProxy(0, "127.0.0.1", sinkList.get(0).port(), cfg.equals(BASELINE))) {
                    if (!proxy.awaitSink(20_000)) throw new IllegalStateException("raw-proxy: no sink connection");
                    x.port = proxy.port();
                    Cost cost = new Cost(proxy.thread(), null, delivery, sinkList);
                    LoadGen.Result r = cost.of(body.run(x, delivery, sinkList));
                    System.out.println("# " + cfg + " " + proxy.stats());
                    return r;
                }
            }
            int input = freePort();
            String json = gatewayConfig(cfg, input, sinkList.stream().mapToInt(RawSink::port).toArray());
            try (YunoRuntime rt = YunoRuntime.builder().name("bench").ioThreads(ioThreads).dataDir(data)
                    .gclasses(gclasses(queues)).config(json).build().start()) {
                awaitListening(input, 20_000);
                long deadline = System.currentTimeMillis() + 20_000;
                while (sinkList.stream().anyMatch(s -> s.connections.get() == 0) && System.currentTimeMillis() < deadline) {
                    Thread.sleep(20);
                }
                x.port = input;
                Cost cost = new Cost(coreThread(), ioThreads > 0 ? IO_PREFIX : null, delivery, sinkList);
                return cost.of(body.run(x, delivery, sinkList));
            }
        } finally {
            for (RawSink s : sinkList) s.close();
            deleteTree(data);
        }
    }

    /** The names of the bench yuno's io_threads worker loops ({@code YunoRuntime}: gatehouse-io-NAME-...). */
    static final String IO_PREFIX = "gatehouse-io-bench-";
    /** The sinks' event loop threads ({@link RawSink}). */
    static final String SINK_PREFIX = "raw-sink-";

    /** The running yuno's core loop: the newest live thread named like one (earlier runs' loops are stopped). */
    static Thread coreThread() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.isAlive() && t.getName().startsWith("gatehouse-core-"))
                .max(Comparator.comparingLong(Thread::getId))
                .orElseThrow(() -> new IllegalStateException("no gatehouse-core thread"));
    }

    /**
     * CPU time per first copy over a whole run (warm-up included), of the hop's event loop (the proxy's, or the
     * gateway's core loop) and of the whole process. Unlike a rate it hardly moves with the neighbours' load:
     * on this shared machine it says what a hop costs when its rate says mostly how much CPU it was given. With
     * {@code io_threads}, also of the yuno's worker loops (the threads named {@code ioPrefix}...: a worker's
     * thread may start during the run, when its first socket is registered).
     */
    static final class Cost {
        private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
        private static final com.sun.management.OperatingSystemMXBean OS =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        private final Thread loop;
        private final String ioPrefix;
        private final Map<Long, Long> io0 = new LinkedHashMap<>();
        private final Delivery delivery;
        private final long loop0;
        private final long process0;
        private final long delivered0;
        private final Map<Long, Long> threads0 = new LinkedHashMap<>();

        private final List<RawSink> sinks;
        private final long received0;
        private final long reads0;

        Cost(Thread loop, String ioPrefix, Delivery delivery, List<RawSink> sinks) {
            this.loop = loop;
            this.sinks = sinks;
            received0 = sinks.stream().mapToLong(s -> s.received.get()).sum();
            reads0 = sinks.stream().mapToLong(s -> s.reads.get()).sum();
            this.ioPrefix = ioPrefix;
            this.delivery = delivery;
            if (ioPrefix != null) {
                for (Thread t : ioThreads(ioPrefix)) io0.put(t.getId(), Math.max(0, THREADS.getThreadCpuTime(t.getId())));
            }
            loop0 = loop == null ? 0 : THREADS.getThreadCpuTime(loop.getId());
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().startsWith(SINK_PREFIX)) {
                    threads0.put(t.getId(), Math.max(0, THREADS.getThreadCpuTime(t.getId())));
                }
            }
            process0 = OS.getProcessCpuTime();
            delivered0 = delivery.firstCopies();
        }

        LoadGen.Result of(LoadGen.Result r) {
            double n = Math.max(1, delivery.firstCopies() - delivered0);
            if (loop != null) r.loopCpuUs = (THREADS.getThreadCpuTime(loop.getId()) - loop0) / 1000.0 / n;
            r.processCpuUs = (OS.getProcessCpuTime() - process0) / 1000.0 / n;
            if (r.loadgenCpuNs >= 0) r.loadgenCpuUs = r.loadgenCpuNs / 1000.0 / n;
            r.sinkCpuUs = groupCpu(SINK_PREFIX) / 1000.0 / n;
            r.sinkFramesPerRead = (sinks.stream().mapToLong(s -> s.received.get()).sum() - received0)
                    / (double) Math.max(1, sinks.stream().mapToLong(s -> s.reads.get()).sum() - reads0);
            if (ioPrefix != null) {
                long io = 0;
                for (Thread t : ioThreads(ioPrefix)) {
                    long now = THREADS.getThreadCpuTime(t.getId());
                    if (now >= 0) io += now - io0.getOrDefault(t.getId(), 0L);
                }
                r.ioCpuUs = io / 1000.0 / n;
            }
            return r;
        }

        /**
         * The CPU the threads named {@code prefix}... spent since the start (a thread started since counts from 0):
         * the sinks' share of the process, which is the same work for every config only if the hop writes to them in
         * batches as large as raw-proxy's.
         */
        private long groupCpu(String prefix) {
            long sum = 0;
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (!t.getName().startsWith(prefix)) continue;
                long now = THREADS.getThreadCpuTime(t.getId());
                if (now >= 0) sum += now - threads0.getOrDefault(t.getId(), 0L);
            }
            return sum;
        }

        private static List<Thread> ioThreads(String prefix) {
            return Thread.getAllStackTraces().keySet().stream()
                    .filter(t -> t.isAlive() && t.getName().startsWith(prefix)).collect(Collectors.toList());
        }
    }

    static void awaitListening(int port, long ms) throws InterruptedException {
        long deadline = System.currentTimeMillis() + ms;
        while (System.currentTimeMillis() < deadline) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException notYet) {
                Thread.sleep(20);
            }
        }
        throw new IllegalStateException("not listening on " + port);
    }

    public static void deleteTree(Path p) throws IOException {
        if (!Files.exists(p)) return;
        try (Stream<Path> s = Files.walk(p)) {
            for (Path x : (Iterable<Path>) s.sorted(Comparator.reverseOrder())::iterator) Files.deleteIfExists(x);
        }
    }

    static String out(String name, int sinkPort) {
        return "{\"name\":\"" + name + "\",\"gclass\":\"C_CHANNEL\",\"children\":[{\"name\":\"" + name
                + "\",\"gclass\":\"C_PROT_TCP4H\",\"children\":[{\"name\":\"" + name
                + "\",\"gclass\":\"C_TCP\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + sinkPort + "\"}}]}]}";
    }

    /** More attributes of every C_QIOGATE, as JSON members ({@code --queue-kw fsync_max_records=100}); "" = none. */
    static String queueKw = "";

    /** {@code k=v,k=v} as JSON members, each after a comma; a value of digits is a number, any other a string. */
    public static String queueKw(String arg) {
        StringBuilder b = new StringBuilder();
        for (String kv : arg.split(",")) {
            String[] p = kv.split("=", 2);
            if (p.length != 2 || !p[0].matches("[a-z_0-9]+")) {
                throw new IllegalArgumentException("--queue-kw wants key=value[,key=value], not " + kv);
            }
            b.append(",\"").append(p[0]).append("\":")
                    .append(p[1].matches("-?\\d+") ? p[1] : "\"" + p[1].replace("\\", "\\\\").replace("\"", "\\\"") + "\"");
        }
        return b.toString();
    }

    static String queue(String name, String policy, int sinkPort) {
        return "{\"name\":\"" + name + "\",\"gclass\":\"C_QIOGATE\",\"kw\":{\"topic_name\":\"bench\",\"tkey\":\"tm\","
                + "\"fsync_policy\":\"" + policy + "\",\"alert_queue_size\":0" + queueKw
                + "},\"children\":[{\"name\":\"" + name
                + "\",\"gclass\":\"C_IOGATE\",\"children\":[" + out(name, sinkPort) + "]}]}";
    }

    /** The gateway under test: input gate (dynamic channels) → relay → the output of {@code cfg}. */
    public static String gatewayConfig(String cfg, int inputPort, int[] sinkPorts) {
        String output;
        if (cfg.equals("iogate")) {
            StringBuilder ch = new StringBuilder();
            for (int i = 0; i < sinkPorts.length; i++) {
                if (i > 0) ch.append(',');
                ch.append(out("output-" + i, sinkPorts[i]));
            }
            output = "{\"name\":\"__output_side__\",\"gclass\":\"C_IOGATE\",\"priority\":3,\"kw\":{\"send_type\":2},"
                    + "\"children\":[" + ch + "]}";
        } else if (cfg.startsWith("qiogate-")) {
            String q = queue("__output_side__", cfg.substring("qiogate-".length()), sinkPorts[0]);
            output = q.substring(0, q.length() - 1) + ",\"priority\":3}";
        } else if (cfg.startsWith("mq")) {
            StringBuilder ch = new StringBuilder();
            for (int i = 0; i < sinkPorts.length; i++) {
                if (i > 0) ch.append(',');
                ch.append(queue("output-" + i, "interval", sinkPorts[i]));
            }
            output = "{\"name\":\"__output_side__\",\"gclass\":\"C_MQIOGATE\",\"priority\":3,"
                    + "\"kw\":{\"method\":\"lastdigits\",\"digits\":1,\"key\":\"id\"},\"children\":[" + ch + "]}";
        } else {
            throw new IllegalArgumentException("unknown config " + cfg);
        }
        return "{\"yuno\":{\"yuno_role\":\"gatehouse\",\"yuno_name\":\"bench\"},\"services\":[" + output + ","
                + "{\"name\":\"relay\",\"gclass\":\"C_RELAY\",\"priority\":4,\"kw\":{\"input\":\"__input_side__\","
                + "\"output\":\"__output_side__\"}},"
                + "{\"name\":\"__input_side__\",\"gclass\":\"C_IOGATE\",\"priority\":5,\"children\":["
                + "{\"name\":\"__input_side__-listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + inputPort
                + "\",\"max_connections\":20000,\"channel_template\":{\"gclass\":\"C_CHANNEL\",\"children\":"
                + "[{\"gclass\":\"C_PROT_TCP4H\"}]}}}]}]}";
    }
}
