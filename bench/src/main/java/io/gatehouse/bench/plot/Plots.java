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
 * <pre>Plots [out-dir=docs] [--quick] | Plots --from-csv FILE OUT-DIR</pre> (run with {@code -Djava.awt.headless=true}); a CSV of every point is
 * written beside the charts ({@code bench-plots.csv}).
 */
public final class Plots {
    static final String[] CONFIGS = {"raw", "iogate", "qiogate-interval"};
    static final String[] NAMES = {"raw Netty", "C_IOGATE", "C_QIOGATE interval"};

    private Plots() {}

    /** Draws the four charts again from a CSV written by an earlier run: {@code Plots --from-csv FILE OUTDIR}. */
    static void fromCsv(Path csv, Path out) throws java.io.IOException {
        List<String[]> rows = Files.readAllLines(csv).stream().skip(1).map(l -> l.split(",")).toList();
        String[][] charts = {
                {"throughput-size", "bench-throughput-size.png", "Pipelined throughput vs message size (4 connections, acks on)", "message size (bytes)", "msgs/s"},
                {"latency-size", "bench-latency-size.png", "Ping-pong round trip vs message size (1 connection, 1 in flight)", "message size (bytes)", "latency (µs)"},
                {"throughput-connections", "bench-throughput-connections.png", "Pipelined throughput vs connections (128 B, acks on)", "connections", "msgs/s"},
                {"latency-connections", "bench-latency-connections.png", "Latency at 20,000 msgs/s offered vs connections (128 B)", "connections", "latency (µs)"}};
        for (String[] c : charts) {
            boolean latency = c[0].startsWith("latency");
            LineChart chart = new LineChart(c[2], c[3], c[4]).logY(latency);
            for (int k = 0; k < CONFIGS.length; k++) {
                String cfg = CONFIGS[k];
                if (c[0].equals("latency-size") && cfg.equals("qiogate-interval")) continue;   // 5 ms group commit: off the scale
                List<String[]> pts = rows.stream().filter(r -> r[0].equals(c[0]) && r[1].equals(cfg)).toList();
                double[] xs = pts.stream().mapToDouble(r -> Double.parseDouble(r[2])).toArray();
                if (latency) {
                    chart.series(NAMES[k] + " p50", xs, pts.stream().mapToDouble(r -> Double.parseDouble(r[4])).toArray());
                    chart.series(NAMES[k] + " p99", xs, pts.stream().mapToDouble(r -> Double.parseDouble(r[5])).toArray());
                } else {
                    chart.series(NAMES[k], xs, pts.stream().mapToDouble(r -> Double.parseDouble(r[3])).toArray());
                }
            }
            chart.write(out.resolve(c[1]));
        }
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("java.awt.headless", "true");
        if (args.length == 3 && args[0].equals("--from-csv")) {
            fromCsv(Path.of(args[1]), Path.of(args[2]));
            return;
        }
        Path out = Path.of(args.length > 0 && !args[0].startsWith("--") ? args[0] : "docs");
        boolean quick = List.of(args).contains("--quick");
        Files.createDirectories(out);
        String[] configs = CONFIGS;
        String[] names = NAMES;
        double warm = quick ? 0.5 : 1.5;
        double dur = quick ? 1 : 3;
        StringBuilder csv = new StringBuilder("chart,config,x,msgs_per_s,p50_us,p99_us\n");

        // one throwaway run first, so that the first point is not the JIT's warm-up
        SideBySide.runOne("raw", opts(warm, dur));
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
                t[i] = r.ackedPerSec;
                csv.append(row("throughput-size", configs[c], sizes[i], r));
                LoadGen.Options q = opts(warm, dur);
                q.size = (int) sizes[i];
                q.mode = LoadGen.Mode.PINGPONG;
                q.connections = 1;
                q.window = 1;
                LoadGen.Result rq = SideBySide.runOne(configs[c], q);
                p50[i] = rq.ackP(50);
                p99[i] = rq.ackP(99);
                csv.append(row("latency-size", configs[c], sizes[i], rq));
                System.out.println(r.line() + " | " + rq.line());
            }
            tput.series(names[c], sizes, t);
            if (!configs[c].equals("qiogate-interval")) {
                lat.series(names[c] + " p50", sizes, p50);
                lat.series(names[c] + " p99", sizes, p99);
            }
        }


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
                t[i] = r.ackedPerSec;
                csv.append(row("throughput-connections", configs[c], conns[i], r));
                LoadGen.Options q = opts(warm, dur);
                q.connections = (int) conns[i];
                q.rate = 20_000;
                q.window = 1000;
                LoadGen.Result rq = SideBySide.runOne(configs[c], q);
                p50[i] = rq.ackP(50);
                p99[i] = rq.ackP(99);
                csv.append(row("latency-connections", configs[c], conns[i], rq));
                System.out.println(r.line() + " | " + rq.line());
            }
            tputC.series(names[c], conns, t);
            latC.series(names[c] + " p50", conns, p50);
            latC.series(names[c] + " p99", conns, p99);
        }
        Files.writeString(out.resolve("bench-plots.csv"), csv);
        fromCsv(out.resolve("bench-plots.csv"), out);
        System.out.println("# charts written to " + out.toAbsolutePath() + ", load average " + SideBySideLoad.get());
    }

    static LoadGen.Options opts(double warm, double dur) {
        LoadGen.Options o = new LoadGen.Options();
        // the charts are of the ingest (acked) rate and the ack round trip, as published: burst mode
        o.mode = LoadGen.Mode.BURST;
        o.warmup = warm;
        o.duration = dur;
        return o;
    }

    static String row(String chart, String cfg, double x, LoadGen.Result r) {
        return String.format(Locale.ROOT, "%s,%s,%.0f,%.0f,%.0f,%.0f%n", chart, cfg, x, r.ackedPerSec, r.ackP(50), r.ackP(99));
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
