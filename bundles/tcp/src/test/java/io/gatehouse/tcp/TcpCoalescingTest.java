// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LeakWatch;
import io.gatehouse.testkit.Poll;
import io.gatehouse.testkit.Recorder;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tx buffer copies the small messages of one flush into a batch: the peer must still read every byte, in order,
 * whatever the mix of sizes around the coalescing limit and the batch's end, and the counters stay per message.
 */
@Timeout(60)
class TcpCoalescingTest {
    private static final int MESSAGES = 3000;
    private static LeakWatch leaks;

    @BeforeAll
    static void watchLeaks() {
        leaks = new LeakWatch();
    }

    /** A copied batch, a message handed over as is, a dropped pending buffer: each is released once. */
    @AfterAll
    static void noBufferLeaked() throws Exception {
        assertEquals("", leaks.stop(), "Netty's leak detector reported a leak");
    }

    /** Sizes that hit the limits: 1 B, just under, at and over COALESCE_MAX, a batch's end, a large one now and then. */
    private static int sizeOf(int i) {
        int[] edges = {1, TxBuffer.COALESCE_MAX - 1, TxBuffer.COALESCE_MAX, TxBuffer.COALESCE_MAX + 1,
            TxBuffer.BATCH_MAX - 3, 9_000, 128, 128, 128, 37};
        return i % 13 == 0 ? edges[(i / 13) % edges.length] : 16 + (i * 31) % 700;
    }

    private static byte[] content(int i) {
        byte[] b = new byte[sizeOf(i)];
        for (int j = 0; j < b.length; j++) b[j] = (byte) (i * 7 + j * 13 + (j >>> 8));
        return b;
    }

    /**
     * Messages {@code from..to} sent in one core-loop task, so that they share flushes. Every third one is a slice of
     * a larger buffer whose other bytes must not be sent, and whose owner keeps its indexes.
     */
    private static void sendRun(YunoRuntime rt, int from, int to) {
        rt.run(() -> {
            GObj cli = rt.yuno().service("cli");
            for (int i = from; i < to; i++) {
                byte[] c = content(i);
                ByteBuf buf;
                if (i % 3 == 0) {
                    ByteBuf whole = Unpooled.buffer(c.length + 8).writeLong(-1L).writeBytes(c);
                    buf = whole.retainedSlice(8, c.length);
                    whole.release();
                } else {
                    buf = Unpooled.wrappedBuffer(c);
                }
                cli.send(Ev.EV_TX_DATA, Kw.withGbuffer(buf), null);
            }
        });
    }

    private static byte[] expected(int from, int to) {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        for (int i = from; i < to; i++) all.writeBytes(content(i));
        return all.toByteArray();
    }

    @ParameterizedTest(name = "io_threads {0}, output_threshold_msgs {1}")
    @CsvSource({"0, 0", "2, 0", "0, 7", "2, 5"})
    void shouldDeliverEveryByteInOrderWhateverTheMixOfSizes(int io, int thresholdMsgs) throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            ss.setSoTimeout(10_000);
            String kw = thresholdMsgs > 0 ? "\"output_threshold_msgs\":" + thresholdMsgs : null;
            try (YunoRuntime rt = Support.runtime(Support.tcpConfig(ss.getLocalPort(), kw), io)) {
                Recorder rec = Support.startClient(rt);
                try (Socket peer = ss.accept()) {
                    peer.setSoTimeout(10_000);
                    assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                    int half = MESSAGES / 2;
                    sendRun(rt, 0, half);
                    for (int i = half; i < half + 30; i++) sendRun(rt, i, i + 1);   // alone in their flush: no copy
                    sendRun(rt, half + 30, MESSAGES);

                    byte[] want = expected(0, MESSAGES);
                    byte[] got = new byte[want.length];
                    new DataInputStream(peer.getInputStream()).readFully(got);
                    assertTrue(Arrays.equals(want, got), "the peer read every message whole and in order");

                    GObj cli = rt.call(() -> rt.yuno().service("cli"));
                    assertEquals(MESSAGES, rt.call(() -> cli.readAttr("txMsgs").asLong()), "counted per message");
                    assertEquals(want.length, rt.call(() -> cli.readAttr("txBytes").asLong()));
                }
            }
        }
    }

    /** A socket that goes before the flush: what was staged is released, and the next connection starts clean. */
    @Test
    void shouldReleaseWhatWasStagedWhenThePeerVanishesAndSendAfreshOnTheNextConnection() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            ss.setSoTimeout(10_000);
            String cfg = Support.tcpConfig(ss.getLocalPort(), "\"timeout_between_connections\":100");
            try (YunoRuntime rt = Support.runtime(cfg, 0)) {
                Recorder rec = Support.startClient(rt);
                try (Socket first = ss.accept()) {
                    assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                    rt.run(() -> {
                        GObj cli = rt.yuno().service("cli");
                        for (int i = 0; i < 50; i++) cli.send(Ev.EV_TX_DATA, Kw.withGbuffer(Unpooled.wrappedBuffer(content(i))), null);
                        cli.send(Ev.EV_DROP, null, null);   // before the flush task runs
                    });
                    assertNotNull(rec.await(Ev.EV_DISCONNECTED, 5000));
                }
                try (Socket second = ss.accept()) {
                    second.setSoTimeout(10_000);
                    assertTrue(Poll.until(() -> rec.count(Ev.EV_CONNECTED) == 2, 5000));
                    sendRun(rt, 100, 400);
                    byte[] want = expected(100, 400);
                    byte[] got = new byte[want.length];
                    new DataInputStream(second.getInputStream()).readFully(got);
                    assertArrayEquals(want, got);
                }
            }
        }
    }
}
