package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import io.gatehouse.api.Kw;
import io.gatehouse.testkit.ManualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static io.gatehouse.core.ObservabilityTest.http;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The live page's HTTP side: assets, API, token, events, and what bad clients get. */
class WebServerTest {
    private static final String CONFIG = "{\"services\": ["
            + "{\"name\": \"in\", \"gclass\": \"C_RATED\"},"
            + "{\"name\": \"out\", \"gclass\": \"C_RATED\"},"
            + "{\"name\": \"svc\", \"gclass\": \"C_NODE\", \"kw\": {\"label\": \"x\"}}]}";

    private ManualClock clock;
    private YunoRuntime rt;

    @BeforeEach
    void setUp() {
        clock = new ManualClock();
        rt = YunoRuntime.builder().name("web").clock(clock).gclass(TestGClasses.NODE, ObservabilityTest.RATED)
                .config(CONFIG).build().start();
    }

    @AfterEach
    void tearDown() {
        rt.close();
    }

    private static String body(String response) {
        return response.substring(response.indexOf("\r\n\r\n") + 4);
    }

    @Test
    void shouldServeThePageItsAssetsAndTheViewFromTheCoreBundle() throws Exception {
        try (MetricsServer ms = new MetricsServer(rt)) {
            int port = ms.start("127.0.0.1", 0);
            String page = http(port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
            assertTrue(page.startsWith("HTTP/1.1 200 OK"), page);
            assertTrue(page.contains("Content-Type: text/html"), page);
            assertTrue(page.contains("Content-Security-Policy: default-src 'self'"), "nothing external can load: " + page);
            assertTrue(body(page).contains("<script src=\"app.js\""), page);
            assertFalse(body(page).matches("(?s).*(https?:)?//[a-z].*"), "no external URL in the page");
            assertTrue(http(port, "GET /app.js HTTP/1.1\r\n\r\n").contains("EventSource"));
            assertTrue(http(port, "GET /app.css HTTP/1.1\r\n\r\n").contains("text/css"));
            clock.advance(2000);
            JsonNode v = Kw.MAPPER.readTree(body(http(port, "GET /api/view HTTP/1.1\r\n\r\n")));
            assertEquals("web", v.get("yuno").asText());
            List<String> names = new ArrayList<>();
            v.get("services").forEach(s -> names.add(s.get("name").asText()));
            assertEquals(List.of("in", "out", "svc"), names);
            assertEquals("C_RATED", v.get("services").get(0).get("gclass").asText());
            assertTrue(v.get("services").get(0).get("running").asBoolean());
            assertTrue(v.get("process").get("heap_used").asLong() > 0);
            JsonNode h = Kw.MAPPER.readTree(body(http(port, "GET /api/history HTTP/1.1\r\n\r\n")));
            assertEquals(Sampler.HISTORY_SAMPLES, h.get("capacity").asInt());
            assertEquals(2, h.get("samples").asInt(), "two ticks in two seconds of the yuno's clock");
            assertTrue(h.get("series").has(Sampler.rxId("in")), h.toString());
            JsonNode d = Kw.MAPPER.readTree(body(http(port, "GET /api/gobj?service=svc HTTP/1.1\r\n\r\n")));
            assertEquals("C_NODE", d.get("gclass").asText());
            assertEquals("hello", d.get("commands").get(0).get("name").asText());
            assertFalse(d.get("commands").get(0).get("read_only").asBoolean(), "hello is not view-*: it counts as a write");
            assertTrue(d.get("tree").has("children"), d.toString());
            assertTrue(http(port, "GET /api/gobj?service=nope HTTP/1.1\r\n\r\n").startsWith("HTTP/1.1 404"));
        }
    }

    @Test
    void shouldAnswer404ForUnknownPathsAndRefuseOtherHosts() throws Exception {
        try (MetricsServer ms = new MetricsServer(rt)) {
            int port = ms.start("127.0.0.1", 0);
            for (String p : List.of("/nope", "/api", "/api/", "/metrics/x", "/../etc/passwd", "/app.js.map")) {
                assertTrue(http(port, "GET " + p + " HTTP/1.1\r\n\r\n").startsWith("HTTP/1.1 404"), p);
            }
            assertTrue(http(port, "GET / HTTP/1.1\r\nHost: evil.example:9464\r\n\r\n").startsWith("HTTP/1.1 403"),
                    "a rebinding name is refused on a loopback bind");
            assertTrue(http(port, "GET / HTTP/1.1\r\nHost: localhost:9464\r\n\r\n").startsWith("HTTP/1.1 200"));
            assertTrue(http(port, "GET / HTTP/1.1\r\nHost: [::1]:9464\r\n\r\n").startsWith("HTTP/1.1 200"));
            assertTrue(http(port, "GET /metrics HTTP/1.1\r\nHost: prometheus.example\r\n\r\n").startsWith("HTTP/1.1 200"),
                    "metrics hold numbers only and keep answering any name");
            assertTrue(http(port, "garbage\r\n\r\n").startsWith("HTTP/1.1 400"));
        }
    }

    @Test
    void shouldAskForTheTokenWhenOneIsSetAndRunWritesOnlyWithIt() throws Exception {
        try (MetricsServer ms = new MetricsServer(rt, "s3cret")) {
            int port = ms.start("127.0.0.1", 0);
            for (String p : List.of("/", "/app.js", "/api/view", "/api/history", "/api/events", "/api/gobj?service=svc")) {
                String r = http(port, "GET " + p + " HTTP/1.1\r\n\r\n");
                assertTrue(r.startsWith("HTTP/1.1 401"), p + ": " + r);
                assertTrue(r.contains("WWW-Authenticate: Bearer"), r);
            }
            assertTrue(http(port, "GET /?token=wrong HTTP/1.1\r\n\r\n").startsWith("HTTP/1.1 401"));
            assertTrue(http(port, "GET /nope HTTP/1.1\r\n\r\n").startsWith("HTTP/1.1 401"), "no map of paths without the token");
            assertTrue(http(port, "GET /metrics HTTP/1.1\r\n\r\n").startsWith("HTTP/1.1 200"), "metrics stay open");
            String login = http(port, "GET /?token=s3cret HTTP/1.1\r\n\r\n");
            assertTrue(login.startsWith("HTTP/1.1 303"), login);
            assertTrue(login.contains("Location: /\r\n"), login);
            assertTrue(login.contains("Set-Cookie: gatehouse_token=s3cret; Path=/; HttpOnly; SameSite=Strict"), login);
            assertTrue(http(port, "GET /api/view HTTP/1.1\r\nCookie: a=b; gatehouse_token=s3cret\r\n\r\n").startsWith("HTTP/1.1 200"));
            assertTrue(http(port, "GET /api/view HTTP/1.1\r\nAuthorization: Bearer s3cret\r\n\r\n").startsWith("HTTP/1.1 200"));

            String read = command(port, "Cookie: gatehouse_token=s3cret\r\n", "{\"command\":\"stats-yuno\",\"service\":\"svc\"}");
            assertTrue(read.startsWith("HTTP/1.1 200"), read);
            assertTrue(body(read).contains("\"result\":0"), read);
            String writeWithCookieOnly = command(port, "Cookie: gatehouse_token=s3cret\r\n",
                    "{\"command\":\"write-attr\",\"service\":\"svc\",\"kw\":{\"attr\":\"label\",\"value\":\"y\"}}");
            assertTrue(writeWithCookieOnly.startsWith("HTTP/1.1 403"), "a cookie another site's form could send is not enough: " + writeWithCookieOnly);
            String reset = command(port, "Cookie: gatehouse_token=s3cret\r\n", "{\"command\":\"stats-yuno\",\"service\":\"svc\",\"kw\":{\"stats\":\"__reset__\"}}");
            assertTrue(reset.startsWith("HTTP/1.1 403"), "a reset is a write: " + reset);
            String write = command(port, "X-Gatehouse-Token: s3cret\r\n",
                    "{\"command\":\"write-attr\",\"service\":\"svc\",\"kw\":{\"attr\":\"label\",\"value\":\"y\"}}");
            assertTrue(write.startsWith("HTTP/1.1 200"), write);
            assertEquals("y", rt.call(() -> rt.service("svc").readAttr("label").asText()));
        }
    }

    @Test
    void shouldRefuseWritesWhenNoTokenIsConfigured() throws Exception {
        try (MetricsServer ms = new MetricsServer(rt)) {
            int port = ms.start("127.0.0.1", 0);
            String r = command(port, "X-Gatehouse-Token: anything\r\n", "{\"command\":\"command-yuno\",\"service\":\"svc\",\"kw\":{\"command\":\"hello\"}}");
            assertTrue(r.startsWith("HTTP/1.1 403"), r);
            assertTrue(body(r).contains("read-only"), r);
            String ok = command(port, "", "{\"command\":\"view-gobj-tree\",\"service\":\"svc\"}");
            assertTrue(ok.startsWith("HTTP/1.1 200") && body(ok).contains("\"C_NODE\""), ok);
            assertTrue(command(port, "", "not json").startsWith("HTTP/1.1 400"));
            String big = "POST /api/command HTTP/1.1\r\nContent-Length: " + (MetricsServer.MAX_REQUEST_BODY + 1) + "\r\n\r\n";
            assertTrue(http(port, big).startsWith("HTTP/1.1 413"));
        }
    }

    private static String command(int port, String headers, String json) throws IOException {
        byte[] b = json.getBytes(StandardCharsets.UTF_8);
        return http(port, "POST /api/command HTTP/1.1\r\nContent-Type: application/json\r\n" + headers
                + "Content-Length: " + b.length + "\r\n\r\n" + json);
    }

    @Test
    @Timeout(60)
    void shouldSendOneViewASecondToEveryOpenPage() throws Exception {
        try (MetricsServer ms = new MetricsServer(rt)) {
            int port = ms.start("127.0.0.1", 0);
            List<Socket> pages = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    Socket s = new Socket("127.0.0.1", port);
                    s.setSoTimeout(10_000);
                    s.getOutputStream().write("GET /api/events HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
                    pages.add(s);
                }
                String first = readUntil(pages.get(0).getInputStream(), "retry: 2000\n\n");
                assertTrue(first.contains("Content-Type: text/event-stream"), first);
                for (int i = 1; i < 3; i++) readUntil(pages.get(i).getInputStream(), "retry: 2000\n\n");
                long deadline = System.currentTimeMillis() + 10_000;
                while (System.currentTimeMillis() < deadline && ms.openPages() < 3) Thread.sleep(10);
                rt.run(() -> rt.yuno().service("in").send("EV_RX", null, null));
                clock.advance(1000);
                for (Socket s : pages) {
                    String frame = readUntil(s.getInputStream(), "\n\n");
                    assertTrue(frame.startsWith("data: {"), frame);
                    JsonNode v = Kw.MAPPER.readTree(frame.substring(6).trim());
                    assertEquals("web", v.get("yuno").asText());
                    assertTrue(v.get("values").has(Sampler.rxId("in")), frame);
                }
            } finally {
                for (Socket s : pages) s.close();
            }
        }
    }

    private static String readUntil(InputStream in, String end) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        while (!b.toString(StandardCharsets.UTF_8).endsWith(end)) {
            int c = in.read();
            if (c < 0) throw new IOException("closed after " + b);
            b.write(c);
        }
        return b.toString(StandardCharsets.UTF_8);
    }

    @Test
    @Timeout(60)
    void shouldCloseSlowlorisClientsAndKeepAnsweringMetrics() throws Exception {
        try (MetricsServer ms = new MetricsServer(rt)) {
            int port = ms.start("127.0.0.1", 0);
            List<Socket> slow = new ArrayList<>();
            try {
                // Many clients that start a request and never finish it.
                for (int i = 0; i < MetricsServer.MAX_INCOMPLETE + 20; i++) {
                    Socket s = new Socket("127.0.0.1", port);
                    s.setSoTimeout(5000);
                    s.getOutputStream().write("GET /metrics HTTP/1.1\r\nX-Slow: ".getBytes(StandardCharsets.ISO_8859_1));
                    s.getOutputStream().flush();
                    slow.add(s);
                }
                long t0 = System.nanoTime();
                String r = http(port, "GET /metrics HTTP/1.1\r\n\r\n");
                assertTrue(r.startsWith("HTTP/1.1 200"), "a scrape still gets in: " + r);
                assertTrue((System.nanoTime() - t0) / 1_000_000 < 3000, "and at once");
                int closed = 0;
                for (Socket s : slow.subList(0, 20)) {
                    try {
                        if (s.getInputStream().read() < 0) closed++;
                    } catch (SocketTimeoutException stillOpen) {
                        // not evicted
                    } catch (IOException reset) {
                        closed++;
                    }
                }
                assertEquals(20, closed, "the oldest incomplete requests were closed to make room");
                // A header that never ends is cut at the limit, whatever its pace.
                try (Socket s = new Socket("127.0.0.1", port)) {
                    s.setSoTimeout(5000);
                    OutputStream o = s.getOutputStream();
                    o.write("GET / HTTP/1.1\r\n".getBytes(StandardCharsets.ISO_8859_1));
                    byte[] chunk = ("X-Big: " + "y".repeat(1000) + "\r\n").getBytes(StandardCharsets.ISO_8859_1);
                    // Nine slow chunks of a kilobyte: past the 8 KiB limit, and nothing more after it.
                    for (int i = 0; i < 9; i++) {
                        o.write(chunk);
                        o.flush();
                        Thread.sleep(20);
                    }
                    ByteArrayOutputStream b = new ByteArrayOutputStream();
                    try {
                        s.getInputStream().transferTo(b);
                    } catch (IOException reset) {
                        // closed after the answer
                    }
                    assertTrue(b.toString(StandardCharsets.UTF_8).startsWith("HTTP/1.1 431"), b.toString(StandardCharsets.UTF_8));
                }
                assertTrue(http(port, "GET /metrics HTTP/1.1\r\n\r\n").startsWith("HTTP/1.1 200"));
                assertTrue(rt.call(() -> rt.yuno().service("svc").isRunning()), "the yuno never noticed");
            } finally {
                for (Socket s : slow) s.close();
            }
        }
    }
}
