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
 * Reliability: the queues live on a real size-limited file system (a 160 MiB tmpfs mounted for the test; it
 * needs root, else the test is skipped with a message). The destinations are down and 1 KiB messages are sent
 * until the store refuses them: a clear error in the log, the producer is no longer acked (pushed back, it keeps
 * resending), the gateway keeps running, and when the destinations come back every acked message is delivered.
 */
class DiskFullIT {
    @Test
    @Timeout(600)
    void shouldRefuseWithAClearErrorAndLoseNothingAckedWhenTheDiskIsFull() throws Exception {
        Assumptions.assumeTrue("root".equals(System.getProperty("user.name")),
                "DiskFullIT needs root to mount a size-limited tmpfs; skipped");
        Path work = Reliability.work("disk-full");
        Path small = Files.createDirectories(work.resolve("small-fs"));
        Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=160m", "tmpfs", small.toString())
                .redirectErrorStream(true).start();
        boolean mounted = mount.waitFor(20, TimeUnit.SECONDS) && mount.exitValue() == 0;
        Assumptions.assumeTrue(mounted, "cannot mount a tmpfs here (" + new String(mount.getInputStream().readAllBytes()) + "); skipped");
        try {
            run(work, small);
        } finally {
            Process u = new ProcessBuilder("umount", small.toString()).redirectErrorStream(true).start();
            u.waitFor(20, TimeUnit.SECONDS);
        }
    }

    private void run(Path work, Path small) throws Exception {
        int count = 200_000;   // 200 MiB of 1 KiB messages: more than the 160 MiB file system holds
        Reliability.Ports p = new Reliability.Ports();
        ObjectNode cfg = Reliability.gatewayConfig(p);
        Reliability.queueKw(cfg, 0).put("tranger_path", small.toString());
        Reliability.queueKw(cfg, 1).put("tranger_path", small.toString());
        Path config = Reliability.writeConfig(work, cfg);
        Path log = work.resolve("gateway.log");
        Reliability.Ledger ledger = new Reliability.Ledger();
        try (GatewayProcess gw = new GatewayProcess(config, work.resolve("data"), log, p.control)) {
            gw.start();
            gw.awaitListening(p.input, 60_000);
            Reliability.Producer producer = new Reliability.Producer(p.input, 0, count);
            producer.size = 1024;
            producer.resendAfterMs = 3000;
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
            flow.get(60, TimeUnit.SECONDS);
            long sent = producer.sent.get();
            BitSet acked = producer.ackedIds();
            String df = new String(new ProcessBuilder("df", "-m", small.toString()).start().getInputStream().readAllBytes()).trim();
            boolean alive = Reliability.queued(p.control, 0) >= 0;
            String logLine = Reliability.log(log).lines().filter(l -> l.contains("NOT SAVED") || l.contains("Cannot append"))
                    .findFirst().orElse("(none)");

            // the destinations come back: everything acked must arrive
            try (Reliability.IdSink s0 = new Reliability.IdSink(p.sink0, ledger);
                 Reliability.IdSink s1 = new Reliability.IdSink(p.sink1, ledger)) {
                Reliability.awaitDelivered(ledger, acked, 180_000);
                Reliability.awaitQuiet(ledger, 2000, 30_000);
                long lost = ledger.lost(acked);
                Reliability.report("disk full", acked.cardinality(), ledger.distinct(), lost, ledger.duplicates(),
                        String.format(Locale.ROOT, "160 MiB tmpfs; %d distinct ids offered (%d frames with resends),"
                                        + " %d acked before the store refused, %d acked in a 5 s window starting 5 s after the error;"
                                        + " gateway alive: %s; error: %s; df: %s",
                                count, sent, acked.cardinality(), ackedWhileFull, alive,
                                logLine.length() > 220 ? logLine.substring(0, 220) + "..." : logLine,
                                df.replace('\n', ' ').replaceAll(" +", " ")));
                assertTrue(error != null, "a clear error in the log");
                assertTrue(acked.cardinality() < count, "the producer was pushed back");
                assertEquals(0, ackedWhileFull, "nothing acked while the store is full");
                assertTrue(alive, "the gateway keeps running");
                assertEquals(0, lost, "acked messages lost");
            }
            assertEquals(0, gw.stop(), "SIGTERM stops the gateway with exit 0");
        }
    }
}
