// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.bench.perf;

import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedMethod;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Where a thread spends its time, from the {@code jdk.ExecutionSample} (running Java code) and
 * {@code jdk.NativeMethodSample} (in native code: a system call, or waiting in the selector) events of a JFR
 * recording. JDK 17's {@code jfr} tool prints the samples but has no {@code view hot-methods}, and a whole-JVM
 * view mixes the core loop with the load generator and the sinks that run beside it in a bench JVM. Prints the
 * samples per thread, then for the threads whose name starts with the prefix: the top frames (self time), the
 * Gatehouse methods on the stack (inclusive time: which action the time is spent under), the Gatehouse class
 * nearest the top of each stack (whose code, or whose calls into Jackson, Netty or the JDK, the time is spent
 * in), and the top native frames.
 *
 * <pre>JfrTop RECORDING.jfr [thread-prefix=gatehouse-core] [rows=25]</pre>
 */
public final class JfrTop {
    private static final Pattern LAMBDA = Pattern.compile("\\$\\$Lambda\\$.*");

    private JfrTop() {}

    public static void main(String[] args) throws Exception {
        Path file = Path.of(args[0]);
        String prefix = args.length > 1 ? args[1] : "gatehouse-core";
        int rows = args.length > 2 ? Integer.parseInt(args[2]) : 25;
        Map<String, Long> perThread = new HashMap<>();
        Map<String, Long> perThreadNative = new HashMap<>();
        Map<String, Long> self = new HashMap<>();
        Map<String, Long> inclusive = new HashMap<>();
        Map<String, Long> nearestGatehouse = new HashMap<>();
        Map<String, Long> nativeTop = new HashMap<>();
        Map<String, Long> paths = new HashMap<>();
        long all = 0;
        long mine = 0;
        long mineNative = 0;
        try (RecordingFile rf = new RecordingFile(file)) {
            while (rf.hasMoreEvents()) {
                RecordedEvent e = rf.readEvent();
                String type = e.getEventType().getName();
                boolean java = type.equals("jdk.ExecutionSample");
                if (!java && !type.equals("jdk.NativeMethodSample")) continue;
                RecordedThread t = e.getThread("sampledThread");
                String name = t == null || t.getJavaName() == null ? "?" : t.getJavaName();
                (java ? perThread : perThreadNative).merge(name, 1L, Long::sum);
                if (java) all++;
                if (!name.startsWith(prefix)) continue;
                RecordedStackTrace st = e.getStackTrace();
                if (st == null || st.getFrames().isEmpty()) continue;
                List<RecordedFrame> frames = st.getFrames();
                if (!java) {
                    mineNative++;
                    nativeTop.merge(method(frames.get(0)), 1L, Long::sum);
                    continue;
                }
                mine++;
                self.merge(method(frames.get(0)), 1L, Long::sum);
                Set<String> seen = new HashSet<>();
                String gh = null;
                for (RecordedFrame f : frames) {
                    String m = method(f);
                    if (!m.startsWith("io.gatehouse.")) continue;
                    if (seen.add(m)) inclusive.merge(m, 1L, Long::sum);
                    if (gh == null) gh = m.substring(0, m.lastIndexOf('.'));
                }
                nearestGatehouse.merge(gh == null ? "(no Gatehouse frame: Netty / JDK loop)" : gh, 1L, Long::sum);
                paths.merge(path(frames), 1L, Long::sum);
            }
        }
        System.out.printf(Locale.ROOT, "%s: %,d execution samples, %,d in threads %s*; %,d native samples there%n%n",
                file, all, mine, prefix, mineNative);
        System.out.println("| thread | execution samples | % | native samples |");
        System.out.println("|---|---|---|---|");
        final long total = all;
        perThread.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(12)
                .forEach(en -> System.out.printf(Locale.ROOT, "| `%s` | %,d | %.1f | %,d |%n", en.getKey(),
                        en.getValue(), 100.0 * en.getValue() / Math.max(1, total),
                        perThreadNative.getOrDefault(en.getKey(), 0L)));
        System.out.println();
        print("top frames (self) in " + prefix + "*", self, mine, rows);
        print("Gatehouse methods on the stack (inclusive) in " + prefix + "*", inclusive, mine, rows);
        print("nearest Gatehouse class to the top of the stack in " + prefix + "*", nearestGatehouse, mine, rows);
        print("entry > handler in " + prefix + "* (first Gatehouse class from the bottom of the stack > first"
                + " one above it that does not only carry the event)", paths, mine, rows);
        print("top native frames in " + prefix + "*", nativeTop, mineNative, 8);
    }
    /** Classes that carry a message between a socket and the gobj that handles it, and the kw helpers. */
    private static final Set<String> CARRIERS = Set.of("TcpHandler", "TcpBridge", "WorkerLink", "Tcp", "ProtTcp4h",
            "Tcp4hFramer", "Channel", "IoGate", "GObjImpl", "Kw", "GbufferKw", "Gbuffers", "InputGates",
            "InputThreshold", "Glog", "Fsm", "Fsm$Rows", "GObj");

    /**
     * How the loop got there: the first Gatehouse class from the bottom of the stack (a socket read, a timer, a
     * queue's completion) and the first one above it that is not a carrier (the gobj that handles the event):
     * splits the producers' input from the sinks' acks, the durable completions and the timers.
     */
    private static String path(List<RecordedFrame> frames) {
        String entry = null;
        for (int k = frames.size() - 1; k >= 0; k--) {
            String m = method(frames.get(k));
            if (!m.startsWith("io.gatehouse.")) continue;
            String cls = m.substring(m.lastIndexOf('.', m.lastIndexOf('.') - 1) + 1, m.lastIndexOf('.'));
            if (cls.contains("$$Lambda")) continue;
            if (entry == null) {
                entry = cls;
            } else if (!CARRIERS.contains(cls) && !cls.equals(entry)) {
                return entry + " > " + cls;
            }
        }
        return entry == null ? "(no Gatehouse frame)" : entry;
    }

    private static String method(RecordedFrame f) {
        RecordedMethod m = f.getMethod();
        if (m == null) return "?";
        // a lambda's class name carries its address and hash: keep the enclosing class, so runs add up
        return LAMBDA.matcher(m.getType().getName()).replaceAll("\\$\\$Lambda") + "." + m.getName();
    }

    private static void print(String title, Map<String, Long> counts, long total, int rows) {
        System.out.println("| " + title + " | samples | % |");
        System.out.println("|---|---|---|");
        counts.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(rows)
                .forEach(en -> System.out.printf(Locale.ROOT, "| `%s` | %,d | %.1f |%n", en.getKey(), en.getValue(),
                        100.0 * en.getValue() / Math.max(1, total)));
        System.out.println();
    }
}
