// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.support.Glog;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.util.concurrent.DefaultEventExecutor;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs this revision's queue code on a scratch queue before the revision serves: the JIT compiles it here, on a
 * thread of its own, instead of on the core loop right after a live upgrade, where every gate's queue calls ran
 * interpreted for half a second (its compiled callers, built for the old revision's classes, are thrown away at the
 * first call to the new ones) and the sinks saw gaps of up to 100 ms. What it runs is what a C_QIOGATE does per
 * message: append the producer's bytes on the owner's loop (the write-behind stage), read the record back for the
 * link, walk the list, mark in flight, take the ack.
 */
final class WarmUp {
    /** Messages sent through the scratch queue: past the JIT's thresholds for every method on the path. */
    static final int MESSAGES = 30_000;
    /** In flight at once, as a gate's window (acked oldest first). */
    static final int WINDOW = 500;
    static final long TIMEOUT_MS = 20_000;

    private WarmUp() {
    }

    /** Runs it in a fresh directory under {@code parent}, removed afterwards; answers the time taken, ms (-1: failed). */
    static long run(Path parent) {
        long t0 = System.nanoTime();
        Path dir = null;
        DefaultEventExecutor loop = new DefaultEventExecutor();
        try (TrQueueFactoryImpl factory = new TrQueueFactoryImpl()) {
            Files.createDirectories(parent);
            dir = Files.createTempDirectory(parent, ".trqueue-warmup-");
            TrQueue q = factory.open(dir, "warmup", "warmup", "tm", 0, 0, TrQueueOptions.defaults()
                    .withSegmentSize(16 << 20).withFsyncIntervalMs(3_600_000));
            q.onDurable((gen, rowid) -> { }, loop);
            q.load();
            int perTask = 200;
            ArrayDeque<QueueMessage> inFlight = new ArrayDeque<>();
            ByteBuf out = Unpooled.directBuffer(512);
            for (int done = 0; done < MESSAGES; done += perTask) {
                int from = done;
                loop.submit(() -> {
                    for (int i = from; i < from + perTask; i++) step(q, i, inFlight, out);
                }).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            }
            loop.submit(() -> {
                for (QueueMessage m : inFlight) q.unload(m, 0);
                q.close();
            }).get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
            out.release();
            return (System.nanoTime() - t0) / 1_000_000;
        } catch (IOException | ExecutionException | TimeoutException | RuntimeException e) {
            Glog.warn(null, "trqueue warm-up failed: the first calls after a live upgrade run cold", "cause", e.toString());
            return -1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return -1;
        } finally {
            loop.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            if (dir != null) {
                try {
                    new FileOps().deleteTree(dir);
                } catch (IOException e) {
                    Glog.warn(null, "trqueue warm-up directory left behind", "path", dir.toString(), "cause", e.toString());
                }
            }
        }
    }

    private static void step(TrQueue q, int i, ArrayDeque<QueueMessage> inFlight, ByteBuf out) {
        byte[] rec = ("{\"id\":\"warmup-" + i + "\",\"tm\":" + (1_700_000_000L + i) + ",\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                + "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}").getBytes(StandardCharsets.US_ASCII);
        QueueMessage m = q.appendJson(0, rec, 0, rec.length, 0);
        if (m == null) throw new IllegalStateException("append refused");
        QueueMessage at = q.getByRowid(m.rowid());
        q.next(at);
        q.setSoftMark(at, 0x0001, true);
        out.clear();
        q.writeMsgJson(at, out);
        inFlight.add(at);
        if (inFlight.size() > WINDOW) {
            QueueMessage acked = inFlight.poll();
            q.checkPendingRowid(acked.t(), acked.rowid());
            q.setSoftMark(acked, 0x0001, false);
            q.unload(acked, 0);
        }
        q.size();
        q.durableRowid();
    }
}
