package io.gatehouse.systests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

/**
 * Debian's {@code chromium}, headless, driven from Java with nothing downloaded: {@code --dump-dom} and
 * {@code --screenshot} runs (one page load each), and a DevTools protocol session over a websocket
 * ({@link java.net.http.WebSocket}) for a page that stays open. Each run gets a fresh {@code --user-data-dir} in a
 * temp directory, removed after; only the processes started here are ended, by their handles.
 *
 * <p>The flags are the ones that work on this closed network (docs of the machine kind): without
 * {@code --disable-background-networking} and friends Chromium keeps trying to reach Google's hosts; as root it
 * needs {@code --no-sandbox}.
 */
final class Chromium {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long RUN_TIMEOUT_MS = 90_000;

    private final Path binary;
    private final Path work;

    private Chromium(Path binary, Path work) {
        this.binary = binary;
        this.work = work;
    }

    /** The browser ({@code -Dgatehouse.chromium=PATH}, else chromium on the PATH), or empty when none is installed. */
    static Optional<Path> binary() {
        String p = System.getProperty("gatehouse.chromium", "");
        if (!p.isEmpty()) return Files.isExecutable(Path.of(p)) ? Optional.of(Path.of(p)) : Optional.empty();
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin").split(File.pathSeparator)) {
            for (String name : new String[] {"chromium", "chromium-browser"}) {
                Path c = Path.of(dir, name);
                if (Files.isExecutable(c)) return Optional.of(c);
            }
        }
        return Optional.empty();
    }

    static Chromium open(Path work) throws IOException {
        Files.createDirectories(work);
        return new Chromium(binary().orElseThrow(() -> new IllegalStateException("chromium not installed")), work);
    }

    private List<String> command(Path profile, int width, int height, String... extra) {
        List<String> c = new ArrayList<>(List.of(binary.toString(), "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-extensions", "--hide-scrollbars", "--mute-audio",
                "--user-data-dir=" + profile, "--window-size=" + width + "," + height));
        c.addAll(List.of(extra));
        return c;
    }

    /**
     * One page load, its DOM after {@code budgetMs} of virtual time ({@code --virtual-time-budget}: the page's
     * fetches and timers run, and the DOM is dumped when they are done). Use a page that polls: an open event
     * stream keeps virtual time from ending.
     */
    String dumpDom(String url, long budgetMs) throws IOException, InterruptedException {
        Path out = Files.createTempFile(work, "dom-", ".html");
        run(out, command(profile(), 1500, 1000, "--virtual-time-budget=" + budgetMs, "--dump-dom", url));
        return Files.readString(out);
    }

    /** One page load saved as a PNG of {@code width} x {@code height}. */
    void screenshot(String url, Path png, int width, int height, long budgetMs) throws IOException, InterruptedException {
        Files.createDirectories(png.toAbsolutePath().getParent());
        run(null, command(profile(), width, height, "--virtual-time-budget=" + budgetMs,
                "--screenshot=" + png.toAbsolutePath(), url));
        if (!Files.isRegularFile(png) || Files.size(png) == 0) throw new IOException("no screenshot written to " + png);
    }

    private Path profile() throws IOException {
        return Files.createTempDirectory(work, "profile-");
    }

    private void run(Path stdout, List<String> cmd) throws IOException, InterruptedException {
        Path profile = Path.of(cmd.stream().filter(a -> a.startsWith("--user-data-dir=")).findFirst().orElseThrow()
                .substring("--user-data-dir=".length()));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(work.resolve("chromium.log").toFile());
        if (stdout != null) pb.redirectOutput(stdout.toFile());
        else pb.redirectOutput(ProcessBuilder.Redirect.DISCARD);
        Process p = pb.start();
        try {
            if (!p.waitFor(RUN_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                throw new IOException("chromium did not finish within " + RUN_TIMEOUT_MS + " ms: " + String.join(" ", cmd));
            }
            if (p.exitValue() != 0) throw new IOException("chromium exited " + p.exitValue() + ", see " + work.resolve("chromium.log"));
        } finally {
            end(p);
            deleteTree(profile);
        }
    }

    /** Ends a browser this class started, and the processes it started (renderers, zygote), by their handles. */
    private static void end(Process p) throws InterruptedException {
        List<ProcessHandle> children = new ArrayList<>();
        p.descendants().forEach(children::add);
        p.destroy();
        if (!p.waitFor(5, TimeUnit.SECONDS)) p.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        for (ProcessHandle c : children) {
            if (c.isAlive()) c.destroy();
        }
        for (ProcessHandle c : children) {
            try {
                c.onExit().get(5, TimeUnit.SECONDS);
            } catch (Exception stillThere) {
                c.destroyForcibly();
            }
        }
    }

    static void deleteTree(Path p) {
        if (p == null || !Files.exists(p)) return;
        try (Stream<Path> s = Files.walk(p)) {
            s.sorted(Comparator.reverseOrder()).forEach(x -> x.toFile().delete());
        } catch (IOException | RuntimeException e) {
            // a leftover temp file is not worth failing a test for
        }
    }

    /** A page that stays open, driven over the DevTools protocol. */
    DevTools devtools(int width, int height) throws IOException, InterruptedException {
        return new DevTools(profile(), width, height);
    }

    final class DevTools implements AutoCloseable {
        private final Path profile;
        private final Process process;
        private final WebSocket ws;
        private final AtomicInteger ids = new AtomicInteger();
        private final Map<Integer, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();

        DevTools(Path profile, int width, int height) throws IOException, InterruptedException {
            this.profile = profile;
            process = new ProcessBuilder(command(profile, width, height, "--remote-debugging-port=0", "about:blank"))
                    .redirectError(work.resolve("chromium-devtools.log").toFile())
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            WebSocket socket = null;
            try {
                Path portFile = profile.resolve("DevToolsActivePort");
                long deadline = System.currentTimeMillis() + 30_000;
                while (!(Files.isRegularFile(portFile) && Files.readAllLines(portFile).size() >= 2)) {
                    if (!process.isAlive()) throw new IOException("chromium exited " + process.exitValue());
                    if (System.currentTimeMillis() > deadline) throw new IOException("chromium wrote no DevToolsActivePort");
                    Thread.sleep(100);
                }
                int port = Integer.parseInt(Files.readAllLines(portFile).get(0).trim());
                HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
                JsonNode targets = JSON.readTree(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/json/list"))
                        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()).body());
                String url = null;
                for (JsonNode t : targets) {
                    if (t.path("type").asText().equals("page")) {
                        url = t.path("webSocketDebuggerUrl").asText();
                        break;
                    }
                }
                if (url == null) throw new IOException("no page target: " + targets);
                socket = http.newWebSocketBuilder().buildAsync(URI.create(url), new Listener()).get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                end(process);
                deleteTree(profile);
                if (e instanceof IOException) throw (IOException) e;
                throw new IOException("cannot open the DevTools session: " + e, e);
            }
            ws = socket;
        }

        private final class Listener implements WebSocket.Listener {
            private final StringBuilder partial = new StringBuilder();

            @Override
            public CompletionStage<?> onText(WebSocket socket, CharSequence data, boolean last) {
                partial.append(data);
                if (last) {
                    try {
                        JsonNode m = JSON.readTree(partial.toString());
                        CompletableFuture<JsonNode> f = m.has("id") ? pending.remove(m.get("id").asInt()) : null;
                        if (f != null) f.complete(m);
                    } catch (IOException e) {
                        // an event we cannot parse is not an answer we wait for
                    }
                    partial.setLength(0);
                }
                socket.request(1);
                return null;
            }
        }

        JsonNode call(String method, ObjectNode params) throws Exception {
            int id = ids.incrementAndGet();
            CompletableFuture<JsonNode> f = new CompletableFuture<>();
            pending.put(id, f);
            ObjectNode m = JSON.createObjectNode().put("id", id).put("method", method);
            m.set("params", params == null ? JSON.createObjectNode() : params);
            ws.sendText(JSON.writeValueAsString(m), true).get(10, TimeUnit.SECONDS);
            JsonNode r = f.get(30, TimeUnit.SECONDS);
            if (r.has("error")) throw new IOException(method + ": " + r.get("error"));
            return r.path("result");
        }

        void navigate(String url) throws Exception {
            call("Page.navigate", JSON.createObjectNode().put("url", url));
        }

        /** The value of a JavaScript expression in the page (JSON-serialisable), or null. */
        JsonNode eval(String expression) throws Exception {
            JsonNode r = call("Runtime.evaluate", JSON.createObjectNode().put("expression", expression)
                    .put("returnByValue", true).put("awaitPromise", true));
            if (r.has("exceptionDetails")) throw new IOException("page threw: " + r.get("exceptionDetails"));
            return r.path("result").path("value");
        }

        /**
         * Waits until {@code expression} is truthy in the page; answers its value. While the page loads the
         * expression may throw (no body yet): that counts as "not yet".
         */
        JsonNode waitFor(String expression, long timeoutMs, String what) throws Exception {
            long deadline = System.currentTimeMillis() + timeoutMs;
            String last = null;
            while (System.currentTimeMillis() < deadline) {
                try {
                    JsonNode n = eval(expression);
                    if (n != null && !n.isMissingNode() && !n.isNull() && !(n.isBoolean() && !n.asBoolean())
                            && !(n.isTextual() && n.asText().isEmpty())) {
                        return n;
                    }
                    last = String.valueOf(n);
                } catch (IOException pageThrew) {
                    last = pageThrew.getMessage();
                }
                Thread.sleep(250);
            }
            throw new AssertionError("timed out after " + timeoutMs + " ms waiting for " + what + " (" + expression
                    + "), last value " + last);
        }

        @Override
        public void close() throws InterruptedException {
            try {
                ws.sendClose(WebSocket.NORMAL_CLOSURE, "").get(2, TimeUnit.SECONDS);
            } catch (Exception alreadyGone) {
                // the browser goes next anyway
            }
            end(process);
            deleteTree(profile);
        }
    }
}
