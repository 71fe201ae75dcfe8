// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.TrQueueFactory;
import io.gatehouse.channel.Channel;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.iogate.IoGate;
import io.gatehouse.qiogate.QIoGateGClass;
import io.gatehouse.tcp.TcpGClass;
import io.gatehouse.tcp.TcpSGClass;
import io.gatehouse.tcp4h.ProtTcp4hGClass;
import io.gatehouse.testkit.AckPeer;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The whole queued output stack over loopback TCP with the real trqueue: C_MQIOGATE > C_QIOGATE > C_IOGATE >
 * C_CHANNEL > C_PROT_TCP4H > C_TCP, towards peer yunos (C_IOGATE + C_TCP_S + channels + an acking gobj). The
 * gateway runs on a {@link ManualClock}: ack timeouts, nack delays and reconnects happen when a test advances it;
 * what the tests wait for in real time is socket I/O only.
 */
@Timeout(90)
class QueueLoopbackTest {
    private static final long WAIT = 15_000;
    /** The gateway's C_TCP reconnect delay (timeout_between_connections), ms. */
    private static final long RECONNECT_MS = 200;

    @TempDir
    Path tmp;

    private final List<String> logs = Collections.synchronizedList(new ArrayList<>());
    private final Consumer<LogCapture.Rec> sink = r -> logs.add(r.level + " " + r.gobj + ": " + r.msg + " " + r.fields);
    private LogCapture capture;
    private final List<YunoRuntime> runtimes = new ArrayList<>();
    private TrQueueFactoryImpl factory;
    private final ManualClock clock = new ManualClock();

    @BeforeEach
    void setUp() {
        capture = new LogCapture(sink);
        factory = new TrQueueFactoryImpl();
    }

    @AfterEach
    void tearDown() {
        Collections.reverse(runtimes);
        for (YunoRuntime rt : runtimes) rt.close();
        factory.close();
        if (capture != null) capture.close();
    }

    static GClassSpec<?>[] transport() {
        return new GClassSpec<?>[] {IoGate.SPEC, Channel.SPEC, new TcpGClass().spec(), new TcpSGClass().spec(),
            new ProtTcp4hGClass().spec()};
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Waits for socket I/O: polls {@code cond}, bounded in time. */
    static void eventually(BooleanSupplier cond, long timeoutMs, String what) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) throw new AssertionError("timed out waiting: " + what);
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }

    /**
     * Moves the gateway's clock one reconnect delay at a time until {@code cond} holds: each step lets C_TCP try
     * again, and the connection itself is I/O.
     */
    void reconnectUntil(BooleanSupplier cond, String what) {
        long deadline = System.currentTimeMillis() + WAIT;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) throw new AssertionError("timed out waiting: " + what);
            clock.advance(RECONNECT_MS);
            try {
                eventually(cond, 200, what);
            } catch (AssertionError notYet) {
                // the connect failed or is still on its way: try again after the next reconnect delay
            }
        }
    }

    /** A peer yuno: a server gate on {@code port} with one channel, and an acking gobj subscribed to it. */
    final class Peer {
        final YunoRuntime rt;
        final AckPeer acker;

        Peer(String name, int port) {
            String cfg = "{\"services\": [{\"name\": \"__input_side__\", \"gclass\": \"C_IOGATE\", "
                    + "\"children\": [{\"name\": \"server_port\", \"gclass\": \"C_TCP_S\", "
                    + "   \"kw\": {\"url\": \"tcp://127.0.0.1:" + port + "\"}}],"
                    + "\"[^^children^^]\": {\"__range__\": [1, 1], \"__vars__\": {}, "
                    + "  \"__content__\": {\"name\": \"in-(^^__range__^^)\", \"gclass\": \"C_CHANNEL\", \"children\": ["
                    + "     {\"name\": \"in-(^^__range__^^)\", \"gclass\": \"C_PROT_TCP4H\", \"kw\": {\"iamServer\": true}}]}}"
                    + "}]}";
            List<GClassSpec<?>> specs = new ArrayList<>(List.of(transport()));
            specs.add(AckPeer.SPEC);
            rt = YunoRuntime.builder().name(name).dataDir(tmp.resolve(name)).gclasses(specs).config(cfg).build();
            runtimes.add(rt);
            acker = rt.call(() -> {
                GObj g = rt.yuno().root().createVolatileChild("acker", AckPeer.GCLASS, null);
                rt.yuno().service("__input_side__").subscribe(null, g);
                return (AckPeer) g.behavior();
            });
            rt.start();
        }

        void stop() {
            rt.close();
        }
    }

    static String qstack(String name, int port, String qkw) {
        return "{\"name\": \"" + name + "\", \"gclass\": \"C_QIOGATE\", \"kw\": {\"topic_name\": \"gate_events\", "
                + "\"tkey\": \"tm\"" + (qkw.isEmpty() ? "" : ", " + qkw) + "}, \"children\": ["
                + "{\"name\": \"" + name + "\", \"gclass\": \"C_IOGATE\", \"children\": ["
                + "{\"name\": \"" + name + "\", \"gclass\": \"C_CHANNEL\", \"children\": ["
                + "{\"name\": \"" + name + "\", \"gclass\": \"C_PROT_TCP4H\", \"children\": ["
                + "{\"name\": \"" + name + "\", \"gclass\": \"C_TCP\", \"kw\": {\"url\": \"tcp://127.0.0.1:" + port
                + "\", \"timeout_between_connections\": " + RECONNECT_MS + "}}]}]}]}]}";
    }

    YunoRuntime client(Path data, String mkw, String qkw, int... ports) {
        List<String> children = new ArrayList<>();
        for (int i = 0; i < ports.length; i++) children.add(qstack("output-" + i, ports[i], qkw));
        String cfg = "{\"services\": [{\"name\": \"__output_side__\", \"gclass\": \"C_MQIOGATE\", \"kw\": " + mkw
                + ", \"children\": [" + String.join(", ", children) + "]}]}";
        List<GClassSpec<?>> specs = new ArrayList<>(List.of(transport()));
        specs.add(MqIoGate.SPEC);
        specs.add(new QIoGateGClass(factory).spec());
        YunoRuntime rt = YunoRuntime.builder().name("gw").dataDir(data).clock(clock).gclasses(specs).config(cfg)
                .build().start();
        runtimes.add(rt);
        return rt;
    }

    static int send(YunoRuntime rt, String json) {
        return rt.call(() -> rt.yuno().service("__output_side__").send(Ev.EV_SEND_MESSAGE, Kw.parse(json), null));
    }

    static JsonNode childStats(YunoRuntime rt, String child) {
        ObjectNode env = rt.command("stats-yuno service=__output_side__");
        assertEquals(0, env.get("result").asInt(), env.toString());
        return env.get("data").get(child);
    }

    static int inQueue(YunoRuntime rt, String child) {
        return childStats(rt, child).get("msgs_in_queue").asInt();
    }

    static boolean linkOpen(YunoRuntime rt, String child) {
        ObjectNode r = rt.command("command-yuno service=__output_side__ gobj=" + child + " command=view-queue");
        return r.path("data").path("link_open").asBoolean();
    }

    // --- the example configuration of the Yuneta gateway documentation ---

    @Test
    void shouldBuildTheSeedExampleUnchanged() throws IOException {
        String seed = "{\"services\": [{\n"
                + "    \"name\": \"__output_side__\",\n"
                + "    \"gclass\": \"C_MQIOGATE\",\n"
                + "    \"kw\": {\n"
                + "        \"method\": \"lastdigits\",\n"
                + "        \"digits\": 1,\n"
                + "        \"key\": \"id\"\n"
                + "    },\n"
                + "    \"children\": [\n"
                + seedChild(0) + ",\n" + seedChild(1) + "\n"
                + "    ]\n"
                + "}]}";
        List<GClassSpec<?>> specs = new ArrayList<>(List.of(transport()));
        specs.add(MqIoGate.SPEC);
        specs.add(new QIoGateGClass(null).spec());
        YunoRuntime rt = YunoRuntime.builder().name("gw").dataDir(tmp.resolve("seed")).clock(clock).gclasses(specs)
                .extension(TrQueueFactory.class, factory).config(seed).build();
        runtimes.add(rt);
        rt.start();
        ObjectNode tree = rt.command("view-gobj-tree service=__output_side__");
        JsonNode root = tree.get("data");
        assertEquals("C_MQIOGATE", root.get("gclass").asText());
        assertEquals(2, root.get("children").size());
        for (int i = 0; i < 2; i++) {
            JsonNode q = root.get("children").get(i);
            assertEquals("output-" + i, q.get("name").asText());
            assertEquals("C_QIOGATE", q.get("gclass").asText());
            assertEquals("output-" + i, q.get("bottom").asText(), "the single child is the bottom");
            assertEquals("C_IOGATE", q.get("children").get(0).get("gclass").asText());
        }
        // same topic_name, two queues: one database per gate, under the data directory
        assertTrue(Files.isDirectory(tmp.resolve("seed/queues/output-0/gate_events")));
        assertTrue(Files.isDirectory(tmp.resolve("seed/queues/output-1/gate_events")));
        // lastdigits as the seed says, while the destinations are unreachable (messages wait in their queue)
        send(rt, "{\"id\": \"dev-0042\", \"tm\": 1}");
        send(rt, "{\"id\": \"dev-0043\", \"tm\": 2}");
        send(rt, "{\"id\": \"dev-0044\", \"tm\": 3}");
        assertEquals(2, inQueue(rt, "output-0"));
        assertEquals(1, inQueue(rt, "output-1"));
        JsonNode st = childStats(rt, "output-0");
        for (String k : List.of("msgs_in_queue", "pending_acks", "oldest_pending_age_ms", "txMsgs", "rxMsgs", "txMsgsec")) {
            assertTrue(st.has(k), k + " in " + st);
        }
        ObjectNode vc = rt.command("view-channels service=__output_side__");
        assertEquals(0, vc.get("result").asInt(), vc.toString());
        assertEquals(4, vc.get("data").size(), vc.toString());
        assertTrue(vc.get("comment").asText().endsWith(": 2 channels"), vc.toString());
    }

    static String seedChild(int i) {
        return "        {\n"
                + "            \"name\": \"output-" + i + "\",\n"
                + "            \"gclass\": \"C_QIOGATE\",\n"
                + "            \"kw\": {\"topic_name\": \"gate_events\", \"tkey\": \"tm\"},\n"
                + "            \"children\": [\n"
                + "                {\"name\": \"output-" + i + "\", \"gclass\": \"C_IOGATE\", \"children\": [\n"
                + "                    {\"name\": \"output-" + i + "\", \"gclass\": \"C_CHANNEL\", \"children\": [\n"
                + "                        {\"name\": \"output-" + i + "\", \"gclass\": \"C_PROT_TCP4H\", \"children\": [\n"
                + "                            {\"name\": \"output-" + i + "\", \"gclass\": \"C_TCP\",\n"
                + "                             \"kw\": {\"url\": \"tcp://node-" + i + ":2000\"}}\n"
                + "                        ]}\n"
                + "                    ]}\n"
                + "                ]}\n"
                + "            ]\n"
                + "        }";
    }

    // --- outage ---

    @Test
    void shouldKeepFlowingToOneDestinationWhileTheOtherIsDownAndDeliverEverythingInOrderWhenItIsBack() {
        int p0 = freePort();
        int p1 = freePort();
        Peer peer0 = new Peer("peer0", p0);
        Peer peer1 = new Peer("peer1", p1);
        YunoRuntime gw = client(tmp.resolve("gw"), "{\"method\": \"broadcast\"}", "\"timeout_poll\": 100", p0, p1);
        eventually(() -> linkOpen(gw, "output-0") && linkOpen(gw, "output-1"), WAIT, "both links open");

        for (int i = 1; i <= 50; i++) assertEquals(0, send(gw, "{\"id\": \"" + i + "\"}"));
        assertTrue(peer0.acker.awaitReceived(50, WAIT));
        assertTrue(peer1.acker.awaitReceived(50, WAIT));
        eventually(() -> inQueue(gw, "output-0") == 0 && inQueue(gw, "output-1") == 0, WAIT, "both queues drained");

        peer1.stop();
        eventually(() -> !linkOpen(gw, "output-1"), WAIT, "link to peer1 closed");
        for (int i = 51; i <= 100; i++) assertEquals(0, send(gw, "{\"id\": \"" + i + "\"}"));
        assertTrue(peer0.acker.awaitReceived(100, WAIT), "the other destination keeps flowing");
        eventually(() -> inQueue(gw, "output-0") == 0, WAIT, "output-0 drained");
        assertEquals(50, inQueue(gw, "output-1"), "the queue of the stopped destination grows");
        assertEquals(expectedIds(1, 100), peer0.acker.ids());

        Peer peer1b = new Peer("peer1b", p1);
        reconnectUntil(() -> linkOpen(gw, "output-1"), "link to peer1 open again");
        assertTrue(peer1b.acker.awaitReceived(50, WAIT), "everything arrives when it is back");
        eventually(() -> inQueue(gw, "output-1") == 0, WAIT, "output-1 drained");
        assertEquals(expectedIds(51, 100), dedupInOrder(peer1b.acker.ids()));
        assertEquals(expectedIds(51, 100), peer1b.acker.ids().subList(0, 50), "in order, nothing lost");
    }

    // --- retries over the wire ---

    @Test
    void shouldSendAgainWhenTheAckDoesNotComeAndWhenTheResultIsNegative() {
        int p0 = freePort();
        Peer peer = new Peer("peer", p0);
        Set<String> seen = Collections.synchronizedSet(new HashSet<>());
        // "a": first copy not acked (ack timeout); "b": first copy nacked; "c": acked at once
        peer.acker.policy = m -> {
            String id = m.path("id").asText();
            boolean first = seen.add(id);
            if (!first || id.equals("c")) return 0;
            return id.equals("a") ? null : -1;
        };
        YunoRuntime gw = client(tmp.resolve("gw"), "{\"method\": \"lastdigits\"}",
                "\"timeout_poll\": 50, \"timeout_ack\": 1, \"retry_delay\": 200", p0);
        eventually(() -> linkOpen(gw, "output-0"), WAIT, "link open");
        send(gw, "{\"id\": \"a\"}");
        send(gw, "{\"id\": \"b\"}");
        send(gw, "{\"id\": \"c\"}");
        eventually(() -> childStats(gw, "output-0").get("nacks").asInt() == 1 && inQueue(gw, "output-0") == 2, WAIT,
                "c acked, b nacked, a unanswered");
        clock.advance(200);
        eventually(() -> inQueue(gw, "output-0") == 1, WAIT, "b sent again after retry_delay and acked");
        assertEquals(List.of("a", "b", "c", "b"), peer.acker.ids());
        clock.advance(799);
        assertEquals(4, peer.acker.ids().size(), "a waits for timeout_ack");
        clock.advance(1);
        eventually(() -> inQueue(gw, "output-0") == 0, WAIT, "a sent again after timeout_ack and acked");
        assertEquals(List.of("a", "b", "c", "b", "a"), peer.acker.ids());
        JsonNode st = childStats(gw, "output-0");
        assertEquals(2, st.get("retries").asInt(), st.toString());
        assertEquals(1, st.get("nacks").asInt(), st.toString());
        assertTrue(st.get("txMsgs").asInt() >= 5, "the bottom gate's counters: " + st);
    }

    // --- restart ---

    @Test
    void shouldSendUnackedMessagesAgainAfterARestart() {
        int p0 = freePort();
        Peer peer = new Peer("peer", p0);
        peer.acker.policy = m -> Integer.parseInt(m.path("id").asText()) % 2 == 0 ? 0 : null;
        Path data = tmp.resolve("gw");
        YunoRuntime gw = client(data, "{\"method\": \"lastdigits\"}", "", p0);
        eventually(() -> linkOpen(gw, "output-0"), WAIT, "link open");
        for (int i = 1; i <= 6; i++) send(gw, "{\"id\": \"" + i + "\"}");
        assertTrue(peer.acker.awaitReceived(6, WAIT));
        eventually(() -> inQueue(gw, "output-0") == 3, WAIT, "odd ones unacked");
        gw.close();
        runtimes.remove(gw);

        peer.acker.policy = m -> 0;
        YunoRuntime gw2 = client(data, "{\"method\": \"lastdigits\"}", "", p0);
        assertTrue(peer.acker.awaitReceived(9, WAIT));
        assertEquals(List.of("1", "3", "5"), peer.acker.ids().subList(6, 9));
        eventually(() -> inQueue(gw2, "output-0") == 0, WAIT, "acked after the restart");
    }

    // --- durability with the real store ---

    @Test
    void shouldTellDurableAfterTheGroupCommit() {
        YunoRuntime gw = client(tmp.resolve("gw"), "{\"method\": \"broadcast\"}", "\"fsync_policy\": \"interval\"",
                freePort(), freePort());
        Recorder sender = Recorder.create(gw, "sender");
        gw.run(() -> {
            ObjectNode kw = Kw.create().put("id", "1");
            kw.putObject(Kw.DURABLE).put("tag", "t1");
            assertEquals(0, gw.yuno().service("__output_side__").send(Ev.EV_SEND_MESSAGE, kw, sender.gobj()));
            assertEquals(0, sender.count(Ev.EV_ON_DURABLE), "never inside the send");
        });
        assertNotNull(sender.await(Ev.EV_ON_DURABLE, WAIT), "durable");
        assertEquals(1, inQueue(gw, "output-0"));
        assertEquals(1, inQueue(gw, "output-1"));
    }

    static List<String> expectedIds(int from, int to) {
        List<String> out = new ArrayList<>();
        for (int i = from; i <= to; i++) out.add(String.valueOf(i));
        return out;
    }

    static List<String> dedupInOrder(List<String> ids) {
        return new ArrayList<>(new LinkedHashSet<>(ids));
    }
}
