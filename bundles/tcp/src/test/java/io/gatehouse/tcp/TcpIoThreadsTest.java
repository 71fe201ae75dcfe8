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
import io.gatehouse.api.Yuno;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LeakWatch;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Poll;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Tcp4hFrames;
import io.gatehouse.testkit.TestCerts;
import io.gatehouse.testkit.Threads;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.EventLoop;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * io_threads > 0: C_TCP and C_TCP_S sockets on worker loops, every gobj action still on the core loop. Traffic,
 * ordering, TLS, peers that vanish, and the worker threads ending with the yuno.
 */
@Timeout(60)
class TcpIoThreadsTest {
    private static TestCerts certs;
    private static LeakWatch leaks;

    @BeforeAll
    static void makeCerts() throws Exception {
        certs = TestCerts.generate("localhost");
        leaks = new LeakWatch();
    }

    /** Buffers cross threads here, and are held and released on both sides: none may be lost on the way. */
    @AfterAll
    static void noBufferLeaked() throws Exception {
        assertEquals("", leaks.stop(), "Netty's leak detector reported a leak");
    }

    private static List<String> ioThreadsLeft(String yunoName, long timeoutMs) {
        return Threads.left("gatehouse-io-" + yunoName + "-", timeoutMs);
    }

    // --- Numbered messages whose every byte is known ---

    /** Message {@code i}: its number, then a pattern of it; sizes vary from 4 B to 70 KB (several reads). */
    static ByteBuf message(int i) {
        return Unpooled.wrappedBuffer(expected(i));
    }

    private static byte[] expected(int i) {
        int size = i % 97 == 0 ? 70_000 : 4 + (i * 31) % 2000;
        byte[] b = new byte[size];
        b[0] = (byte) (i >>> 24);
        b[1] = (byte) (i >>> 16);
        b[2] = (byte) (i >>> 8);
        b[3] = (byte) i;
        for (int j = 4; j < size; j++) b[j] = (byte) (i * 7 + j);
        return b;
    }

    /** Compared through one copy: the paranoid leak detector records a stack trace per buffer access. */
    static boolean isMessage(ByteBuf b, int i) {
        byte[] got = new byte[b.readableBytes()];
        b.getBytes(b.readerIndex(), got);
        return java.util.Arrays.equals(got, expected(i));
    }

    /** Server top: checks each message is the next one, byte for byte, and sends it back where it came from. */
    static final class SeqEcho implements GObjBehavior {
        static final AtomicLong RECEIVED = new AtomicLong();
        static final AtomicLong BAD = new AtomicLong();
        static final AtomicLong OFF_CORE = new AtomicLong();
        final GObj gobj;

        SeqEcho(GObj g) {
            gobj = g;
        }

        private int acMessage(String ev, ObjectNode kw, GObj src) {
            if (!gobj.yuno().inCoreThread()) OFF_CORE.incrementAndGet();
            if (!isMessage(Kw.gbuffer(kw), (int) RECEIVED.getAndIncrement())) BAD.incrementAndGet();
            kw.remove(Kw.TEMP);
            return src.send(Ev.EV_SEND_MESSAGE, kw, gobj);
        }

        private int acOther(String ev, ObjectNode kw, GObj src) {
            if (!gobj.yuno().inCoreThread()) OFF_CORE.incrementAndGet();
            Kw.release(kw);
            return 0;
        }

        static final GClassSpec<SeqEcho> SPEC = GClassSpec.builder("C_SEQ_ECHO", SeqEcho.class)
            .description("test stand-in C_SEQ_ECHO (SeqEcho)")
                .fsm(Fsm.<SeqEcho>builder().state(St.ST_IDLE)
                        .on(Ev.EV_ON_MESSAGE, SeqEcho::acMessage)
                        .on(Ev.EV_ON_OPEN, SeqEcho::acOther)
                        .on(Ev.EV_ON_CLOSE, SeqEcho::acOther)
                        .build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(SeqEcho::new).build();
    }

    /** Client top: sends numbered messages on request and checks the echoes come back in order, byte for byte. */
    static final class SeqClient implements GObjBehavior {
        static final AtomicLong ECHOED = new AtomicLong();
        static final AtomicLong BAD = new AtomicLong();
        static final AtomicLong OFF_CORE = new AtomicLong();
        final GObj gobj;
        GObj channel;

        SeqClient(GObj g) {
            gobj = g;
        }

        void send(int from, int to) {
            for (int i = from; i < to; i++) channel.send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(message(i)), gobj);
        }

        private int acOpen(String ev, ObjectNode kw, GObj src) {
            if (!gobj.yuno().inCoreThread()) OFF_CORE.incrementAndGet();
            channel = src;
            Kw.release(kw);
            return 0;
        }

        private int acMessage(String ev, ObjectNode kw, GObj src) {
            if (!gobj.yuno().inCoreThread()) OFF_CORE.incrementAndGet();
            if (!isMessage(Kw.gbuffer(kw), (int) ECHOED.get())) BAD.incrementAndGet();
            ECHOED.incrementAndGet();
            Kw.release(kw);
            return 0;
        }

        static final GClassSpec<SeqClient> SPEC = GClassSpec.builder("C_SEQ_CLIENT", SeqClient.class)
            .description("test stand-in C_SEQ_CLIENT (SeqClient)")
                .fsm(Fsm.<SeqClient>builder().state(St.ST_IDLE)
                        .on(Ev.EV_ON_OPEN, SeqClient::acOpen)
                        .on(Ev.EV_ON_MESSAGE, SeqClient::acMessage)
                        .ignore(Ev.EV_ON_CLOSE)
                        .build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(SeqClient::new).build();
    }

    /**
     * Server top: counts what arrives, spending 20 µs of CPU on each. Its channel stops reading when it opens, so the
     * producer is surely held back (the socket buffers fill), until the test resumes it.
     */
    static final class CountSink implements GObjBehavior {
        static final AtomicLong RECEIVED = new AtomicLong();
        static volatile GObj channel;
        final GObj gobj;

        CountSink(GObj g) {
            gobj = g;
        }

        private int acOpen(String ev, ObjectNode kw, GObj src) {
            Kw.release(kw);
            channel = src;
            return src.send(Ev.EV_PAUSE_INPUT, null, gobj);
        }

        private int acMessage(String ev, ObjectNode kw, GObj src) {
            long until = System.nanoTime() + 20_000;
            while (System.nanoTime() < until) Thread.onSpinWait();
            RECEIVED.incrementAndGet();
            Kw.release(kw);
            return 0;
        }

        static final GClassSpec<CountSink> SPEC = GClassSpec.builder("C_COUNT_SINK", CountSink.class)
            .description("test stand-in C_COUNT_SINK (CountSink)")
                .fsm(Fsm.<CountSink>builder().state(St.ST_IDLE)
                        .on(Ev.EV_ON_MESSAGE, CountSink::acMessage).on(Ev.EV_ON_OPEN, CountSink::acOpen)
                        .ignore(Ev.EV_ON_CLOSE).build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(CountSink::new).build();
    }

    /**
     * Client top with the producer contract of C_TCP: write bursts while C_TCP queues nothing; once it queues,
     * stop and wait for its EV_TX_READY. A missed EV_TX_READY stalls it for good.
     */
    static final class ReadyProducer implements GObjBehavior {
        static final int TOTAL = 20_000;
        /** 64 of these are more than Netty's 64 KiB high water mark: every burst is held back. */
        static final int SIZE = 4096;
        static final AtomicLong SENT = new AtomicLong();
        static final AtomicLong WAITS = new AtomicLong();
        final GObj gobj;
        GObj channel;
        GObj tcp;
        boolean waiting;

        ReadyProducer(GObj g) {
            gobj = g;
        }

        private void pump() {
            if (channel == null || SENT.get() >= TOTAL) return;
            if (tcp.readAttr("cur_tx_queue").asLong() != 0) {
                waiting = true;
                WAITS.incrementAndGet();
                return;
            }
            for (int i = 0; i < 64 && SENT.get() < TOTAL; i++) {
                ByteBuf b = io.gatehouse.support.Gbuffers.allocate(SIZE);
                b.writeZero(SIZE);
                channel.send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(b), gobj);
                SENT.incrementAndGet();
            }
            gobj.yuno().eventLoop().execute(this::pump);
        }

        private int acOpen(String ev, ObjectNode kw, GObj src) {
            Kw.release(kw);
            channel = src;
            tcp = gobj.lastBottom();
            tcp.subscribe(Ev.EV_TX_READY, gobj);
            pump();
            return 0;
        }

        private int acTxReady(String ev, ObjectNode kw, GObj src) {
            Kw.release(kw);
            if (waiting) {
                waiting = false;
                pump();
            }
            return 0;
        }

        static final GClassSpec<ReadyProducer> SPEC = GClassSpec.builder("C_READY_PRODUCER", ReadyProducer.class)
            .description("test stand-in C_READY_PRODUCER (ReadyProducer)")
                .fsm(Fsm.<ReadyProducer>builder().state(St.ST_IDLE)
                        .on(Ev.EV_ON_OPEN, ReadyProducer::acOpen)
                        .on(Ev.EV_TX_READY, ReadyProducer::acTxReady)
                        .ignore(Ev.EV_ON_MESSAGE).ignore(Ev.EV_ON_CLOSE).build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(ReadyProducer::new).build();
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldWakeAProducerThatWaitsForTxReadyEveryTimeItWasHeldBack(int io) throws Exception {
        CountSink.RECEIVED.set(0);
        CountSink.channel = null;
        ReadyProducer.SENT.set(0);
        ReadyProducer.WAITS.set(0);
        int port = Ports.free();
        String srvCfg = Support.serverConfig(port, 1, null).replace("C_TEST_GATE", "C_COUNT_SINK");
        String cliCfg = Support.clientConfig(port, null).replace("C_TEST_GATE", "C_READY_PRODUCER");
        try (YunoRuntime srv = YunoRuntime.builder().name("t").gclass(Support.specs()).gclass(CountSink.SPEC)
                     .config(srvCfg).build();
             YunoRuntime cli = YunoRuntime.builder().name("t").ioThreads(io).gclass(Support.specs())
                     .gclass(ReadyProducer.SPEC).config(cliCfg).build()) {
            srv.start();
            cli.start();
            assertTrue(Poll.until(() -> ReadyProducer.WAITS.get() > 0, 30_000),
                    "io_threads " + io + ": held back while the server does not read");
            srv.run(() -> CountSink.channel.send(Ev.EV_RESUME_INPUT, null, null));
            Poll.until(() -> CountSink.RECEIVED.get() >= ReadyProducer.TOTAL, 30_000);
            assertEquals(ReadyProducer.TOTAL, CountSink.RECEIVED.get(), "stalled: sent " + ReadyProducer.SENT.get()
                    + ", held back " + ReadyProducer.WAITS.get() + " times");
        }
        assertEquals(List.of(), ioThreadsLeft("t", 3000));
    }

    private static String json(String s) {
        return Kw.MAPPER.valueToTree(s).toString();
    }

    /** The loop that serves a C_TCP's socket. */
    private static EventLoop loopOf(YunoRuntime rt, GObj tcp) {
        Channel c = rt.call(() -> ((Tcp) tcp.behavior()).channel());
        assertNotNull(c, "no socket");
        return c.eventLoop();
    }

    private static void assertServedBy(YunoRuntime rt, GObj tcp, int io) {
        EventLoop l = loopOf(rt, tcp);
        Yuno y = rt.yuno();
        if (io == 0) {
            assertSame(y.eventLoop(), l, "io_threads 0: the socket is on the core loop");
        } else {
            assertNotSame(y.eventLoop(), l, "io_threads > 0: the socket is not on the core loop");
            assertSame(y.ioGroup(), l.parent(), "the socket is on one of the yuno's worker loops");
        }
    }

    @ParameterizedTest(name = "io_threads {0}, tls {1}")
    @CsvSource({"0, false", "2, false", "2, true"})
    void shouldEchoManyMessagesInOrderAndByteExactThroughBothStacks(int io, boolean tls) throws Exception {
        SeqEcho.RECEIVED.set(0);
        SeqEcho.BAD.set(0);
        SeqEcho.OFF_CORE.set(0);
        SeqClient.ECHOED.set(0);
        SeqClient.BAD.set(0);
        SeqClient.OFF_CORE.set(0);
        int port = Ports.free();
        String crypto = "\"crypto\":{\"ssl_certificate\":" + json(certs.certPem) + ",\"ssl_certificate_key\":" + json(certs.keyPem) + "}";
        // The server takes io_threads from its config, the client from the builder.
        String srvCfg = "{\"yuno\":{\"io_threads\":" + io + "}," + Support.serverConfig(port, 1, tls ? crypto : null)
                .replace("C_TEST_GATE", "C_SEQ_ECHO").substring(1);
        String cliCfg = Support.clientConfig(port, tls ? "\"crypto\":{\"ssl_trusted_certificate\":" + json(certs.certPem) + "}" : null)
                .replace("C_TEST_GATE", "C_SEQ_CLIENT");
        if (tls) {
            srvCfg = srvCfg.replace("tcp://127.0.0.1:", "tcps://127.0.0.1:");
            cliCfg = cliCfg.replace("tcp://127.0.0.1:", "tcps://127.0.0.1:");
        }
        try (YunoRuntime srv = YunoRuntime.builder().name("t").gclass(Support.specs()).gclass(SeqEcho.SPEC).config(srvCfg).build();
             YunoRuntime cli = YunoRuntime.builder().name("t").ioThreads(io).gclass(Support.specs()).gclass(SeqClient.SPEC)
                     .config(cliCfg).build()) {
            assertEquals(io, srv.ioThreads());
            srv.start();
            cli.start();
            SeqClient client = cli.call(() -> (SeqClient) cli.yuno().service("out").behavior());
            assertTrue(Poll.until(() -> cli.call(() -> client.channel) != null, 10_000), "the client opened");
            GObj clisrv = srv.call(() -> srv.yuno().service("in").child("in-1").lastBottom());
            assertTrue(Poll.until(() -> srv.call(() -> clisrv.readAttr("connected").asBoolean()), 10_000));
            assertServedBy(cli, cli.call(() -> cli.yuno().service("out").lastBottom()), io);
            assertServedBy(srv, clisrv, io);
            if (tls) {
                assertTrue(cli.call(() -> cli.yuno().service("out").lastBottom().readAttr("secure_connected").asBoolean()));
            }

            int n = 20_000;
            for (int next = 0; next < n; ) {
                int from = next;
                int to = Math.min(n, next + 500);
                // A window of messages in flight, so that the tx queues never hold the whole run.
                assertTrue(Poll.until(() -> SeqClient.ECHOED.get() >= from - 4000, 20_000), "stalled: sent " + from
                        + ", received by the server " + SeqEcho.RECEIVED.get() + ", echoed " + SeqClient.ECHOED.get());
                cli.run(() -> client.send(from, to));
                next = to;
            }
            Poll.until(() -> SeqClient.ECHOED.get() >= n, 30_000);
            assertEquals(n, SeqEcho.RECEIVED.get(), "received by the server");
            assertEquals(n, SeqClient.ECHOED.get(), "echoed back to the client");
            assertEquals(0, SeqEcho.BAD.get(), "server: a message out of order or not byte-exact");
            assertEquals(0, SeqClient.BAD.get(), "client: an echo out of order or not byte-exact");
            assertEquals(0, SeqEcho.OFF_CORE.get() + SeqClient.OFF_CORE.get(), "an action ran off the core thread");
        }
        assertEquals(List.of(), ioThreadsLeft("t", 3000));
    }

    @Test
    void shouldSpreadAcceptedSocketsOverTheWorkerLoopsInDynamicMode() throws Exception {
        int port = Ports.free();
        String cfg = "{\"services\":[{\"name\":\"in\",\"gclass\":\"C_TEST_GATE\",\"autostart\":true,\"children\":["
                + "{\"name\":\"listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port + "\","
                + "\"channel_template\":{\"gclass\":\"C_CHANNEL\",\"children\":[{\"gclass\":\"C_TEST_FRAMER\"}]}}}]}]}";
        try (YunoRuntime srv = Support.runtime(cfg, 2)) {
            Recorder rec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, rec.gobj()));
            srv.start();
            List<Socket> socks = new ArrayList<>();
            try {
                for (int i = 0; i < 20; i++) {
                    Socket s = new Socket("127.0.0.1", port);
                    s.getOutputStream().write(Tcp4hFrames.of("m" + i));
                    socks.add(s);
                }
                assertTrue(rec.awaitCount(Ev.EV_ON_MESSAGE, 20, 10000));
                // Each connection's answer goes back on its own socket, through whichever worker serves it.
                for (int i = 0; i < 20; i++) {
                    Recorder.Event m = rec.await(Ev.EV_ON_MESSAGE, 5000);
                    ObjectNode reply = Kw.withGbuffer(Unpooled.copiedBuffer("re-" + m.payloadText(), StandardCharsets.UTF_8));
                    reply.putObject(Kw.TEMP).put("channel", m.kw.path(Kw.TEMP).path("channel").asText());
                    srv.run(() -> srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, reply, null));
                }
                for (int i = 0; i < 20; i++) {
                    socks.get(i).setSoTimeout(5000);
                    assertEquals("re-m" + i, Tcp4hFrames.read(socks.get(i).getInputStream()));
                }
                Set<EventLoop> loops = new HashSet<>();
                for (GObj ch : srv.call(() -> srv.yuno().service("in").children())) {
                    if (!"C_CHANNEL".equals(ch.gclassName())) continue;
                    GObj tcp = srv.call(ch::lastBottom);
                    assertServedBy(srv, tcp, 2);
                    loops.add(loopOf(srv, tcp));
                }
                assertEquals(2, loops.size(), "20 sockets spread over both worker loops");
            } finally {
                for (Socket s : socks) s.close();
            }
            assertTrue(rec.awaitCount(Ev.EV_ON_CLOSE, 20, 10000));
        }
        assertEquals(List.of(), ioThreadsLeft("t", 3000));
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldRecoverFromPeersThatVanishMidStream(int io) throws Exception {
        int port = Ports.free();
        try (LogCapture logs = new LogCapture(); YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1, null), io)) {
            Recorder rec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, rec.gobj()));
            srv.start();
            GObj clisrv = srv.call(() -> srv.yuno().service("in").child("in-1").lastBottom());

            // 1. A producer resets its connection in the middle of a stream of frames (and of a frame).
            byte[] frame = Tcp4hFrames.of("y".repeat(996));
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                OutputStream out = s.getOutputStream();
                out.write(frame);
                assertTrue(rec.awaitCount(Ev.EV_ON_MESSAGE, 1, 5000));
                for (int i = 0; i < 2000; i++) out.write(frame);
                out.write(frame, 0, 500);
                out.flush();
                s.setSoLinger(true, 0);
            }
            assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
            assertTrue(rec.count(Ev.EV_ON_MESSAGE) > 0, "frames before the reset were delivered");

            // 2. A consumer resets its connection while the gateway is sending it a large backlog.
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                srv.run(() -> {
                    for (int i = 0; i < 200; i++) {
                        ObjectNode kw = Kw.withGbuffer(Unpooled.wrappedBuffer(new byte[65536]));
                        kw.putObject(Kw.TEMP).put("channel", "in-1");
                        srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, kw, null);
                    }
                });
                InputStream in = s.getInputStream();
                byte[] buf = new byte[65536];
                long got = 0;
                while (got < 256 * 1024) {
                    int r = in.read(buf);
                    if (r < 0) break;
                    got += r;
                }
                assertTrue(got >= 256 * 1024, "the backlog was flowing: " + got);
                s.setSoLinger(true, 0);
            }
            assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
            assertEquals(0L, srv.call(() -> clisrv.readAttr("cur_tx_queue").asLong()), "nothing left queued");

            // 3. The channel serves the next connection both ways.
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.setSoTimeout(5000);
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                s.getOutputStream().write(Tcp4hFrames.of("after"));
                Recorder.Event m;
                do {
                    m = rec.await(Ev.EV_ON_MESSAGE, 5000);
                } while (m != null && !"after".equals(m.payloadText()));
                assertNotNull(m);
                assertEquals("after", m.payloadText());
                ObjectNode back = Kw.withGbuffer(Unpooled.copiedBuffer("back", StandardCharsets.UTF_8));
                back.putObject(Kw.TEMP).put("channel", "in-1");
                srv.run(() -> srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, back, null));
                assertEquals("back", Tcp4hFrames.read(s.getInputStream()));
            }
            assertEquals(0, logs.with("Event NOT DEFINED in state").size(), logs.all().toString());
        }
        assertEquals(List.of(), ioThreadsLeft("t", 3000));
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldSendEverythingWrittenBeforeADropAndThenTheFin(int io) throws Exception {
        try (ServerSocket ss = new ServerSocket(0)) {
            String cfg = "{\"services\":[{\"name\":\"cli\",\"gclass\":\"C_TCP\",\"kw\":{\"url\":\"tcp://127.0.0.1:"
                    + ss.getLocalPort() + "\",\"timeout_between_connections\":60000}}]}";
            try (YunoRuntime rt = Support.runtime(cfg, io)) {
                Recorder rec = Support.startClient(rt);
                try (Socket peer = ss.accept()) {
                    assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                    // One core batch: the writes (about 30 KB, within what the socket takes without queueing; a drop
                    // discards the tx queue) are not flushed yet, and with io_threads not yet with the worker, when
                    // the drop comes.
                    long queued = rt.call(() -> {
                        GObj g = rt.yuno().service("cli");
                        for (int i = 1; i <= 30; i++) g.send(Ev.EV_TX_DATA, Kw.withGbuffer(message(i)), null);
                        long q = g.readAttr("cur_tx_queue").asLong();
                        g.send(Ev.EV_DROP, null, null);
                        return q;
                    });
                    assertEquals(0L, queued);
                    peer.setSoTimeout(5000);
                    InputStream in = peer.getInputStream();
                    for (int i = 1; i <= 30; i++) {
                        byte[] want = expected(i);
                        assertTrue(java.util.Arrays.equals(want, in.readNBytes(want.length)), "message " + i);
                    }
                    assertEquals(-1, in.read(), "then the FIN");
                    assertNotNull(rec.await(Ev.EV_DISCONNECTED, 5000));
                }
            }
        }
        assertEquals(List.of(), ioThreadsLeft("t", 3000));
    }

    @Test
    void shouldTimeOutAConnectThatHangsOnAWorkerLoopAndTryAgain() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 1, java.net.InetAddress.getByName("127.0.0.1"));
             LogCapture logs = new LogCapture()) {
            // A listener that never accepts, its backlog full: further SYNs are dropped, so a connect hangs.
            List<Socket> fill = new ArrayList<>();
            boolean hangs = false;
            try {
                for (int i = 0; i < 16 && !hangs; i++) {
                    Socket s = new Socket();
                    fill.add(s);
                    try {
                        s.connect(new InetSocketAddress("127.0.0.1", ss.getLocalPort()), 300);
                    } catch (SocketTimeoutException e) {
                        hangs = true;
                    }
                }
                Assumptions.assumeTrue(hangs, "this kernel answers connects beyond the backlog");
                String cfg = Support.tcpConfig(ss.getLocalPort(), "\"timeout_connect\":300,\"timeout_between_connections\":100");
                ManualClock clock = new ManualClock();
                try (YunoRuntime rt = Support.runtime(cfg, 2, clock)) {
                    rt.start();
                    long t0 = System.nanoTime();
                    rt.run(() -> rt.yuno().service("cli").start());
                    // timeout_connect is Netty's own timer on the worker loop: real time, bounded by the await.
                    assertTrue(logs.await("Connection failed", 1, 5000), logs.all().toString());
                    long firstMs = logs.with("Connection failed").get(0).atMs - t0 / 1_000_000L;
                    assertTrue(firstMs >= 250, "failed by the timeout, after " + firstMs + " ms");
                    assertTrue(String.valueOf(logs.with("Connection failed").get(0).fields.get("cause")).contains("timed out"),
                            logs.with("Connection failed").get(0).toString());
                    // the reconnect wait is a gobj timer: moved by the clock, and the attempt after it times out too
                    assertEquals(100, TcpLoopbackTest.dueIn(rt, clock));
                    clock.advance(100);
                    assertTrue(logs.await("Connection failed", 2, 5000), logs.all().toString());
                }
            } finally {
                for (Socket s : fill) s.close();
            }
        }
        assertEquals(List.of(), ioThreadsLeft("t", 3000));
    }

    @Test
    void shouldEndTheWorkerThreadsWhenTheYunoStops() throws Exception {
        int port = Ports.free();
        YunoRuntime srv = YunoRuntime.builder().name("iostop").ioThreads(2).gclass(Support.specs())
                .config(Support.serverConfig(port, 2, null)).build();
        YunoRuntime cli = YunoRuntime.builder().name("clientside").ioThreads(2).gclass(Support.specs())
                .config(Support.clientConfig(port, null)).build();
        try {
            Recorder rec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, rec.gobj()));
            srv.start();
            cli.start();
            assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
            Socket raw = new Socket("127.0.0.1", port);   // a second, open connection when the yuno stops
            assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
            cli.run(() -> cli.yuno().service("out").send(Ev.EV_SEND_MESSAGE,
                    Kw.withGbuffer(Unpooled.copiedBuffer("x", StandardCharsets.UTF_8)), null));
            assertNotNull(rec.await(Ev.EV_ON_MESSAGE, 5000));
            assertEquals(2, Threads.ioWorkers("iostop").size(), Threads.ioWorkers("iostop").toString());
            srv.close();
            assertEquals(List.of(), ioThreadsLeft("iostop", 3000), "the server's worker threads ended");
            raw.setSoTimeout(5000);
            assertEquals(-1, raw.getInputStream().read(), "its sockets were closed");
            raw.close();
        } finally {
            srv.close();
            cli.close();
        }
        assertEquals(List.of(), ioThreadsLeft("clientside", 3000));
        assertEquals(List.of(), Threads.left("gatehouse-core-iostop-", 3000), "the core thread ended");
    }
}
