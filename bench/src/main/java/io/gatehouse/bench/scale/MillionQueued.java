package io.gatehouse.bench.scale;

import io.gatehouse.bench.load.RawSink;
import io.gatehouse.bench.load.SideBySide;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.trqueue.TrQueueFactoryImpl;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Scale: one million messages queued in a C_QIOGATE (fsync interval) while its destination is down, then drained
 * when it comes up. The gateway (input C_IOGATE → C_RELAY → C_QIOGATE → C_IOGATE → destination) runs in this JVM;
 * a producer thread sends 128-byte messages with acks. Every second it prints the queue size, RSS, heap in use,
 * heap live after the last GC and direct memory, in three phases: queueing, queued (idle), draining.
 *
 * <pre>MillionQueued [count=1000000] [size=128]</pre> (run with -Xmx of your choice; the docs use -Xmx256m)
 */
public final class MillionQueued {
    private MillionQueued() {}

    public static void main(String[] args) throws Exception {
        int count = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        int size = args.length > 1 ? Integer.parseInt(args[1]) : 128;
        int input = SideBySide.freePortPublic();
        int sinkPort = SideBySide.freePortPublic();
        String cfg = SideBySide.gatewayConfig("qiogate-interval", input, new int[] {sinkPort});
        Path data = Files.createTempDirectory("gatehouse-million-");
        System.out.printf(Locale.ROOT, "# %d messages of %d bytes into one C_QIOGATE (interval), destination down;"
                + " -Xmx %d MiB%n", count, size, Runtime.getRuntime().maxMemory() >> 20);
        System.out.println("# phase     t_s   queued   rss_MiB heap_used_MiB heap_after_gc_MiB direct_MiB");
        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl();
             YunoRuntime rt = YunoRuntime.builder().name("million").dataDir(data)
                     .gclasses(SideBySide.gclasses(queues)).config(cfg).build().start()) {
            Thread.sleep(500);
            long t0 = System.nanoTime();
            sample(rt, "start", t0);
            AtomicLong acked = new AtomicLong();
            Thread producer = new Thread(() -> produce(input, count, size, acked), "producer");
            producer.start();
            while (producer.isAlive()) {
                producer.join(1000);
                sample(rt, "queueing", t0);
            }
            double qs = (System.nanoTime() - t0) / 1e9;
            System.out.printf(Locale.ROOT, "# queued %d acked messages in %.1f s (%.0f msgs/s)%n", acked.get(), qs, acked.get() / qs);
            for (int i = 0; i < 3; i++) {
                Thread.sleep(1000);
                sample(rt, "queued", t0);
            }
            System.out.printf(Locale.ROOT, "# queued, after a full GC: live heap %d MiB, RSS %d MiB%n",
                    Mem.liveHeapKb() / 1024, Mem.rssKb() / 1024);
            long d0 = System.nanoTime();
            try (RawSink sink = new RawSink(sinkPort)) {
                long q;
                do {
                    Thread.sleep(1000);
                    q = sample(rt, "draining", t0);
                } while (q > 0 && (System.nanoTime() - d0) < 600e9);
                double ds = (System.nanoTime() - d0) / 1e9;
                System.out.printf(Locale.ROOT, "# drained: the sink received %d in %.1f s (%.0f msgs/s, including the"
                        + " reconnect delay)%n", sink.received.get(), ds, sink.received.get() / ds);
                sample(rt, "drained", t0);
                System.out.printf(Locale.ROOT, "# drained, after a full GC: live heap %d MiB, RSS %d MiB%n",
                        Mem.liveHeapKb() / 1024, Mem.rssKb() / 1024);
            }
        } finally {
            SideBySide.deleteTree(data);
        }
    }

    static long sample(YunoRuntime rt, String phase, long t0) {
        long q = rt.command("stats-yuno service=__output_side__").path("data").path("msgs_in_queue").asLong(-1);
        System.out.printf(Locale.ROOT, "%-10s %5.1f %8d %8d %8d %8d %8d%n", phase, (System.nanoTime() - t0) / 1e9, q,
                Mem.rssKb() / 1024, Mem.heapUsedKb() / 1024, Mem.heapAfterGcKb() / 1024, Mem.directKb() / 1024);
        return q;
    }

    /** Sends count messages with a window of 5,000 unacked; answers when every one is acked. */
    static void produce(int port, int count, int size, AtomicLong acked) {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setTcpNoDelay(true);
            Semaphore credit = new Semaphore(5000);
            DataInputStream in = new DataInputStream(s.getInputStream());
            Thread reader = new Thread(() -> {
                byte[] buf = new byte[4096];
                try {
                    while (acked.get() < count) {
                        int len = in.readInt() - 4;
                        in.readFully(buf, 0, len);
                        acked.incrementAndGet();
                        credit.release();
                    }
                } catch (Exception e) {
                    // closed
                }
            });
            reader.start();
            OutputStream o = new BufferedOutputStream(s.getOutputStream(), 64 * 1024);
            for (int i = 0; i < count; i++) {
                if (!credit.tryAcquire()) {
                    o.flush();
                    credit.acquire();
                }
                String head = "{\"id\":\"msg-" + i + "\",\"tm\":" + i + ",\"pad\":\"";
                String tail = "\",\"__md_trq__\":{\"__msg_rowid__\":" + (i + 1) + ",\"__msg_t__\":1}}";
                int pad = Math.max(0, size - head.length() - tail.length());
                byte[] b = (head + "x".repeat(pad) + tail).getBytes(StandardCharsets.US_ASCII);
                o.write((b.length + 4) >>> 24);
                o.write((b.length + 4) >>> 16);
                o.write((b.length + 4) >>> 8);
                o.write(b.length + 4);
                o.write(b);
            }
            o.flush();
            reader.join(600_000);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
