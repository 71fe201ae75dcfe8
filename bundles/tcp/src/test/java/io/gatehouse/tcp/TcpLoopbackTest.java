// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Gbuffers;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.core.YunoRuntime;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Loopback tests of C_TCP, C_TCP_S and C_PROT_TCP4H running in a real yuno (127.0.0.1, free ports). The tests
 * taking {@code io} run with the sockets on the core loop (0) and on two worker loops (io_threads 2).
 */
@Timeout(30)
class TcpLoopbackTest {

    private static String clientConfig(int port, String tcpKw) {
        return Support.clientConfig(port, tcpKw);
    }

    private static ObjectNode msg(String s) {
        return Kw.withGbuffer(Unpooled.copiedBuffer(s, StandardCharsets.UTF_8));
    }

    private static GObj clientTcp(YunoRuntime rt) {
        return rt.call(() -> rt.yuno().service("out").children().get(0).bottom().bottom());
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldRoundTripThroughBothStacksAndCountBytes(int io) throws Exception {
        int port = Support.freePort();
        try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 2, null, null), io);
             YunoRuntime cli = Support.runtime(clientConfig(port, null), io)) {
            Recorder srec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, srec.gobj()));
            srv.start();
            Recorder crec = Recorder.create(cli, "rec");
            cli.run(() -> cli.yuno().service("out").subscribe(null, crec.gobj()));
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

            GObj tcp = clientTcp(cli);
            assertEquals(9L, cli.call(() -> tcp.readAttr("txBytes").asLong()));
            assertEquals(9L, cli.call(() -> tcp.readAttr("rxBytes").asLong()));
            assertEquals(1L, cli.call(() -> tcp.readAttr("txMsgs").asLong()));
            ObjectNode stats = cli.call(() -> cli.yuno().service("out").children().get(0).stats("", null, null));
            assertEquals(9, stats.path("data").path("txBytes").asInt(), stats.toString());

            // Drop from the client side: both sides see the close; the server clisrv counters go back to 0.
            GObj clisrv = srv.call(() -> srv.yuno().service("in").child("in-1").lastBottom());
            assertEquals(9L, srv.call(() -> clisrv.readAttr("rxBytes").asLong()));
            cli.run(() -> cli.yuno().service("out").send(Ev.EV_DROP, null, null));
            assertNotNull(crec.await(Ev.EV_ON_CLOSE, 5000));
            assertNotNull(srec.await(Ev.EV_ON_CLOSE, 5000));
            assertEquals(0L, srv.call(() -> clisrv.readAttr("rxBytes").asLong()));
            // B4: a dropped running client reconnects after timeout_between_connections (2 s default)
            assertNotNull(crec.await(Ev.EV_ON_OPEN, 5000));
        }
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldFollowTheWireFormatWithARawPeer(int io) throws Exception {
        int port = Support.freePort();
        try (Support.Logs logs = new Support.Logs();
             YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1, null, "\"max_pkt_size\":1024,\"timeout_payload\":300"), io)) {
            Recorder rec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, rec.gobj()));
            srv.start();
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.setTcpNoDelay(true);
                OutputStream out = s.getOutputStream();
                InputStream in = s.getInputStream();
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                // check 2: one frame
                out.write(new byte[] {0, 0, 0, 9, 'h', 'e', 'l', 'l', 'o'});
                assertEquals("hello", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                // check 3: two frames in one write
                byte[] two = new byte[] {0, 0, 0, 6, 'a', 'b', 0, 0, 0, 7, 'c', 'd', 'e'};
                out.write(two);
                assertEquals("ab", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                assertEquals("cde", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                // check 4: one byte per write
                for (byte b : Support.frame("split")) {
                    out.write(b);
                    out.flush();
                    Thread.sleep(5);
                }
                assertEquals("split", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                // check 7: exactly max_pkt_size is delivered
                byte[] big = new byte[1024];
                java.util.Arrays.fill(big, (byte) 'q');
                out.write(Support.frame(new String(big, StandardCharsets.US_ASCII)));
                assertEquals(1024, rec.await(Ev.EV_ON_MESSAGE, 5000).payload.length);
                // check 1 / 10: a gbuffer is framed as is; a kw without one as compact JSON
                ObjectNode hello = msg("hello");
                srv.run(() -> srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, hello, null));
                assertEquals("hello", Support.readFrame(in));
                ObjectNode json = Kw.create().put("a", 1);
                srv.run(() -> srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, json, null));
                assertEquals("{\"a\":1}", Support.readFrame(in));
                // header room: a payload with room in front is framed in place; a slice of a shared buffer is
                // copied and its neighbours are left as they were
                ByteBuf roomy = Gbuffers.allocate(5).writeBytes("roomy".getBytes(StandardCharsets.US_ASCII));
                srv.run(() -> srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(roomy), null));
                assertEquals("roomy", Support.readFrame(in));
                ByteBuf shared = Unpooled.copiedBuffer("0123456789", StandardCharsets.US_ASCII);
                ByteBuf tail = shared.retainedSlice(0, 10).readerIndex(6);
                srv.run(() -> srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(tail), null));
                assertEquals("6789", Support.readFrame(in));
                assertEquals("0123456789", shared.toString(StandardCharsets.US_ASCII));
                shared.release();
                // check 5: header 4 closes with an error
                out.write(new byte[] {0, 0, 0, 4});
                assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
                assertTrue(logs.await("frame_length cannot be 0", 1, 5000));
                assertEquals(-1, in.read());
            }
            // check 6: header < 4 is "too long"
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                s.getOutputStream().write(new byte[] {0, 0, 0, 2});
                assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
                assertTrue(logs.await("tcp4h head too long", 1, 5000));
                assertEquals(-1, s.getInputStream().read());
            }
            // check 7: one byte over max_pkt_size
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                s.getOutputStream().write(new byte[] {0, 0, 0x04, 0x05});
                assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
                assertTrue(logs.await("tcp4h head too long", 2, 5000));
            }
            // check 8: a payload that never completes is dropped after timeout_payload
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                s.getOutputStream().write(new byte[] {0, 0, 0, 0x0E, 1, 2, 3});
                assertTrue(logs.await("Timeout waiting PAYLOAD data", 1, 5000));
                assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
                assertEquals(-1, s.getInputStream().read());
            }
            // check 9: half a header and silence keep the connection open, no log
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                s.getOutputStream().write(new byte[] {0, 0});
                Thread.sleep(800);
                assertEquals(4, rec.count(Ev.EV_ON_CLOSE));
                assertEquals(1, logs.with("Timeout waiting PAYLOAD data").size());
            }
            assertEquals(0, logs.with("Event NOT DEFINED in state").size(), logs.all().toString());
        }
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldReconnectWithExponentialBackoffAndResetAfterAConnection(int io) throws Exception {
        int port = Support.freePort();
        String cfg = "{\"services\":[{\"name\":\"cli\",\"gclass\":\"C_TCP\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port
                + "\",\"timeout_between_connections\":100,\"timeout_between_connections_max\":800}}]}";
        try (Support.Logs logs = new Support.Logs(); YunoRuntime rt = Support.runtime(cfg, io)) {
            Recorder rec = Recorder.create(rt, "rec");
            rt.run(() -> rt.yuno().service("cli").subscribe(null, rec.gobj()));
            rt.start();
            rt.run(() -> rt.yuno().service("cli").start());
            assertTrue(logs.await("Connection failed", 6, 6000));
            List<Support.Rec> fails = logs.with("Connection failed");
            long[] want = {100, 200, 400, 800, 800};
            for (int i = 0; i < want.length; i++) {
                long gap = fails.get(i + 1).atMs - fails.get(i).atMs;
                assertTrue(gap >= want[i] - 20 && gap < want[i] + 250, "gap " + i + " = " + gap + " want " + want[i]);
            }
            try (ServerSocket ss = new ServerSocket(port)) {
                Socket peer = ss.accept();
                assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                int before = logs.with("Connection failed").size();
                ss.close();
                peer.close();
                assertNotNull(rec.await(Ev.EV_DISCONNECTED, 5000));
                assertTrue(logs.await("Connection failed", before + 2, 5000));
                List<Support.Rec> f2 = logs.with("Connection failed");
                long gap = f2.get(before + 1).atMs - f2.get(before).atMs;
                assertTrue(gap < 350, "backoff restarts at the base after a connection: " + gap);
            }
        }
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldCloseOnInactivityAndReconnectOnDemand(int io) throws Exception {
        try (ServerSocket ss = new ServerSocket(0);
             Support.Logs logs = new Support.Logs()) {
            int port = ss.getLocalPort();
            String cfg = "{\"services\":[{\"name\":\"cli\",\"gclass\":\"C_TCP\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port
                    + "\",\"timeout_inactivity\":300,\"timeout_between_connections\":100}}]}";
            try (YunoRuntime rt = Support.runtime(cfg, io)) {
                Recorder rec = Recorder.create(rt, "rec");
                rt.run(() -> rt.yuno().service("cli").subscribe(null, rec.gobj()));
                rt.start();
                rt.run(() -> rt.yuno().service("cli").start());
                Socket p1 = ss.accept();
                assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                long t0 = System.nanoTime();
                assertNotNull(rec.await(Ev.EV_DISCONNECTED, 5000));
                long idle = (System.nanoTime() - t0) / 1_000_000L;
                assertTrue(idle >= 250 && idle < 1500, "idle close after " + idle);
                assertEquals(-1, p1.getInputStream().read());
                Thread.sleep(700);
                assertEquals(1, rec.count(Ev.EV_CONNECTED), "no automatic reconnect in the inactivity model");
                rt.run(() -> rt.yuno().service("cli").send(Ev.EV_TX_DATA, msg("x"), null));
                Socket p2 = ss.accept();
                assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                assertEquals('x', p2.getInputStream().read());
                p1.close();
                p2.close();
            }
        }
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldKeepDataQueuedWhileAnOnDemandReconnectFails(int io) throws Exception {
        int port = Support.freePort();
        String cfg = "{\"services\":[{\"name\":\"cli\",\"gclass\":\"C_TCP\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port
                + "\",\"timeout_inactivity\":5000,\"timeout_between_connections\":100}}]}";
        try (Support.Logs logs = new Support.Logs(); YunoRuntime rt = Support.runtime(cfg, io)) {
            Recorder rec = Recorder.create(rt, "rec");
            rt.run(() -> rt.yuno().service("cli").subscribe(null, rec.gobj()));
            rt.start();
            rt.run(() -> rt.yuno().service("cli").start());
            assertTrue(logs.await("Connection failed", 1, 5000));
            rt.run(() -> rt.yuno().service("cli").send(Ev.EV_TX_DATA, msg("q"), null));
            assertTrue(logs.await("Connection failed", 3, 5000), "retries continue (B5)");
            try (ServerSocket ss = new ServerSocket(port)) {
                Socket p = ss.accept();
                assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                p.setSoTimeout(500);
                assertEquals('q', p.getInputStream().read());
                assertTrue(assertTimeoutRead(p), "delivered exactly once (B6)");
                p.close();
            }
        }
    }

    private static boolean assertTimeoutRead(Socket p) throws Exception {
        try {
            return p.getInputStream().read() == -1;
        } catch (java.net.SocketTimeoutException e) {
            return true;
        }
    }

    @Test
    void shouldDropTxWhileDisconnectedWithAnError() throws Exception {
        int port = Support.freePort();
        String cfg = "{\"services\":[{\"name\":\"cli\",\"gclass\":\"C_TCP\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port
                + "\",\"timeout_between_connections\":5000}}]}";
        try (Support.Logs logs = new Support.Logs(); YunoRuntime rt = Support.runtime(cfg)) {
            rt.start();
            rt.run(() -> rt.yuno().service("cli").start());
            assertTrue(logs.await("Connection failed", 1, 5000));
            int r = rt.call(() -> rt.yuno().service("cli").send(Ev.EV_TX_DATA, msg("lost"), null));
            assertEquals(0, r);
            assertEquals(1, logs.with("tcp tx data while disconnected, dropped").size());
            assertEquals(St.ST_DISCONNECTED, rt.call(() -> rt.yuno().service("cli").state()));
        }
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldBindOneConnectionPerChannelAndServeTheNextWhenOneFrees(int io) throws Exception {
        int port = Support.freePort();
        try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 2, null, null), io)) {
            Recorder rec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, rec.gobj()));
            srv.start();
            Socket a = new Socket("127.0.0.1", port);
            Socket b = new Socket("127.0.0.1", port);
            assertTrue(rec.awaitCount(Ev.EV_ON_OPEN, 2, 5000));
            Socket c = new Socket("127.0.0.1", port);
            c.getOutputStream().write(Support.frame("from-c"));
            Thread.sleep(500);
            assertEquals(2, rec.count(Ev.EV_ON_OPEN), "the third waits: connections = channels");
            assertEquals(0, rec.count(Ev.EV_ON_MESSAGE));
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
            b.close();
            c.close();
        }
    }

    @Test
    void shouldCloseConnectionsBeyondTheChannelsInLegacyMode() throws Exception {
        int port = Support.freePort();
        try (Support.Logs logs = new Support.Logs();
             YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1,
                     "\"child_tree_filter\":{\"kw\":{\"__gclass_name__\":\"C_CHANNEL\"}}", null))) {
            Recorder rec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, rec.gobj()));
            srv.start();
            try (Socket a = new Socket("127.0.0.1", port); Socket b = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                b.setSoTimeout(5000);
                assertEquals(-1, b.getInputStream().read());
                assertEquals(1, logs.with("TCP_S: Connection not accepted: no free child tree found").size());
                assertEquals(1, rec.count(Ev.EV_ON_OPEN));
            }
        }
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldCreateAndDestroyChannelsInDynamicModeUpToTheLimitWithManyClients(int io) throws Exception {
        int port = Support.freePort();
        String tmpl = "\"channel_template\":{\"gclass\":\"C_CHANNEL\",\"children\":[{\"gclass\":\"C_PROT_TCP4H\"}]},"
                + "\"max_connections\":40";
        String cfg = "{\"services\":[{\"name\":\"in\",\"gclass\":\"C_TEST_GATE\",\"autostart\":true,\"children\":["
                + "{\"name\":\"listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port + "\"," + tmpl + "}}]}]}";
        try (Support.Logs logs = new Support.Logs(); YunoRuntime srv = Support.runtime(cfg, io)) {
            Recorder rec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, rec.gobj()));
            srv.start();
            List<Socket> socks = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                Socket s = new Socket("127.0.0.1", port);
                s.getOutputStream().write(Support.frame("m" + i));
                socks.add(s);
            }
            assertTrue(rec.awaitCount(Ev.EV_ON_MESSAGE, 40, 10000));
            assertEquals(41, srv.call(() -> srv.yuno().service("in").children().size()));
            try (Socket over = new Socket("127.0.0.1", port)) {
                over.setSoTimeout(5000);
                assertEquals(-1, over.getInputStream().read());
            }
            assertTrue(logs.await("TCP_S: Connection not accepted: max_connections reached", 1, 5000));
            for (Socket s : socks) s.close();
            assertTrue(rec.awaitCount(Ev.EV_ON_CLOSE, 40, 10000));
            long end = System.currentTimeMillis() + 5000;
            while (srv.call(() -> srv.yuno().service("in").children().size()) > 1 && System.currentTimeMillis() < end) {
                Thread.sleep(20);
            }
            assertEquals(1, srv.call(() -> srv.yuno().service("in").children().size()), "channels destroyed");
            assertEquals(0, logs.with("Event NOT DEFINED in state").size(), logs.all().toString());
        }
    }

    @Test
    void shouldRefuseToStartWhenItCannotListen() throws Exception {
        try (ServerSocket busy = new ServerSocket(0); Support.Logs logs = new Support.Logs()) {
            int port = busy.getLocalPort();
            try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1, null, null))) {
                srv.start();
                assertFalse(srv.call(() -> srv.yuno().service("in").child("listen").isRunning()));
                assertEquals(1, logs.with("Cannot Listen").size(), logs.all().toString());
            }
            try (YunoRuntime srv = Support.runtime(Support.serverConfig(0, 1, null, null))) {
                srv.start();
                assertFalse(srv.call(() -> srv.yuno().service("in").child("listen").isRunning()));
                assertEquals(1, logs.with("Cannot Listen on port 0").size());
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
        int port = Support.freePort();
        String srvCfg = Support.serverConfig(port, 1, null, null).replace("tcp://127.0.0.1:", "tcp://[::1]:");
        try (YunoRuntime srv = Support.runtime(srvCfg);
             YunoRuntime cli = Support.runtime(clientConfig(port, null).replace("tcp://127.0.0.1:", "tcp://[::1]:"))) {
            Recorder rec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, rec.gobj()));
            srv.start();
            cli.start();
            Recorder.Event open = rec.await(Ev.EV_ON_OPEN, 5000);
            assertNotNull(open);
            assertTrue(open.kw.path("peername").asText().startsWith("[0:0:0:0:0:0:0:1]:"), open.kw.toString());
        }
    }
}
