// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.node.LongNode;
import io.gatehouse.api.GObj;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LeakWatch;
import io.gatehouse.testkit.Poll;
import io.gatehouse.testkit.Ports;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.MaxMessagesRecvByteBufAllocator;
import io.netty.channel.RecvByteBufAllocator;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 17's fairness on the core loop: a producer flooding an accepted connection must not starve an output's
 * socket (the acks of its destination) of reads. Each socket reads at most {@code rx_max_reads} buffers per turn of
 * the loop: an accepted one its listener's (4), a client one its own (16). Counts, not times: both peers write
 * without pause, and a handler at the head of each socket's pipeline counts the reads of each turn.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TcpFairnessTest {
    /** TCP4H frames of 512 bytes (the 4-byte length included), 128 of them per 64 KiB write. */
    private static final int FRAME = 512;
    private static final byte[] CHUNK = chunk();

    private static LeakWatch leaks;

    @BeforeAll
    static void watchLeaks() {
        leaks = new LeakWatch();
    }

    @AfterAll
    static void noBufferLeaked() throws Exception {
        assertEquals("", leaks.stop(), "Netty's leak detector reported a leak");
    }

    private static byte[] chunk() {
        ByteBuffer b = ByteBuffer.allocate(64 * 1024);
        while (b.remaining() >= FRAME) {
            b.putInt(FRAME);
            for (int i = 4; i < FRAME; i++) b.put((byte) 'x');
        }
        return b.array();
    }

    /** Writes 64 KiB chunks of frames to {@code s} until {@code stop}, or the socket closes. */
    private static Thread flood(Socket s, AtomicBoolean stop, String name) {
        Thread t = new Thread(() -> {
            try {
                OutputStream out = s.getOutputStream();
                while (!stop.get()) out.write(CHUNK);
            } catch (IOException closed) {
                // the test ended
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** The lone services of {@code a} and {@code b} (each {@code {"services":[...]}}) in one config. */
    private static String both(String a, String b) {
        String head = "{\"services\":[";
        return head + a.substring(head.length(), a.length() - 2) + "," + b.substring(head.length(), b.length() - 2) + "]}";
    }

    private static long rxBytes(YunoRuntime rt, GObj tcp) {
        return rt.call(() -> tcp.readLong(Tcp.RX_BYTES));
    }

    private static int maxReads(YunoRuntime rt, GObj tcp) {
        return rt.call(() -> {
            Channel c = ((Tcp) tcp.behavior()).channel();
            RecvByteBufAllocator a = c.config().getRecvByteBufAllocator();
            return ((MaxMessagesRecvByteBufAllocator) a).maxMessagesPerRead();
        });
    }

    /** Counts a socket's reads per turn of the loop: Netty ends each turn's reads of a socket with a read complete. */
    private static final class Turns extends ChannelInboundHandlerAdapter {
        private int reads;
        volatile int most;
        volatile long turns;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            reads++;
            ctx.fireChannelRead(msg);
        }

        @Override
        public void channelReadComplete(ChannelHandlerContext ctx) {
            if (reads > most) most = reads;
            reads = 0;
            turns++;
            ctx.fireChannelReadComplete();
        }
    }

    private static Turns countTurns(YunoRuntime rt, GObj tcp) {
        Turns t = new Turns();
        rt.run(() -> ((Tcp) tcp.behavior()).channel().pipeline().addFirst("turns", t));
        return t;
    }

    @Test
    void shouldReadAnOutputsAcksWhileAProducerFloodsAnAcceptedConnection() throws Exception {
        int in = Ports.free();
        try (ServerSocket destination = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             YunoRuntime rt = Support.runtime(both(Support.serverConfig(in, 1, null),
                     Support.clientConfig(destination.getLocalPort(), null)))) {
            destination.setSoTimeout(10_000);
            rt.start();
            AtomicBoolean stop = new AtomicBoolean();
            try (Socket acks = destination.accept(); Socket producer = new Socket("127.0.0.1", in)) {
                GObj clisrv = rt.call(() -> rt.yuno().service("in").child("in-1").lastBottom());
                GObj output = rt.call(() -> rt.yuno().service("out").lastBottom());
                assertTrue(Poll.until(() -> rt.call(() -> ((Tcp) clisrv.behavior()).channel() != null), 10_000));
                assertEquals(4, maxReads(rt, clisrv), "an accepted connection reads its listener's rx_max_reads");
                assertEquals(16, maxReads(rt, output), "a client reads its own");
                Turns floodTurns = countTurns(rt, clisrv);
                Turns ackTurns = countTurns(rt, output);

                flood(producer, stop, "fairness-producer");
                flood(acks, stop, "fairness-destination");
                assertTrue(Poll.until(() -> rxBytes(rt, clisrv) > (8 << 20) && rxBytes(rt, output) > 0, 60_000),
                        "flood read " + rxBytes(rt, clisrv) + ", acks read " + rxBytes(rt, output));
                long acks0 = rxBytes(rt, output);
                long flood0 = rxBytes(rt, clisrv);
                // the window: 64 MiB more of the flood (or 256 MiB of acks)
                assertTrue(Poll.until(() -> rxBytes(rt, clisrv) - flood0 >= (64L << 20)
                        || rxBytes(rt, output) - acks0 >= (256L << 20), 90_000), "the flood goes on being read");
                long read = rxBytes(rt, output) - acks0;
                long flooded = rxBytes(rt, clisrv) - flood0;
                String seen = "acks: " + read + " bytes, at most " + ackTurns.most + " reads in one of "
                        + ackTurns.turns + " turns; flood: " + flooded + " bytes, at most " + floodTurns.most
                        + " reads in one of " + floodTurns.turns + " turns";
                assertTrue(floodTurns.most >= 1 && floodTurns.most <= 4, "the flood read 4 buffers a turn at most: " + seen);
                // on one read a turn (the allocator made by hand without rx_max_reads) this stays 1
                assertTrue(ackTurns.most >= 2 && ackTurns.most <= 16, "the output read more than one buffer a turn: " + seen);
                assertTrue(read >= (8L << 20), "the output's acks went on being read during the flood: " + seen);
            } finally {
                stop.set(true);
            }
        }
    }

    @Test
    void shouldSetRxMaxReadsOnTheSocketsItTakesOverInALiveUpgrade() throws Exception {
        int in = Ports.free();
        try (ServerSocket destination = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             YunoRuntime rt = Support.runtime(both(Support.serverConfig(in, 1, "\"rx_max_reads\":3"),
                     Support.clientConfig(destination.getLocalPort(), "\"rx_max_reads\":12")))) {
            destination.setSoTimeout(10_000);
            rt.start();
            try (Socket acks = destination.accept(); Socket producer = new Socket("127.0.0.1", in)) {
                GObj clisrv = rt.call(() -> rt.yuno().service("in").child("in-1").lastBottom());
                GObj output = rt.call(() -> rt.yuno().service("out").lastBottom());
                assertTrue(Poll.until(() -> rt.call(() -> ((Tcp) clisrv.behavior()).channel() != null), 10_000));
                // what a revision before rx_max_reads left on its sockets: one read a turn
                rt.run(() -> {
                    for (GObj g : new GObj[] {clisrv, output}) {
                        Channel c = ((Tcp) g.behavior()).channel();
                        ((MaxMessagesRecvByteBufAllocator) c.config().getRecvByteBufAllocator()).maxMessagesPerRead(1);
                    }
                });
                Support.upgradeLive(rt, 3);
                assertTrue(rt.call(() -> clisrv.gclass() != Tcp.SPEC), "running the new revision");
                assertEquals(3, maxReads(rt, clisrv), "the new revision reads as its listener says");
                assertEquals(12, maxReads(rt, output), "and the client as its own attribute says");
                producer.getOutputStream().write(CHUNK, 0, FRAME);
                acks.getOutputStream().write(CHUNK, 0, FRAME);
                assertTrue(Poll.until(() -> rxBytes(rt, clisrv) >= FRAME && rxBytes(rt, output) >= FRAME, 10_000),
                        "both still read");
            }
        }
    }

    @Test
    void shouldApplyAWrittenRxMaxReadsToTheConnectionsAlreadyOpen() throws Exception {
        int in = Ports.free();
        try (ServerSocket destination = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
             YunoRuntime rt = Support.runtime(both(Support.serverConfig(in, 1, "\"rx_max_reads\":2"),
                     Support.clientConfig(destination.getLocalPort(), "\"rx_max_reads\":8")))) {
            destination.setSoTimeout(10_000);
            rt.start();
            try (Socket acks = destination.accept(); Socket producer = new Socket("127.0.0.1", in)) {
                assertNotNull(acks);
                GObj listener = rt.call(() -> rt.yuno().service("in").child("listen"));
                GObj clisrv = rt.call(() -> rt.yuno().service("in").child("in-1").lastBottom());
                GObj output = rt.call(() -> rt.yuno().service("out").lastBottom());
                assertTrue(Poll.until(() -> rt.call(() -> ((Tcp) clisrv.behavior()).channel() != null), 10_000));
                assertEquals(2, maxReads(rt, clisrv), "the listener's kw");
                assertEquals(2L, rt.call(() -> clisrv.readLong(Tcp.RX_MAX_READS)), "written to the server side's C_TCP");
                assertEquals(8, maxReads(rt, output), "the client's kw");

                rt.run(() -> listener.writeAttr("rx_max_reads", LongNode.valueOf(6)));
                assertEquals(6, maxReads(rt, clisrv), "a write on the listener reaches the open connection");
                rt.run(() -> output.writeAttr("rx_max_reads", LongNode.valueOf(32)));
                assertEquals(32, maxReads(rt, output), "a write on a client reaches its socket");

                // out of range: taken as the nearest bound, the socket keeps reading
                rt.run(() -> output.writeAttr("rx_max_reads", LongNode.valueOf(0)));
                assertEquals(1, maxReads(rt, output), "0 reads a turn would never read: taken as 1");
                rt.run(() -> listener.writeAttr("rx_max_reads", LongNode.valueOf(1_000_000)));
                assertEquals((int) Tcp.MAX_RX_MAX_READS, maxReads(rt, clisrv), "capped");
                producer.getOutputStream().write(CHUNK, 0, FRAME);
                assertTrue(Poll.until(() -> rxBytes(rt, clisrv) >= FRAME, 10_000), "still reading");
            }
        }
    }
}
