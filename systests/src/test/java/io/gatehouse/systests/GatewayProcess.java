package io.gatehouse.systests;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A Gatehouse runtime as a child process, started the way {@code ./gatehouse run} starts it, from the built
 * distribution. Only this process is ever killed, by its own handle; {@link #close} makes sure it is gone.
 */
final class GatewayProcess implements AutoCloseable {
    private final Path config;
    private final Path data;
    private final Path log;
    private final int controlPort;
    private final Path dist;
    private final List<String> jvmArgs = new ArrayList<>();
    private Process process;

    GatewayProcess(Path config, Path data, Path log, int controlPort) {
        this(config, data, log, controlPort, null);
    }

    /** A gateway run from its own copy of the distribution ({@link #copyOfDist}): a test may change its deploy/. */
    GatewayProcess(Path config, Path data, Path log, int controlPort, Path dist) {
        this.config = config;
        this.data = data;
        this.log = log;
        this.controlPort = controlPort;
        this.dist = dist;
    }

    /** A copy of the built distribution under {@code dir}, for a test that drops jars into its deploy/. */
    static Path copyOfDist(Path dir) throws IOException {
        Path from = dist();
        Path to = dir.resolve("gatehouse-felix");
        try (var walk = Files.walk(from)) {
            for (Path p : (Iterable<Path>) walk::iterator) {
                Path t = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) Files.createDirectories(t);
                else Files.copy(p, t);
            }
        }
        return to;
    }

    /** An extra JVM argument, after the defaults (a later {@code -D} of the same name wins). */
    GatewayProcess jvm(String arg) {
        jvmArgs.add(arg);
        return this;
    }

    static Path dist() {
        Path d = Path.of(System.getProperty("gatehouse.dist", "../runtime/felix/target/gatehouse-felix")).toAbsolutePath();
        if (!Files.isRegularFile(d.resolve("bin/gatehouse-launcher.jar"))) {
            throw new IllegalStateException("no distribution at " + d + " (build runtime/felix first)");
        }
        return d;
    }

    void start() throws IOException {
        Path dist = this.dist != null ? this.dist : dist();
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(java, "-Xmx256m", "-Dgatehouse.home=" + dist,
                "-Dgatehouse.metrics.port=0"));
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-cp", dist.resolve("bin/gatehouse-launcher.jar") + File.pathSeparator
                        + dist.resolve("bin/org.apache.felix.framework.jar"),
                "io.gatehouse.launcher.Main", "run", config.toString(), "--data", data.toString(),
                "--control", String.valueOf(controlPort)));
        process = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    }

    /** Waits until the process accepts connections on {@code port}; fails if it dies first. */
    void awaitListening(int port, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            if (!process.isAlive()) throw new IllegalStateException("gateway exited with " + process.exitValue() + ", see " + log);
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException notYet) {
                Thread.sleep(100);
            }
        }
        throw new IllegalStateException("gateway not listening on " + port + " after " + timeoutMs + " ms, see " + log);
    }

    /** kill -9 of this process only. */
    void kill9() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    /** SIGTERM; answers the exit code. */
    int stop() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(5, TimeUnit.SECONDS);
            return -1;
        }
        return process.exitValue();
    }

    long pid() {
        return process.pid();
    }

    @Override
    public void close() throws InterruptedException {
        if (process != null && process.isAlive()) kill9();
    }
}
