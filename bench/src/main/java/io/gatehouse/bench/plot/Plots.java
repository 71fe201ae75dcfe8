package io.gatehouse.bench.plot;

import io.gatehouse.bench.load.LoadGen;
import io.gatehouse.bench.load.SideBySide;

import java.nio.file.Files;
import java.nio.file.Path;

import java.util.List;
import java.util.Locale;

/**
 * Runs load sweeps through raw Netty, Gatehouse C_IOGATE and Gatehouse C_QIOGATE (interval), and writes PNG charts:
 * <ul>
 *   <li>{@code bench-throughput-size.png}: pipelined msgs/s (4 connections) against message size;</li>
 *   <li>{@code bench-latency-size.png}: ping-pong round-trip p50/p99 against message size;</li>
 *   <li>{@code bench-throughput-connections.png}: pipelined msgs/s against the number of connections;</li>
 *   <li>{@code bench-latency-connections.png}: p50/p99 at a fixed offered load (20,000 msgs/s) against the number
 *       of connections.</li>
 * </ul>
 * <pre>Plots [out-dir=docs] [--quick]</pre> (run with {@code -Djava.awt.headless=true}); a CSV of every point is
 * written beside the charts ({@code bench-plots.csv}).
 */
public final class Plots {
    private Plots() {}

    public static void main(String[] args) throws Exception {
        System.setProperty("java.awt.headless", "true");
        Path out = Path.of(args.length > 0 && !args[0].startsWith("--") ? args[0] : "docs");
        boolean quick = List.of(args).contains("--quick");
        Files.createDirectories(out);
        String[] configs = {"raw", "iogate", "qiogate-interval"};
        String[] names = {"raw Netty sink", "Gatehouse C_IOGATE", "Gatehouse C_QIOGATE (interval)"};
        double warm = quick ? 0.5 : 1.5;
        double dur = quick ? 1 : 3;
        StringBuilder csv = new StringBuilder("chart,config,x,msgs_per_s,p50_us,p99_us\n");

        double[] sizes = {64, 128, 256, 512, 1024, 4096};
        LineChart tput = new LineChart("Pipelined throughput vs message size (4 connections, acks on)",
                "message size (bytes)", "msgs/s");
        LineChart lat = new LineChart("Ping-pong round trip vs message size (1 connection, 1 in flight)",
                "message size (bytes)", "latency (µs)").logY(true);
        for (int c = 0; c < configs.length; c++) {
            double[] t = new double[sizes.length], p50 = new double[sizes.length], p99 = new double[sizes.length];
            for (int i = 0; i < sizes.length; i++) {
                LoadGen.Options o = opts(warm, dur);
                o.size = (int) sizes[i];
                o.connections = 4;
                o.window = 2000;
                LoadGen.Result r = SideBySide.runOne(configs[c], o);
                t[i] = r.msgsPerSec;
                csv.append(row("throughput-size", configs[c], sizes[i], r));
                LoadGen.Options q = opts(warm, dur);
                q.size = (int) sizes[i];
                q.pingpong = true;
                q.connections = 1;
                q.window = 1;
                LoadGen.Result rq = SideBySide.runOne(configs[c], q);
                p50[i] = rq.p(50);
                p99[i] = rq.p(99);
                csv.append(row("latency-size", configs[c], sizes[i], rq));
                System.out.println(r.line() + " | " + rq.line());
            }
            tput.series(names[c], sizes, t);
            if (!configs[c].equals("qiogate-interval")) {
                lat.series(names[c] + " p50", sizes, p50);
                lat.series(names[c] + " p99", sizes, p99);
            }
        }
        tput.write(out.resolve("bench-throughput-size.png"));
        lat.write(out.resolve("bench-latency-size.png"));

        double[] conns = quick ? new double[] {1, 4, 16} : new double[] {1, 4, 16, 64, 256, 1024};
        LineChart tputC = new LineChart("Pipelined throughput vs connections (128 B, acks on)", "connections", "msgs/s");
        LineChart latC = new LineChart("Latency at 20,000 msgs/s offered vs connections (128 B)", "connections",
                "latency (µs)").logY(true);
        for (int c = 0; c < configs.length; c++) {
            double[] t = new double[conns.length], p50 = new double[conns.length], p99 = new double[conns.length];
            for (int i = 0; i < conns.length; i++) {
                LoadGen.Options o = opts(warm, dur);
                o.connections = (int) conns[i];
                o.window = Math.max(20, 8000 / o.connections);
                LoadGen.Result r = SideBySide.runOne(configs[c], o);
                t[i] = r.msgsPerSec;
                csv.append(row("throughput-connections", configs[c], conns[i], r));
                LoadGen.Options q = opts(warm, dur);
                q.connections = (int) conns[i];
                q.rate = 20_000;
                q.window = 1000;
                LoadGen.Result rq = SideBySide.runOne(configs[c], q);
                p50[i] = rq.p(50);
                p99[i] = rq.p(99);
                csv.append(row("latency-connections", configs[c], conns[i], rq));
                System.out.println(r.line() + " | " + rq.line());
            }
            tputC.series(names[c], conns, t);
            latC.series(names[c] + " p50", conns, p50);
            latC.series(names[c] + " p99", conns, p99);
        }
        tputC.write(out.resolve("bench-throughput-connections.png"));
        latC.write(out.resolve("bench-latency-connections.png"));
        Files.writeString(out.resolve("bench-plots.csv"), csv);
        System.out.println("# charts written to " + out.toAbsolutePath() + ", load average " + SideBySideLoad.get());
    }

    static LoadGen.Options opts(double warm, double dur) {
        LoadGen.Options o = new LoadGen.Options();
        o.warmup = warm;
        o.duration = dur;
        return o;
    }

    static String row(String chart, String cfg, double x, LoadGen.Result r) {
        return String.format(Locale.ROOT, "%s,%s,%.0f,%.0f,%.0f,%.0f%n", chart, cfg, x, r.msgsPerSec, r.p(50), r.p(99));
    }

    static final class SideBySideLoad {
        static String get() {
            try {
                return Files.readString(Path.of("/proc/loadavg")).trim();
            } catch (Exception e) {
                return "?";
            }
        }
    }

}
