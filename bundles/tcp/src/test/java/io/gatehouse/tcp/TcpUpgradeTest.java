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
import io.gatehouse.support.Gbuffers;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LeakWatch;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Poll;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Revision;
import io.gatehouse.testkit.Tcp4hFrames;
import io.gatehouse.testkit.TestCerts;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A live upgrade of the tcp bundle: C_TCP and C_TCP_S move together to a new revision (a spec of their own, as the
 * bundle of the next version would register them), the way core hands gobjs over without OSGi. Users see nothing:
 * connections stay open, nothing sent either way is lost or doubled, the listener keeps its bound socket, reconnect
 * waits and backoff go on at their deadlines, and a {@code Bundle.update()}'s suspension holds what peers send until
 * the new revision delivers it. A state the new revision refuses, and a socket on a worker loop, are a rebuild that
 * leaks nothing. Real sockets on 127.0.0.1; timers on a {@link ManualClock} where they matter.
 */
@Timeout(120)
class TcpUpgradeTest {
    private static LeakWatch leaks;

    @BeforeAll
    static void watchLeaks() {
        leaks = new LeakWatch();
    }

    /** Sockets, queued buffers and held reads change hands here: none may be dropped on the way. */
    @AfterAll
    static void noBufferLeaked() throws Exception {
        assertEquals("", leaks.stop(), "Netty's leak detector reported a leak");
    }

    // --- Helpers ---

    private static Recorder record(YunoRuntime rt, String service) {
        Recorder rec = Recorder.create(rt, "rec");
        rt.run(() -> rt.yuno().service(service).subscribe(null, rec.gobj()));
        return rec;
    }

    private static ObjectNode msg(String s) {
        return Kw.withGbuffer(Unpooled.copiedBuffer(s, StandardCharsets.UTF_8));
    }

    private static ServerSocket listen() throws IOException {
        ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        ss.setSoTimeout(10_000);
        return ss;
    }

    /** How long until the next timer falls due; the core loop's current task is let finish first. */
    private static long dueIn(YunoRuntime rt, ManualClock clock) {
        return TcpLoopbackTest.dueIn(rt, clock);
    }

    /** Writes frames {@code prefix0..n-1} in batches of 50, a millisecond apart, so upgrades fall in the stream. */
    private static Thread writer(OutputStream out, String prefix, int n, AtomicReference<Throwable> failure) {
        Thread t = new Thread(() -> {
            try {
                for (int i = 0; i < n; i += 50) {
                    java.io.ByteArrayOutputStream batch = new java.io.ByteArrayOutputStream();
                    for (int j = i; j < Math.min(n, i + 50); j++) batch.write(Tcp4hFrames.of(prefix + j));
                    out.write(batch.toByteArray());
                    Thread.sleep(1);
                }
            } catch (Exception e) {
                failure.compareAndSet(null, e);
            }
        }, "upgrade-test-writer");
        t.start();
        return t;
    }

    /** Reads frames and checks they are {@code prefix0..n-1}, in order; counts them in {@code got}. */
    private static Thread reader(InputStream in, String prefix, int n, AtomicInteger got, AtomicReference<Throwable> failure) {
        Thread t = new Thread(() -> {
            try {
                for (int i = 0; i < n; i++) {
                    String f = Tcp4hFrames.read(in);
                    if (!(prefix + i).equals(f)) throw new AssertionError("frame " + i + " is " + f);
                    got.incrementAndGet();
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        }, "upgrade-test-reader");
        t.start();
        return t;
    }

    /** Sends {@code prefix0..n-1} through {@code send} from the core loop, 50 per task, a millisecond apart. */
    private static Thread sender(YunoRuntime rt, String prefix, int n, java.util.function.Consumer<ObjectNode> send,
                                 AtomicReference<Throwable> failure) {
        Thread t = new Thread(() -> {
            try {
                for (int i = 0; i < n; i += 50) {
                    int from = i;
                    rt.run(() -> {
                        for (int j = from; j < Math.min(n, from + 50); j++) send.accept(msg(prefix + j));
                    });
                    Thread.sleep(1);
                }
            } catch (Exception e) {
                failure.compareAndSet(null, e);
            }
        }, "upgrade-test-sender");
        t.start();
        return t;
    }

    /** Upgrades {@code rt} while any of {@code busy} runs, and at least {@code min} times. */
    private static int upgradeWhile(YunoRuntime rt, int gobjs, int min, Thread... busy) throws InterruptedException {
        int n = 0;
        while (n < min || java.util.Arrays.stream(busy).anyMatch(Thread::isAlive)) {
            Support.upgradeLive(rt, gobjs);
            n++;
            Thread.sleep(3);
        }
        return n;
    }

    private static void assertInOrder(List<Recorder.Event> got, String prefix, int n) {
        assertEquals(n, got.size(), "each message once");
        for (int i = 0; i < n; i++) assertEquals(prefix + i, got.get(i).payloadText(), "message " + i);
    }

    private static boolean nothingMore(Socket s, int ms) throws IOException {
        s.setSoTimeout(ms);
        try {
            return s.getInputStream().read() == -1;
        } catch (SocketTimeoutException e) {
            return true;
        }
    }

    private static boolean stillOpen(Socket s, int ms) throws IOException {
        s.setSoTimeout(ms);
        try {
            return s.getInputStream().read() != -1;
        } catch (SocketTimeoutException e) {
            return true;
        }
    }

    private static GObj clisrv(YunoRuntime rt, String channel) {
        return rt.call(() -> rt.yuno().service("in").child(channel).lastBottom());
    }

    private static long attr(YunoRuntime rt, GObj g, String name) {
        return rt.call(() -> g.readAttr(name).asLong());
    }

    // --- Connections kept ---

    @Test
    void shouldKeepAnAcceptedConnectionOpenAndLoseNothingEitherWayAcrossUpgrades() throws Exception {
        int port = Ports.free();
        int n = 4000;
        try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 2, null))) {
            Recorder rec = record(srv, "in");
            srv.start();
            try (Socket client = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                GObj listener = srv.call(() -> srv.yuno().service("in").child("listen"));
                GObj tcp = clisrv(srv, "in-1");
                AtomicReference<Throwable> failure = new AtomicReference<>();
                AtomicInteger readBack = new AtomicInteger();
                Thread r = reader(client.getInputStream(), "s", n, readBack, failure);
                Thread w = writer(client.getOutputStream(), "c", n, failure);
                Thread s = sender(srv, "s", n, kw -> {
                    kw.putObject(Kw.TEMP).put("channel", "in-1");
                    srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, kw, null);
                }, failure);

                int upgrades = upgradeWhile(srv, 3, 5, w, s);

                w.join(30_000);
                s.join(30_000);
                assertTrue(Poll.until(() -> rec.count(Ev.EV_ON_MESSAGE) >= n, 30_000), "got " + rec.count(Ev.EV_ON_MESSAGE));
                r.join(30_000);
                assertNull(failure.get(), String.valueOf(failure.get()));
                assertTrue(upgrades >= 5, "upgrades " + upgrades);
                assertInOrder(rec.events(Ev.EV_ON_MESSAGE), "c", n);
                assertEquals(n, readBack.get(), "the client read each of the server's messages once, in order");
                assertEquals(1, rec.count(Ev.EV_ON_OPEN));
                assertEquals(0, rec.count(Ev.EV_ON_CLOSE), "the connection never closed");
                assertEquals(1L, attr(srv, listener, "connxs"), "the listener still counts one connection");
                assertEquals(1L, attr(srv, tcp, "connxs"), "and the server side was connected once");
                assertSame(tcp, clisrv(srv, "in-1"), "the same gobjs");
                assertTrue(srv.call(() -> tcp.gclass() != Tcp.SPEC), "running the new revision");
                assertTrue(stillOpen(client, 200));
            }
            assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000), "the new revision sees the close");
        }
    }

    @Test
    void shouldKeepAClientConnectionOpenAndLoseNothingEitherWayAcrossUpgrades() throws Exception {
        int n = 4000;
        try (ServerSocket ss = listen();
             YunoRuntime cli = Support.runtime(Support.clientConfig(ss.getLocalPort(), null))) {
            Recorder rec = record(cli, "out");
            cli.start();
            try (Socket peer = ss.accept()) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                GObj tcp = cli.call(() -> cli.yuno().service("out").lastBottom());
                AtomicReference<Throwable> failure = new AtomicReference<>();
                AtomicInteger readByPeer = new AtomicInteger();
                Thread r = reader(peer.getInputStream(), "c", n, readByPeer, failure);
                Thread w = writer(peer.getOutputStream(), "p", n, failure);
                Thread s = sender(cli, "c", n, kw -> cli.yuno().service("out").send(Ev.EV_SEND_MESSAGE, kw, null),
                        failure);

                int upgrades = upgradeWhile(cli, 1, 5, w, s);

                w.join(30_000);
                s.join(30_000);
                assertTrue(Poll.until(() -> rec.count(Ev.EV_ON_MESSAGE) >= n, 30_000), "got " + rec.count(Ev.EV_ON_MESSAGE));
                r.join(30_000);
                assertNull(failure.get(), String.valueOf(failure.get()));
                assertTrue(upgrades >= 5);
                assertInOrder(rec.events(Ev.EV_ON_MESSAGE), "p", n);
                assertEquals(n, readByPeer.get(), "the peer read each message once, in order");
                assertEquals(1, rec.count(Ev.EV_ON_OPEN));
                assertEquals(0, rec.count(Ev.EV_ON_CLOSE));
                assertEquals(1L, attr(cli, tcp, "connxs"));
                ss.setSoTimeout(300);
                assertThrows(SocketTimeoutException.class, ss::accept, "no second connection");
            }
        }
    }

    /** Where a message read reaches the layers above: the stack depth of its EV_ON_MESSAGE, on the core loop. */
    static final class Depths implements GObjBehavior {
        final List<Integer> reads = Collections.synchronizedList(new ArrayList<>());

        Depths(GObj g) {
        }

        private int acMessage(String ev, ObjectNode kw, GObj src) {
            reads.add(Thread.currentThread().getStackTrace().length);
            Kw.release(kw);
            return 0;
        }

        static final GClassSpec<Depths> SPEC = GClassSpec.builder("C_TEST_DEPTHS", Depths.class)
                .description("stack depth of each message read (this test)")
                .fsm(Fsm.<Depths>builder()
                        .state(St.ST_IDLE)
                        .on(Ev.EV_ON_MESSAGE, Depths::acMessage)
                        .ignore(Ev.EV_ON_OPEN)
                        .ignore(Ev.EV_ON_CLOSE)
                        .build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(Depths::new)
                .build();
    }

    /** At the head of the pipeline: the stack depth of each write, the end of everything a write passes through. */
    static final class WriteDepths extends ChannelOutboundHandlerAdapter {
        final List<Integer> writes = Collections.synchronizedList(new ArrayList<>());

        @Override
        public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
            writes.add(Thread.currentThread().getStackTrace().length);
            ctx.write(msg, promise);
        }
    }

    /**
     * An upgrade leaves nothing of the old revision on the message paths: no handler, wrapper or listener of it
     * forwarding to the new one. A read reaches the layers above, and a write the socket, through as many frames
     * after five upgrades as before the first, and the socket's pipeline holds one C_TCP handler, the new
     * revision's. (A chain growing by one link per upgrade would cost more per message after each one, and under
     * Netty's paranoid leak detector, which records a stack trace per buffer access, more per frame.)
     */
    @Test
    void shouldReadAndWriteThroughTheSameFramesAfterEachUpgrade() throws Exception {
        try (ServerSocket ss = listen();
             YunoRuntime cli = YunoRuntime.builder().name("t").gclass(Support.specs()).gclass(Depths.SPEC)
                     .config(Support.clientConfig(ss.getLocalPort(), null)).build()) {
            Depths depths = cli.call(() -> {
                GObj g = cli.yuno().root().createVolatileChild("depths", "C_TEST_DEPTHS", null);
                cli.yuno().service("out").subscribe(null, g);
                return (Depths) g.behavior();
            });
            cli.start();
            try (Socket peer = ss.accept()) {
                GObj tcp = cli.call(() -> cli.yuno().service("out").lastBottom());
                assertTrue(Poll.until(() -> cli.call(() -> tcp.inState(St.ST_CONNECTED)), 5000));
                WriteDepths writes = new WriteDepths();
                cli.run(() -> ((Tcp) tcp.behavior()).channel().pipeline().addFirst("depths", writes));
                List<String> pipelines = new ArrayList<>();
                for (int round = 0; round <= 5; round++) {
                    if (round > 0) Support.upgradeLive(cli, 1);
                    int before = depths.reads.size();
                    peer.getOutputStream().write(Tcp4hFrames.of("p" + round));
                    assertTrue(Poll.until(() -> depths.reads.size() > before, 5000), "read " + round);
                    String out = "c" + round;
                    cli.run(() -> cli.yuno().service("out").send(Ev.EV_SEND_MESSAGE, msg(out), null));
                    assertEquals(out, Tcp4hFrames.read(peer.getInputStream()));
                    pipelines.add(cli.call(() -> {
                        io.netty.channel.ChannelPipeline pl = ((Tcp) tcp.behavior()).channel().pipeline();
                        long bridges = pl.names().stream().filter(n -> pl.get(n) instanceof TcpBridge).count();
                        return pl.names() + " bridges=" + bridges + " ours=" + (((TcpBridge) pl.get(Tcp.HANDLER)).tcp == tcp.behavior());
                    }));
                }
                assertEquals(6, depths.reads.size());
                assertEquals(6, writes.writes.size());
                assertEquals(1, new java.util.HashSet<>(depths.reads).size(), "read depths " + depths.reads);
                assertEquals(1, new java.util.HashSet<>(writes.writes).size(), "write depths " + writes.writes);
                assertEquals(1, new java.util.HashSet<>(pipelines).size(), "pipelines " + pipelines);
                assertTrue(pipelines.get(0).contains("bridges=1 ours=true"), pipelines.get(0));
            }
        }
    }

    @Test
    void shouldAcceptEveryConnectMadeWhileUpgrading() throws Exception {
        int port = Ports.free();
        int clients = 150;
        try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 4, null))) {
            Recorder rec = record(srv, "in");
            srv.start();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread connector = new Thread(() -> {
                try {
                    for (int i = 0; i < clients; i++) {
                        try (Socket s = new Socket("127.0.0.1", port)) {
                            s.getOutputStream().write(Tcp4hFrames.of("k" + i));
                        }
                        Thread.sleep(1);
                    }
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
            }, "upgrade-test-connector");
            connector.start();
            upgradeWhile(srv, 5, 5, connector);
            connector.join(30_000);
            assertNull(failure.get(), "a connect failed: " + failure.get());
            assertTrue(Poll.until(() -> rec.count(Ev.EV_ON_MESSAGE) >= clients, 30_000),
                    "got " + rec.count(Ev.EV_ON_MESSAGE));
            List<String> got = new ArrayList<>();
            for (Recorder.Event e : rec.events(Ev.EV_ON_MESSAGE)) got.add(e.payloadText());
            Collections.sort(got);
            List<String> want = new ArrayList<>();
            for (int i = 0; i < clients; i++) want.add("k" + i);
            Collections.sort(want);
            assertEquals(want, got, "every client's message, once");
        }
    }

    @Test
    void shouldHandAWaitingSocketToTheChannelThatFreesAfterTheUpgrade() throws Exception {
        int port = Ports.free();
        try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1, null))) {
            Recorder rec = record(srv, "in");
            srv.start();
            try (Socket a = new Socket("127.0.0.1", port); Socket b = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                b.getOutputStream().write(Tcp4hFrames.of("from-b"));
                GObj listener = srv.call(() -> srv.yuno().service("in").child("listen"));
                assertTrue(Poll.until(() -> attr(srv, listener, "connxs") == 2, 5000), "b waits for a channel");
                Support.upgradeLive(srv, 2);
                assertEquals(0, rec.count(Ev.EV_ON_MESSAGE), "still waiting, unread");
                a.close();
                assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
                Recorder.Event m = rec.await(Ev.EV_ON_MESSAGE, 5000);
                assertNotNull(m, "the waiting socket got the freed channel");
                assertEquals("from-b", m.payloadText());
                b.close();
                assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
                assertTrue(Poll.until(() -> attr(srv, listener, "connxs") == 0, 5000));
            }
        }
    }

    @Test
    void shouldKeepDynamicSubtreesAndDestroyThemWhenTheirConnectionsClose() throws Exception {
        int port = Ports.free();
        String tmpl = "\"channel_template\":{\"gclass\":\"C_CHANNEL\",\"children\":[{\"gclass\":\"C_TEST_FRAMER\"}]}";
        String cfg = "{\"services\":[{\"name\":\"in\",\"gclass\":\"C_TEST_GATE\",\"autostart\":true,\"children\":["
                + "{\"name\":\"listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port + "\"," + tmpl + "}}]}]}";
        try (YunoRuntime srv = Support.runtime(cfg)) {
            Recorder rec = record(srv, "in");
            srv.start();
            GObj listener = srv.call(() -> srv.yuno().service("in").child("listen"));
            try (Socket a = new Socket("127.0.0.1", port); Socket b = new Socket("127.0.0.1", port)) {
                assertTrue(rec.awaitCount(Ev.EV_ON_OPEN, 2, 5000));
                Support.upgradeLive(srv, 3);
                a.getOutputStream().write(Tcp4hFrames.of("a"));
                assertEquals("a", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                a.close();
                assertTrue(Poll.until(() -> srv.call(() -> srv.yuno().service("in").children().size()) == 2, 5000),
                        "a's subtree destroyed by the new revision");
                assertEquals(1L, attr(srv, listener, "connxs"));
            }
            assertTrue(Poll.until(() -> srv.call(() -> srv.yuno().service("in").children().size()) == 1, 5000));
            assertEquals(0L, attr(srv, listener, "connxs"));
        }
    }

    // --- Timers ---

    @Test
    void shouldReconnectAtTheDeadlineTheOldRevisionHadAndGoOnWithItsBackoff() throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        String cfg = Support.tcpConfig(port, "\"timeout_between_connections\":100,\"timeout_between_connections_max\":800");
        try (LogCapture logs = new LogCapture(); YunoRuntime rt = Support.runtime(cfg, 0, clock)) {
            Recorder rec = Support.startClient(rt);
            assertTrue(logs.await("Connection failed", 1, 5000));
            assertEquals(100, dueIn(rt, clock));
            clock.advance(100);
            assertTrue(logs.await("Connection failed", 2, 5000));
            assertEquals(200, dueIn(rt, clock), "backing off");
            clock.advance(50);
            Support.upgradeLive(rt, 1);
            assertEquals(150, dueIn(rt, clock), "the old revision's deadline");
            clock.advance(149);
            assertEquals(2, logs.count("Connection failed"), "not before it");
            clock.advance(1);
            assertTrue(logs.await("Connection failed", 3, 5000), "the new revision tried at the deadline");
            assertEquals(400, dueIn(rt, clock), "and goes on with the backoff where the old one was");
            Support.upgradeLive(rt, 1);
            assertEquals(400, dueIn(rt, clock));
            try (ServerSocket ss = new ServerSocket(port, 50, InetAddress.getLoopbackAddress())) {
                ss.setSoTimeout(10_000);
                clock.advance(400);
                try (Socket peer = ss.accept()) {
                    assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                }
                assertNotNull(rec.await(Ev.EV_DISCONNECTED, 5000));
                assertEquals(100, dueIn(rt, clock), "after a connection the wait is the base again");
            }
        }
    }

    @Test
    void shouldKeepTheInactivityDeadlineAcrossAnUpgrade() throws Exception {
        ManualClock clock = new ManualClock();
        try (ServerSocket ss = listen()) {
            String cfg = Support.tcpConfig(ss.getLocalPort(), "\"timeout_inactivity\":300,\"timeout_between_connections\":100");
            try (YunoRuntime rt = Support.runtime(cfg, 0, clock)) {
                Recorder rec = Support.startClient(rt);
                try (Socket peer = ss.accept()) {
                    peer.setSoTimeout(5000);
                    assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                    assertEquals(300, dueIn(rt, clock), "armed once connected");
                    clock.advance(200);
                    Support.upgradeLive(rt, 1);
                    assertEquals(100, dueIn(rt, clock));
                    clock.advance(100);
                    assertEquals(-1, peer.getInputStream().read(), "closed at the old revision's deadline");
                    assertNotNull(rec.await(Ev.EV_DISCONNECTED, 5000));
                }
            }
        }
    }

    @Test
    void shouldTakeOverAConnectUnderWayAndReportItOnceItIsUp() throws Exception {
        ManualClock clock = new ManualClock();
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            ss.setSoTimeout(10_000);
            List<Socket> fillers = fillBacklog(ss);
            try (YunoRuntime rt = Support.runtime(Support.tcpConfig(ss.getLocalPort(), null), 0, clock)) {
                Recorder rec = Support.startClient(rt);
                assumeTrue(stillConnecting(rt), "the kernel let the connect through a full backlog");
                Support.upgradeLive(rt, 1);
                for (Socket f : fillers) {
                    ss.accept().close();   // room in the backlog: the client's next SYN gets through
                    f.close();
                }
                try (Socket peer = ss.accept()) {
                    assertNotNull(rec.await(Ev.EV_CONNECTED, 10_000), "the new revision reports the connection");
                    peer.getOutputStream().write("up".getBytes(StandardCharsets.UTF_8));
                    Recorder.Event rx = rec.await(Ev.EV_RX_DATA, 5000);
                    assertEquals("up", rx.payloadText());
                    assertEquals(1, rec.count(Ev.EV_CONNECTED));
                }
            }
        }
    }

    @Test
    void shouldFailAConnectUnderWayAtItsTimeoutAfterTheUpgradeAndWaitToTryAgain() throws Exception {
        ManualClock clock = new ManualClock();
        try (LogCapture logs = new LogCapture(); ServerSocket ss = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            List<Socket> fillers = fillBacklog(ss);
            String cfg = Support.tcpConfig(ss.getLocalPort(), "\"timeout_connect\":1500,\"timeout_between_connections\":100");
            try (YunoRuntime rt = Support.runtime(cfg, 0, clock)) {
                Support.startClient(rt);
                assumeTrue(stillConnecting(rt), "the kernel let the connect through a full backlog");
                Support.upgradeLive(rt, 1);
                assertTrue(logs.await("Connection failed", 1, 10_000), "timeout_connect, seen by the new revision");
                assertEquals(St.ST_DISCONNECTED, rt.call(() -> rt.yuno().service("cli").state()));
                assertEquals(100, dueIn(rt, clock), "and the wait before the next attempt");
            } finally {
                for (Socket f : fillers) f.close();
            }
        }
    }

    /** Connects to {@code ss} (backlog 1, never accepting) until its backlog is full; answers the sockets. */
    private static List<Socket> fillBacklog(ServerSocket ss) {
        List<Socket> fillers = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            Socket f = new Socket();
            try {
                f.connect(new java.net.InetSocketAddress(InetAddress.getLoopbackAddress(), ss.getLocalPort()), 300);
                fillers.add(f);
            } catch (IOException full) {
                break;   // SYNs dropped: the backlog is full
            }
        }
        return fillers;
    }

    /** True when the client's connect stays under way (its SYN dropped by a full backlog) for a while. */
    private static boolean stillConnecting(YunoRuntime rt) throws InterruptedException {
        for (int i = 0; i < 6; i++) {
            Thread.sleep(50);
            if (!rt.call(() -> rt.yuno().service("cli").inState(St.ST_WAIT_CONNECTED))) return false;
        }
        return rt.call(() -> ((Tcp) rt.yuno().service("cli").behavior()).channel() != null);
    }

    @Test
    void shouldKeepAnAcceptPauseAcrossAnUpgradeAndAcceptAfterIt() throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        try (LogCapture logs = new LogCapture(); YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1, null), 0, clock)) {
            Recorder rec = record(srv, "in");
            srv.start();
            srv.run(() -> ((TcpS) srv.yuno().service("in").child("listen").behavior()).listening().pipeline()
                    .fireExceptionCaught(new IOException("Too many open files")));
            assertEquals(1, logs.count("TCP_S: Accept failed, accepting pauses"));
            clock.advance(TcpS.ACCEPT_ERROR_PAUSE_MS / 2);
            Support.upgradeLive(srv, 2);
            try (Socket a = new Socket("127.0.0.1", port)) {   // the kernel completes it: the socket listens
                assertEquals(null, rec.await(Ev.EV_ON_OPEN, 300), "not accepted during the pause");
                clock.advance(TcpS.ACCEPT_ERROR_PAUSE_MS / 2);
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000), "accepted once the old revision's pause is over");
            }
        }
    }

    @Test
    void shouldKeepTlsConnectionsAcrossUpgradesOfBothEnds() throws Exception {
        TestCerts certs = TestCerts.generate("localhost");
        int port = Ports.free();
        try (YunoRuntime srv = Support.runtime(Support.tlsServerConfig(port, 1, certs));
             YunoRuntime cli = Support.runtime(Support.tlsClientConfig(port, certs.certPem))) {
            Recorder srec = record(srv, "in");
            srv.start();
            Recorder crec = record(cli, "out");
            cli.start();
            assertNotNull(crec.await(Ev.EV_ON_OPEN, 10_000));
            assertNotNull(srec.await(Ev.EV_ON_OPEN, 10_000));
            for (int i = 0; i < 5; i++) {
                Support.upgradeLive(srv, 2);
                Support.upgradeLive(cli, 1);
                int k = i;
                cli.run(() -> cli.yuno().service("out").send(Ev.EV_SEND_MESSAGE, msg("up-" + k), null));
                srv.run(() -> srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, msg("down-" + k), null));
                assertEquals("up-" + i, srec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                assertEquals("down-" + i, crec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
            }
            assertEquals(1, crec.count(Ev.EV_ON_OPEN));
            assertEquals(0, crec.count(Ev.EV_ON_CLOSE) + srec.count(Ev.EV_ON_CLOSE), "the TLS session went on");
        }
    }

    // --- Bundle.update(): suspended, then the new revision ---

    @Test
    void shouldHoldWhatPeersSendWhileSuspendedAndDeliverItInOrderAfter() throws Exception {
        int port = Ports.free();
        try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 2, null))) {
            Recorder rec = record(srv, "in");
            srv.start();
            try (Socket a = new Socket("127.0.0.1", port)) {
                OutputStream out = a.getOutputStream();
                out.write(Tcp4hFrames.of("before"));
                assertEquals("before", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());

                assertEquals(List.of("C_TCP", "C_TCP_S"), srv.gclassesGone(List.of("C_TCP", "C_TCP_S")));
                for (int i = 0; i < 200; i++) out.write(Tcp4hFrames.of("while-" + i));
                try (Socket b = new Socket("127.0.0.1", port)) {
                    b.getOutputStream().write(Tcp4hFrames.of("from-b"));   // the connect succeeds: the socket listens
                    Thread.sleep(300);   // what a suspended gobj would have read by now, were it reading
                    assertEquals(1, rec.count(Ev.EV_ON_MESSAGE), "nothing read while suspended");
                    assertEquals(1, rec.count(Ev.EV_ON_OPEN), "nothing accepted while suspended");

                    ObjectNode report = srv.gclassesArrived(Support.nextRevision());
                    assertEquals(3, report.path("gobjs_migrated").asInt(), report.toString());
                    assertTrue(Poll.until(() -> rec.count(Ev.EV_ON_MESSAGE) >= 202, 10_000),
                            "got " + rec.count(Ev.EV_ON_MESSAGE));
                    List<String> fromA = new ArrayList<>();
                    for (Recorder.Event e : rec.events(Ev.EV_ON_MESSAGE)) {
                        if (e.kw.path(Kw.TEMP).path("channel").asText().equals("in-1")) fromA.add(e.payloadText());
                        else assertEquals("from-b", e.payloadText());
                    }
                    assertEquals(201, fromA.size(), "each once");
                    for (int i = 0; i < 200; i++) assertEquals("while-" + i, fromA.get(i + 1), "in order");
                    assertEquals(2, rec.count(Ev.EV_ON_OPEN), "b was accepted after the resume");
                }
                Recorder.Event closed = rec.await(Ev.EV_ON_CLOSE, 5000);
                assertEquals("in-2", closed.kw.path(Kw.TEMP).path("channel").asText(), "only b closes");
                out.write(Tcp4hFrames.of("after"));
                assertTrue(Poll.until(() -> rec.events(Ev.EV_ON_MESSAGE).stream()
                        .anyMatch(e -> e.payloadText().equals("after")), 5000));
                assertTrue(stillOpen(a, 100));
            }
        }
    }

    @Test
    void shouldStopReadingAClientSocketWhileSuspended() throws Exception {
        try (ServerSocket ss = listen(); YunoRuntime cli = Support.runtime(Support.clientConfig(ss.getLocalPort(), null))) {
            Recorder rec = record(cli, "out");
            cli.start();
            try (Socket peer = ss.accept()) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                cli.gclassesGone(List.of("C_TCP", "C_TCP_S"));
                for (int i = 0; i < 100; i++) peer.getOutputStream().write(Tcp4hFrames.of("p" + i));
                Thread.sleep(300);
                assertEquals(0, rec.count(Ev.EV_ON_MESSAGE));
                // What goes down while suspended is held by core and written by the new revision.
                cli.run(() -> cli.yuno().service("out").send(Ev.EV_SEND_MESSAGE, msg("held"), null));
                cli.gclassesArrived(Support.nextRevision());
                assertTrue(Poll.until(() -> rec.count(Ev.EV_ON_MESSAGE) >= 100, 10_000));
                assertInOrder(rec.events(Ev.EV_ON_MESSAGE), "p", 100);
                peer.setSoTimeout(5000);
                assertEquals("held", Tcp4hFrames.read(peer.getInputStream()));
                assertEquals(0, rec.count(Ev.EV_ON_CLOSE));
            }
        }
    }

    // --- Fallbacks: a rebuild, nothing leaked ---

    @Test
    void shouldRebuildAClientWhoseStateTheNewRevisionRefusesReleasingItsQueue() throws Exception {
        List<GClassSpec<?>> v99 = List.of(Revision.of(Tcp.SPEC, 99, Tcp::new), Revision.of(TcpS.SPEC, 99, TcpS::new),
                TestGClasses.Framer.SPEC, io.gatehouse.testkit.StubChannel.SPEC, TestGClasses.Gate.SPEC);
        try (LogCapture logs = new LogCapture(); ServerSocket ss = listen();
             YunoRuntime cli = YunoRuntime.builder().name("t").gclasses(v99)
                     .config(Support.clientConfig(ss.getLocalPort(), null)).build()) {
            Recorder rec = record(cli, "out");
            cli.start();
            List<ByteBuf> sent = new ArrayList<>();
            try (Socket peer = ss.accept()) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                GObj tcp = cli.call(() -> cli.yuno().service("out").lastBottom());
                // The peer reads nothing: the socket fills, then the tx queue holds buffers.
                for (int i = 0; i < 200 && attr(cli, tcp, "cur_tx_queue") < 5; i++) {
                    cli.run(() -> {
                        for (int j = 0; j < 20; j++) {
                            ByteBuf b = Gbuffers.allocate(ByteBufAllocator.DEFAULT, 64 * 1024).writeZero(64 * 1024);
                            sent.add(b);
                            cli.yuno().service("out").send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(b), null);
                        }
                    });
                }
                assertTrue(attr(cli, tcp, "cur_tx_queue") >= 5, "the tx queue holds buffers");

                ObjectNode report = cli.gclassesArrived(List.of(Tcp.SPEC, TcpS.SPEC));
                assertEquals(0, report.path("gobjs_migrated").asInt(), report.toString());
                String why = report.path("rebuilt").get(0).path("reason").asText();
                assertTrue(why.contains("state version 1, not 99"), why);
                assertEquals(1, logs.count("Live upgrade not possible, service rebuilt from its config"));
                assertNotSame(tcp, cli.call(() -> cli.yuno().service("out").lastBottom()), "rebuilt");
                assertTrue(Poll.until(() -> sent.stream().allMatch(b -> b.refCnt() == 0), 5000),
                        "every buffer of the refused state released");
                peer.setSoTimeout(10_000);
                while (peer.getInputStream().read(new byte[65536]) >= 0) {
                    // what the old socket had taken, up to its close
                }
            }
            try (Socket again = ss.accept()) {
                assertTrue(rec.awaitCount(Ev.EV_ON_OPEN, 1, 5000));
                // the accept above can return before the rebuilt client has handled its connect
                Poll.until(() -> St.ST_CONNECTED.equals(cli.call(() -> cli.yuno().service("out").lastBottom().state())), 5000);
                assertEquals(St.ST_CONNECTED, cli.call(() -> cli.yuno().service("out").lastBottom().state()));
            }
        }
    }

    @Test
    void shouldRebuildAListenerWhoseStateTheNewRevisionRefuses() throws Exception {
        int port = Ports.free();
        List<GClassSpec<?>> v99 = List.of(Revision.of(Tcp.SPEC, 99, Tcp::new), Revision.of(TcpS.SPEC, 99, TcpS::new),
                TestGClasses.Framer.SPEC, io.gatehouse.testkit.StubChannel.SPEC, TestGClasses.Gate.SPEC);
        try (LogCapture logs = new LogCapture();
             YunoRuntime srv = YunoRuntime.builder().name("t").gclasses(v99)
                     .config(Support.serverConfig(port, 2, null)).build()) {
            srv.start();
            try (Socket a = new Socket("127.0.0.1", port)) {
                assertTrue(Poll.until(() -> attr(srv, srv.call(() -> srv.yuno().service("in").child("listen")),
                        "connxs") == 1, 5000));
                ObjectNode report = srv.gclassesArrived(List.of(Tcp.SPEC, TcpS.SPEC));
                assertEquals("in", report.path("rebuilt").get(0).path("service").asText(), report.toString());
                assertTrue(report.path("rebuilt").get(0).path("reason").asText().contains("not 99"), report.toString());
                assertEquals(1, logs.count("Live upgrade not possible, service rebuilt from its config"));
                assertTrue(nothingMore(a, 5000) && !stillOpen(a, 100), "the old connection closed with the rebuild");
            }
            // The listener built again binds the same port: core starts a rebuilt service after the loop's next
            // select, which is when the JDK really closes the old listening socket (YunoImpl.startAfterIo).
            assertTrue(Poll.until(() -> srv.call(() -> srv.yuno().service("in").child("listen").isRunning()), 5000),
                    "the rebuilt listener listens: " + logs.with("Cannot Listen"));
            Recorder rec = record(srv, "in");
            try (Socket b = new Socket("127.0.0.1", port)) {
                b.getOutputStream().write(Tcp4hFrames.of("again"));
                assertEquals("again", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
            }
        }
    }

    // --- io_threads > 0 ---

    @Test
    void shouldRebuildAClientWhoseSocketIsOnAWorkerLoopAndConnectAgain() throws Exception {
        try (LogCapture logs = new LogCapture(); ServerSocket ss = listen();
             YunoRuntime cli = Support.runtime(Support.clientConfig(ss.getLocalPort(), null), 1)) {
            Recorder rec = record(cli, "out");
            cli.start();
            try (Socket first = ss.accept()) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                cli.run(() -> cli.yuno().service("out").send(Ev.EV_SEND_MESSAGE, msg("one"), null));
                first.setSoTimeout(5000);
                assertEquals("one", Tcp4hFrames.read(first.getInputStream()));

                ObjectNode report = cli.gclassesArrived(Support.nextRevision());
                assertEquals(0, report.path("gobjs_migrated").asInt(), report.toString());
                assertTrue(report.path("rebuilt").get(0).path("reason").asText().contains("worker loop"), report.toString());
                assertEquals(1, logs.count("Live upgrade not possible, service rebuilt from its config"));
                assertNull(Tcp4hFrames.read(first.getInputStream()), "the old connection closes");
            }
            try (Socket second = ss.accept()) {
                Recorder again = record(cli, "out");
                assertTrue(Poll.until(() -> cli.call(() -> cli.yuno().service("out").lastBottom().inState(St.ST_CONNECTED)), 5000));
                second.getOutputStream().write(Tcp4hFrames.of("two"));
                assertEquals("two", again.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
            }
        }
    }

    @Test
    void shouldHandOverAListenerWhoseSocketsGoToWorkerLoops() throws Exception {
        int port = Ports.free();
        try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 2, null), 1)) {
            Recorder rec = record(srv, "in");
            srv.start();
            Support.upgradeLive(srv, 3);
            try (Socket a = new Socket("127.0.0.1", port)) {
                a.getOutputStream().write(Tcp4hFrames.of("on-a-worker"));
                assertEquals("on-a-worker", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                Tcp t = srv.call(() -> (Tcp) clisrv(srv, "in-1").behavior());
                assertFalse(srv.call(() -> t.channel().eventLoop() == srv.yuno().eventLoop()), "on the worker loop");
                ObjectNode reply = msg("back");
                reply.putObject(Kw.TEMP).put("channel", "in-1");
                srv.run(() -> srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, reply, null));
                a.setSoTimeout(5000);
                assertEquals("back", Tcp4hFrames.read(a.getInputStream()));
            }
        }
    }
}
