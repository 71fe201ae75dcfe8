package io.gatehouse.systests;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reliability: the queues live on a real size-limited file system (a tmpfs mounted for the test; it needs root,
 * else the test is skipped with a message). The destinations are down and 1 KiB messages are sent until the store
 * refuses them: a clear error in the log, the producer is no longer acked (pushed back, it keeps resending), the
 * gateway keeps running, and when the destinations come back every acked message is delivered. When another
 * writer filled the file system, its file is then deleted and new messages must be stored and delivered again.
 */
class DiskFullIT {
    /**
     * Short profile (about 40 s): the queues have their segments, then another writer fills the file system.
     * Bug 3 of docs/RELIABILITY.md (fixed): the stores went into sparse mapped pages and faulted (SIGBUS); trqueue
     * now allocates the space ahead of the frames with real writes, so the append is refused with an error.
     */
    @Test
    @Timeout(180)
    void shouldRefuseWithAClearErrorAndLoseNothingAckedWhenAnotherWriterFillsTheDisk() throws Exception {
        withSmallFs("ballast", "160m", 1024, 20_000, true);
    }

    /** Short profile: a 100 MiB file system has no room for a first 64 MiB segment (2 x segment size required). */
    @Test
    @Timeout(300)
    void shouldRefuseEverythingWithAClearErrorWhenThereIsNoRoomForASegment() throws Exception {
        withSmallFs("no-room", "100m", 1024, 5_000, false);
    }

    /**
     * Long profile (about 2 minutes): the queues fill their 64 MiB segments of 1 KB messages and cannot start new
     * ones on a 160 MiB file system.
     */
    @Test
    @Timeout(900)
    void shouldRefuseWithAClearErrorAndLoseNothingAckedWhenTheQueuesFillTheDisk() throws Exception {
        Assumptions.assumeTrue(Reliability.longProfile(), "long profile only (-Dgatehouse.reliability=long)");
        int size = Integer.getInteger("gatehouse.reliability.rolloverSize", 1024);
        // about 200 MB offered whatever the size: more than the 160 MiB file system holds
        withSmallFs("rollover", "160m", size, Math.max(20_000, 200_000 * 1024 / size), false);
    }

    void withSmallFs(String name, String fsSize, int size, int count, boolean ballast) throws Exception {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")),
                "DiskFullIT needs root to mount a size-limited tmpfs; skipped");
        Path work = Reliability.work("disk-full-" + name);
        Path small = Files.createDirectories(work.resolve("small-fs")).toAbsolutePath();
        Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=" + fsSize, "tmpfs", small.toString())
                .redirectErrorStream(true).start();
        boolean mounted = mount.waitFor(20, TimeUnit.SECONDS) && mount.exitValue() == 0;
        Assumptions.assumeTrue(mounted, "cannot mount a tmpfs here (" + new String(mount.getInputStream().readAllBytes()) + "); skipped");
        try {
            run(name, work, small, fsSize, size, count, ballast);
        } finally {
            Process u = new ProcessBuilder("umount", small.toString()).redirectErrorStream(true).start();
            u.waitFor(20, TimeUnit.SECONDS);
        }
    }

    static boolean gwAlive(GatewayProcess gw) {
        return java.nio.file.Files.exists(Path.of("/proc/" + gw.pid()));
    }

    private void run(String name, Path work, Path small, String fsSize, int size, int count, boolean ballast) throws Exception {
        Reliability.Ports p = new Reliability.Ports();
        ObjectNode cfg = Reliability.gatewayConfig(p);
        Reliability.queueKw(cfg, 0).put("tranger_path", small.toString());
        Reliability.queueKw(cfg, 1).put("tranger_path", small.toString());
        Path config = Reliability.writeConfig(work, cfg);
        Path log = work.resolve("gateway.log");
        Reliability.Ledger ledger = new Reliability.Ledger();
        BitSet acceptedFirst = null;
        try (GatewayProcess gw = new GatewayProcess(config, work.resolve("data"), log, p.control)) {
            gw.start();
            gw.awaitListening(p.input, 60_000);
            Reliability.Producer producer = new Reliability.Producer(p.input, 0, count);
            producer.size = size;
            producer.resendAfterMs = 3000;
            long ballastMb = 0;
            if (ballast) {
                // the queues have their segments; then another writer fills the file system
                Reliability.Producer first = new Reliability.Producer(p.input, count, 2000);
                first.size = 1024;
                assertTrue(first.run(60_000), "a first batch is acked");
                System.out.println("first batch: " + first.ackedCount() + " acked, " + first.sent.get() + " frames, "
                        + first.reconnects.get() + " reconnects");
                acceptedFirst = first.ackedIds();
                try (java.io.FileOutputStream f = new java.io.FileOutputStream(small.resolve("ballast").toFile())) {
                    byte[] mb = new byte[1 << 20];
                    while (true) {
                        f.write(mb);
                        ballastMb++;
                    }
                } catch (java.io.IOException full) {
                    // ENOSPC: the file system is full
                }
            }
            CompletableFuture<Boolean> flow = CompletableFuture.supplyAsync(() -> producer.run(240_000));
            // wait for the refusal, then for the acks to stop
            long deadline = System.currentTimeMillis() + 180_000;
            String error = null;
            while (System.currentTimeMillis() < deadline && error == null && !flow.isDone()) {
                String text = Reliability.log(log);
                if (text.contains("Message NOT SAVED")) error = "Message NOT SAVED";
                else if (text.contains("Cannot append record")) error = "Cannot append record";
                Thread.sleep(200);
            }
            Thread.sleep(5000);                                  // the other queue may take a few more
            long acked0 = producer.ackedCount();
            Thread.sleep(5000);
            long ackedWhileFull = producer.ackedCount() - acked0;
            producer.stop();
            try {
                flow.get(30, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException stuck) {
                Files.write(work.resolve("threads.txt"), new ProcessBuilder("jcmd", "" + gw.pid(), "Thread.print")
                        .redirectErrorStream(true).start().getInputStream().readAllBytes());
                throw new AssertionError("the producer is stuck; gateway threads in " + work.resolve("threads.txt"));
            }
            long sent = producer.sent.get();
            BitSet acked = producer.ackedIds();
            if (acceptedFirst != null) acked.or(acceptedFirst);
            String df = new String(new ProcessBuilder("df", "-m", small.toString()).start().getInputStream().readAllBytes()).trim();
            boolean alive = Reliability.queued(p.control, 0) >= 0 && gwAlive(gw);
            String logLine = Reliability.log(log).lines().filter(l -> l.contains("NOT SAVED") || l.contains("Cannot append")
                            || l.contains("InternalError") || l.contains("SIGBUS") || l.contains("fault"))
                    .findFirst().orElse("(none)");

            // the destinations come back: everything acked must arrive
            try (Reliability.IdSink s0 = new Reliability.IdSink(p.sink0, ledger);
                 Reliability.IdSink s1 = new Reliability.IdSink(p.sink1, ledger)) {
                Reliability.awaitDelivered(ledger, acked, ballast ? 30_000 : 180_000);
                Reliability.awaitQuiet(ledger, 2000, 30_000);
                long lost = ledger.lost(acked);
                // space comes back: new messages are stored (acked) and delivered again
                long afterAcked = -1;
                long afterLost = -1;
                if (ballast) {
                    Files.delete(small.resolve("ballast"));
                    Reliability.Producer after = new Reliability.Producer(p.input, count + 2000, 1000);
                    after.size = size;
                    after.resendAfterMs = 3000;
                    after.run(30_000);
                    afterAcked = after.ackedCount();
                    Reliability.awaitDelivered(ledger, after.ackedIds(), 20_000);
                    afterLost = ledger.lost(after.ackedIds());
                }
                if (lost > 0) {
                    Files.writeString(work.resolve("diagnostics.txt"), Reliability.command(p.control,
                            "stats-yuno service=__output_side__").toPrettyString() + "\n"
                            + Reliability.command(p.control, "command-yuno service=__output_side__ gobj=output-0 command=view-queue")
                            .toPrettyString() + "\n" + new String(new ProcessBuilder("jcmd", "" + gw.pid(), "Thread.print")
                            .redirectErrorStream(true).start().getInputStream().readAllBytes()));
                }
                Reliability.report("disk full (" + name + ")", count + (ballast ? 3000 : 0), ledger.distinct(), lost, ledger.duplicates(),
                        String.format(Locale.ROOT, "%s tmpfs%s; %d distinct ids offered (%d frames with resends),"
                                        + " %d acked before the store refused, %d acked in a 5 s window starting 5 s after the error;"
                                        + " gateway alive: %s;%s error: %s; df: %s",
                                fsSize, ballast ? ", filled by a " + ballastMb + " MiB ballast file after a first 2000 were acked" : count * size > (100 << 20) ? ", filled by the queues" : ", no room for a first segment",
                                count, sent, acked.cardinality(), ackedWhileFull, alive,
                                ballast ? String.format(Locale.ROOT, " after the ballast was deleted: %d of 1000 new acked, %d of them lost;",
                                        afterAcked, afterLost) : "",
                                logLine.length() > 220 ? logLine.substring(0, 220) + "..." : logLine,
                                df.replace('\n', ' ').replaceAll(" +", " ")));
                assertTrue(error != null, "a clear error in the log");
                assertTrue(acked.cardinality() < count, "the producer was pushed back");
                assertEquals(0, ackedWhileFull, "nothing acked while the store is full");
                assertTrue(alive, "the gateway keeps running");
                assertEquals(0, lost, "acked messages lost");
                if (ballast) {
                    String text = Reliability.log(log);
                    assertTrue(text.lines().anyMatch(l -> l.contains("Cannot append record, write FAILED") && l.contains("no space")),
                            "the store says why: write FAILED, reason no space");
                    assertTrue(!text.contains("InternalError"), "no fault on a mapped page reached the gateway");
                    assertEquals(1000, afterAcked, "appends work again once space is back");
                    assertEquals(0, afterLost, "messages acked after the space came back lost");
                }
            }
            assertEquals(0, gw.stop(), "SIGTERM stops the gateway with exit 0");
        }
    }
}
