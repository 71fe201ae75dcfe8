package io.gatehouse.core;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GClock;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Yuno;
import io.netty.channel.EventLoop;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.util.concurrent.DefaultThreadFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A yuno with its own core thread, built from a Yuneta config. The OSGi component runs one; tests, benchmarks
 * and embedders use it directly:
 *
 * <pre>{@code
 * try (YunoRuntime rt = YunoRuntime.builder().name("gw").gclass(specs).config(json).build()) {
 *     rt.start();
 *     ObjectNode st = rt.command("stats-yuno service=__input_side__");
 * }
 * }</pre>
 */
public final class YunoRuntime implements AutoCloseable {
    private static final long CALL_TIMEOUT_MS = 30_000;

    private final NioEventLoopGroup group;
    /** The io_threads worker loops, null with io_threads 0 (sockets on the core loop). */
    private final NioEventLoopGroup ioGroup;
    private final YunoImpl yuno;
    private volatile boolean closed;
    /** The data directory this runtime made for itself (none was given): removed on close, no one else knows it. */
    private final Path madeDataDir;

    private YunoRuntime(Builder b) {
        int io = b.ioThreads >= 0 ? b.ioThreads : ConfigReader.ioThreadsOf(b.config);
        if (io > ConfigReader.MAX_IO_THREADS) throw new ConfigException("yuno", "'io_threads' must be at most " + ConfigReader.MAX_IO_THREADS);
        Path data = b.dataDir;
        if (data == null) {
            try {
                data = Files.createTempDirectory("gatehouse-" + b.name);
            } catch (IOException e) {
                throw new IllegalStateException("no data directory", e);
            }
        }
        this.madeDataDir = b.dataDir == null ? data : null;
        this.group = new NioEventLoopGroup(1, new DefaultThreadFactory("gatehouse-core-" + b.name, false));
        // Daemon threads: the core thread is what keeps a process alive; a worker left behind by a bug must not.
        this.ioGroup = io == 0 ? null : new NioEventLoopGroup(io, new DefaultThreadFactory("gatehouse-io-" + b.name, true));
        EventLoop loop = group.next();
        this.yuno = new YunoImpl(b.name, b.role, loop, ioGroup, io, b.clock, data.toAbsolutePath());
        for (GClassSpec<?> s : b.specs) yuno.register(s);
        b.extensions.forEach((k, v) -> yuno.putExtension(k, v));
        yuno.upgradeGraceMs(b.upgradeGraceMs);
        try {
            if (b.config != null) {
                call(() -> {
                    yuno.loadConfig(b.config);
                    Map<String, Set<String>> missing = yuno.missingGclasses();
                    if (!missing.isEmpty()) {
                        var e = missing.entrySet().iterator().next();
                        throw new ConfigException(e.getKey(), "gclass '" + e.getValue().iterator().next() + "' NOT FOUND");
                    }
                    yuno.buildAll();
                    return null;
                });
            }
        } catch (RuntimeException e) {
            if (ioGroup != null) ioGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
            if (madeDataDir != null) removeTree(madeDataDir);
            throw e;
        }
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Parses config text (comments allowed); a syntax error names its line and column. */
    public static ObjectNode parseConfig(String json) {
        return ConfigReader.parseConfig(json);
    }

    /** Every gclass a config names, in its services, children and templates. */
    public static Set<String> gclassesNamedIn(ObjectNode config) {
        Set<String> out = new java.util.TreeSet<>();
        var services = config.get("services");
        if (services != null && services.isArray()) {
            for (var s : services) ConfigReader.gclassesOf(s, out);
        }
        return out;
    }

    /** Starts the services (autostart, by priority) and plays them. */
    public YunoRuntime start() {
        run(yuno::startServices);
        return this;
    }

    public Yuno yuno() {
        return yuno;
    }

    /** Worker loops serving the yuno's sockets; 0 = the core loop serves them. */
    public int ioThreads() {
        return yuno.ioThreads();
    }

    public GObj service(String name) {
        return call(() -> yuno.service(name));
    }

    /** Runs a command line ({@code "stats-yuno service=x"}) on the core thread and answers its envelope. */
    public ObjectNode command(String line) {
        CommandLine cl;
        try {
            cl = CommandLine.parse(line);
        } catch (IllegalArgumentException e) {
            return Envelope.error(e.getMessage());
        }
        return command(cl.command, cl.kw);
    }

    /**
     * Runs a command and answers its envelope: a yuno command on the core thread, an {@link #addCommand external}
     * one on this thread, waited for.
     */
    public ObjectNode command(String command, ObjectNode kw) {
        ObjectNode params = kw == null ? JsonNodeFactory.instance.objectNode() : kw;
        ExternalCommand ext = yuno.externalCommand(command);
        if (ext != null) {
            if (yuno.inCoreThread()) return Envelope.error("command '" + command + "' cannot run on the core thread");
            try {
                return ext.run(params).get(EXTERNAL_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            } catch (ExecutionException e) {
                return Envelope.error("command '" + command + "' failed: " + e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return Envelope.error("interrupted");
            } catch (TimeoutException e) {
                return Envelope.error("command '" + command + "' did not answer within " + EXTERNAL_TIMEOUT_MS + " ms");
            }
        }
        return call(() -> yuno.command(command, params));
    }

    /**
     * A command the container adds to the yuno (list-bundles, update-bundle): it runs off the core thread, because
     * what it waits for (a bundle installed and started, a live upgrade done) needs the core loop free.
     */
    @FunctionalInterface
    public interface ExternalCommand {
        CompletableFuture<ObjectNode> run(ObjectNode kw);
    }

    /** Longest an external command may take when called through {@link #command}. */
    static final long EXTERNAL_TIMEOUT_MS = 120_000;

    /** Adds a command, listed by {@code help}, answered by {@code cmd} off the core thread. */
    public void addCommand(String name, String description, ExternalCommand cmd) {
        yuno.addExternalCommand(name, description, cmd);
    }

    /** The external command of that name, or null (the control endpoint runs it without blocking the loop). */
    public ExternalCommand externalCommand(String name) {
        return yuno.externalCommand(name);
    }

    /** Runs {@code task} on the core thread and waits for its result. */
    public <T> T call(Callable<T> task) {
        if (yuno.inCoreThread()) {
            try {
                return task.call();
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        try {
            return yuno.eventLoop().submit(task).get(CALL_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException) throw (RuntimeException) c;
            if (c instanceof Error) throw (Error) c;
            throw new IllegalStateException(c);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (TimeoutException e) {
            throw new IllegalStateException("the core thread did not answer within " + CALL_TIMEOUT_MS + " ms", e);
        }
    }

    public void run(Runnable task) {
        call(() -> {
            task.run();
            return null;
        });
    }

    /** Registers a gclass that arrived: see {@link #gclassesArrived}. */
    public ObjectNode gclassArrived(GClassSpec<?> spec) {
        return gclassesArrived(List.of(spec));
    }

    /**
     * A revision of these gclasses serves from now on (names of one bundle come together). The gobjs of these
     * gclasses, running another revision or suspended waiting for one, are handed over to it in one core-loop task
     * (a live upgrade: connections and in-flight state kept); a gobj that cannot be handed over has its service
     * rebuilt from its config. Services waiting for these gclasses are built and started. Answers the report:
     * {@code gclasses}, {@code gobjs_migrated}, {@code rebuilt} (service and reason), {@code pause_ms}.
     */
    public ObjectNode gclassesArrived(List<GClassSpec<?>> specs) {
        ObjectNode report = call(() -> yuno.gclassesArrived(specs).toJson());
        awaitStartedAfterIo();
        return report;
    }

    /** Rebuilt services start on a later loop turn ({@link YunoImpl#startedAfterIo}): a caller sees them started. */
    private void awaitStartedAfterIo() {
        if (yuno.inCoreThread()) return;
        try {
            call(yuno::startedAfterIo).get(CALL_TIMEOUT_MS, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (TimeoutException e) {
            throw new IllegalStateException("rebuilt services not started within " + CALL_TIMEOUT_MS + " ms", e);
        }
    }

    /**
     * These gclasses have no serving revision any more (their bundle is being updated, or stopped): their gobjs are
     * suspended (reads stopped, events held) until a revision arrives, and their services are rebuilt if none comes
     * within the upgrade grace period. Answers the gclasses that had gobjs.
     */
    public List<String> gclassesGone(java.util.Collection<String> names) {
        return call(() -> yuno.gclassesGone(names));
    }

    /** Gclass names whose gobjs are suspended, waiting for a revision. */
    public Set<String> suspendedGclasses() {
        return call(yuno::suspendedGclasses);
    }

    /**
     * Applies a changed config to the running yuno: only the services whose node changed are touched (writable
     * attribute values written, other changes rebuilt, removed ones destroyed, new ones built and started). A bad
     * config throws {@link ConfigException} and changes nothing. Answers what happened to each service
     * ({@code unchanged}, {@code written}, {@code rebuilt}, {@code removed}, {@code added}, {@code waiting}).
     */
    public Map<String, String> reconfigure(ObjectNode config) {
        Map<String, String> outcome = call(() -> yuno.reconfigure(config));
        awaitStartedAfterIo();
        return outcome;
    }

    /** Services waiting for gclasses, with the gclasses they wait for. */
    public Map<String, Set<String>> waiting() {
        return call(() -> new LinkedHashMap<>(yuno.missingGclasses()));
    }

    public boolean isClosed() {
        return closed;
    }

    /** Stops and destroys every service, then ends the core thread. */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        try {
            run(yuno::destroyAll);
        } catch (RuntimeException e) {
            // the loop may already be gone; closing must still end the thread
        }
        // Workers first: closing their sockets hands the last events to the core loop, which must still run them
        // (they release what was read or queued for those sockets).
        if (ioGroup != null) ioGroup.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
        if (madeDataDir != null) removeTree(madeDataDir);
    }

    /** Best effort: a file still held open elsewhere only leaves a temp directory behind. */
    private static void removeTree(Path dir) {
        try (var paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // nothing to do: the directory is in the temp dir
        }
    }

    public static final class Builder {
        private String name = "yuno";
        private String role = "";
        private Path dataDir;
        private GClock clock = GClock.SYSTEM;
        private final List<GClassSpec<?>> specs = new ArrayList<>();
        private final Map<Class<?>, Object> extensions = new LinkedHashMap<>();
        private ObjectNode config;
        private int ioThreads = -1;
        private long upgradeGraceMs = YunoImpl.DEFAULT_UPGRADE_GRACE_MS;

        public Builder name(String n) { this.name = n; return this; }

        /**
         * Worker loops for the yuno's sockets (0 = the core loop serves them, the default). Set here it wins over
         * the config's {@code yuno.io_threads}; unset, the config decides.
         */
        public Builder ioThreads(int n) {
            if (n < 0) throw new IllegalArgumentException("io_threads must be >= 0");
            this.ioThreads = n;
            return this;
        }

        public Builder role(String r) { this.role = r; return this; }

        /**
         * How long the gobjs of a gclass whose bundle is being updated wait, suspended, for its new revision before
         * their services are rebuilt (default {@value YunoImpl#DEFAULT_UPGRADE_GRACE_MS} ms).
         */
        public Builder upgradeGraceMs(long ms) {
            if (ms < 0) throw new IllegalArgumentException("upgrade grace must be >= 0 ms");
            this.upgradeGraceMs = ms;
            return this;
        }
        public Builder dataDir(Path d) { this.dataDir = d; return this; }
        public Builder clock(GClock c) { this.clock = c; return this; }

        public Builder gclass(GClassSpec<?>... s) {
            specs.addAll(List.of(s));
            return this;
        }

        public Builder gclasses(List<GClassSpec<?>> s) {
            specs.addAll(s);
            return this;
        }

        /** An object gclasses find with {@link Yuno#lookup}. */
        public <T> Builder extension(Class<T> type, T value) {
            extensions.put(type, value);
            return this;
        }

        /** The config as JSON text (comments allowed); a syntax error names its line and column. */
        public Builder config(String json) {
            this.config = ConfigReader.parseConfig(json);
            return this;
        }

        public Builder config(ObjectNode c) {
            this.config = c;
            return this;
        }

        public Builder config(Path file) {
            try {
                return config(Files.readString(file));
            } catch (IOException e) {
                throw new ConfigException("", "cannot read config " + file + ": " + e.getMessage());
            }
        }

        /** Builds the tree (all or nothing). Throws {@link ConfigException} on a bad config. */
        public YunoRuntime build() {
            return new YunoRuntime(this);
        }
    }
}
