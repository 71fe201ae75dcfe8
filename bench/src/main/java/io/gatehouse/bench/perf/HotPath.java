// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.bench.perf;

import io.gatehouse.bench.load.LoadGen;
import io.gatehouse.bench.load.SideBySide;
import io.gatehouse.bench.tcp4h.Tcp4hBench;

import java.lang.reflect.Method;
import java.util.Locale;

/**
 * One configuration of the hot path, repeated, for profiling (JFR) and quick A/B runs of two builds: the
 * Gatehouse half of {@link Tcp4hBench} pipelined ({@code tcp4h}), or one {@link SideBySide} configuration
 * ({@code qiogate-interval}, {@code mq2}, ...), pipelined with acks.
 *
 * <pre>HotPath tcp4h|CONFIG [repeats=3] [seconds=5]</pre>
 */
public final class HotPath {
    private HotPath() {}

    /**
     * SideBySide.runOne, keeping the sinks to count every message they received (the run's total, {@code total[0]})
     * and the relay's count of the messages the gateway took in ({@code total[1]}, its {@code rxMsgs}).
     */
    static double runOne(String cfg, LoadGen.Options o, long[] total) throws Exception {
        int sinks = cfg.equals("mq4") ? 4 : cfg.equals("iogate") || cfg.equals("mq2") ? 2 : 1;
        java.util.List<io.gatehouse.bench.load.RawSink> sinkList = new java.util.ArrayList<>();
        java.nio.file.Path data = java.nio.file.Files.createTempDirectory("gatehouse-hotpath-");
        try (io.gatehouse.trqueue.TrQueueFactoryImpl queues = new io.gatehouse.trqueue.TrQueueFactoryImpl()) {
            for (int i = 0; i < sinks; i++) {
                io.gatehouse.bench.load.RawSink sk = new io.gatehouse.bench.load.RawSink(0);
                sk.setAck(!cfg.equals("iogate"));
                sinkList.add(sk);
            }
            int input = SideBySide.freePortPublic();
            String json = SideBySide.gatewayConfig(cfg, input, sinkList.stream().mapToInt(io.gatehouse.bench.load.RawSink::port).toArray());
            try (io.gatehouse.core.YunoRuntime rt = io.gatehouse.core.YunoRuntime.builder().name("bench").dataDir(data)
                    .gclasses(SideBySide.gclasses(queues)).config(json).build().start()) {
                long deadline = System.currentTimeMillis() + 20_000;
                while (sinkList.stream().anyMatch(x -> x.connections.get() == 0) && System.currentTimeMillis() < deadline) {
                    Thread.sleep(20);
                }
                Thread.sleep(200);
                LoadGen.Options x = o.copy();
                x.port = input;
                double rate = LoadGen.run(x).msgsPerSec;
                total[0] = sinkList.stream().mapToLong(k -> k.received.get()).sum();
                com.fasterxml.jackson.databind.JsonNode st = rt.command("stats-yuno service=relay").path("data");
                total[1] = st.path("rxMsgs").asLong(-1);
                return rate;
            }
        } finally {
            for (io.gatehouse.bench.load.RawSink k : sinkList) k.close();
            try (java.util.stream.Stream<java.nio.file.Path> w = java.nio.file.Files.walk(data)) {
                w.sorted(java.util.Comparator.reverseOrder()).forEach(x -> x.toFile().delete());
            }
        }
    }

    /** CPU time of the yuno's core loop threads (named gatehouse-core-*), sampled until interrupted. */
    static final class CoreCpu extends Thread {
        private final java.lang.management.ThreadMXBean mx = java.lang.management.ManagementFactory.getThreadMXBean();
        private final java.util.Map<Long, Long> last = new java.util.HashMap<>();
        private final java.util.Map<Long, Long> alloc = new java.util.HashMap<>();

        CoreCpu() {
            setDaemon(true);
        }

        @Override
        public void run() {
            while (!isInterrupted()) {
                sample();
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    break;
                }
            }
            sample();
        }

        /** Linux schedstat of the core loop threads (ns on a CPU, ns runnable waiting for one), summed. */
        private final java.util.Map<String, long[]> sched = new java.util.HashMap<>();

        /**
         * Time on a CPU and time runnable but waiting for one, from /proc (Linux; nothing elsewhere): a thread that
         * waits as long as it runs is starved by the machine's load, not idle.
         */
        private void sampleSched() {
            java.io.File[] tasks = new java.io.File("/proc/self/task").listFiles();
            if (tasks == null) return;
            for (java.io.File t : tasks) {
                try {
                    String comm = java.nio.file.Files.readString(t.toPath().resolve("comm")).trim();
                    if (!comm.startsWith("gatehouse-core")) continue;
                    String[] f = java.nio.file.Files.readString(t.toPath().resolve("schedstat")).trim().split(" ");
                    sched.put(t.getName(), new long[] {Long.parseLong(f[0]), Long.parseLong(f[1])});
                } catch (java.io.IOException | RuntimeException gone) {
                    // the thread ended, or no schedstat here
                }
            }
        }

        /** Seconds the core loop threads ran, and waited runnable, over their lives; NaN without /proc. */
        double[] schedSeconds() {
            if (sched.isEmpty()) return new double[] {Double.NaN, Double.NaN};
            long run = 0;
            long wait = 0;
            for (long[] v : sched.values()) {
                run += v[0];
                wait += v[1];
            }
            return new double[] {run / 1e9, wait / 1e9};
        }

        private void sample() {
            sampleSched();
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (!t.getName().startsWith("gatehouse-core")) continue;
                long c = mx.getThreadCpuTime(t.getId());
                if (c > 0) last.merge(t.getId(), c, Math::max);
                long a = ((com.sun.management.ThreadMXBean) mx).getThreadAllocatedBytes(t.getId());
                if (a > 0) alloc.merge(t.getId(), a, Math::max);
            }
        }

        /** Bytes allocated by the core loop threads: unlike time, it does not move with the machine's load. */
        double allocated() {
            return alloc.values().stream().mapToLong(Long::longValue).sum();
        }

        double total() {
            return last.values().stream().mapToLong(Long::longValue).sum() / 1e9;
        }
    }

    private static String loadAverage() {
        try {
            String[] f = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).split(" ");
            return f[0] + " " + f[1] + " " + f[2];
        } catch (java.io.IOException | RuntimeException e) {
            return "?";
        }
    }

    /**
     * The JIT compilers' time so far: a run during which the compilers still worked for seconds measured code that
     * was not yet compiled (on two shared vCPUs the compilers wait for CPU too, and the core loop's cost falls until
     * they are done), so an A/B compares the runs after that time has settled.
     */
    private static long jitMillis() {
        java.lang.management.CompilationMXBean jit = java.lang.management.ManagementFactory.getCompilationMXBean();
        return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
    }

    public static void main(String[] args) throws Exception {
        String what = args.length > 0 ? args[0] : "tcp4h";
        int repeats = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        double seconds = args.length > 2 ? Double.parseDouble(args[2]) : 5;
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean();
        for (int i = 0; i < repeats; i++) {
            // CPU per message as well as msgs/s: on this shared machine the rate swings with the neighbours'
            // load, the CPU the process spends per message much less (warm-up included on both sides of an A/B).
            long cpu0 = os.getProcessCpuTime();
            long jit0 = jitMillis();
            long t0 = System.nanoTime();
            CoreCpu core = new CoreCpu();
            core.start();
            double rate;
            long sinkMsgs = -1;
            long inMsgs = -1;
            if (what.equals("tcp4h") || what.equals("tcp4h-raw")) {
                // Tcp4hBench's runs are private: reached by reflection rather than copied.
                Method m = Tcp4hBench.class.getDeclaredMethod(what.equals("tcp4h") ? "gatehouse" : "raw",
                        boolean.class, int.class, long.class, long.class);
                m.setAccessible(true);
                rate = (double) m.invoke(null, false, 100, 1000L, (long) (seconds * 1000));
            } else {
                LoadGen.Options o = new LoadGen.Options();
                o.mode = LoadGen.Mode.BURST;   // its published figures are of the acked rate, window 2000
                o.connections = 4;
                o.window = 2000;
                o.warmup = 2;
                o.duration = seconds;
                o.label = what;
                long[] total = new long[2];
                rate = runOne(what, o, total);
                sinkMsgs = total[0];
                inMsgs = total[1];
            }
            core.interrupt();
            core.join();
            double secs = (System.nanoTime() - t0) / 1e9;
            double cpu = (os.getProcessCpuTime() - cpu0) / 1e9;
            double warm = what.startsWith("tcp4h") ? 1 : 2;
            double msgs = rate * (seconds + warm);
            if (sinkMsgs > 0) msgs = sinkMsgs;   // every message the sinks received, warm-up included
            if (what.equals("tcp4h")) {
                // every message of the run, warm-up included, as counted by the bench's sink
                java.lang.reflect.Field f = Tcp4hBench.class.getDeclaredField("COUNT");
                f.setAccessible(true);
                msgs = ((java.util.concurrent.atomic.AtomicLong) f.get(null)).get();
            }
            System.out.printf(Locale.ROOT, "%s run %d: %,.0f msgs/s, process cpu %.2f s over %.1f s, %.2f us cpu/msg,"
                    + " core loop %.2f us cpu/msg, %.0f B allocated/msg%n", what, i + 1, rate, cpu, secs, cpu * 1e6 / msgs,
                    core.total() * 1e6 / msgs, core.allocated() / msgs);
            double[] sch = core.schedSeconds();
            System.out.printf(Locale.ROOT, "%s run %d: core loop on a CPU %.2f s, runnable waiting for a CPU %.2f s,"
                    + " of %.1f s; load average %s; JIT compiling %,d ms%n", what, i + 1, sch[0], sch[1], secs,
                    loadAverage(), jitMillis() - jit0);
            if (inMsgs > 0) {
                // Per delivered message (above) the burst mode's figures are per first copy at the sinks; the core
                // loop also did the work of every message it took in and stored but had not delivered yet (the
                // output starved by the input, issue 17): per message taken in is the cost of the hot path.
                System.out.printf(Locale.ROOT, "%s run %d: taken in %,d, delivered %,d (%.2f of it), core loop %.2f s cpu:"
                                + " %.2f us cpu and %.0f B allocated per message taken in%n", what, i + 1, inMsgs, sinkMsgs,
                        (double) sinkMsgs / inMsgs, core.total(), core.total() * 1e6 / inMsgs, core.allocated() / inMsgs);
            }
        }
    }
}
