package io.gatehouse.bench.scale;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.file.Files;
import java.nio.file.Path;

/** Memory figures of this process: RSS, heap in use, heap live after the last GC. */
final class Mem {
    private Mem() {}

    static long rssKb() {
        try {
            for (String l : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (l.startsWith("VmRSS:")) return Long.parseLong(l.replaceAll("[^0-9]", ""));
            }
        } catch (Exception e) {
            return -1;
        }
        return -1;
    }

    static long heapUsedKb() {
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed() / 1024;
    }

    /** Heap occupied right after the last collection of each pool (the live set, as the GC last saw it). */
    static long heapAfterGcKb() {
        long sum = 0;
        for (MemoryPoolMXBean p : ManagementFactory.getMemoryPoolMXBeans()) {
            if (p.getType() == MemoryType.HEAP && p.getCollectionUsage() != null) sum += p.getCollectionUsage().getUsed();
        }
        return sum / 1024;
    }

    /** Full GC, then the heap in use. */
    static long liveHeapKb() {
        for (int i = 0; i < 3; i++) {
            System.gc();
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return heapUsedKb();
    }

    static long directKb() {
        for (var b : ManagementFactory.getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class)) {
            if (b.getName().equals("direct")) return b.getMemoryUsed() / 1024;
        }
        return -1;
    }
}
