// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GClock;
import io.gatehouse.api.GObj;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.tcp.Tcp;
import io.gatehouse.tcp.TcpS;
import io.gatehouse.testkit.LeakWatch;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Poll;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Revision;
import io.gatehouse.testkit.StubChannel;
import io.gatehouse.testkit.Tcp4hFrames;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A live upgrade of C_PROT_TCP4H (and of the tcp bundle under it) over real sockets on 127.0.0.1: a frame split
 * across the upgrade arrives whole and once, a stream cut anywhere loses and doubles nothing, the payload and header
 * timers keep their deadlines (and do not count the time a {@code Bundle.update()} kept the gobj suspended, when its
 * peer was not read), and a state the new revision refuses is a rebuild that leaks nothing.
 */
@Timeout(120)
class ProtTcp4hUpgradeTest {
    private static LeakWatch leaks;

    @BeforeAll
    static void watchLeaks() {
        leaks = new LeakWatch();
    }

    /** A gathered payload and held reads change hands here: none may be dropped on the way. */
    @AfterAll
    static void noBufferLeaked() throws Exception {
        assertEquals("", leaks.stop(), "Netty's leak detector reported a leak");
    }

    // --- Helpers ---

    /** The next revision of tcp4h, checked to be live: {@code gobjs} handed over, nothing rebuilt. */
    private static void upgradeTcp4h(YunoRuntime rt, int gobjs) {
        Revision.handOver(rt, Revision.next(ProtTcp4h.SPEC), gobjs);
    }

    /** The next revision of the tcp bundle under it (both its gclasses at once). */
    private static void upgradeTcp(YunoRuntime rt, int gobjs) {
        ObjectNode report = rt.gclassesArrived(List.of(Revision.next(Tcp.SPEC), Revision.next(TcpS.SPEC)));
        assertEquals(gobjs, report.path("gobjs_migrated").asInt(), report.toString());
        assertEquals(0, report.path("rebuilt").size(), report.toString());
    }

    private static String state(YunoRuntime rt, GObj g) {
        return rt.call(g::state);
    }

    private static byte[] payload(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) b[i] = (byte) ('a' + i % 26);
        return b;
    }

    // --- A frame split across the upgrade ---

    @ParameterizedTest(name = "split after {0} bytes")
    @ValueSource(ints = {2, 4, 504})
    void shouldDeliverAFrameSplitAcrossTheUpgradeWholeAndOnce(int split) throws Exception {
        int port = Ports.free();
        try (YunoRuntime srv = Loopback.server(Loopback.serverConfig(port, 1, null), 0, GClock.SYSTEM)) {
            Recorder rec = Loopback.recorder(srv, "in");
            GObj tcp = Loopback.socketOf(srv, "in-1");
            GObj prot = Loopback.protocolOf(srv, "in-1");
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.setTcpNoDelay(true);
                OutputStream out = s.getOutputStream();
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                byte[] frame = Tcp4hFrames.of(payload(1000));
                out.write(frame, 0, split);
                assertTrue(Poll.until(() -> Loopback.rxBytes(srv, tcp) == split, 5000), "the first part was read");
                assertEquals(split >= 4 ? ProtTcp4h.ST_WAIT_PAYLOAD : ProtTcp4h.ST_WAIT_FRAME_HEADER, state(srv, prot));

                upgradeTcp4h(srv, 1);
                upgradeTcp(srv, 2);

                out.write(frame, split, frame.length - split);
                out.write(Tcp4hFrames.of("next"));
                Recorder.Event m = rec.await(Ev.EV_ON_MESSAGE, 5000);
                assertNotNull(m);
                assertTrue(Arrays.equals(payload(1000), m.payload), "whole");
                assertEquals("next", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                assertTrue(Poll.until(() -> Loopback.rxBytes(srv, tcp) == frame.length + 8, 5000));
                assertEquals(2, rec.count(Ev.EV_ON_MESSAGE), "once");
                assertEquals(0, rec.count(Ev.EV_ON_CLOSE));
            }
        }
    }

    @Test
    void shouldLoseNothingOfAStreamCutAnywhereThroughUpgradesOfBothBundles() throws Exception {
        int port = Ports.free();
        int n = 3000;
        try (YunoRuntime srv = Loopback.server(Loopback.serverConfig(port, 1, null), 0, GClock.SYSTEM)) {
            Recorder rec = Loopback.recorder(srv, "in");
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                ByteArrayOutputStream all = new ByteArrayOutputStream();
                for (int i = 0; i < n; i++) all.write(Tcp4hFrames.of("m" + i + "-" + "x".repeat(i % 300)));
                byte[] stream = all.toByteArray();
                AtomicReference<Throwable> failure = new AtomicReference<>();
                Thread writer = new Thread(() -> {
                    try {
                        OutputStream out = s.getOutputStream();
                        // 997-byte writes: frames are cut at every place, headers included.
                        for (int at = 0; at < stream.length; at += 997) {
                            out.write(stream, at, Math.min(997, stream.length - at));
                            if ((at / 997) % 5 == 0) Thread.sleep(1);
                        }
                    } catch (Exception e) {
                        failure.set(e);
                    }
                }, "tcp4h-upgrade-writer");
                writer.start();
                int upgrades = 0;
                while (writer.isAlive() || upgrades < 6) {
                    if (upgrades % 2 == 0) upgradeTcp4h(srv, 1);
                    else upgradeTcp(srv, 2);
                    upgrades++;
                    Thread.sleep(2);
                }
                writer.join(30_000);
                assertNull(failure.get(), String.valueOf(failure.get()));
                assertTrue(Poll.until(() -> rec.count(Ev.EV_ON_MESSAGE) >= n, 30_000), "got " + rec.count(Ev.EV_ON_MESSAGE));
                List<Recorder.Event> got = rec.events(Ev.EV_ON_MESSAGE);
                assertEquals(n, got.size(), "each frame once");
                for (int i = 0; i < n; i++) {
                    assertEquals("m" + i + "-" + "x".repeat(i % 300), got.get(i).payloadText(), "frame " + i);
                }
                assertEquals(1, rec.count(Ev.EV_ON_OPEN));
                assertEquals(0, rec.count(Ev.EV_ON_CLOSE), "the connection never closed");
            }
        }
    }

    @Test
    void shouldDeliverTheFramesItHeldForTheThresholdOnceCreditedAfterTheUpgrade() throws Exception {
        int port = Ports.free();
        try (YunoRuntime srv = Loopback.server(Loopback.serverConfig(port, 1, "\"input_threshold_msgs\":5"), 0,
                GClock.SYSTEM)) {
            Recorder rec = Loopback.recorder(srv, "in");
            GObj prot = Loopback.protocolOf(srv, "in-1");
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                ByteArrayOutputStream burst = new ByteArrayOutputStream();
                for (int i = 0; i < 50; i++) burst.write(Tcp4hFrames.of("h" + i));
                s.getOutputStream().write(burst.toByteArray());
                assertTrue(rec.awaitCount(Ev.EV_ON_MESSAGE, 5, 5000));
                assertTrue(Poll.until(() -> srv.call(() -> prot.readAttr("input_blocked").asBoolean()), 5000));
                Thread.sleep(100);
                assertEquals(5, rec.count(Ev.EV_ON_MESSAGE), "the rest is held until credited");

                upgradeTcp4h(srv, 1);
                upgradeTcp(srv, 2);

                for (int i = 0; i < 20 && rec.count(Ev.EV_ON_MESSAGE) < 50; i++) {
                    int before = rec.count(Ev.EV_ON_MESSAGE);
                    srv.run(() -> srv.service("in").child("in-1").send(Ev.EV_RESUME_INPUT, null, null));
                    Poll.until(() -> rec.count(Ev.EV_ON_MESSAGE) > before, 5000);
                }
                List<Recorder.Event> got = rec.events(Ev.EV_ON_MESSAGE);
                assertEquals(50, got.size());
                for (int i = 0; i < 50; i++) assertEquals("h" + i, got.get(i).payloadText());
                assertEquals(0, rec.count(Ev.EV_ON_CLOSE));
            }
        }
    }

    // --- Timers ---

    @Test
    void shouldTimeOutAHalfHeaderAtTheDeadlineTheOldRevisionHad() throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        try (LogCapture logs = new LogCapture();
             YunoRuntime srv = Loopback.server(Loopback.serverConfig(port, 1, "\"timeout_header\":1000"), 0, clock)) {
            Recorder rec = Loopback.recorder(srv, "in");
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                assertEquals(1000, Loopback.dueIn(srv, clock), "the guard runs from the open");
                clock.advance(600);
                upgradeTcp4h(srv, 1);
                assertEquals(400, Loopback.dueIn(srv, clock));
                clock.advance(399);
                assertEquals(0, logs.count("Timeout waiting frame header"));
                clock.advance(1);
                assertTrue(logs.await("Timeout waiting frame header", 1, 5000));
                assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
                s.setSoTimeout(5000);
                assertEquals(-1, s.getInputStream().read());
            }
        }
    }

    @Test
    void shouldNotCountTheSuspensionAgainstAPartialPayload() throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        try (LogCapture logs = new LogCapture();
             YunoRuntime srv = Loopback.server(Loopback.serverConfig(port, 1, "\"timeout_payload\":1000"), 0, clock)) {
            Recorder rec = Loopback.recorder(srv, "in");
            GObj tcp = Loopback.socketOf(srv, "in-1");
            try (Socket s = new Socket("127.0.0.1", port)) {
                OutputStream out = s.getOutputStream();
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                byte[] frame = Tcp4hFrames.of(payload(100));
                out.write(frame, 0, 50);
                assertTrue(Poll.until(() -> Loopback.rxBytes(srv, tcp) == 50, 5000));
                clock.advance(400);

                assertEquals(List.of("C_PROT_TCP4H"), srv.gclassesGone(List.of("C_PROT_TCP4H")));
                clock.advance(5000);   // a Bundle.update() that takes long: no timer runs meanwhile
                assertEquals(0, logs.count("Timeout waiting PAYLOAD data"));
                out.write(frame, 50, 20);   // not read: the transport was told to stop
                Thread.sleep(200);
                assertEquals(50L, Loopback.rxBytes(srv, tcp), "the transport stopped reading");

                ObjectNode report = srv.gclassArrived(Revision.next(ProtTcp4h.SPEC));
                assertEquals(1, report.path("gobjs_migrated").asInt(), report.toString());
                assertTrue(Poll.until(() -> Loopback.rxBytes(srv, tcp) == 70, 5000), "reading again");
                long due = Loopback.dueIn(srv, clock);
                assertTrue(due > 0 && due <= 600, "the rest of the old timeout, the suspension not counted: " + due);
                out.write(frame, 70, frame.length - 70);
                Recorder.Event m = rec.await(Ev.EV_ON_MESSAGE, 5000);
                assertNotNull(m);
                assertTrue(Arrays.equals(payload(100), m.payload));
                assertEquals(0, logs.count("Timeout waiting PAYLOAD data"));
                assertEquals(0, rec.count(Ev.EV_ON_CLOSE));
            }
        }
    }

    // --- Bundle.update(): suspended, then the new revision ---

    @Test
    void shouldDeliverWhatThePeerSentWhileSuspendedInOrder() throws Exception {
        int port = Ports.free();
        try (YunoRuntime srv = Loopback.server(Loopback.serverConfig(port, 1, null), 0, GClock.SYSTEM)) {
            Recorder rec = Loopback.recorder(srv, "in");
            try (Socket s = new Socket("127.0.0.1", port)) {
                OutputStream out = s.getOutputStream();
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                out.write(Tcp4hFrames.of("f0"));
                assertEquals("f0", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                srv.gclassesGone(List.of("C_PROT_TCP4H"));
                ByteArrayOutputStream burst = new ByteArrayOutputStream();
                for (int i = 1; i <= 500; i++) burst.write(Tcp4hFrames.of("f" + i));
                out.write(burst.toByteArray());
                Thread.sleep(300);
                assertEquals(1, rec.count(Ev.EV_ON_MESSAGE), "nothing delivered while suspended");
                srv.gclassArrived(Revision.next(ProtTcp4h.SPEC));
                assertTrue(Poll.until(() -> rec.count(Ev.EV_ON_MESSAGE) >= 501, 10_000), "got " + rec.count(Ev.EV_ON_MESSAGE));
                List<Recorder.Event> got = rec.events(Ev.EV_ON_MESSAGE);
                assertEquals(501, got.size());
                for (int i = 0; i <= 500; i++) assertEquals("f" + i, got.get(i).payloadText());
                assertEquals(0, rec.count(Ev.EV_ON_CLOSE));
            }
        }
    }

    // --- Fallback: a rebuild, nothing leaked ---

    @Test
    void shouldRebuildAClientWhoseStateTheNewRevisionRefusesReleasingItsPartialFrame() throws Exception {
        List<GClassSpec<?>> specs = List.of(Revision.of(ProtTcp4h.SPEC, 99, ProtTcp4h.SPEC.factory()), Tcp.SPEC,
                TcpS.SPEC, StubChannel.SPEC, Recorder.SPEC);
        try (LogCapture logs = new LogCapture();
             ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            ss.setSoTimeout(10_000);
            String cfg = "{\"services\":[{\"name\":\"cli\",\"gclass\":\"C_PROT_TCP4H\",\"kw\":{\"url\":\"tcp://127.0.0.1:"
                    + ss.getLocalPort() + "\"}}]}";
            try (YunoRuntime cli = YunoRuntime.builder().name("t").gclasses(specs).config(cfg).build().start()) {
                GObj prot = cli.call(() -> cli.yuno().service("cli"));
                try (Socket peer = ss.accept()) {
                    assertTrue(Poll.until(() -> state(cli, prot).equals(ProtTcp4h.ST_WAIT_FRAME_HEADER), 5000));
                    byte[] frame = Tcp4hFrames.of(payload(5000));
                    peer.getOutputStream().write(frame, 0, 1000);
                    assertTrue(Poll.until(() -> state(cli, prot).equals(ProtTcp4h.ST_WAIT_PAYLOAD), 5000));

                    ObjectNode report = cli.gclassArrived(ProtTcp4h.SPEC);
                    assertEquals(0, report.path("gobjs_migrated").asInt(), report.toString());
                    assertTrue(report.path("rebuilt").get(0).path("reason").asText().contains("state version 1, not 99"),
                            report.toString());
                    assertEquals(1, logs.count("Live upgrade not possible, service rebuilt from its config"));
                    peer.setSoTimeout(5000);
                    assertEquals(-1, peer.getInputStream().read(), "the old connection closed with the rebuild");
                }
                try (Socket again = ss.accept()) {
                    GObj rebuilt = cli.call(() -> cli.yuno().service("cli"));
                    assertTrue(Poll.until(() -> state(cli, rebuilt).equals(ProtTcp4h.ST_WAIT_FRAME_HEADER), 5000),
                            "connected again, from its config");
                }
            }
        }
    }
}
