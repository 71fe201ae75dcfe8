// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LeakWatch;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.BitSet;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The output of a queue over C_TCP, upgraded again and again while it runs at full speed against a peer that acks
 * every message and is sometimes slow, so that the socket turns unwritable and writable again across the swaps (the
 * tx queue, the writability events and the flushes change hands under load). The sender works as C_QIOGATE does: at
 * most a window of messages not acked. A message written and never flushed, or a read or writability event lost in a
 * swap, stalls the window: every message sent must come back acked, once, in bounded time.
 */
@Timeout(180)
class TcpUpgradeUnderBackpressureTest {
    private static LeakWatch leaks;

    @BeforeAll
    static void watchLeaks() {
        leaks = new LeakWatch();
    }

    @AfterAll
    static void noBufferLeaked() throws Exception {
        assertEquals("", leaks.stop(), "Netty's leak detector reported a leak");
    }

    /** Counts the acks the gate publishes (ids as payload), on the core loop. */
    static final class AckCounter implements GObjBehavior {
        final BitSet acked = new BitSet();
        volatile int distinct;
        volatile int duplicates;

        AckCounter(GObj g) {
        }

        private int acMessage(String ev, ObjectNode kw, GObj src) {
            ByteBuf b = Kw.takeGbuffer(kw);
            if (b != null) {
                int id = Integer.parseInt(b.toString(StandardCharsets.US_ASCII).trim().split(" ")[0]);
                b.release();
                if (acked.get(id)) duplicates++;
                acked.set(id);
                distinct = acked.cardinality();
            }
            return 0;
        }

        static final GClassSpec<AckCounter> SPEC = GClassSpec.builder("C_TEST_ACKS", AckCounter.class)
                .description("counts the acks of the peer (this test)")
                .fsm(Fsm.<AckCounter>builder()
                        .state(St.ST_IDLE)
                        .on(Ev.EV_ON_MESSAGE, AckCounter::acMessage)
                        .ignore(Ev.EV_ON_OPEN)
                        .ignore(Ev.EV_ON_CLOSE)
                        .build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(AckCounter::new)
                .build();
    }

    /**
     * A sink as the itests' AckingSink: blocking reads of frames, an ack frame (the message's id) written for each,
     * flushed when nothing more is there to read; every {@code pauseEvery} frames it stops reading a while.
     */
    private static Thread peer(Socket s, int pauseEvery, AtomicReference<Throwable> failure) {
        Thread t = new Thread(() -> {
            try (DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 65536));
                 DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream(), 65536))) {
                byte[] buf = new byte[4096];
                long frames = 0;
                while (true) {
                    int len = in.readInt() - 4;
                    in.readFully(buf, 0, len);
                    String msg = new String(buf, 0, len, StandardCharsets.US_ASCII);
                    byte[] ack = msg.substring(0, msg.indexOf(' ')).getBytes(StandardCharsets.US_ASCII);
                    out.writeInt(ack.length + 4);
                    out.write(ack);
                    if (in.available() == 0) out.flush();
                    if (++frames % pauseEvery == 0) {
                        out.flush();
                        Thread.sleep(15);
                    }
                }
            } catch (IOException e) {
                // closed at the end
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        }, "backpressure-peer");
        t.setDaemon(true);
        t.start();
        return t;
    }

    @Test
    void shouldGoOnDeliveringAndGettingAcksAcrossUpgradesWhileTheSocketFillsAndDrains() throws Exception {
        int window = 4000;
        long runMs = 8_000;
        String padding = " " + "x".repeat(150);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        try (ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             YunoRuntime cli = YunoRuntime.builder().name("t").gclass(Support.specs()).gclass(AckCounter.SPEC)
                     .config(Support.clientConfig(ss.getLocalPort(), null)).build()) {
            ss.setSoTimeout(10_000);
            AckCounter acks = cli.call(() -> {
                GObj g = cli.yuno().root().createVolatileChild("acks", "C_TEST_ACKS", null);
                cli.yuno().service("out").subscribe(null, g);
                return (AckCounter) g.behavior();
            });
            cli.start();
            try (Socket s = ss.accept()) {
                peer(s, 3000, failure);
                int[] sent = {0};
                Thread sender = new Thread(() -> {
                    long end = System.currentTimeMillis() + runMs;
                    try {
                        while (System.currentTimeMillis() < end && failure.get() == null) {
                            cli.run(() -> {
                                // As C_QIOGATE: up to the window, then only when acks give credit back.
                                for (int k = 0; k < 500 && sent[0] - acks.distinct < window; k++) {
                                    int id = sent[0]++;
                                    cli.yuno().service("out").send(Ev.EV_SEND_MESSAGE,
                                            Kw.withGbuffer(Unpooled.copiedBuffer(id + padding, StandardCharsets.US_ASCII)), null);
                                }
                            });
                            Thread.sleep(1);
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }, "backpressure-sender");
                sender.start();
                int upgrades = 0;
                while (sender.isAlive()) {
                    Support.upgradeLive(cli, 1);
                    upgrades++;
                    Thread.sleep(upgrades % 3 == 0 ? 1 : 7);
                }
                sender.join();
                int total = cli.call(() -> sent[0]);
                long deadline = System.currentTimeMillis() + 20_000;
                while (acks.distinct < total && System.currentTimeMillis() < deadline) Thread.sleep(20);
                assertNull(failure.get(), String.valueOf(failure.get()));
                assertTrue(upgrades >= 20, "upgrades " + upgrades);
                assertTrue(total > 2 * window, "the window turned over: " + total + " sent");
                GObj tcp = cli.call(() -> cli.yuno().service("out").lastBottom());
                String where = cli.call(() -> "tcp: txMsgs=" + tcp.readAttr("txMsgs") + " rxMsgs="
                        + tcp.readAttr("rxMsgs") + " cur_tx_queue=" + tcp.readAttr("cur_tx_queue") + " autoRead="
                        + ((Tcp) tcp.behavior()).channel().config().isAutoRead() + " writable="
                        + ((Tcp) tcp.behavior()).channel().isWritable());
                assertEquals(total, acks.distinct, "every message acked after " + upgrades + " upgrades; " + where);
                assertEquals(0, acks.duplicates, "each once");
            }
        }
    }
}
