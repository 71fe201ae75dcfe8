package io.gatehouse.core;

import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrType;
import io.gatehouse.api.Cancellable;
import io.gatehouse.api.GClock;
import io.gatehouse.api.GObj;
import io.gatehouse.support.Glog;

import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * The live page's sampler: a timer on the yuno's core loop, every {@value #PERIOD_MS} ms of the yuno's clock, that
 * reads <b>counters, not rates</b> and keeps the page's numbers and its {@link History}.
 *
 * <p>How it relates to the read-driven rate windows of seeds/000: it never calls {@code stats} and never calls
 * reads a rate window of C_CHANNEL or C_IOGATE. It takes the raw counters ({@link ServiceMetrics#messageCounters}:
 * their {@code COUNTER} attributes) and divides their increase by its own elapsed time, in its
 * own baselines. So a C_IOGATE's {@code txMsgsec} still means "since the previous person's read", whatever the
 * page shows, and the page's msgs/s is always a one-second rate whoever else reads.
 *
 * <p>Each tick: per service rx/tx msgs/s and open connections; per queue (see {@link LiveView#queues})
 * {@code msgs_in_queue}, {@code pending_acks}, {@code oldest_pending_age_ms} as they are and {@code retries}
 * per second; the process's heap, RSS and the core thread's busy % (its CPU time over the wall time since the
 * previous tick). Then, when someone watches, the view is built once and handed to the HTTP server to send to
 * every open page.
 */
final class Sampler {
    static final long PERIOD_MS = 1000;
    /** 15 minutes at one sample a second. */
    static final int HISTORY_SAMPLES = 900;
    /** Series bound: a few hundred is a large gateway's worth (5 per service, 4 per queue, 3 for the process). */
    static final int MAX_SERIES = 512;

    static final String HEAP = "proc/heap";
    static final String RSS = "proc/rss";
    static final String BUSY = "proc/busy";

    interface FrameSink {
        /** Whether a frame is wanted this tick (a page is open or polled recently). */
        boolean wantsFrame();

        /** Called on the core thread with the tick's numbers; builds and sends the frame. */
        void frame();
    }

    private final YunoRuntime runtime;
    private final History history;
    private final Map<String, long[]> baselines = new HashMap<>();
    private volatile Map<String, Double> latest = Map.of();
    private volatile long latestEpochMs;
    private long lastCpuNanos = -1;
    private long lastWallNanos;
    private Cancellable timer;
    private FrameSink sink;
    private boolean failureLogged;

    Sampler(YunoRuntime runtime, History history) {
        this.runtime = runtime;
        this.history = history;
    }

    static String rxId(String service) { return "svc/" + service + "/rx"; }
    static String txId(String service) { return "svc/" + service + "/tx"; }
    static String connsId(String service) { return "svc/" + service + "/conns"; }
    static String queueId(String service, String path, String stat) { return "q/" + service + "/" + path + "/" + stat; }

    History history() {
        return history;
    }

    /** The latest tick's values by series id (read on the core thread). */
    Map<String, Double> latest() {
        return latest;
    }

    long latestEpochMs() {
        return latestEpochMs;
    }

    void start(FrameSink frames) {
        this.sink = frames;
        YunoImpl yuno = (YunoImpl) runtime.yuno();
        timer = yuno.timers().schedulePeriodic(PERIOD_MS, this::tick);
    }

    void stop() {
        Cancellable t = timer;
        if (t != null) t.cancel();
    }

    /** One sample of everything (core thread). A failure is logged once and the next tick tries again. */
    void tick() {
        try {
            sample();
            FrameSink s = sink;
            if (s != null && s.wantsFrame()) s.frame();
        } catch (RuntimeException e) {
            if (!failureLogged) {
                failureLogged = true;
                Glog.error(null, "Live view sampler failed", "error", String.valueOf(e));
            }
        }
    }

    private void sample() {
        GClock clock = runtime.yuno().clock();
        long t = clock.monotonicMillis();
        long epoch = clock.epochMillis();
        Map<String, Double> v = new LinkedHashMap<>();
        Set<String> seen = new HashSet<>();
        for (GObj s : runtime.yuno().services()) {
            String name = s.name();
            long[] m = ServiceMetrics.messageCounters(s, 0);
            if (m != null) {
                v.put(rxId(name), rate(rxId(name), m[0], t, seen));
                v.put(txId(name), rate(txId(name), m[1], t, seen));
            }
            for (LiveView.Found q : LiveView.queues(s)) {
                GObj g = q.gobj;
                if (g instanceof GObjImpl) ((GObjImpl) g).syncAttrs();
                for (String stat : LiveView.QUEUE_STATS) {
                    Attr<?> a = g.gclass().attr(stat);
                    if (a == null || !a.isNumeric()) continue;
                    Object x = g.read(a);
                    double d = x instanceof Boolean ? (((Boolean) x) ? 1 : 0) : ((Number) x).doubleValue();
                    String id = queueId(name, q.path, stat);
                    v.put(id, a.type() == AttrType.COUNTER ? rate(id, (long) d, t, seen) : d);
                }
            }
            v.put(connsId(name), (double) ServiceMetrics.connections(s));
        }
        v.put(HEAP, (double) ProcessStats.heapUsed());
        long rss = ProcessStats.rssBytes();
        if (rss >= 0) v.put(RSS, (double) rss);
        v.put(BUSY, busyPercent());
        baselines.keySet().retainAll(seen);
        history.tick(epoch, v);
        latest = v;
        latestEpochMs = epoch;
    }

    /**
     * Per second since this sampler's previous sample of the same counter. NaN on the first sample and after the
     * counter went down (a {@code __reset__} or a rebuilt service): that sample only sets the new baseline.
     */
    private double rate(String id, long counter, long nowMs, Set<String> seen) {
        long[] b = baselines.get(id);
        seen.add(id);
        if (b == null) {
            baselines.put(id, new long[] {counter, nowMs});
            return Double.NaN;
        }
        long dc = counter - b[0];
        long dt = nowMs - b[1];
        b[0] = counter;
        b[1] = nowMs;
        if (dc < 0 || dt <= 0) return Double.NaN;
        return dc * 1000.0 / dt;
    }

    /** The core thread's CPU time over the wall time since the previous tick, in %. */
    private double busyPercent() {
        long cpu = ProcessStats.currentThreadCpuNanos();
        long wall = System.nanoTime();
        double pct = Double.NaN;
        if (cpu >= 0 && lastCpuNanos >= 0 && wall > lastWallNanos) {
            pct = Math.min(100.0, Math.max(0.0, (cpu - lastCpuNanos) * 100.0 / (wall - lastWallNanos)));
        }
        lastCpuNanos = cpu;
        lastWallNanos = wall;
        return pct;
    }
}
