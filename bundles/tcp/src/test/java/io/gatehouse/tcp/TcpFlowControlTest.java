// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Poll;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.SlowConsumer;
import io.gatehouse.testkit.Tcp4hFrames;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Flow control: a producer far faster than its consumer. With C_TCP's input threshold the consumer holds at most
 * the threshold's worth of reads and TCP backpressure stops the producer. Also the tx queue bounds and their
 * overflow policies. The tests taking {@code io} run with the sockets on the core loop (0) and on two worker loops
 * (io_threads 2), where reads and writes cross between threads and must stay bounded all the same. (C_PROT_TCP4H's
 * frame threshold over C_TCP is tested in bundles/tcp4h.)
 */
@Timeout(60)
class TcpFlowControlTest {

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldStopDeliveringRawReadsAtTheTcpThresholdUntilCreditedBack(int io) throws Exception {
        // A consumer right on C_TCP (the dynamic-mode template, so the server side's C_TCP is its bottom): keeps every
        // read and processes (releases and credits back) 5 of them every 10 ms.
        SlowConsumer.Stats seen = new SlowConsumer.Stats();
        int port = Ports.free();
        String cfg = "{\"services\":[{\"name\":\"in\",\"gclass\":\"C_TEST_GATE\",\"autostart\":true,\"children\":["
                + "{\"name\":\"listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port + "\","
                + "\"channel_template\":{\"gclass\":\"C_RAW_SLOW\"},\"clisrv_kw\":{\"input_threshold_msgs\":10}}}]}]}";
        try (YunoRuntime srv = YunoRuntime.builder().name("t").ioThreads(io).gclass(Support.specs())
                .gclass(SlowConsumer.spec("C_RAW_SLOW", Ev.EV_RX_DATA, 5, 10, seen))
                .config(cfg).build()) {
            srv.start();
            long written = Tcp4hFrames.flood(port, 996, 2000, Long.MAX_VALUE);
            // Reads already on their way when the threshold was crossed (a worker loop's burst) wait in C_TCP:
            // the consumer never holds more than the threshold.
            assertTrue(seen.maxHeld.get() <= 10, "max held " + seen.maxHeld.get());
            assertTrue(seen.blockedMarks.get() > 5, "the crossing reads carry is_blocked: " + seen.blockedMarks.get());
            long consumed = seen.consumedBytes.get();
            assertTrue(consumed > 100_000, "consumed " + consumed);
            assertTrue(written < consumed + 40_000_000L, "written " + written + ", consumed " + consumed);
        }
    }

    @Test
    void shouldRefuseAnUnknownOverflowPolicyAndKeepThePreviousOne() throws Exception {
        try (LogCapture logs = new LogCapture();
             YunoRuntime rt = Support.runtime(txConfig(Ports.free(), "\"tx_overflow\":\"drop_oldest\""))) {
            rt.start();
            ObjectNode refused = rt.command("write-attr service=cli attr=tx_overflow value=dorp_oldest");
            assertEquals(-1, refused.path("result").asInt(), refused.toString());
            assertTrue(refused.path("comment").asText().contains("tx_overflow must be close or drop_oldest"), refused.toString());
            assertEquals("drop_oldest", rt.call(() -> rt.yuno().service("cli").readAttr("tx_overflow").asText()));
            assertEquals(1, logs.with("Attribute value refused").size());
            assertEquals(0, rt.command("write-attr service=cli attr=tx_overflow value=close").path("result").asInt());
        }
        try (LogCapture logs = new LogCapture();
             YunoRuntime rt = Support.runtime(txConfig(Ports.free(), "\"tx_overflow\":\"drop-oldest\""))) {
            rt.start();
            assertEquals(1, logs.with("tx_overflow unknown, the connection will be closed on overflow").size());
        }
    }

    private static String txConfig(int port, String kw) {
        return Support.tcpConfig(port, "\"timeout_between_connections\":60000," + kw);
    }

    private static void flood(YunoRuntime rt, int n) {
        rt.run(() -> {
            for (int i = 0; i < n; i++) {
                GObj g = rt.yuno().service("cli");
                if (!g.inState(St.ST_CONNECTED)) return;
                g.send(Ev.EV_TX_DATA, Kw.withGbuffer(Unpooled.wrappedBuffer(new byte[65536])), null);
            }
        });
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldCloseWhenTheTxQueueOverflows(int io) throws Exception {
        try (ServerSocket ss = new ServerSocket(0); LogCapture logs = new LogCapture();
             YunoRuntime rt = Support.runtime(txConfig(ss.getLocalPort(), "\"max_tx_queue\":10"), io)) {
            Recorder rec = Support.startClient(rt);
            try (Socket peer = ss.accept()) {
                assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                flood(rt, 2000);   // the peer never reads
                assertNotNull(rec.await(Ev.EV_DISCONNECTED, 5000));
                assertEquals(1, logs.count("tcp tx queue overflow, closing"));
            }
        }
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldDropTheOldestWhenConfiguredSayingItOnceUntilTheQueueDrains(int io) throws Exception {
        try (ServerSocket ss = new ServerSocket(0); LogCapture logs = new LogCapture();
             YunoRuntime rt = Support.runtime(txConfig(ss.getLocalPort(), "\"max_tx_queue\":10,\"tx_overflow\":\"drop_oldest\""),
                     io, new ManualClock())) {
            Recorder rec = Support.startClient(rt);
            try (Socket peer = ss.accept()) {
                assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                flood(rt, 2000);
                assertEquals(1, logs.count("throw away tcp tx message"), "said once, not per message");
                assertEquals(0, rec.count(Ev.EV_DISCONNECTED));
                long queued = rt.call(() -> rt.yuno().service("cli").readAttr("cur_tx_queue").asLong());
                if (io == 0) {
                    assertEquals(10L, queued);
                } else {
                    // The worker flushes concurrently, so part of the queue may already be in the kernel buffers.
                    assertTrue(queued <= 10, "queued " + queued);
                }
                // What went to the socket is what the kernel buffers hold (a few MB), not the 131 MB offered: the
                // bytes crossing to a worker loop count against the socket's writability like Netty's own buffer.
                long handed = rt.call(() -> rt.yuno().service("cli").readAttr("txBytes").asLong());
                assertTrue(handed < 30_000_000L, "handed to the socket " + handed);
                // On a worker loop the queue may already have drained into the kernel buffers, ending the streak.
                if (io == 0) assertEquals(0, logs.count("tcp tx queue no longer full"));
                // The peer reads everything: the queue drains, EV_TX_READY is published, and the end of the
                // throwing away is said with how many went.
                Thread reader = new Thread(() -> {
                    try {
                        peer.getInputStream().transferTo(java.io.OutputStream.nullOutputStream());
                    } catch (Exception ignored) {
                        // closed
                    }
                });
                reader.setDaemon(true);
                reader.start();
                assertTrue(Poll.until(() -> rt.call(() -> rt.yuno().service("cli").readAttr("cur_tx_queue").asLong()) == 0,
                        10_000));
                assertTrue(rec.awaitCount(Ev.EV_TX_READY, 1, 5000), "EV_TX_READY once the queue drained");
                List<LogCapture.Rec> end = logs.with("tcp tx queue no longer full");
                assertEquals(1, end.size());
                long sent = rt.call(() -> rt.yuno().service("cli").readAttr("txMsgs").asLong());
                assertEquals(2000 - sent, ((Number) end.get(0).fields.get("thrown_away")).longValue(),
                        "every message offered was either sent or counted as thrown away");
            }
        }
    }
}
