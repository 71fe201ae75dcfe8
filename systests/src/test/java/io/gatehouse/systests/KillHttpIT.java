package io.gatehouse.systests;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Every HTTP request answered 200 is delivered, across kill -9 of the gateway under HTTP load. The demo gateway
 * runs from the built distribution as a child process (real trqueue on disk), its sinks in this JVM
 * ({@link Reliability.IdSink}); clients post NDJSON batches of {@code msg-N} with the JDK's HTTP client and send a
 * batch again until it is answered 200 (after a refusal, a reset or a refused connection). The gateway is killed
 * twice in the middle of the flow and started again on the same data directory.
 */
class KillHttpIT {
    private static final int CLIENTS = 4;
    private static final int BATCH = 50;

    @Test
    @Timeout(600)
    void shouldDeliverEveryRequestAnswered200AfterKillMinus9() throws Exception {
        int perClient = Reliability.pick(5_000, 50_000);
        Path work = Reliability.work("http-kill9");
        Reliability.Ports p = new Reliability.Ports();
        Path config = Reliability.writeConfig(work, Reliability.gatewayConfig(p));
        Path log = work.resolve("gateway.log");
        Reliability.Ledger ledger = new Reliability.Ledger();
        BitSet acked = new BitSet();
        AtomicLong ok = new AtomicLong();
        AtomicLong refused = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        long deadline = System.currentTimeMillis() + 400_000;
        try (Reliability.IdSink s0 = new Reliability.IdSink(p.sink0, ledger);
             Reliability.IdSink s1 = new Reliability.IdSink(p.sink1, ledger);
             GatewayProcess gw = new GatewayProcess(config, work.resolve("data"), log, p.control)) {
            gw.start();
            gw.awaitListening(p.http, 60_000);
            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(2)).build();
            URI uri = URI.create("http://127.0.0.1:" + p.http + "/ingest");
            List<Thread> threads = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                int from = c * perClient;
                Thread t = new Thread(() -> {
                    for (int b = from; b < from + perClient && System.currentTimeMillis() < deadline; ) {
                        StringBuilder body = new StringBuilder();
                        int end = Math.min(b + BATCH, from + perClient);
                        for (int id = b; id < end; id++) body.append("{\"id\":\"msg-").append(id).append("\"}\n");
                        HttpRequest req = HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(15))
                                .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build();
                        try {
                            HttpResponse<String> r = client.send(req, HttpResponse.BodyHandlers.ofString());
                            if (r.statusCode() == 200) {
                                synchronized (acked) {
                                    acked.set(b, end);
                                }
                                ok.incrementAndGet();
                                b = end;
                                continue;
                            }
                            refused.incrementAndGet();
                        } catch (IOException e) {
                            failed.incrementAndGet();   // reset by the kill, or refused while it restarts
                        } catch (InterruptedException e) {
                            return;
                        }
                        Reliability.sleep(100);
                    }
                }, "http-client-" + c);
                t.start();
                threads.add(t);
            }
            long[] ackedAtKill = new long[2];
            for (int k = 0; k < 2; k++) {
                long target = (long) CLIENTS * perClient * (k + 1) / 3;
                while (cardinality(acked) < target && System.currentTimeMillis() < deadline) Thread.sleep(20);
                ackedAtKill[k] = cardinality(acked);
                gw.kill9();
                Thread.sleep(500);
                gw.start();
                gw.awaitListening(p.http, 60_000);
            }
            for (Thread t : threads) t.join(Math.max(1, deadline - System.currentTimeMillis()));
            BitSet all;
            synchronized (acked) {
                all = (BitSet) acked.clone();
            }
            Reliability.awaitDelivered(ledger, all, 120_000);
            long lost = ledger.lost(all);
            Reliability.report("http kill -9", (long) CLIENTS * perClient, ledger.distinct(), lost, ledger.duplicates(),
                    String.format("%d requests answered 200, %d refused (503), %d reset or refused connections; "
                            + "killed at %d and %d acked", ok.get(), refused.get(), failed.get(), ackedAtKill[0],
                            ackedAtKill[1]));
            assertEquals((long) CLIENTS * perClient, all.cardinality(), "every batch was answered 200 in the end");
            assertEquals(0, lost, "ids answered 200 and never delivered");
            assertEquals(0, gw.stop(), "SIGTERM stops the gateway with exit 0");
        }
    }

    private static long cardinality(BitSet b) {
        synchronized (b) {
            return b.cardinality();
        }
    }
}
