// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.FsyncPolicy;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;

/**
 * Run in a child JVM with a small heap by {@link MillionPendingTest}: appends N pending 100-byte messages, reopens,
 * loads and drains them. Exit code 0 when every step saw what it should.
 */
public final class MillionPending {
    private MillionPending() {}

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int n = Integer.parseInt(args[1]);
        TrQueueOptions o = TrQueueOptions.defaults().withFsyncPolicy(FsyncPolicy.NONE);
        TrQueueFactoryImpl f = new TrQueueFactoryImpl();
        ObjectNode kw = Kw.create();
        kw.put("id", 1234567);
        kw.put("event", "telemetry");
        kw.put("payload", "p".repeat(100 - 47));
        long t0 = System.nanoTime();
        TrQueue q = f.open(dir, "db", "M", "", 0, 0, o);
        for (int i = 1; i <= n; i++) {
            if (q.append(1000, kw, 0).rowid() != i) System.exit(2);
        }
        q.close();
        long t1 = System.nanoTime();
        q = f.open(dir, "db", "M", "", 0, 0, o);
        if (q.load() != 0 || q.size() != n) System.exit(3);
        System.gc();
        long loaded = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        long t2 = System.nanoTime();
        int drained = 0;
        for (QueueMessage m = q.first(); m != null; m = q.next(m)) {
            if (m.rowid() == 1 && q.msgJson(m) == null) System.exit(4);
            q.unload(m, 0);
            drained++;
        }
        if (drained != n || q.size() != 0) System.exit(5);
        q.close();
        long t3 = System.nanoTime();
        q = f.open(dir, "db", "M", "", 0, 0, o);
        if (q.load() != 0 || q.size() != 0) System.exit(6);
        q.close();
        f.close();
        System.out.printf("MillionPending n=%d append %.2fs, reopen+load %.2fs, drain %.2fs, heap used after load %d MiB%n",
                n, (t1 - t0) / 1e9, (t2 - t1) / 1e9, (t3 - t2) / 1e9, loaded >> 20);
        System.exit(0);
    }
}
