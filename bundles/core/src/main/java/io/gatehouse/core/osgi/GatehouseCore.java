package io.gatehouse.core.osgi;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.core.ConfigException;
import io.gatehouse.core.ControlServer;
import io.gatehouse.core.JmxExporter;
import io.gatehouse.core.MetricsServer;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.support.Glog;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.BundleEvent;
import org.osgi.framework.SynchronousBundleListener;
import org.osgi.framework.BundleException;
import org.osgi.framework.FrameworkEvent;
import org.osgi.framework.FrameworkListener;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Reference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The yuno of this OSGi framework. It tracks every {@link GClass} service (the whiteboard) and builds the
 * yuno from the config named by the framework property {@value #PROP_CONFIG} once the framework has
 * started, so every gclass bundle had its chance to register.
 *
 * <p>Hot swap: a gclass that leaves takes down the services that use it; they are built again from their
 * config nodes and started when it comes back. A gclass bundle can be updated without refreshing api.
 *
 * <p>A bad config at start is fatal: the error is logged, {@value #PROP_EXIT_CODE} is set to {@code "2"}
 * and the framework is stopped, so the launcher exits non-zero with nothing half-started.
 */
@Component(service = GatehouseCore.class, immediate = true)
public class GatehouseCore {
    public static final String PROP_CONFIG = "gatehouse.config";
    public static final String PROP_DATA = "gatehouse.data";
    public static final String PROP_YUNO_NAME = "gatehouse.yuno.name";
    public static final String PROP_EXIT_CODE = "gatehouse.exit.code";
    public static final String PROP_CONTROL_PORT = "gatehouse.control.port";
    public static final String PROP_CONTROL_HOST = "gatehouse.control.host";
    public static final String PROP_CONTROL_TOKEN = "gatehouse.control.token";
    public static final int DEFAULT_CONTROL_PORT = 1991;
    /** Prometheus {@code /metrics} and live page port (default {@value #DEFAULT_METRICS_PORT}; 0 disables both). */
    public static final String PROP_METRICS_PORT = "gatehouse.metrics.port";
    public static final String PROP_METRICS_HOST = "gatehouse.metrics.host";
    public static final int DEFAULT_METRICS_PORT = 9464;
    /** {@code false} disables the per-service MBeans. */
    public static final String PROP_JMX = "gatehouse.jmx";
    /** Milliseconds after the framework started that core waits for the gclasses the config names. */
    public static final String PROP_STARTUP_GRACE = "gatehouse.startup.grace.ms";
    public static final long DEFAULT_STARTUP_GRACE_MS = 5000;

    private static final Logger LOG = LoggerFactory.getLogger("gatehouse.core");

    private BundleContext context;
    private FrameworkListener startListener;
    private SynchronousBundleListener shutdownListener;
    private volatile YunoRuntime runtime;
    private ControlServer control;
    private MetricsServer metrics;
    private JmxExporter jmx;
    private volatile String failure;
    private ObjectNode configTree;
    private java.util.Set<String> needed = java.util.Set.of();
    private long graceMs;
    private volatile Thread graceTimer;
    private BundleCommands bundleCommands;

    /** The framework's gclasses (one whiteboard for every yuno). */
    @Reference
    private GClassTracker tracker;

    /** What this yuno hears of the tracker: the gclasses it builds from, and live upgrades while it runs. */
    private final GClassFeed gclasses = new GClassFeed("yuno", () -> runtime, this::tryStartYuno);

    @Activate
    void activate(BundleContext ctx) {
        this.context = ctx;
        String config = ctx.getProperty(PROP_CONFIG);
        String grace = ctx.getProperty(PROP_STARTUP_GRACE);
        graceMs = grace == null || grace.isEmpty() ? DEFAULT_STARTUP_GRACE_MS : Long.parseLong(grace.trim());
        try {
            if (config != null && !config.isEmpty()) {
                Path file = Paths.get(config);
                if (!Files.isRegularFile(file)) throw new ConfigException("", "config file not found: " + file.toAbsolutePath());
                configTree = YunoRuntime.parseConfig(Files.readString(file));
                needed = YunoRuntime.gclassesNamedIn(configTree);
            }
        } catch (ConfigException e) {
            fatal("Bad config: " + e.getMessage());
            return;
        } catch (java.io.IOException e) {
            fatal("Cannot read the config: " + e.getMessage());
            return;
        }
        // Gclass bundles may start after core (and, in test containers, after the framework's STARTED event):
        // the yuno is built as soon as every gclass it names is registered, and a gclass still missing a grace
        // period after the framework started is a config error.
        startListener = event -> {
            if (event.getType() == FrameworkEvent.STARTED || event.getType() == FrameworkEvent.STARTLEVEL_CHANGED) {
                frameworkStarted();
            }
        };
        ctx.addFrameworkListener(startListener);
        // When the framework stops, stop the yuno first, by priority, while every gclass is still there:
        // otherwise gclass bundles stop one by one and take their services down in bundle order.
        shutdownListener = (SynchronousBundleListener) event -> {
            if (event.getBundle().getBundleId() == 0 && event.getType() == BundleEvent.STOPPING) shutdownYuno();
        };
        ctx.addBundleListener(shutdownListener);
        if (ctx.getBundle(0).getState() == Bundle.ACTIVE) frameworkStarted();
        tracker.listen(gclasses);   // tells the gclasses registered so far, each trying to start the yuno
        tryStartYuno();
    }

    private void frameworkStarted() {
        synchronized (this) {
            if (graceTimer != null || runtime != null || failure != null) {
                tryStartYuno();
                return;
            }
            graceTimer = new Thread(() -> {
                try {
                    Thread.sleep(graceMs);
                } catch (InterruptedException e) {
                    return;
                }
                giveUpWaiting();
            }, "gatehouse-startup-grace");
            graceTimer.setDaemon(true);
            graceTimer.start();
        }
        tryStartYuno();
    }

    private synchronized void giveUpWaiting() {
        if (runtime != null || failure != null || context == null) return;
        List<String> missing = new ArrayList<>(needed);
        missing.removeAll(gclasses.specs().keySet());
        if (missing.isEmpty()) {
            tryStartYuno();
            return;
        }
        fatal("Bad config: gclass " + missing + " NOT FOUND: no bundle registered it within " + graceMs
                + " ms of the framework start (" + configPaths(missing) + ")");
    }

    /** Where the config names the missing gclasses: service/child paths, for the error. */
    private String configPaths(List<String> missing) {
        List<String> where = new ArrayList<>();
        for (var s : configTree.path("services")) {
            java.util.Set<String> names = new java.util.TreeSet<>();
            YunoRuntime.gclassesNamedIn(wrap(s)).forEach(names::add);
            names.retainAll(missing);
            if (!names.isEmpty()) where.add("service " + s.path("name").asText() + " uses " + names);
        }
        return String.join("; ", where);
    }

    private static ObjectNode wrap(com.fasterxml.jackson.databind.JsonNode service) {
        ObjectNode o = io.gatehouse.api.Kw.create();
        o.putArray("services").add(service);
        return o;
    }

    private synchronized void shutdownYuno() {
        YunoRuntime rt = runtime;
        runtime = null;
        if (control != null) control.close();
        if (rt != null) {
            LOG.info("framework stopping: stopping the yuno's services");
            rt.close();
        }
    }

    @Deactivate
    void deactivate() {
        tracker.unlisten(gclasses);
        if (shutdownListener != null) {
            try {
                context.removeBundleListener(shutdownListener);
            } catch (IllegalStateException ignored) {
                // the framework is already stopping
            }
        }
        if (startListener != null) {
            try {
                context.removeFrameworkListener(startListener);
            } catch (IllegalStateException ignored) {
                // the framework is already stopping
            }
        }
        Thread t = graceTimer;
        if (t != null) t.interrupt();
        YunoRuntime rt = runtime;
        runtime = null;
        if (bundleCommands != null) bundleCommands.close();
        if (control != null) control.close();
        if (metrics != null) metrics.close();
        if (jmx != null) jmx.close();
        if (rt != null) rt.close();
        context = null;
    }

    private synchronized void tryStartYuno() {
        if (runtime != null || failure != null || context == null) return;
        if (!gclasses.specs().keySet().containsAll(needed)) return;
        String data = context.getProperty(PROP_DATA);
        String name = context.getProperty(PROP_YUNO_NAME);
        Path dataDir = Paths.get(data == null || data.isEmpty() ? "data" : data).toAbsolutePath();
        try {
            Files.createDirectories(dataDir);
            YunoRuntime.Builder b = YunoRuntime.builder()
                    .name(name == null || name.isEmpty() ? yunoName() : name)
                    .dataDir(dataDir)
                    .gclasses(new ArrayList<>(gclasses.specs().values()))
                    .upgradeGraceMs(tracker.graceMs());
            if (configTree != null) b.config(configTree.deepCopy());
            YunoRuntime rt = b.build();
            rt.start();
            runtime = rt;
            LOG.info("yuno {} running: config {}, data {}", rt.yuno().name(), context.getProperty(PROP_CONFIG), dataDir);
            startControl(rt);
            startObservability(rt);
            bundleCommands = new BundleCommands(context, tracker, gclasses, rt);
            bundleCommands.register();
        } catch (ConfigException e) {
            fatal("Bad config: " + e.getMessage());
        } catch (Exception e) {
            fatal("Cannot start the yuno: " + e);
        }
    }

    private String yunoName() {
        String n = configTree == null ? "" : configTree.path("yuno").path("yuno_name").asText("");
        return n.isEmpty() ? "gatehouse" : n;
    }

    /**
     * The metrics endpoint and the service MBeans. Neither is vital: a metrics port already taken is an error log
     * (several containers on one machine need their own {@value #PROP_METRICS_PORT}), not a stop.
     */
    private void startObservability(YunoRuntime rt) {
        String p = context.getProperty(PROP_METRICS_PORT);
        int port = p == null || p.isEmpty() ? DEFAULT_METRICS_PORT : Integer.parseInt(p.trim());
        if (port > 0) {
            String host = context.getProperty(PROP_METRICS_HOST);
            host = host == null || host.isEmpty() ? "127.0.0.1" : host;
            MetricsServer ms = new MetricsServer(rt, context.getProperty(PROP_CONTROL_TOKEN));
            try {
                int bound = ms.start(host, port);
                metrics = ms;
                LOG.info("metrics endpoint http://{}:{}/metrics, live view http://{}:{}/", host, bound, host, bound);
            } catch (java.io.IOException e) {
                Glog.error(null, "Metrics endpoint not started", "error", e.getMessage());
            }
        }
        if (!"false".equalsIgnoreCase(context.getProperty(PROP_JMX))) {
            try {
                jmx = new JmxExporter(rt).start();
            } catch (RuntimeException | LinkageError e) {
                Glog.error(null, "Service MBeans not registered", "error", String.valueOf(e));
            }
        }
    }

    /** The control endpoint ({@code ./gatehouse cmd}); port 0 or negative disables it. */
    private void startControl(YunoRuntime rt) {
        String p = context.getProperty(PROP_CONTROL_PORT);
        int port = p == null || p.isEmpty() ? DEFAULT_CONTROL_PORT : Integer.parseInt(p.trim());
        if (port <= 0) return;
        String host = context.getProperty(PROP_CONTROL_HOST);
        host = host == null || host.isEmpty() ? "127.0.0.1" : host;
        ControlServer cs = new ControlServer(rt, context.getProperty(PROP_CONTROL_TOKEN), !host.startsWith("127."));
        try {
            int bound = cs.start(host, port);
            control = cs;
            LOG.info("control endpoint listening on {}:{}", host, bound);
        } catch (java.io.IOException e) {
            fatal("Control port: " + e.getMessage());
        }
    }

    private void fatal(String message) {
        if (failure != null) return;
        failure = message;
        Glog.error(null, message);
        System.setProperty(PROP_EXIT_CODE, "2");
        Thread stopper = new Thread(() -> {
            try {
                context.getBundle(0).stop();
            } catch (BundleException | IllegalStateException e) {
                LOG.error("cannot stop the framework after a fatal error", e);
            }
        }, "gatehouse-fatal-stop");
        stopper.setDaemon(true);
        stopper.start();
    }

    /** The running yuno, or null (no config yet, or a fatal error). */
    public YunoRuntime runtime() {
        return runtime;
    }

    /** Why the yuno did not start, or null. */
    public String failure() {
        return failure;
    }

    /** Runs a command line on the yuno and answers its envelope. */
    public ObjectNode command(String line) {
        YunoRuntime rt = runtime;
        if (rt == null) return Envelope.error(failure != null ? failure : "no yuno running");
        return rt.command(line);
    }

    /** Runs a command with its parameters on the yuno and answers its envelope. */
    public ObjectNode command(String command, ObjectNode kw) {
        YunoRuntime rt = runtime;
        if (rt == null) return Envelope.error(failure != null ? failure : "no yuno running");
        return rt.command(command, kw);
    }

    /** Runs a command line on another hub, through the portals (this yuno when {@code hub} is empty or its name). */
    public ObjectNode command(String hub, String line) {
        YunoRuntime rt = runtime;
        if (rt == null) return Envelope.error(failure != null ? failure : "no yuno running");
        return io.gatehouse.core.HubCall.command(rt, hub, line, 20_000);
    }

    /** Registered gclass names. */
    public List<String> gclassNames() {
        return tracker.gclassNames();
    }
}
