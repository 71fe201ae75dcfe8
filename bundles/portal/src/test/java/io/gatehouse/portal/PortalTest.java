// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.portal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.Registry;
import io.gatehouse.core.ControlServer;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.tcp.TcpGClass;
import io.gatehouse.tcp.TcpSGClass;
import io.gatehouse.tcp4h.ProtTcp4hGClass;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Hubs in one JVM, each with its control endpoint, linked by C_PORTALs over real TCP4H on loopback. */
class PortalTest {
    private final List<AutoCloseable> open = new ArrayList<>();
    private final java.util.Map<YunoRuntime, ControlServer> servers = new java.util.HashMap<>();

    @AfterEach
    void tearDown() throws Exception {
        for (int i = open.size() - 1; i >= 0; i--) open.get(i).close();
    }

    /** A hub: its yuno (with the given services) and its control endpoint on {@code port}. */
    private YunoRuntime hub(String name, int port, String token, String services) throws IOException {
        YunoRuntime rt = YunoRuntime.builder().name(name)
                .gclass(new TcpGClass().spec(), new TcpSGClass().spec(), new ProtTcp4hGClass().spec(), Portal.SPEC)
                .config("{\"services\": [" + services + "]}").build().start();
        open.add(rt);
        ControlServer cs = new ControlServer(rt, token, false);
        cs.start("127.0.0.1", port);
        open.add(cs);
        servers.put(rt, cs);
        return rt;
    }

    private static String portal(String name, int port, String extra) {
        return "{\"name\": \"" + name + "\", \"gclass\": \"C_PORTAL\", \"kw\": {\"url\": \"tcp://127.0.0.1:" + port
                + "\", \"timeout_between_connections\": 100" + extra + "}}";
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static void await(String what, BooleanSupplier cond) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 10_000;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) throw new AssertionError("timeout waiting: " + what);
            Thread.sleep(20);
        }
    }

    private static boolean linked(YunoRuntime rt, String hub) {
        return rt.call(() -> rt.yuno().lookup(Registry.class).view()).path("links").has(hub);
    }

    private static JsonNode ask(Socket s, String json) throws IOException {
        DataOutputStream out = new DataOutputStream(s.getOutputStream());
        byte[] b = json.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length + 4);
        out.write(b);
        out.flush();
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

    @Test
    void shouldRouteACommandFromAThroughBToCAndBackWithTheDefaultPortal() throws Exception {
        int pa = freePort();
        int pb = freePort();
        int pc = freePort();
        YunoRuntime c = hub("C", pc, null, "");
        YunoRuntime b = hub("B", pb, null, portal("to_c", pc, ", \"hub\": \"C\""));
        YunoRuntime a = hub("A", pa, null, portal("to_b", pb, ", \"alias\": \"DEFAULT\""));
        await("A linked to B", () -> linked(a, "B"));
        await("B linked to C", () -> linked(b, "C"));
        assertTrue(linked(b, "A") && linked(c, "B"), "the accepting sides learnt the names from the hellos");

        Recorder rec = Recorder.create(a, "rec");
        a.run(() -> a.yuno().lookup(Registry.class).deliver(cmd("C", Registry.YUNO, "view-registry", 1)));
        Recorder.Event e = rec.await("EV_ON_MESSAGE", 10_000);
        assertNotNull(e);
        assertEquals("C", e.kw.path("reply").path("data").path("hub").asText(), e.toString());

        // `gatehouse cmd --hub C` on A's endpoint: a plain request with "hub".
        try (Socket s = new Socket("127.0.0.1", pa)) {
            s.setSoTimeout(10_000);
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
            s.setSoTimeout(10_000);
            JsonNode hello = ask(s, "{\"__portal__\": \"hello\", \"hub\": \"X\", \"token\": \"s3cret\"}");
            assertEquals("B", hello.path("hub").asText());
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            byte[] junk = "{not json".getBytes(StandardCharsets.UTF_8);
            out.writeInt(junk.length + 4);
            out.write(junk);
            JsonNode reply = ask(s, "{\"to\": {\"hub\": \"B\", \"service\": \"__yuno__\"}, \"from\": {\"hub\": \"X\"},"
                    + " \"type\": \"cmd\", \"command\": \"list-services\", \"id\": 5}");
            assertEquals("reply", reply.path("type").asText(), reply.toString());
            assertEquals(5, reply.path("id").asInt());
            assertEquals(0, reply.path("reply").path("result").asInt());
        }
        try (Socket s = new Socket("127.0.0.1", pb)) {
            s.setSoTimeout(10_000);
            JsonNode refused = ask(s, "{\"__portal__\": \"hello\", \"hub\": \"Y\", \"token\": \"wrong\"}");
            assertEquals("error", refused.path("__portal__").asText(), refused.toString());
            assertEquals(-1, s.getInputStream().read(), "the connection is closed");
        }
        int pa = freePort();
        YunoRuntime a = hub("A", pa, null, portal("to_b", pb, ", \"token\": \"wrong\""));
        Thread.sleep(500);
        assertEquals(0, a.command("stats-yuno service=to_b").path("data").path("connected").asInt());
    }

    @Test
    void shouldComeBackAfterTheOtherHubRestarts() throws Exception {
        int pa = freePort();
        int pb = freePort();
        YunoRuntime b = hub("B", pb, null, "");
        YunoRuntime a = hub("A", pa, null, portal("to_b", pb, ""));
        await("A linked to B", () -> linked(a, "B"));
        Recorder rec = Recorder.create(a, "rec");

        // B goes away: a command for B is answered at once with an error.
        servers.get(b).close();
        b.close();
        await("A sees the link closed", () -> !linked(a, "B"));
        a.run(() -> a.yuno().lookup(Registry.class).deliver(cmd("B", Registry.YUNO, "help", 1)));
        Recorder.Event e = rec.await("EV_ON_MESSAGE", 10_000);
        assertNotNull(e);
        assertEquals(-1, e.kw.path("reply").path("result").asInt(), e.toString());

        // B is back on the same port: the portal reconnects, says hello again and the route works.
        hub("B", pb, null, "");
        await("A linked to B again", () -> linked(a, "B"));
        a.run(() -> a.yuno().lookup(Registry.class).deliver(cmd("B", Registry.YUNO, "help", 2)));
        e = rec.await("EV_ON_MESSAGE", 10_000);
        assertNotNull(e);
        assertEquals(0, e.kw.path("reply").path("result").asInt(), e.toString());
        assertEquals(2, a.command("stats-yuno service=to_b").path("data").path("connxs").asInt());
    }
}
