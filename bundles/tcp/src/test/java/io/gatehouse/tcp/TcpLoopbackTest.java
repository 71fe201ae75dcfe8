// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.support.Streak;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Poll;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Tcp4hFrames;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Loopback tests of C_TCP and C_TCP_S running in a real yuno (127.0.0.1, free ports), under the test framer. Timers
 * (the reconnect wait and its backoff, timeout_inactivity, the end of a refusal flood) run on a {@link ManualClock}:
 * only socket I/O is waited for, with bounded polling. The tests taking {@code io} run with the sockets on the core
 * loop (0) and on two worker loops (io_threads 2).
 */
@Timeout(60)
class TcpLoopbackTest {

    private static ObjectNode msg(String s) {
        return Kw.withGbuffer(Unpooled.copiedBuffer(s, StandardCharsets.UTF_8));
    }

    /** How long until the next timer of the yuno falls due; the core loop's current task is let finish first. */
    static long dueIn(YunoRuntime rt, ManualClock clock) {
        rt.run(() -> { });
        return clock.nextDue() < 0 ? -1 : clock.nextDue() - clock.monotonicMillis();
    }

    private static ServerSocket listen(int port) throws Exception {
        ServerSocket ss = new ServerSocket(port, 50, InetAddress.getLoopbackAddress());
        ss.setSoTimeout(10_000);
        return ss;
    }

    private static Recorder record(YunoRuntime rt, String service) {
        Recorder rec = Recorder.create(rt, "rec");
        rt.run(() -> rt.yuno().service(service).subscribe(null, rec.gobj()));
        return rec;
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldRoundTripThroughBothStacksAndCountBytes(int io) throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 2, null), io);
             YunoRuntime cli = Support.runtime(Support.clientConfig(port, null), io, clock)) {
            Recorder srec = record(srv, "in");
            srv.start();
            Recorder crec = record(cli, "out");
            cli.start();

            assertNotNull(crec.await(Ev.EV_ON_OPEN, 5000));
            Recorder.Event open = srec.await(Ev.EV_ON_OPEN, 5000);
            assertNotNull(open);
            assertEquals("", open.kw.path("url").asText());
            assertTrue(open.kw.path("peername").asText().startsWith("127.0.0.1:"));
            assertEquals("127.0.0.1:" + port, open.kw.path("sockname").asText());
            assertEquals("in-1", open.kw.path("__temp__").path("channel").asText());

            cli.run(() -> cli.yuno().service("out").send(Ev.EV_SEND_MESSAGE, msg("hello"), null));
            Recorder.Event m = srec.await(Ev.EV_ON_MESSAGE, 5000);
            assertEquals("hello", new String(m.payload, StandardCharsets.UTF_8));

            ObjectNode reply = msg("world");
            reply.putObject("__temp__").put("channel", "in-1");
            srv.run(() -> srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, reply, null));
            Recorder.Event r = crec.await(Ev.EV_ON_MESSAGE, 5000);
            assertEquals("world", new String(r.payload, StandardCharsets.UTF_8));

            GObj tcp = cli.call(() -> cli.yuno().service("out").lastBottom());
            assertEquals(9L, cli.call(() -> tcp.readAttr("txBytes").asLong()));
            assertEquals(9L, cli.call(() -> tcp.readAttr("rxBytes").asLong()));
            assertEquals(1L, cli.call(() -> tcp.readAttr("txMsgs").asLong()));
            ObjectNode stats = cli.call(() -> cli.yuno().service("out").children().get(0).stats("", null, null));
            assertEquals(9, stats.path("data").path("txBytes").asInt(), stats.toString());

            // Drop from the client side: both sides see the close; the server side's counters go back to 0.
            GObj clisrv = srv.call(() -> srv.yuno().service("in").child("in-1").lastBottom());
            assertEquals(9L, srv.call(() -> clisrv.readAttr("rxBytes").asLong()));
            cli.run(() -> cli.yuno().service("out").send(Ev.EV_DROP, null, null));
            assertNotNull(crec.await(Ev.EV_ON_CLOSE, 5000));
            assertNotNull(srec.await(Ev.EV_ON_CLOSE, 5000));
            assertEquals(0L, srv.call(() -> clisrv.readAttr("rxBytes").asLong()));
            // A dropped client that still runs connects again after timeout_between_connections (2 s by default).
            assertEquals(2000, dueIn(cli, clock));
            clock.advance(2000);
            assertNotNull(crec.await(Ev.EV_ON_OPEN, 5000));
        }
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldWaitLongerAfterEachFailedAttemptAndStartAgainAtTheBaseAfterAConnection(int io) throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        String cfg = Support.tcpConfig(port, "\"timeout_between_connections\":100,\"timeout_between_connections_max\":800");
        try (LogCapture logs = new LogCapture(); YunoRuntime rt = Support.runtime(cfg, io, clock)) {
            Recorder rec = Support.startClient(rt);
            long[] want = {100, 200, 400, 800, 800};
            for (int i = 0; i < want.length; i++) {
                assertTrue(logs.await("Connection failed", i + 1, 5000), logs.all().toString());
                assertEquals(want[i], dueIn(rt, clock), "the wait after failure " + (i + 1));
                if (i < want.length - 1) clock.advance(want[i]);
            }
            try (ServerSocket ss = listen(port)) {
                clock.advance(800);
                try (Socket peer = ss.accept()) {
                    assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                }
                assertNotNull(rec.await(Ev.EV_DISCONNECTED, 5000));
                assertEquals(100, dueIn(rt, clock), "after a connection the wait is the base again");
            }
        }
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldCloseAnIdleConnectionAfterTimeoutInactivityAndConnectAgainOnlyToSend(int io) throws Exception {
        ManualClock clock = new ManualClock();
        try (ServerSocket ss = listen(0)) {
            String cfg = Support.tcpConfig(ss.getLocalPort(), "\"timeout_inactivity\":300,\"timeout_between_connections\":100");
            try (YunoRuntime rt = Support.runtime(cfg, io, clock)) {
                Recorder rec = Support.startClient(rt);
                try (Socket p1 = ss.accept()) {
                    p1.setSoTimeout(5000);
                    assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                    assertEquals(300, dueIn(rt, clock));
                    clock.advance(200);
                    rt.run(() -> rt.yuno().service("cli").send(Ev.EV_TX_DATA, msg("a"), null));
                    clock.advance(100);   // traffic 100 ms ago: the timer waits the rest
                    assertEquals(St.ST_CONNECTED, rt.call(() -> rt.yuno().service("cli").state()));
                    assertEquals(200, dueIn(rt, clock));
                    clock.advance(200);
                    assertEquals('a', p1.getInputStream().read());
                    assertEquals(-1, p1.getInputStream().read(), "closed after 300 ms without traffic");
                    assertNotNull(rec.await(Ev.EV_DISCONNECTED, 5000));
                }
                assertEquals(-1, dueIn(rt, clock), "no reconnect wait in the inactivity model");
                clock.advance(10_000);
                assertEquals(1, rec.count(Ev.EV_CONNECTED));
                rt.run(() -> rt.yuno().service("cli").send(Ev.EV_TX_DATA, msg("x"), null));
                try (Socket p2 = ss.accept()) {
                    p2.setSoTimeout(5000);
                    assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                    assertEquals('x', p2.getInputStream().read());
                }
            }
        }
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldKeepDataQueuedWhileAnOnDemandReconnectFailsAndSendItOnce(int io) throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        String cfg = Support.tcpConfig(port, "\"timeout_inactivity\":5000,\"timeout_between_connections\":100");
        try (LogCapture logs = new LogCapture(); YunoRuntime rt = Support.runtime(cfg, io, clock)) {
            Recorder rec = Support.startClient(rt);
            assertTrue(logs.await("Connection failed", 1, 5000));
            rt.run(() -> rt.yuno().service("cli").send(Ev.EV_TX_DATA, msg("q"), null));
            assertTrue(logs.await("Connection failed", 2, 5000), "the data asked for a connection at once");
            assertEquals(100, dueIn(rt, clock));
            clock.advance(100);
            assertTrue(logs.await("Connection failed", 3, 5000), "and attempts go on while it waits");
            assertEquals(1L, rt.call(() -> rt.yuno().service("cli").readAttr("cur_tx_queue").asLong()));
            try (ServerSocket ss = listen(port)) {
                assertEquals(100, dueIn(rt, clock));
                clock.advance(100);
                try (Socket p = ss.accept()) {
                    assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                    p.setSoTimeout(500);
                    assertEquals('q', p.getInputStream().read());
                    assertTrue(nothingMore(p), "delivered exactly once");
                }
            }
        }
    }

    private static boolean nothingMore(Socket p) throws Exception {
        try {
            return p.getInputStream().read() == -1;
        } catch (SocketTimeoutException e) {
            return true;
        }
    }

    @Test
    void shouldDropTxWhileDisconnectedSayingItOnceAndTheCountOnceConnected() throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        try (LogCapture logs = new LogCapture();
             YunoRuntime rt = Support.runtime(Support.tcpConfig(port, "\"timeout_between_connections\":100"), 0, clock)) {
            Recorder rec = Support.startClient(rt);
            assertTrue(logs.await("Connection failed", 1, 5000));
            for (int i = 0; i < 100; i++) {
                assertEquals(0, (int) rt.call(() -> rt.yuno().service("cli").send(Ev.EV_TX_DATA, msg("lost"), null)));
            }
            List<LogCapture.Rec> said = logs.with("tcp tx data while disconnected, dropped");
            assertEquals(1, said.size(), "said when it starts, not per message");
            assertEquals(1L, ((Number) said.get(0).fields.get("dropped")).longValue());
            assertEquals(St.ST_DISCONNECTED, rt.call(() -> rt.yuno().service("cli").state()));
            assertEquals(0, logs.count("tcp tx data dropped while not connected"));
            try (ServerSocket ss = listen(port); Socket peer = acceptAfter(ss, clock, dueIn(rt, clock))) {
                assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                List<LogCapture.Rec> end = logs.with("tcp tx data dropped while not connected");
                assertEquals(1, end.size(), "and once when it ends, with the count");
                assertEquals(100L, ((Number) end.get(0).fields.get("dropped")).longValue());
            }
        }
    }

    @Test
    void shouldRemindOfDroppedTxOncePerMinuteWhileItLasts() throws Exception {
        ManualClock clock = new ManualClock();
        String cfg = Support.tcpConfig(Ports.free(), "\"timeout_between_connections\":3600000");
        try (LogCapture logs = new LogCapture(); YunoRuntime rt = Support.runtime(cfg, 0, clock)) {
            Support.startClient(rt);
            assertTrue(logs.await("Connection failed", 1, 5000));
            for (int i = 0; i < 10; i++) rt.run(() -> rt.yuno().service("cli").send(Ev.EV_TX_DATA, msg("lost"), null));
            clock.advance(Streak.REMIND_MS - 1);
            rt.run(() -> rt.yuno().service("cli").send(Ev.EV_TX_DATA, msg("lost"), null));
            assertEquals(1, logs.count("tcp tx data while disconnected, dropped"));
            clock.advance(1);
            rt.run(() -> rt.yuno().service("cli").send(Ev.EV_TX_DATA, msg("lost"), null));
            List<LogCapture.Rec> said = logs.with("tcp tx data while disconnected, dropped");
            assertEquals(2, said.size(), "a minute later it is said again");
            assertEquals(12L, ((Number) said.get(1).fields.get("dropped")).longValue(), "with the count so far");
        }
    }

    /** Lets the reconnect wait of {@code waitMs} pass and accepts the connection it makes. */
    private static Socket acceptAfter(ServerSocket ss, ManualClock clock, long waitMs) throws Exception {
        clock.advance(waitMs);
        return ss.accept();
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldBindOneConnectionPerChannelAndServeTheNextWhenOneFrees(int io) throws Exception {
        int port = Ports.free();
        try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 2, null), io)) {
            Recorder rec = record(srv, "in");
            srv.start();
            GObj listener = srv.call(() -> srv.yuno().service("in").child("listen"));
            try (Socket a = new Socket("127.0.0.1", port); Socket b = new Socket("127.0.0.1", port)) {
                assertTrue(rec.awaitCount(Ev.EV_ON_OPEN, 2, 5000));
                try (Socket c = new Socket("127.0.0.1", port)) {
                    c.getOutputStream().write(Tcp4hFrames.of("from-c"));
                    assertTrue(Poll.until(() -> srv.call(() -> listener.readAttr("connxs").asLong()) == 3, 5000),
                            "the listener took the third connection");
                    assertEquals(2, rec.count(Ev.EV_ON_OPEN), "the third waits: connections = channels");
                    assertEquals(0, rec.count(Ev.EV_ON_MESSAGE), "unread");
                    a.close();
                    Recorder.Event closed = rec.await(Ev.EV_ON_CLOSE, 5000);
                    assertNotNull(closed);
                    String freed = closed.kw.path("__temp__").path("channel").asText();
                    // On the core loop sockets bind in accept order; from two worker loops their hand-overs may cross.
                    if (io == 0) assertEquals("in-1", freed);
                    assertTrue(rec.awaitCount(Ev.EV_ON_OPEN, 3, 5000), "the waiting client gets the freed channel");
                    Recorder.Event m = rec.await(Ev.EV_ON_MESSAGE, 5000);
                    assertEquals("from-c", m.payloadText());
                    assertEquals(freed, m.kw.path("__temp__").path("channel").asText());
                }
            }
        }
    }

    @Test
    void shouldCloseConnectionsBeyondTheChannelsInLegacyModeSayingItOncePerFlood() throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        String refusedMsg = "TCP_S: Connection not accepted: no free child tree found";
        try (LogCapture logs = new LogCapture();
             YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1,
                     "\"child_tree_filter\":{\"kw\":{\"__gclass_name__\":\"C_CHANNEL\"}}"), 0, clock)) {
            Recorder rec = record(srv, "in");
            srv.start();
            try (Socket a = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                for (int i = 0; i < 5; i++) {
                    try (Socket b = new Socket("127.0.0.1", port)) {
                        b.setSoTimeout(5000);
                        assertEquals(-1, b.getInputStream().read());
                    }
                }
                assertEquals(1, rec.count(Ev.EV_ON_OPEN));
                assertEquals(1, logs.count(refusedMsg), "said when the flood starts: " + logs.with(refusedMsg));
                assertEquals(1L, ((Number) logs.with(refusedMsg).get(0).fields.get("refused")).longValue());
                clock.advance(TcpS.REFUSALS_QUIET_MS - 1);
                assertEquals(0, logs.count("TCP_S: Connection refusals ended"));
                clock.advance(1);
                List<LogCapture.Rec> end = logs.with("TCP_S: Connection refusals ended");
                assertEquals(1, end.size(), "and when none came for a while, with the count");
                assertEquals(5L, ((Number) end.get(0).fields.get("refused")).longValue());
            }
        }
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldCreateAndDestroyChannelsInDynamicModeUpToTheLimitWithManyClients(int io) throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        String tmpl = "\"channel_template\":{\"gclass\":\"C_CHANNEL\",\"children\":[{\"gclass\":\"C_TEST_FRAMER\"}]},"
                + "\"max_connections\":40";
        String cfg = "{\"services\":[{\"name\":\"in\",\"gclass\":\"C_TEST_GATE\",\"autostart\":true,\"children\":["
                + "{\"name\":\"listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port + "\"," + tmpl + "}}]}]}";
        String refusedMsg = "TCP_S: Connection not accepted: max_connections reached";
        try (LogCapture logs = new LogCapture(); YunoRuntime srv = Support.runtime(cfg, io, clock)) {
            Recorder rec = record(srv, "in");
            srv.start();
            List<Socket> socks = new ArrayList<>();
            try {
                for (int i = 0; i < 40; i++) {
                    Socket s = new Socket("127.0.0.1", port);
                    s.getOutputStream().write(Tcp4hFrames.of("m" + i));
                    socks.add(s);
                }
                assertTrue(rec.awaitCount(Ev.EV_ON_MESSAGE, 40, 10000));
                assertEquals(41, srv.call(() -> srv.yuno().service("in").children().size()));
                for (int i = 0; i < 3; i++) {
                    try (Socket over = new Socket("127.0.0.1", port)) {
                        over.setSoTimeout(5000);
                        assertEquals(-1, over.getInputStream().read());
                    }
                }
                assertTrue(logs.await(refusedMsg, 1, 5000));
                clock.advance(TcpS.REFUSALS_QUIET_MS);
                assertEquals(1, logs.count(refusedMsg), "three refused, said once");
                assertEquals(3L, ((Number) logs.with("TCP_S: Connection refusals ended").get(0).fields.get("refused")).longValue());
            } finally {
                for (Socket s : socks) s.close();
            }
            assertTrue(rec.awaitCount(Ev.EV_ON_CLOSE, 40, 10000));
            assertTrue(Poll.until(() -> srv.call(() -> srv.yuno().service("in").children().size()) == 1, 5000),
                    "channels destroyed");
            assertEquals(0, logs.count("Event NOT DEFINED in state"), logs.all().toString());
        }
    }

    @Test
    void shouldRefuseToStartWhenItCannotListen() throws Exception {
        try (ServerSocket busy = listen(0); LogCapture logs = new LogCapture()) {
            int port = busy.getLocalPort();
            try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1, null))) {
                srv.start();
                assertFalse(srv.call(() -> srv.yuno().service("in").child("listen").isRunning()));
                assertEquals(1, logs.count("Cannot Listen"), logs.all().toString());
            }
            try (YunoRuntime srv = Support.runtime(Support.serverConfig(0, 1, null))) {
                srv.start();
                assertFalse(srv.call(() -> srv.yuno().service("in").child("listen").isRunning()));
                assertEquals(1, logs.count("Cannot Listen on port 0"));
            }
        }
    }

    /**
     * A config change that rebuilds the listener's service on the same port (here: a channel more) listens again at
     * once: the old listening socket is closed by the selector only at its next select, so the new one must not bind
     * in the task that closed it.
     */
    @Test
    void shouldListenAgainOnTheSamePortWhenItsServiceIsRebuilt() throws Exception {
        int port = Ports.free();
        try (LogCapture logs = new LogCapture(); YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1, null))) {
            srv.start();
            try (Socket before = new Socket("127.0.0.1", port)) {
                assertTrue(before.isConnected());
            }
            java.util.Map<String, String> outcome =
                    srv.reconfigure((ObjectNode) Kw.MAPPER.readTree(Support.serverConfig(port, 2, null)));
            assertEquals("rebuilt", outcome.get("in"), outcome.toString());
            assertTrue(srv.call(() -> srv.yuno().service("in").child("listen").isRunning()), logs.all().toString());
            assertEquals(0, logs.count("Cannot Listen"), logs.all().toString());
            try (Socket after = new Socket("127.0.0.1", port)) {
                assertTrue(after.isConnected());
            }
        }
    }

    @Test
    void shouldParseUrls() {
        Url u = Url.parse("tcp4hs://[::1]:7778/path?x=1");
        assertEquals("::1", u.host);
        assertEquals(7778, u.port);
        assertTrue(u.secure);
        assertEquals(443, Url.parse("https://example.com").port);
        assertFalse(Url.parse("tcp://127.0.0.1:1").secure);
        assertNull(catchMsg(() -> Url.parse("tcp://h:1")));
        assertEquals("parse_url() FAILED, no schema", catchMsg(() -> Url.parse("127.0.0.1:80")));
    }

    private static String catchMsg(Runnable r) {
        try {
            r.run();
            return null;
        } catch (IllegalArgumentException e) {
            return e.getMessage();
        }
    }

    @Test
    void shouldListenAndConnectOverIpv6WhenAvailable() throws Exception {
        try (ServerSocket probe = new ServerSocket()) {
            probe.bind(new java.net.InetSocketAddress("::1", 0));
        } catch (Exception e) {
            return;   // no IPv6 loopback here
        }
        int port = Ports.free();
        String srvCfg = Support.serverConfig(port, 1, null).replace("tcp://127.0.0.1:", "tcp://[::1]:");
        try (YunoRuntime srv = Support.runtime(srvCfg);
             YunoRuntime cli = Support.runtime(Support.clientConfig(port, null).replace("tcp://127.0.0.1:", "tcp://[::1]:"))) {
            Recorder rec = record(srv, "in");
            srv.start();
            cli.start();
            Recorder.Event open = rec.await(Ev.EV_ON_OPEN, 5000);
            assertNotNull(open);
            assertTrue(open.kw.path("peername").asText().startsWith("[0:0:0:0:0:0:0:1]:"), open.kw.toString());
        }
    }

    @Test
    void shouldReadTheFramesARawPeerWritesInAnySplit() throws Exception {
        int port = Ports.free();
        try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1, null))) {
            Recorder rec = record(srv, "in");
            srv.start();
            GObj clisrv = srv.call(() -> srv.yuno().service("in").child("in-1").lastBottom());
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.setTcpNoDelay(true);
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                // one byte per read: each byte is waited for on the server side before the next is written
                byte[] f = Tcp4hFrames.of("split");
                for (int i = 0; i < f.length; i++) {
                    s.getOutputStream().write(f[i]);
                    long got = i + 1;
                    assertTrue(Poll.until(() -> srv.call(() -> clisrv.readAttr("rxBytes").asLong()) == got, 5000));
                }
                assertEquals("split", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                assertEquals((long) f.length, srv.call(() -> clisrv.readAttr("rxMsgs").asLong()), "one EV_RX_DATA per read");
                ObjectNode back = msg("back");
                srv.run(() -> srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, back, null));
                InputStream in = s.getInputStream();
                s.setSoTimeout(5000);
                assertEquals("back", Tcp4hFrames.read(in));
            }
        }
    }
}
