package io.gatehouse.testkit.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Child JVMs running Kafka's own mains (broker, storage tool, ProducerPerformance) on the class path the build
 * resolved ({@code kafka-classpath.txt}). Every child runs under {@link ParentWatch}, so it exits when the JVM that
 * started it is gone, even after a SIGKILL of that JVM; a shutdown hook also ends the children still running when
 * this JVM exits normally. Only processes started here are ever signalled, by their own handle.
 */
final class ChildJvm {
    private static final Set<Process> RUNNING = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (Process p : RUNNING) {
                p.destroyForcibly();
            }
        }, "testkit-kafka-children"));
    }

    private ChildJvm() {
    }

    /**
     * Starts {@code mainClass} with {@code args}; stdout and stderr go to {@code log} (a file, never a pipe: a
     * chatty child must not block on a full pipe nobody reads).
     */
    static Process start(List<String> jvmOptions, String mainClass, List<String> args, Path log) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(classPath());
        cmd.add(ParentWatch.class.getName());
        cmd.add(Long.toString(ProcessHandle.current().pid()));
        cmd.add(mainClass);
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        Process p = pb.start();
        RUNNING.add(p);
        p.onExit().thenRun(() -> RUNNING.remove(p));
        return p;
    }

    /** Runs a child to completion within {@code timeout}; returns its exit code (killed and -1 past the bound). */
    static int run(List<String> jvmOptions, String mainClass, List<String> args, Path log, Duration timeout)
        throws IOException, InterruptedException {
        Process p = start(jvmOptions, mainClass, args, log);
        if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
            return -1;
        }
        return p.exitValue();
    }

    /**
     * SIGTERM, then SIGKILL if it has not exited within {@code grace}. Returns true if it exited on the SIGTERM.
     */
    static boolean stop(Process p, Duration grace) throws InterruptedException {
        if (!p.isAlive()) {
            return true;
        }
        p.destroy();
        if (p.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
            return true;
        }
        kill(p);
        return false;
    }

    /** SIGKILL and wait for the exit (bounded: the kernel reaps a killed process at once). */
    static void kill(Process p) throws InterruptedException {
        p.destroyForcibly();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("pid " + p.pid() + " still alive 30 s after SIGKILL");
        }
    }

    /** The last {@code maxBytes} of a log, for error messages. */
    static String tail(Path log, int maxBytes) {
        try {
            if (!Files.exists(log)) {
                return "(no output)";
            }
            byte[] all = Files.readAllBytes(log);
            int from = Math.max(0, all.length - maxBytes);
            return new String(all, from, all.length - from, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(cannot read " + log + ": " + e + ")";
        }
    }

    private static volatile String classPath;

    /** kafka-classpath.txt (written by the build) plus this jar, which holds ParentWatch. */
    static String classPath() {
        String cp = classPath;
        if (cp == null) {
            try (InputStream in = ChildJvm.class.getResourceAsStream("kafka-classpath.txt")) {
                if (in == null) {
                    throw new IllegalStateException("kafka-classpath.txt is missing: build testkit-kafka with Maven");
                }
                String kafka = new String(in.readAllBytes(), StandardCharsets.UTF_8).trim();
                Path self = Path.of(ChildJvm.class.getProtectionDomain().getCodeSource().getLocation().toURI());
                cp = self + java.io.File.pathSeparator + kafka;
                classPath = cp;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (URISyntaxException e) {
                throw new IllegalStateException(e);
            }
        }
        return cp;
    }
}
