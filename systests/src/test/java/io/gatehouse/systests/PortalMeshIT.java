package io.gatehouse.systests;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.core.YunoRuntime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three containers (child processes of the built distribution) on loopback, linked by portals: A has a portal to
 * B aliased DEFAULT, B a portal to C, C is the demo gateway. Checked from outside, with the real CLI: a command
 * for C given to A travels A → B → C and its answer comes back; an unknown service, an unknown command and an
 * unknown hub are answered with errors; the metrics endpoint of C is scraped while messages flow through it;
 * B is killed (the portals drop) and started again (they come back).
 */
class PortalMeshIT {
    private static final long WAIT_MS = 45_000;

    /** One container; only this process is ever killed, by its own handle. */
    static final class Hub implements AutoCloseable {
        final String name;
        final Path config;
        final Path data;
        final Path log;
        final int control;
        final int metrics;
        Process process;

        Hub(Path work, String name, ObjectNode config, int control, int metrics) throws IOException {
            this.name = name;
            this.config = work.resolve(name + ".json");
            this.data = work.resolve("data-" + name);
            this.log = work.resolve(name + ".log");
            this.control = control;
            this.metrics = metrics;
            Files.writeString(this.config, config.toPrettyString());
        }

        void start() throws IOException {
            Path dist = GatewayProcess.dist();
            process = new ProcessBuilder(java(), "-Xmx192m", "-XX:TieredStopAtLevel=1", "-Dgatehouse.home=" + dist,
                    "-Dgatehouse.metrics.port=" + metrics,
                    "-cp", dist.resolve("bin/gatehouse-launcher.jar") + File.pathSeparator
                            + dist.resolve("bin/org.apache.felix.framework.jar"),
                    "io.gatehouse.launcher.Main", "run", config.toString(), "--data", data.toString(),
                    "--control", String.valueOf(control))
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        }

        void awaitListening() throws InterruptedException {
            long deadline = System.currentTimeMillis() + WAIT_MS;
            while (System.currentTimeMillis() < deadline) {
                if (!process.isAlive()) throw new IllegalStateException(name + " exited with " + process.exitValue() + ", see " + log);
                try (Socket s = new Socket()) {
                    s.connect(new InetSocketAddress("127.0.0.1", control), 200);
                    return;
                } catch (IOException notYet) {
                    Thread.sleep(100);
                }
            }
            throw new IllegalStateException(name + " not listening on " + control + ", see " + log);
        }

        void kill9() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }

        @Override
        public void close() throws InterruptedException {
            if (process != null && process.isAlive()) kill9();
        }
    }

    static String java() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    /** {@code gatehouse cmd ...} as a child process; answers exit code and output. */
    static String[] cli(String... args) throws IOException, InterruptedException {
        Path dist = GatewayProcess.dist();
        List<String> cmd = new ArrayList<>(List.of(java(), "-XX:TieredStopAtLevel=1", "-Xshare:auto",
                "-cp", dist.resolve("bin/gatehouse-launcher.jar").toString(), "io.gatehouse.launcher.Main", "cmd"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream in = p.getInputStream()) {
            in.transferTo(out);
        }
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("gatehouse cmd " + String.join(" ", args) + " did not end");
        }
        return new String[] {String.valueOf(p.exitValue()), out.toString(StandardCharsets.UTF_8)};
    }

    /** Runs the CLI until its answer passes {@code ok} (links take a moment to come up). */
    static String[] cliUntil(Predicate<String[]> ok, String... args) throws IOException, InterruptedException {
        long deadline = System.currentTimeMillis() + WAIT_MS;
        String[] r;
        do {
            r = cli(args);
            if (ok.test(r)) return r;
            Thread.sleep(200);
        } while (System.currentTimeMillis() < deadline);
        throw new AssertionError("never got the expected answer to gatehouse cmd " + String.join(" ", args)
                + "; last: exit " + r[0] + "\n" + r[1]);
    }

    static String scrape(int port) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            OutputStream o = s.getOutputStream();
            o.write("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
            o.flush();
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            s.getInputStream().transferTo(b);
            String r = b.toString(StandardCharsets.UTF_8);
            assertTrue(r.startsWith("HTTP/1.1 200 OK"), r);
            return r.substring(r.indexOf("\r\n\r\n") + 4);
        }
    }

    static long sample(String metrics, String series) {
        Matcher m = Pattern.compile("^" + Pattern.quote(series) + " (\\S+)$", Pattern.MULTILINE).matcher(metrics);
        return m.find() ? (long) Double.parseDouble(m.group(1)) : -1;
    }

    private static ObjectNode hubConfig(String name, String portal, int port, String extra) {
        String services = portal == null ? "" : "{\"name\": \"" + portal + "\", \"gclass\": \"C_PORTAL\", \"kw\": {"
                + "\"url\": \"tcp://127.0.0.1:" + port + "\", \"timeout_between_connections\": 300" + extra + "}}";
        return YunoRuntime.parseConfig("{\"yuno\": {\"yuno_name\": \"" + name + "\"}, \"services\": [" + services + "]}");
    }

    @Test
    @Timeout(180)
    void shouldRouteCommandsAcrossThreeContainersAndSurviveAPortalDrop() throws Exception {
        Path work = Files.createTempDirectory(Files.createDirectories(Path.of("target/systests")), "mesh-");
        int[] p = Gateways.freePorts(9);
        int ca = p[0], cb = p[1], cc = p[2], ma = p[3], mb = p[4], mc = p[5], input = p[6], sink0 = p[7], sink1 = p[8];
        ObjectNode cConfig = YunoRuntime.parseConfig(Files.readString(Path.of(System.getProperty("gatehouse.demo.config", "../runtime/felix/src/main/dist/conf/gatehouse.json"))));
        ObjectNode vars = (ObjectNode) cConfig.get("__json_config_variables__");
        Map.of("__input_port__", input, "__sink0_port__", sink0, "__sink1_port__", sink1)
                .forEach((k, v) -> vars.put(k, String.valueOf(v)));
        ((ObjectNode) cConfig.get("yuno")).put("yuno_name", "C");

        try (Hub c = new Hub(work, "C", cConfig, cc, mc);
             Hub b = new Hub(work, "B", hubConfig("B", "to_c", cc, ", \"hub\": \"C\""), cb, mb);
             Hub a = new Hub(work, "A", hubConfig("A", "to_b", cb, ", \"alias\": \"DEFAULT\""), ca, ma)) {
            c.start();
            b.start();
            a.start();
            a.awaitListening();
            b.awaitListening();
            c.awaitListening();
            String port = String.valueOf(ca);

            // The CLI against A itself, then a command for C given to A: A → (DEFAULT) B → C and back.
            String[] local = cli("--port", port, "view-registry");
            assertEquals("0", local[0], local[1]);
            assertTrue(local[1].contains("\"hub\": \"A\""), local[1]);
            String[] remote = cliUntil(r -> r[0].equals("0"), "--port", port, "--hub", "C", "view-registry");
            assertTrue(remote[1].contains("\"hub\": \"C\""), remote[1]);
            assertTrue(remote[1].contains("__output_side__"), "C's services are listed: " + remote[1]);
            String[] stats = cli("--port", port, "--hub", "C", "stats-yuno service=__output_side__");
            assertEquals("0", stats[0], stats[1]);
            assertTrue(stats[1].contains("msgs_in_queue"), stats[1]);

            // Errors: an unknown service, an unknown command, a bad parameter, an unknown hub. The links stay up.
            String[] noService = cli("--port", port, "--hub", "C", "stats-yuno service=nope");
            assertEquals("1", noService[0], noService[1]);
            assertTrue(noService[1].contains("'nope' not found"), noService[1]);
            String[] noCommand = cli("--port", port, "--hub", "C", "no-such-command");
            assertEquals("1", noCommand[0], noCommand[1]);
            String[] badParam = cli("--port", port, "--hub", "B", "trace-on service=to_c");
            assertEquals("1", badParam[0], badParam[1]);
            String[] noHub = cli("--port", port, "--hub", "Z", "help");
            assertEquals("1", noHub[0], noHub[1]);
            assertTrue(noHub[1].contains("'Z' not reachable from hub 'B'"), noHub[1]);
            assertEquals("0", cli("--port", port, "--hub", "C", "help")[0], "the links are still up");

            // Metrics of C scraped while messages flow through it (the demo gateway: input → queues → sinks).
            AtomicBoolean stop = new AtomicBoolean();
            Thread traffic = new Thread(() -> {
                for (int i = 0; !stop.get() && i < 200; i++) {
                    Gateways.send("--port", "" + input, "--count", "500", "--start", "" + (i * 500), "--window", "20",
                            "--timeout", "20", "--quiet");
                }
            }, "mesh-traffic");
            traffic.setDaemon(true);
            traffic.start();
            try {
                String rx = "gatehouse_rxMsgs_total{yuno=\"C\",service=\"__input_side__\",gclass=\"C_IOGATE\"}";
                long deadline = System.currentTimeMillis() + WAIT_MS;
                String first = scrape(mc);
                while (sample(first, rx) <= 0 && System.currentTimeMillis() < deadline) {
                    Thread.sleep(100);
                    first = scrape(mc);
                }
                Thread.sleep(1200);
                String second = scrape(mc);
                assertTrue(sample(second, rx) > sample(first, rx), "input counter moves during traffic:\n" + second);
                assertTrue(sample(second, "gatehouse_connections{yuno=\"C\",service=\"__input_side__\",gclass=\"C_IOGATE\"}") >= 1, second);
                for (String s : List.of("msgs_in_queue", "pending_acks", "oldest_pending_age_ms")) {
                    assertTrue(sample(second, "gatehouse_" + s + "{yuno=\"C\",service=\"__output_side__\",gobj=\"output-0\",gclass=\"C_QIOGATE\"}") >= 0,
                            s + " of each queue:\n" + second);
                }
                assertFalse(second.contains("Msgsec"), "rates are PromQL's rate() of the counters:\n" + second);
                assertTrue(second.contains("# TYPE gatehouse_rxMsgs_total counter"), second);
                assertTrue(second.contains("# TYPE gatehouse_msgs_in_queue gauge"), second);
                assertEquals(1, sample(scrape(mb), "gatehouse_connected{yuno=\"B\",service=\"to_c\",gclass=\"C_PORTAL\"}"));
            } finally {
                stop.set(true);
                traffic.join(30_000);
            }

            // B dies: A's DEFAULT portal drops and a command for C is answered with an error at once.
            b.kill9();
            String[] down = cliUntil(r -> r[0].equals("1"), "--port", port, "--hub", "C", "help");
            assertTrue(down[1].contains("not reachable"), down[1]);
            assertEquals("0", cli("--port", port, "help")[0], "A itself still answers");

            // B comes back on the same ports: both portals reconnect and the route works again.
            b.start();
            b.awaitListening();
            String[] back = cliUntil(r -> r[0].equals("0"), "--port", port, "--hub", "C", "view-registry");
            assertTrue(back[1].contains("\"hub\": \"C\""), back[1]);
            String[] portal = cli("--port", port, "stats-yuno service=to_b");
            assertTrue(portal[1].contains("\"connxs\": 2"), "A's portal linked twice: " + portal[1]);
        }
    }
}
