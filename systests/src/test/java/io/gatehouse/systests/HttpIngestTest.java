package io.gatehouse.systests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.mqiogate.MqIoGateGClass;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.MemTrQueueFactory;
import io.gatehouse.testkit.TestCerts;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * HTTP ingest of the demo gateway, in one process, driven by {@code curl} (a client nobody here wrote): one JSON
 * object, NDJSON batches, keep-alive, a chunked upload, the 4xx answers, 503 when the output is gone or the queue
 * refuses (appends that fail: a full disk), and malformed input on raw sockets (garbage, headers with no end, a huge
 * header, a truncated chunked body, a slowloris), each closed with an error log while the gateway keeps serving.
 * The queues are in memory here ({@link MemTrQueueFactory}, whose appends can be made to fail); KillHttpIT runs the
 * real store in a real process.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(120)
class HttpIngestTest {
    static final String TOKEN = "t0ken";

    private final MemTrQueueFactory queues = new MemTrQueueFactory();
    private final LogCapture logs = new LogCapture();
    private YunoRuntime rt;
    private Path work;
    private int http;

    @BeforeAll
    void startGateway() throws IOException {
        Assumptions.assumeTrue(curlVersion() != null, "curl is not installed (.ci/run installs it)");
        work = Files.createTempDirectory(Files.createDirectories(Path.of("target/systests")), "http-");
        int[] p = Gateways.freePorts(4);
        http = p[3];
        ObjectNode cfg = Gateways.demoConfig(Map.of("__input_port__", "" + p[0], "__sink0_port__", "" + p[1],
                "__sink1_port__", "" + p[2], "__http_port__", "" + http));
        ObjectNode kw = httpKw(cfg);   // "global" reaches services only: the channels' protocol is set in the template
        kw.put("bearer_token", TOKEN);
        kw.put("timeout_header", 1500);
        kw.put("timeout_body", 1500);
        kw.put("timeout_durable", 3000);
        rt = YunoRuntime.builder().name("httpdemo").dataDir(work.resolve("data")).upgradeGraceMs(500)
                .gclasses(Gateways.allGclasses(queues)).config(cfg).build().start();
    }

    /** The kw of C_PROT_HTTP_SR in the demo's HTTP channel template. */
    static ObjectNode httpKw(ObjectNode cfg) {
        for (JsonNode svc : cfg.get("services")) {
            if (!svc.get("name").asText().equals("__http_side__")) continue;
            return (ObjectNode) svc.get("[^^children^^]").get("__content__").get("children").get(0).get("kw");
        }
        throw new IllegalStateException("the demo config has no __http_side__");
    }

    @AfterAll
    void stopGateway() {
        if (rt != null) rt.close();
        logs.close();
    }

    // --- curl ---

    static String curlVersion() {
        try {
            Process p = new ProcessBuilder("curl", "--version").redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0 ? out.split("\n")[0] : null;
        } catch (IOException | InterruptedException e) {
            return null;
        }
    }

    /** Runs curl with {@code args} (-sS, a time limit and the token are added), answers stdout and stderr. */
    private String curl(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("curl", "-sS", "--max-time", "20"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).directory(work.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "curl finished");
        return out;
    }

    private String url(String path) {
        return "http://127.0.0.1:" + http + path;
    }

    private String auth() {
        return "Authorization: Bearer " + TOKEN;
    }

    private static int status(String curlI) {
        int i = curlI.lastIndexOf("HTTP/1.1 ");
        return Integer.parseInt(curlI.substring(i + 9, i + 12));
    }

    private static JsonNode body(String curlI) throws IOException {
        return Reliability.JSON.readTree(curlI.substring(curlI.lastIndexOf("\r\n\r\n") + 4));
    }

    private long delivered() {
        return stat("sink0", "distinct_ids") + stat("sink1", "distinct_ids");
    }

    private long stat(String service, String key) {
        return rt.command("stats-yuno service=" + service).get("data").get(key).asLong();
    }

    private void awaitDelivered(long n) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 20_000;
        while (delivered() < n && System.currentTimeMillis() < deadline) Thread.sleep(50);
        assertEquals(n, delivered(), "delivered to the sinks");
    }

    /**
     * Waits until both outputs hold nothing: a request answered 200 is durably queued, not yet delivered, so what an
     * earlier test had accepted may still reach a sink while the next one counts.
     */
    private void awaitOutputsDrained() throws InterruptedException {
        long deadline = System.currentTimeMillis() + 20_000;
        while (System.currentTimeMillis() < deadline) {
            JsonNode d = rt.command("stats-yuno service=__output_side__").get("data");
            if (d.get("output-0").get("msgs_in_queue").asLong() == 0 && d.get("output-1").get("msgs_in_queue").asLong() == 0) {
                return;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("the outputs did not drain within 20 s: " + rt.command("stats-yuno service=__output_side__"));
    }

    private Path ndjson(String name, int from, int count) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (int i = from; i < from + count; i++) sb.append("{\"id\":\"msg-").append(i).append("\",\"n\":").append(i).append("}\n");
        return Files.writeString(work.resolve(name), sb);
    }

    // --- the answers ---

    @Test
    void shouldAcceptJsonNdjsonKeepAliveAndChunkedUploadsAndDeliverThem() throws Exception {
        long before = delivered();
        String one = curl("-i", "-H", auth(), "-d", "{\"id\":\"msg-1\"}", url("/ingest"));
        assertEquals(200, status(one), one);
        assertEquals(1, body(one).get("accepted").asInt());

        ndjson("batch.ndjson", 10, 50);
        String batch = curl("-i", "-H", auth(), "--data-binary", "@batch.ndjson", url("/ingest"));
        assertEquals(200, status(batch), batch);
        assertEquals(50, body(batch).get("accepted").asInt());

        String keepAlive = curl("-v", "-H", auth(), "-d", "{\"id\":\"msg-100\"}", url("/ingest"),
                "--next", "-H", auth(), "-d", "{\"id\":\"msg-101\"}", url("/ingest"),
                "--next", "-H", auth(), "-d", "{\"id\":\"msg-102\"}", url("/ingest"));
        assertEquals(3, count(keepAlive, "< HTTP/1.1 200 OK"), keepAlive);
        assertEquals(2, count(keepAlive, "Re-using existing connection"), "one connection for three requests: " + keepAlive);

        ndjson("chunked.ndjson", 1000, 2000);
        String chunked = curl("-v", "-H", auth(), "-H", "Transfer-Encoding: chunked", "--data-binary", "@chunked.ndjson",
                url("/ingest"));
        assertTrue(chunked.contains("> Transfer-Encoding: chunked"), chunked);
        assertTrue(chunked.contains("{\"accepted\":2000}"), chunked);

        awaitDelivered(before + 1 + 50 + 3 + 2000);
    }

    /** Compresses {@code file} with Debian's gzip (a producer of gzip nobody here wrote) into {@code file.gz}. */
    private Path gzipped(Path file) throws Exception {
        Process p = new ProcessBuilder("gzip", "-k", "-f", file.toString()).redirectErrorStream(true).start();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), "gzip finished");
        assertEquals(0, p.exitValue(), new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        return file.resolveSibling(file.getFileName() + ".gz");
    }

    @Test
    void shouldTakeAGzipBodyAndRefuseOneThatInflatesPastTheLimit() throws Exception {
        awaitOutputsDrained();
        long before = delivered();
        Path z = gzipped(ndjson("gzip.ndjson", 20_000, 500));
        String ok = curl("-i", "-H", auth(), "-H", "Content-Encoding: gzip", "--data-binary", "@" + z.getFileName(), url("/ingest"));
        assertEquals(200, status(ok), ok);
        assertEquals(500, body(ok).get("accepted").asInt());
        awaitDelivered(before + 500);

        // 4 MiB of one JSON string: a few KiB compressed, four times max_body_size once decompressed
        Files.writeString(work.resolve("bomb.ndjson"), "{\"id\":\"msg-29999\"}\n{\"pad\":\"" + "x".repeat(4 << 20) + "\"}\n");
        Path bomb = gzipped(work.resolve("bomb.ndjson"));
        assertTrue(Files.size(bomb) < 64 * 1024, "small on the wire: " + Files.size(bomb));
        String refused = curl("-i", "-H", auth(), "-H", "Content-Encoding: gzip", "--data-binary", "@" + bomb.getFileName(),
                url("/ingest"));
        assertEquals(413, status(refused), refused);
        assertEquals("body too large once decompressed", body(refused).get("error").asText(), refused);
        String br = curl("-i", "-H", auth(), "-H", "Content-Encoding: br", "-d", "{}", url("/ingest"));
        assertEquals(415, status(br), br);
        Thread.sleep(300);
        assertEquals(before + 500, delivered(), "nothing of the refused requests reached a sink");
    }

    @Test
    void shouldAnswer4xxWithoutStoringAnything() throws Exception {
        awaitOutputsDrained();
        long before = delivered();
        String noToken = curl("-i", "-d", "{\"id\":\"msg-9000\"}", url("/ingest"));
        assertEquals(401, status(noToken), noToken);
        assertTrue(noToken.toLowerCase().contains("www-authenticate: bearer"), noToken);

        Files.writeString(work.resolve("bad.ndjson"), "{\"id\":\"msg-9001\"}\n{\"id\":\"msg-9002\"}\n{\"id\": msg-9003}\n");
        String bad = curl("-i", "-H", auth(), "--data-binary", "@bad.ndjson", url("/ingest"));
        assertEquals(400, status(bad), bad);
        assertEquals(3, body(bad).get("line").asInt(), bad);

        Files.write(work.resolve("huge.bin"), new byte[(1 << 20) + 10]);
        String huge = curl("-i", "-H", auth(), "--data-binary", "@huge.bin", url("/ingest"));
        assertEquals(413, status(huge), huge);

        assertEquals(404, status(curl("-i", "-H", auth(), "-d", "{}", url("/elsewhere"))));
        assertEquals(405, status(curl("-i", "-H", auth(), "-X", "PUT", "-d", "{}", url("/ingest"))));
        String health = curl("-i", url("/health"));
        assertEquals(200, status(health), health);
        Thread.sleep(300);
        assertEquals(before, delivered(), "nothing of a refused request reached a sink");
    }

    @Test
    void shouldAnswer503WithRetryAfterWhileTheOutputIsGoneAndAcceptAgainAfter() throws Exception {
        // the output's bundle goes and no revision comes within the upgrade grace: its service goes down
        List<String> gone = rt.gclassesGone(List.of("C_MQIOGATE"));
        try {
            assertTrue(gone.contains("C_MQIOGATE"), gone.toString());
            long until = System.currentTimeMillis() + 20_000;
            while (rt.service("__output_side__") != null && System.currentTimeMillis() < until) Thread.sleep(50);
            String refused = curl("-i", "-H", auth(), "-d", "{\"id\":\"msg-5000\"}", url("/ingest"));
            assertEquals(503, status(refused), refused);
            assertTrue(refused.toLowerCase().contains("retry-after: 2"), refused);
            String health = curl("-i", url("/health"));
            assertEquals(503, status(health), health);
            assertTrue(body(health).get("down").toString().contains("__output_side__"), health);
        } finally {
            rt.gclassArrived(new MqIoGateGClass().spec());
        }
        long deadline = System.currentTimeMillis() + 20_000;
        String again;
        do {
            Thread.sleep(200);
            again = curl("-i", "-H", auth(), "-d", "{\"id\":\"msg-5000\"}", url("/ingest"));
        } while (status(again) != 200 && System.currentTimeMillis() < deadline);
        assertEquals(200, status(again), "the client's retry is accepted once the output is back: " + again);
        assertEquals(200, status(curl("-i", url("/health"))));
    }

    @Test
    void shouldAnswer503WhenTheQueueCannotStore() throws Exception {
        queues.failAppends = true;
        try {
            Path batch = ndjson("refused.ndjson", 6000, 10);
            String refused = curl("-i", "-H", auth(), "--data-binary", "@" + batch.getFileName(), url("/ingest"));
            assertEquals(503, status(refused), refused);
            assertEquals(0, body(refused).has("accepted") ? body(refused).get("accepted").asInt() : 0);
        } finally {
            queues.failAppends = false;
        }
        String retried = curl("-i", "-H", auth(), "--data-binary", "@refused.ndjson", url("/ingest"));
        assertEquals(200, status(retried), retried);
        assertEquals(10, body(retried).get("accepted").asInt());
    }

    @Test
    void shouldServeHttpsWithTheListenersCertificate() throws Exception {
        TestCerts certs = TestCerts.generate("localhost");
        Files.writeString(work.resolve("ca.pem"), certs.certPem);
        int[] p = Gateways.freePorts(4);
        ObjectNode cfg = Gateways.demoConfig(Map.of("__input_port__", "" + p[0], "__sink0_port__", "" + p[1],
                "__sink1_port__", "" + p[2], "__http_port__", "" + p[3]));
        for (JsonNode svc : cfg.get("services")) {
            if (!svc.get("name").asText().equals("__http_side__")) continue;
            ObjectNode listener = (ObjectNode) svc.get("children").get(0).get("kw");
            listener.put("url", "https://127.0.0.1:" + p[3]);
            listener.putObject("crypto").put("ssl_certificate", certs.certPem).put("ssl_certificate_key", certs.keyPem);
        }
        try (YunoRuntime tls = YunoRuntime.builder().name("https").dataDir(work.resolve("tls-data"))
                .gclasses(Gateways.allGclasses(new MemTrQueueFactory())).config(cfg).build().start()) {
            String ok = curl("-i", "--cacert", "ca.pem", "-d", "{\"id\":\"msg-8000\"}", "https://127.0.0.1:" + p[3] + "/ingest");
            assertEquals(200, status(ok), ok);
            assertEquals(1, body(ok).get("accepted").asInt());
            String plain = curl("-i", "-d", "{}", "http://127.0.0.1:" + p[3] + "/ingest");
            assertTrue(!plain.contains("HTTP/1.1 200"), "plain HTTP is not served on the TLS port: " + plain);
        }
    }

    // --- malformed input ---

    /** Sends {@code bytes}, then answers what came back until the gateway closed (null if it kept it open). */
    private String probe(byte[] bytes, long waitMs) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", http), 2000);
            OutputStream o = s.getOutputStream();
            o.write(bytes);
            o.flush();
            s.setSoTimeout((int) waitMs);
            InputStream in = s.getInputStream();
            StringBuilder got = new StringBuilder();
            try {
                for (int c; (c = in.read()) >= 0; ) got.append((char) c);
                return got.toString();
            } catch (SocketTimeoutException e) {
                return null;
            } catch (IOException reset) {
                return got.append("(reset)").toString();
            }
        }
    }

    @Test
    void shouldCloseMalformedConnectionsWithAnErrorLogAndKeepServing() throws Exception {
        byte[] garbage = new byte[512];
        new java.util.Random(15).nextBytes(garbage);
        System.arraycopy("\r\n\r\n".getBytes(StandardCharsets.US_ASCII), 0, garbage, garbage.length - 4, 4);
        String[][] cases = {
            {"garbage", null, "Bad HTTP request, closing"},
            {"headers with no end", "POST /ingest HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n", "Timeout waiting HTTP request headers, closing"},
            {"huge header", "POST /ingest HTTP/1.1\r\nX-Big: " + "a".repeat(20_000) + "\r\n\r\n", "Bad HTTP request, closing"},
            {"truncated chunked body", "POST /ingest HTTP/1.1\r\nAuthorization: Bearer " + TOKEN
                    + "\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n{\"id\":\"msg-7000\"}\n{\"id\":\"m", "Timeout waiting HTTP request body, closing"},
            {"bad chunk size", "POST /ingest HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n", "Bad HTTP request body, closing"},
        };
        for (String[] c : cases) {
            int errors = logs.count(c[2]);
            byte[] bytes = c[1] == null ? garbage : c[1].getBytes(StandardCharsets.ISO_8859_1);
            String answer = probe(bytes, 10_000);
            assertTrue(answer != null, c[0] + ": the gateway closes the connection");
            assertTrue(logs.await(c[2], errors + 1, 5000), c[0] + ": error log '" + c[2] + "'");
            String ok = curl("-i", "-H", auth(), "-d", "{\"id\":\"msg-7100\"}", url("/ingest"));
            assertEquals(200, status(ok), c[0] + ": the gateway keeps serving: " + ok);
        }
        // slowloris: a header dripped a byte at a time, slower than timeout_header, while a client is served
        try (Socket slow = new Socket()) {
            slow.connect(new InetSocketAddress("127.0.0.1", http), 2000);
            long t0 = System.currentTimeMillis();
            OutputStream o = slow.getOutputStream();
            boolean closed = false;
            for (byte b : "POST /ingest HTTP/1.1\r\nHost: slow\r\n".getBytes(StandardCharsets.US_ASCII)) {
                try {
                    o.write(b);
                    o.flush();
                } catch (IOException e) {
                    closed = true;
                    break;
                }
                assertEquals(200, status(curl("-i", "-H", auth(), "-d", "{\"id\":\"msg-7200\"}", url("/ingest"))));
                slow.setSoTimeout(100);
                try {
                    if (slow.getInputStream().read() < 0) {
                        closed = true;
                        break;
                    }
                } catch (SocketTimeoutException stillOpen) {
                    // dripping on
                } catch (IOException reset) {
                    closed = true;
                    break;
                }
                if (System.currentTimeMillis() - t0 > 10_000) break;
            }
            assertTrue(closed, "the slowloris connection is closed by timeout_header");
            assertTrue(System.currentTimeMillis() - t0 < 6000, "within about timeout_header");
        }
        assertTrue(logs.count("Timeout waiting HTTP request headers, closing") >= 2);
        // a chunked body cut by the client's close
        int cut = logs.count("HTTP connection closed in the middle of a request");
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", http), 2000);
            s.getOutputStream().write(("POST /ingest HTTP/1.1\r\nAuthorization: Bearer " + TOKEN
                    + "\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n{\"id\":\"msg-7300\"}\n{\"id\"")
                    .getBytes(StandardCharsets.US_ASCII));
            s.getOutputStream().flush();
            Thread.sleep(200);
        }
        assertTrue(logs.await("HTTP connection closed in the middle of a request", cut + 1, 5000));
        assertEquals(200, status(curl("-i", "-H", auth(), "-d", "{\"id\":\"msg-7301\"}", url("/ingest"))));
    }

    private static int count(String text, String needle) {
        int n = 0;
        for (int i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) n++;
        return n;
    }
}
