package io.gatehouse.bench.plot;

import io.gatehouse.bench.load.LoadGen;
import io.gatehouse.bench.load.SideBySide;

import static io.gatehouse.bench.load.SideBySide.max;
import static io.gatehouse.bench.load.SideBySide.median;
import static io.gatehouse.bench.load.SideBySide.min;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Issue 17's sweeps, in {@link LoadGen.Mode#SUSTAINED} mode (what the destinations received, first copies, and
 * the end-to-end latency send → receipt), each point as a ratio to the {@code raw-proxy} run of the same point and
 * round (run right before the others), through {@code raw-proxy}, {@code iogate}, {@code qiogate-interval} and
 * {@code mq2} ({@link SideBySide#runOne}):
 * <ul>
 *   <li><b>connections</b>: 1, 16, 256, 4,096 producer connections, 128 B; at most max(16, 80,000 / connections)
 *       undelivered messages per connection (about 80,000 in all at every point);</li>
 *   <li><b>size</b>: 64 B to 64 KiB, 4 connections; at most min(20,000, max(16, 8 MiB / size)) undelivered per
 *       connection (at most 32 MiB in flight);</li>
 *   <li><b>io_threads</b>: {@code iogate} and {@code qiogate-interval} with the yuno's io_threads 0 (every socket on
 *       the core loop) and 1 (the sockets on one worker loop, the gobjs on the core loop), 4 and 256 connections,
 *       128 B, 20,000 / 312 undelivered per connection; printed as a table.</li>
 * </ul>
 * Rounds are interleaved (round 1 of every point, then round 2, ...); a point's figure is the median over the
 * rounds of its rate, its ratio to raw-proxy, its p50 and p99. One throwaway run per config first (the JIT). Writes
 * {@code bench-plots.csv} and the charts ({@code bench-*-vs-connections.png}, {@code bench-*-vs-size.png}) into the
 * output directory:
 * <pre>Plots [OUT-DIR=docs] [--rounds 3] [--warmup 1.5] [--duration 3] [--quick] | Plots --from-csv FILE OUT-DIR</pre>
 * Run with {@code -Djava.awt.headless=true} and a 2 GB heap ({@code -Xms1g -Xmx2g}); {@code --quick} is a smoke
 * run: 1 round, 0.5 s warm-up, 1 s window. {@code --from-csv} draws the charts again from a CSV of an earlier run.
 */
public final class Plots {
    static final String BASELINE = SideBySide.BASELINE;
    /** raw-proxy first: every other config of a point is a ratio to it. */
    static final List<String> CONFIGS = SideBySide.DEFAULT;
    static final Map<String, String> NAMES = Map.of(
            "raw-proxy", "raw-proxy (baseline)",
            "iogate", "C_IOGATE relay",
            "qiogate-interval", "C_QIOGATE interval",
            "mq2", "mq2 (2 x C_QIOGATE)");
    static final int[] CONNECTIONS = {1, 16, 256, 4096};
    static final int[] SIZES = {64, 256, 1024, 4096, 16384, 65536};
    static final int[] IO_CONNECTIONS = {4, 256};
    static final List<String> IO_CONFIGS = List.of("iogate", "qiogate-interval");
    static final int[] IO_THREADS = {0, 1};
    static final String CSV_HEADER = "chart,config,x,io_threads,connections,size,max_backlog,rounds,msgs_per_s,"
            + "msgs_per_s_min,msgs_per_s_max,ratio_to_raw_proxy,ratio_min,ratio_max,p50_us,p99_us,mb_per_s,"
            + "loop_cpu_us,process_cpu_us,io_cpu_us,errors";

    private Plots() {}

    /** One measured point: a config at an x of a chart, with its load; the samples of its rounds. */
    static final class Point {
        final String chart;
        final String cfg;
        final int x;
        final int ioThreads;
        final LoadGen.Options o;
        final List<Sample> samples = new ArrayList<>();
        /** The raw-proxy point this one is a ratio to (null for raw-proxy itself). */
        Point base;

        Point(String chart, String cfg, int x, int ioThreads, LoadGen.Options o) {
            this.chart = chart;
            this.cfg = cfg;
            this.x = x;
            this.ioThreads = ioThreads;
            this.o = o;
        }

        String label() {
            return chart + "/" + cfg + (ioThreads > 0 ? "/io" + ioThreads : "") + "/" + x;
        }
    }

    /** What one run gave (the histograms are not kept: 150 runs of them would fill the heap). */
    record Sample(double msgs, double p50, double p99, double loopCpu, double processCpu, double ioCpu, long errors) {
        static final Sample FAILED = new Sample(Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN,
                Double.NaN, 1);

        static Sample of(LoadGen.Result r) {
            return new Sample(r.msgsPerSec, r.p(50), r.p(99), r.loopCpuUs, r.processCpuUs, r.ioCpuUs, r.errors);
        }
    }

    static LoadGen.Options opts(double warm, double dur, int connections, int size, int maxBacklog) {
        LoadGen.Options o = new LoadGen.Options();
        o.mode = LoadGen.Mode.SUSTAINED;
        o.warmup = warm;
        o.duration = dur;
        o.connections = connections;
        o.size = size;
        o.maxBacklog = maxBacklog;
        return o;
    }

    /** The points of one round, in the order they run: at each point raw-proxy first. */
    static List<Point> points(double warm, double dur) {
        List<Point> all = new ArrayList<>();
        for (int c : CONNECTIONS) {
            LoadGen.Options o = opts(warm, dur, c, 128, Math.max(16, 80_000 / c));
            Point base = null;
            for (String cfg : CONFIGS) {
                Point p = new Point("connections", cfg, c, 0, o);
                if (cfg.equals(BASELINE)) base = p; else p.base = base;
                all.add(p);
            }
        }
        for (int s : SIZES) {
            LoadGen.Options o = opts(warm, dur, 4, s, Math.min(20_000, Math.max(16, (8 << 20) / s)));
            Point base = null;
            for (String cfg : CONFIGS) {
                Point p = new Point("size", cfg, s, 0, o);
                if (cfg.equals(BASELINE)) base = p; else p.base = base;
                all.add(p);
            }
        }
        for (int c : IO_CONNECTIONS) {
            LoadGen.Options o = opts(warm, dur, c, 128, Math.min(20_000, Math.max(16, 80_000 / c)));
            Point base = new Point("io_threads", BASELINE, c, 0, o);
            all.add(base);
            for (String cfg : IO_CONFIGS) {
                for (int io : IO_THREADS) {
                    Point p = new Point("io_threads", cfg, c, io, o);
                    p.base = base;
                    all.add(p);
                }
            }
        }
        return all;
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("java.awt.headless", "true");
        if (args.length == 3 && args[0].equals("--from-csv")) {
            fromCsv(Path.of(args[1]), Path.of(args[2]));
            return;
        }
        Path out = Path.of("docs");
        boolean quick = false;
        int rounds = 3;
        double warm = 1.5;
        double dur = 3;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--quick": quick = true; break;
                case "--rounds": rounds = Integer.parseInt(args[++i]); break;
                case "--warmup": warm = Double.parseDouble(args[++i]); break;
                case "--duration": dur = Double.parseDouble(args[++i]); break;
                default:
                    if (args[i].startsWith("--")) throw new IllegalArgumentException("unknown option " + args[i]
                            + "; usage: Plots [OUT-DIR] [--rounds 3] [--warmup 1.5] [--duration 3] [--quick]"
                            + " | Plots --from-csv FILE OUT-DIR");
                    out = Path.of(args[i]);
            }
        }
        if (quick) {
            rounds = 1;
            warm = 0.5;
            dur = 1;
        }
        Files.createDirectories(out);
        List<Point> points = points(warm, dur);
        Instant start = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        System.out.printf(Locale.ROOT, "# plots: %d rounds, %d points a round, sustained, warmup %.1f s, window %.1f s;"
                        + " JVM %s (%s), %d cpus, max heap %d MiB; start %s, load average %s%n", rounds,
                points.size(), warm, dur, System.getProperty("java.version"), System.getProperty("java.vm.name"),
                Runtime.getRuntime().availableProcessors(), Runtime.getRuntime().maxMemory() >> 20, start, SideBySide.loadAverage());

        // one throwaway run of each config (and io_threads) first, so that no measured run pays the JIT
        Map<String, Boolean> warmed = new LinkedHashMap<>();
        for (Point p : points) {
            if (warmed.putIfAbsent(p.cfg + "/" + p.ioThreads, true) != null) continue;
            LoadGen.Options w = opts(Math.min(1, warm), Math.min(1, dur), 4, 128, 20_000);
            w.label = p.cfg + (p.ioThreads > 0 ? "/io" + p.ioThreads : "") + "/jit-warmup";
            System.out.println(run(p.cfg, w, p.ioThreads).line() + " (not counted)");
        }
        for (int r = 1; r <= rounds; r++) {
            for (Point p : points) {
                LoadGen.Options o = p.o.copy();
                o.label = p.label();
                Sample s;
                try {
                    LoadGen.Result res = run(p.cfg, o, p.ioThreads);
                    s = Sample.of(res);
                    System.out.println(res.line() + " round=" + r + " load=" + SideBySide.loadAverage().split(" ")[0]);
                } catch (Exception e) {
                    s = Sample.FAILED;
                    System.out.println("FAILED label=" + o.label + " round=" + r + ": " + e);
                }
                p.samples.add(s);
            }
            System.out.println("# round " + r + " done at " + Instant.now().truncatedTo(ChronoUnit.SECONDS)
                    + ", load average " + SideBySide.loadAverage());
        }
        StringBuilder csv = new StringBuilder(CSV_HEADER).append('\n');
        for (Point p : points) csv.append(row(p));
        Files.writeString(out.resolve("bench-plots.csv"), csv);
        fromCsv(out.resolve("bench-plots.csv"), out);
        System.out.println();
        System.out.println(tables(Files.readAllLines(out.resolve("bench-plots.csv"))));
        System.out.println("# run " + start + " to " + Instant.now().truncatedTo(ChronoUnit.SECONDS)
                + "; charts and bench-plots.csv in " + out.toAbsolutePath() + "; load average at the end " + SideBySide.loadAverage());
    }

    /** One run, with a GC before it so that the previous run's garbage is not collected in this one's window. */
    static LoadGen.Result run(String cfg, LoadGen.Options o, int ioThreads) throws Exception {
        System.gc();
        return SideBySide.runOne(cfg, o, ioThreads);
    }

    static String row(Point p) {
        double[] rate = p.samples.stream().mapToDouble(Sample::msgs).toArray();
        double[] ratio = new double[rate.length];
        for (int k = 0; k < rate.length; k++) {
            ratio[k] = p.base == null ? 1 : rate[k] / p.base.samples.get(k).msgs();
        }
        double median = median(rate);
        return String.format(Locale.ROOT, "%s,%s,%d,%d,%d,%d,%d,%d,%.0f,%.0f,%.0f,%.3f,%.3f,%.3f,%.0f,%.0f,%.1f,"
                        + "%.2f,%.2f,%.2f,%d%n", p.chart, p.cfg, p.x, p.ioThreads, p.o.connections, p.o.size,
                p.o.maxBacklog, rate.length, median, min(rate), max(rate), median(ratio), min(ratio), max(ratio),
                median(p.samples.stream().mapToDouble(Sample::p50).toArray()),
                median(p.samples.stream().mapToDouble(Sample::p99).toArray()), median * p.o.size / 1e6,
                median(p.samples.stream().mapToDouble(Sample::loopCpu).toArray()),
                median(p.samples.stream().mapToDouble(Sample::processCpu).toArray()),
                median(p.samples.stream().mapToDouble(Sample::ioCpu).toArray()),
                p.samples.stream().mapToLong(Sample::errors).sum());
    }

    /** The CSV's rows as maps from its header's names. */
    static List<Map<String, String>> read(List<String> lines) {
        String[] head = lines.get(0).split(",");
        List<Map<String, String>> rows = new ArrayList<>();
        for (String l : lines.subList(1, lines.size())) {
            if (l.isBlank()) continue;
            String[] f = l.split(",");
            Map<String, String> m = new HashMap<>();
            for (int i = 0; i < head.length && i < f.length; i++) m.put(head[i], f[i]);
            rows.add(m);
        }
        return rows;
    }

    static double num(Map<String, String> row, String key) {
        String v = row.get(key);
        return v == null || v.isEmpty() ? Double.NaN : Double.parseDouble(v);
    }

    /** Draws the charts again from a CSV written by an earlier run: {@code Plots --from-csv FILE OUTDIR}. */
    static void fromCsv(Path csv, Path out) throws java.io.IOException {
        List<Map<String, String>> rows = read(Files.readAllLines(csv));
        Files.createDirectories(out);
        // file, chart (CSV), title, x label, y label, column, log y, configs
        Object[][] charts = {
                {"bench-delivered-vs-connections.png", "connections",
                        "Delivered msgs/s vs producer connections (128 B, sustained)", "producer connections",
                        "delivered msgs/s", "msgs_per_s", false, CONFIGS},
                {"bench-p99-vs-connections.png", "connections",
                        "End-to-end p99 vs producer connections (128 B, sustained)", "producer connections",
                        "p99 send -> receipt (µs)", "p99_us", true, CONFIGS},
                {"bench-ratio-vs-connections.png", "connections",
                        "Delivered rate / raw-proxy's vs producer connections (128 B)", "producer connections",
                        "ratio to raw-proxy", "ratio_to_raw_proxy", false, CONFIGS},
                {"bench-delivered-vs-size.png", "size",
                        "Delivered msgs/s vs message size (4 connections, sustained)", "message size (bytes)",
                        "delivered msgs/s", "msgs_per_s", true, CONFIGS},
                {"bench-mbps-vs-size.png", "size",
                        "Delivered MB/s vs message size (4 connections, sustained)", "message size (bytes)",
                        "delivered MB/s (10^6 B)", "mb_per_s", false, CONFIGS},
                {"bench-p99-vs-size.png", "size",
                        "End-to-end p99 vs message size (4 connections, sustained)", "message size (bytes)",
                        "p99 send -> receipt (µs)", "p99_us", true, CONFIGS},
                {"bench-ratio-vs-size.png", "size",
                        "Delivered rate / raw-proxy's vs message size (4 connections)", "message size (bytes)",
                        "ratio to raw-proxy", "ratio_to_raw_proxy", false, CONFIGS}};
        for (Object[] c : charts) {
            LineChart chart = new LineChart((String) c[2], (String) c[3], (String) c[4]).logY((Boolean) c[6]);
            @SuppressWarnings("unchecked")
            List<String> cfgs = (List<String>) c[7];
            for (String cfg : cfgs) {
                List<Map<String, String>> pts = rows.stream().filter(r -> r.get("chart").equals(c[1])
                        && r.get("config").equals(cfg) && num(r, "io_threads") == 0).toList();
                if (pts.isEmpty()) continue;
                double[] xs = pts.stream().mapToDouble(r -> num(r, "x")).toArray();
                double[] ys = pts.stream().mapToDouble(r -> num(r, (String) c[5])).toArray();
                chart.series(NAMES.getOrDefault(cfg, cfg), xs, ys);
            }
            chart.write(out.resolve((String) c[0]));
        }
    }

    /** The figures as Markdown tables: connections, size, io_threads. */
    static String tables(List<String> lines) {
        List<Map<String, String>> rows = read(lines);
        StringBuilder b = new StringBuilder();
        b.append("| producer connections | config | delivered msgs/s median (min-max) | ratio to raw-proxy (min-max)"
                + " | p50 / p99 ms | core-loop µs/msg | process µs/msg |\n|---|---|---|---|---|---|---|\n");
        for (Map<String, String> r : rows) {
            if (!r.get("chart").equals("connections")) continue;
            b.append(String.format(Locale.ROOT, "| %,.0f | %s | %s | %s | %s | %.2f | %.2f |%n", num(r, "x"),
                    r.get("config"), rate(r), ratio(r), ms(r), num(r, "loop_cpu_us"), num(r, "process_cpu_us")));
        }
        b.append("\n| size B | config | delivered msgs/s median (min-max) | MB/s | ratio to raw-proxy (min-max)"
                + " | p50 / p99 ms | core-loop µs/msg | process µs/msg |\n|---|---|---|---|---|---|---|---|\n");
        for (Map<String, String> r : rows) {
            if (!r.get("chart").equals("size")) continue;
            b.append(String.format(Locale.ROOT, "| %,.0f | %s | %s | %,.1f | %s | %s | %.2f | %.2f |%n", num(r, "x"),
                    r.get("config"), rate(r), num(r, "mb_per_s"), ratio(r), ms(r), num(r, "loop_cpu_us"),
                    num(r, "process_cpu_us")));
        }
        b.append("\n| connections | config | io_threads | delivered msgs/s median (min-max) | ratio to raw-proxy"
                + " (min-max) | p50 / p99 ms | core-loop µs/msg | io worker µs/msg | process µs/msg |\n"
                + "|---|---|---|---|---|---|---|---|---|\n");
        for (Map<String, String> r : rows) {
            if (!r.get("chart").equals("io_threads")) continue;
            double io = num(r, "io_cpu_us");
            b.append(String.format(Locale.ROOT, "| %,.0f | %s | %s | %s | %s | %s | %.2f | %s | %.2f |%n",
                    num(r, "x"), r.get("config"), r.get("config").equals(BASELINE) ? "" : r.get("io_threads"),
                    rate(r), ratio(r), ms(r), num(r, "loop_cpu_us"),
                    Double.isNaN(io) ? "" : String.format(Locale.ROOT, "%.2f", io), num(r, "process_cpu_us")));
        }
        return b.toString();
    }

    private static String rate(Map<String, String> r) {
        return String.format(Locale.ROOT, "%,.0f (%,.0f-%,.0f)", num(r, "msgs_per_s"), num(r, "msgs_per_s_min"),
                num(r, "msgs_per_s_max"));
    }

    private static String ratio(Map<String, String> r) {
        if (r.get("config").equals(BASELINE)) return "1.00";
        return String.format(Locale.ROOT, "%.2f (%.2f-%.2f)", num(r, "ratio_to_raw_proxy"), num(r, "ratio_min"),
                num(r, "ratio_max"));
    }

    private static String ms(Map<String, String> r) {
        return String.format(Locale.ROOT, "%s / %s", msOf(num(r, "p50_us")), msOf(num(r, "p99_us")));
    }

    private static String msOf(double us) {
        if (Double.isNaN(us)) return "-";
        return us >= 10_000 ? String.format(Locale.ROOT, "%,.0f", us / 1000) : String.format(Locale.ROOT, "%.1f", us / 1000);
    }


}
