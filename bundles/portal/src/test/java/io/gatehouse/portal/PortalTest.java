// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.portal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.Registry;
import io.gatehouse.core.ControlServer;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.tcp.TcpGClass;
import io.gatehouse.tcp.TcpSGClass;
import io.gatehouse.tcp4h.ProtTcp4hGClass;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Revision;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Hubs in one JVM, each with its control endpoint, linked by C_PORTALs over real TCP4H on loopback. Hub A (the one
 * with the portal under test) runs on a {@link ManualClock}: its hello timeouts and reconnects happen when a test
 * advances it; what the tests wait for in real time is socket I/O.
 */
@Timeout(60)
class PortalTest {
    private static final long WAIT_MS = 10_000;
    /** The portals' timeout_between_connections (their C_TCP's reconnect delay), ms. */
    private static final long RECONNECT_MS = 100;

    private final ManualClock clock = new ManualClock();
    private final List<AutoCloseable> open = new ArrayList<>();
    private final Map<YunoRuntime, ControlServer> servers = new HashMap<>();
    private final List<String> logs = Collections.synchronizedList(new ArrayList<>());
    private final Consumer<LogCapture.Rec> sink = r -> logs.add(r.level + " " + r.gobj + " " + r.msg + " " + r.fields);
    private LogCapture capture;

    @BeforeEach
    void setUp() {
        capture = new LogCapture(sink);
    }

    @AfterEach
    void tearDown() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) open.get(i).close();
        if (capture != null) capture.close();
    }

    /** A hub: its yuno (with the given services) and its control endpoint on {@code port}. */
    private YunoRuntime hub(String name, int port, String token, String services) throws IOException {
        return hub(name, port, token, services, null);
    }

    private YunoRuntime hub(String name, int port, String token, String services, ManualClock c) throws IOException {
        YunoRuntime.Builder b = YunoRuntime.builder().name(name)
                .gclass(new TcpGClass().spec(), new TcpSGClass().spec(), new ProtTcp4hGClass().spec(), Portal.SPEC)
                .config("{\"services\": [" + services + "]}");
        if (c != null) b.clock(c);
        YunoRuntime rt = b.build().start();
        open.add(rt);
        ControlServer cs = new ControlServer(rt, token, false);
        cs.start("127.0.0.1", port);
        open.add(cs);
        servers.put(rt, cs);
        return rt;
    }

    private static String portal(String name, int port, String extra) {
        return "{\"name\": \"" + name + "\", \"gclass\": \"C_PORTAL\", \"kw\": {\"url\": \"tcp://127.0.0.1:" + port
                + "\", \"timeout_between_connections\": " + RECONNECT_MS + extra + "}}";
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** Waits for socket I/O: polls {@code cond}, bounded in time. */
    private static boolean poll(BooleanSupplier cond, long ms) throws InterruptedException {
        long deadline = System.currentTimeMillis() + ms;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) return false;
            Thread.sleep(10);
        }
        return true;
    }

    private static void await(String what, BooleanSupplier cond) throws InterruptedException {
        if (!poll(cond, WAIT_MS)) throw new AssertionError("timeout waiting: " + what);
    }

    /** Moves A's clock one reconnect delay at a time until {@code cond} holds (each step lets C_TCP try again). */
    private void reconnectUntil(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) throw new AssertionError("timeout waiting: " + what);
            clock.advance(RECONNECT_MS);
            poll(cond, 200);
        }
    }

    private int count(String text) {
        synchronized (logs) {
            return (int) logs.stream().filter(l -> l.contains(text)).count();
        }
    }

    private static boolean linked(YunoRuntime rt, String hub) {
        return rt.call(() -> rt.yuno().lookup(Registry.class).view()).path("links").has(hub);
    }

    private static void write(Socket s, String json) throws IOException {
        DataOutputStream out = new DataOutputStream(s.getOutputStream());
        byte[] b = json.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length + 4);
        out.write(b);
        out.flush();
    }

    private static JsonNode ask(Socket s, String json) throws IOException {
        write(s, json);
        return read(s);
    }

    private static JsonNode read(Socket s) throws IOException {
        DataInputStream in = new DataInputStream(s.getInputStream());
        int len = in.readInt();
        byte[] a = new byte[len - 4];
        in.readFully(a);
        return Kw.MAPPER.readTree(a);
    }

    private static ObjectNode cmd(String hub, String service, String command, long id) {
        ObjectNode m = Kw.create();
        ObjectNode to = m.putObject("to");
        to.put("hub", hub);
        to.put("service", service);
        m.putObject("from").put("service", "rec");
        m.put("type", "cmd");
        m.put("command", command);
        m.put("id", id);
        return m;
    }

    /** The other end of a portal played by the test: a plain TCP server whose connections the test drives. */
    private static final class FakeHub implements AutoCloseable {
        final ServerSocket server = new ServerSocket();
        final BlockingQueue<Socket> accepted = new LinkedBlockingQueue<>();
        final List<Socket> all = Collections.synchronizedList(new ArrayList<>());
        final Thread acceptor;

        FakeHub(int port) throws IOException {
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress("127.0.0.1", port));
            acceptor = new Thread(() -> {
                try {
                    while (true) {
                        Socket s = server.accept();
                        s.setSoTimeout((int) WAIT_MS);
                        all.add(s);
                        accepted.add(s);
                    }
                } catch (IOException closed) {
                    // the test closed the server
                }
            }, "fake-hub");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        /** The next connection, waiting for it as long as A's clock is moved on for reconnects. */
        Socket next(PortalTest t) throws InterruptedException {
            long deadline = System.currentTimeMillis() + WAIT_MS;
            Socket s = accepted.poll(200, TimeUnit.MILLISECONDS);
            while (s == null) {
                if (System.currentTimeMillis() > deadline) throw new AssertionError("no connection from the portal");
                t.clock.advance(RECONNECT_MS);
                s = accepted.poll(200, TimeUnit.MILLISECONDS);
            }
            return s;
        }

        @Override
        public void close() throws Exception {
            server.close();
            synchronized (all) {
                for (Socket s : all) s.close();
            }
            acceptor.join(WAIT_MS);
        }
    }

    /** Reads until the portal closes the connection. */
    private static void awaitClosed(Socket s) throws IOException {
        while (s.getInputStream().read() >= 0) {
            // what the portal sent before it dropped the link
        }
    }

    @Test
    void shouldRouteACommandFromAThroughBToCAndBackWithTheDefaultPortal() throws Exception {
        int pa = freePort();
        int pb = freePort();
        int pc = freePort();
        YunoRuntime c = hub("C", pc, null, "");
        YunoRuntime b = hub("B", pb, null, portal("to_c", pc, ", \"hub\": \"C\""));
        YunoRuntime a = hub("A", pa, null, portal("to_b", pb, ", \"alias\": \"DEFAULT\""), clock);
        await("A linked to B", () -> linked(a, "B"));
        await("B linked to C", () -> linked(b, "C"));
        assertTrue(linked(b, "A") && linked(c, "B"), "the accepting sides learnt the names from the hellos");

        Recorder rec = Recorder.create(a, "rec");
        a.run(() -> a.yuno().lookup(Registry.class).deliver(cmd("C", Registry.YUNO, "view-registry", 1)));
        Recorder.Event e = rec.await("EV_ON_MESSAGE", WAIT_MS);
        assertNotNull(e);
        assertEquals("C", e.kw.path("reply").path("data").path("hub").asText(), e.toString());

        // `gatehouse cmd --hub C` on A's endpoint: a plain request with "hub".
        try (Socket s = new Socket("127.0.0.1", pa)) {
            s.setSoTimeout((int) WAIT_MS);
            JsonNode r = ask(s, "{\"command\": \"view-registry\", \"hub\": \"C\"}");
            assertEquals("C", r.path("data").path("hub").asText(), r.toString());
            JsonNode unknownService = ask(s, "{\"command\": \"stats-yuno service=nope\", \"hub\": \"C\"}");
            assertEquals(-1, unknownService.path("result").asInt());
            assertTrue(unknownService.path("comment").asText().contains("'nope' not found"), unknownService.toString());
            JsonNode unknownHub = ask(s, "{\"command\": \"help\", \"hub\": \"Z\"}");
            assertTrue(unknownHub.path("comment").asText().contains("'Z' not reachable from hub 'B'"), unknownHub.toString());
            JsonNode unknownCommand = ask(s, "{\"command\": \"no-such\", \"hub\": \"B\"}");
            assertTrue(unknownCommand.path("comment").asText().contains("not available"), unknownCommand.toString());
            JsonNode local = ask(s, "{\"command\": \"stats-yuno service=to_b\"}");
            assertEquals(1, local.path("data").path("connected").asInt(), local.toString());
        }
    }

    @Test
    void shouldKeepAPortalUpAfterMalformedMessagesAndRefuseAWrongToken() throws Exception {
        int pb = freePort();
        hub("B", pb, "s3cret", "");
        try (Socket s = new Socket("127.0.0.1", pb)) {
            s.setSoTimeout((int) WAIT_MS);
            JsonNode hello = ask(s, "{\"__portal__\": \"hello\", \"hub\": \"X\", \"token\": \"s3cret\"}");
            assertEquals("B", hello.path("hub").asText());
            write(s, "{not json");
            JsonNode reply = ask(s, "{\"to\": {\"hub\": \"B\", \"service\": \"__yuno__\"}, \"from\": {\"hub\": \"X\"},"
                    + " \"type\": \"cmd\", \"command\": \"list-services\", \"id\": 5}");
            assertEquals("reply", reply.path("type").asText(), reply.toString());
            assertEquals(5, reply.path("id").asInt());
            assertEquals(0, reply.path("reply").path("result").asInt());
        }
        try (Socket s = new Socket("127.0.0.1", pb)) {
            s.setSoTimeout((int) WAIT_MS);
            JsonNode refused = ask(s, "{\"__portal__\": \"hello\", \"hub\": \"Y\", \"token\": \"wrong\"}");
            assertEquals("error", refused.path("__portal__").asText(), refused.toString());
            assertEquals(-1, s.getInputStream().read(), "the connection is closed");
        }
    }

    @Test
    void shouldSayARefusedHelloOnceWhileItIsRefusedAtEveryReconnect() throws Exception {
        int pb = freePort();
        hub("B", pb, "s3cret", "");
        int refusalsBefore = count("Portal refused");
        YunoRuntime a = hub("A", freePort(), null, portal("to_b", pb, ", \"token\": \"wrong\""), clock);
        for (int i = 1; i <= 3; i++) {
            int n = refusalsBefore + i;
            reconnectUntil("refusal " + i, () -> count("Portal refused") >= n);
        }
        await("A heard the refusal", () -> count("The other hub refused the portal") == 1);
        assertEquals(1, count("The other hub refused the portal"), "once for three refused hellos: " + logs);
        assertEquals(0, a.command("stats-yuno service=to_b").path("data").path("connected").asInt());
        assertEquals(0, a.command("stats-yuno service=to_b").path("data").path("connxs").asInt());
    }

    @Test
    void shouldDropAnUnansweredHelloAfterTimeoutHelloAndSayItOnceUntilTheLink() throws Exception {
        int pb = freePort();
        FakeHub silent = new FakeHub(pb);
        open.add(silent);
        YunoRuntime a = hub("A", freePort(), null, portal("to_b", pb, ", \"timeout_hello\": 1000"), clock);
        for (int round = 1; round <= 2; round++) {
            Socket s = silent.next(this);
            assertEquals("hello", read(s).path("__portal__").asText(), "the portal says hello first");
            clock.advance(999);
            assertTrue(a.call(() -> a.service("to_b").inState(Portal.ST_WAIT_HELLO)), "still waiting for the answer");
            clock.advance(1);
            awaitClosed(s);
        }
        assertEquals(1, count("The other hub did not answer the hello"), "once for two unanswered hellos: " + logs);
        silent.close();

        YunoRuntime b = hub("B", pb, null, "");
        reconnectUntil("A linked to B", () -> linked(a, "B"));
        assertTrue(linked(b, "A"));
        assertEquals(1, count("Portal linked after failed hellos"), logs.toString());
        assertEquals(1, count("unanswered=2"), logs.toString());
        clock.advance(60_000);
        assertTrue(linked(a, "B"), "no hello timeout once linked");
    }

    @Test
    void shouldSayFramesThatAreNotJsonOnceAndDeliverTheNextMessage() throws Exception {
        int pb = freePort();
        FakeHub other = new FakeHub(pb);
        open.add(other);
        YunoRuntime a = hub("A", freePort(), null, portal("to_x", pb, ""), clock);
        Socket s = other.next(this);
        read(s);
        write(s, "{\"__portal__\": \"hello\", \"hub\": \"X\"}");
        await("A linked to X", () -> linked(a, "X"));
        for (int i = 0; i < 3; i++) write(s, "{not json " + i);
        write(s, "{\"to\": {\"hub\": \"A\", \"service\": \"__yuno__\"}, \"from\": {\"hub\": \"X\"},"
                + " \"type\": \"cmd\", \"command\": \"list-services\", \"id\": 7}");
        JsonNode reply = read(s);
        while (reply.path("id").asInt() != 7) reply = read(s);
        assertEquals("reply", reply.path("type").asText(), reply.toString());
        assertEquals(1, count("Portal message is not a JSON object"), logs.toString());
        assertEquals(1, count("Portal frames are JSON again {bad_frames=3}"), logs.toString());
        assertEquals(3, a.command("stats-yuno service=to_x").path("data").path("bad_msgs").asInt());
    }

    @Test
    void shouldComeBackAfterTheOtherHubRestarts() throws Exception {
        int pa = freePort();
        int pb = freePort();
        YunoRuntime b = hub("B", pb, null, "");
        YunoRuntime a = hub("A", pa, null, portal("to_b", pb, ""), clock);
        await("A linked to B", () -> linked(a, "B"));
        Recorder rec = Recorder.create(a, "rec");

        // B goes away: a command for B is answered at once with an error.
        servers.get(b).close();
        b.close();
        await("A sees the link closed", () -> !linked(a, "B"));
        a.run(() -> a.yuno().lookup(Registry.class).deliver(cmd("B", Registry.YUNO, "help", 1)));
        Recorder.Event e = rec.await("EV_ON_MESSAGE", WAIT_MS);
        assertNotNull(e);
        assertEquals(-1, e.kw.path("reply").path("result").asInt(), e.toString());

        // B is back on the same port: the portal reconnects, says hello again and the route works.
        hub("B", pb, null, "");
        reconnectUntil("A linked to B again", () -> linked(a, "B"));
        a.run(() -> a.yuno().lookup(Registry.class).deliver(cmd("B", Registry.YUNO, "help", 2)));
        e = rec.await("EV_ON_MESSAGE", WAIT_MS);
        assertNotNull(e);
        assertEquals(0, e.kw.path("reply").path("result").asInt(), e.toString());
        assertEquals(2, a.command("stats-yuno service=to_b").path("data").path("connxs").asInt());
    }

    @Test
    void shouldTraceRegistryMessagesBothWays() throws Exception {
        int pb = freePort();
        hub("B", pb, null, "");
        YunoRuntime a = hub("A", freePort(), null, portal("to_b", pb, ""), clock);
        await("A linked to B", () -> linked(a, "B"));
        a.command("trace-on service=to_b level=messages");
        Recorder rec = Recorder.create(a, "rec");
        a.run(() -> a.yuno().lookup(Registry.class).deliver(cmd("B", Registry.YUNO, "help", 3)));
        assertNotNull(rec.await("EV_ON_MESSAGE", WAIT_MS));
        assertEquals(1, count("C_PORTAL^to_b -> message"), logs.toString());
        assertEquals(1, count("C_PORTAL^to_b <- message"), logs.toString());
    }

    // --- Live upgrade ---

    private static void upgrade(YunoRuntime rt) {
        Revision.handOver(rt, Revision.next(Portal.SPEC), 1);
    }

    private static JsonNode askB(YunoRuntime a, Recorder rec, long id) {
        int before = rec.count("EV_ON_MESSAGE");
        a.run(() -> a.yuno().lookup(Registry.class).deliver(cmd("B", Registry.YUNO, "view-registry", id)));
        assertTrue(rec.awaitCount("EV_ON_MESSAGE", before + 1, WAIT_MS), "an answer from B");
        return rec.events("EV_ON_MESSAGE").get(before).kw.path("reply");
    }

    @Test
    void shouldKeepTheLinkAndTheRegistryRoutesAcrossAnUpgrade() throws Exception {
        int pb = freePort();
        YunoRuntime b = hub("B", pb, null, "");
        YunoRuntime a = hub("A", freePort(), null, portal("to_b", pb, ", \"alias\": \"DEFAULT\""), clock);
        await("A linked to B", () -> linked(a, "B"));
        Recorder rec = Recorder.create(a, "rec");
        assertEquals("B", askB(a, rec, 1).path("data").path("hub").asText());
        JsonNode viewBefore = a.call(() -> a.yuno().lookup(Registry.class).view());
        int unlinkedAtB = count("Hub unlinked");

        upgrade(a);

        assertTrue(a.call(() -> a.service("to_b").inState(io.gatehouse.api.St.ST_CONNECTED)), "still connected");
        assertEquals(viewBefore, a.call(() -> a.yuno().lookup(Registry.class).view()),
                "the registry knows the same link, hub and alias");
        assertEquals("B", askB(a, rec, 2).path("data").path("hub").asText(), "commands go on over the same link");
        assertEquals(1, a.command("stats-yuno service=to_b").path("data").path("connxs").asInt(), "no reconnect");
        assertEquals(unlinkedAtB, count("Hub unlinked"), "neither side saw the link close");

        // B goes and comes back: the portal reconnects as the new revision, and the registry knows it from then on.
        servers.get(b).close();
        b.close();
        await("A sees the link closed", () -> !linked(a, "B"));
        hub("B", pb, null, "");
        reconnectUntil("A linked to B again", () -> linked(a, "B"));
        assertEquals("B", askB(a, rec, 3).path("data").path("hub").asText());
        assertEquals(2, a.command("stats-yuno service=to_b").path("data").path("connxs").asInt());
        JsonNode view = a.call(() -> a.yuno().lookup(Registry.class).view());
        assertEquals(1, view.path("links").path("B").size(), "one link to B, the old one forgotten: " + view);
        assertTrue(view.path("link_aliases").has(Registry.DEFAULT), view.toString());
    }

    @Test
    void shouldDropAnUnansweredHelloAtTheOldDeadlineAfterAnUpgrade() throws Exception {
        int pb = freePort();
        FakeHub silent = new FakeHub(pb);
        open.add(silent);
        YunoRuntime a = hub("A", freePort(), null, portal("to_b", pb, ", \"timeout_hello\": 1000"), clock);
        Socket s = silent.next(this);
        assertEquals("hello", read(s).path("__portal__").asText());
        clock.advance(400);
        upgrade(a);
        clock.advance(599);
        assertTrue(a.call(() -> a.service("to_b").inState(Portal.ST_WAIT_HELLO)), "still waiting: the deadline is 1000");
        clock.advance(1);
        awaitClosed(s);
        Socket again = silent.next(this);
        assertEquals("hello", read(again).path("__portal__").asText());
        upgrade(a);
        clock.advance(1000);
        awaitClosed(again);
        assertEquals(1, count("The other hub did not answer the hello"), "the streak went on across upgrades: " + logs);
    }

    @Test
    void shouldReconnectWhenTheNewRevisionTakesNoState() throws Exception {
        int pb = freePort();
        hub("B", pb, null, "");
        YunoRuntime a = hub("A", freePort(), null, portal("to_b", pb, ""), clock);
        await("A linked to B", () -> linked(a, "B"));
        ObjectNode report = a.gclassArrived(Revision.of(Portal.SPEC, 0, Portal::new));
        assertEquals("to_b", report.get("rebuilt").get(0).get("service").asText(), report.toString());
        assertEquals(1, count("Live upgrade not possible, service rebuilt from its config"), logs.toString());
        reconnectUntil("A linked to B again", () -> linked(a, "B"));
        assertEquals(1, a.command("stats-yuno service=to_b").path("data").path("connxs").asInt(),
                "a new gobj, a new connection");
    }
}
