package io.gatehouse.core;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What the process costs: heap, resident memory, and the CPU time of the thread that calls (the core loop, when
 * the sampler or a scrape asks from it). A Netty loop waiting in epoll uses no CPU, so the core thread's CPU time
 * over an interval is the time it was busy: no probe in the loop, nothing on the hot path.
 */
final class ProcessStats {
    private static final Path STATUS = Path.of("/proc/self/status");
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private ProcessStats() {}

    static long heapUsed() {
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    static long heapMax() {
        MemoryUsage u = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
        return u.getMax() > 0 ? u.getMax() : u.getCommitted();
    }

    /** Resident set size in bytes ({@code VmRSS} of /proc/self/status), or -1 where there is none. */
    static long rssBytes() {
        try {
            for (String line : Files.readAllLines(STATUS)) {
                if (!line.startsWith("VmRSS:")) continue;
                String[] f = line.substring(6).trim().split("\\s+");
                return Long.parseLong(f[0]) * 1024L;
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }

    /** CPU nanoseconds of the calling thread, or -1 when the JVM cannot tell. */
    static long currentThreadCpuNanos() {
        try {
            return THREADS.isCurrentThreadCpuTimeSupported() ? THREADS.getCurrentThreadCpuTime() : -1;
        } catch (UnsupportedOperationException e) {
            return -1;
        }
    }
}
