package io.gatehouse.core.osgi;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.core.ConfigException;
import io.gatehouse.core.ControlServer;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.support.Glog;
import org.osgi.framework.BundleContext;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.ConfigurationPolicy;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Modified;
import org.osgi.service.component.annotations.Reference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A yuno configured through Config Admin: one instance per factory configuration of {@value #FACTORY_PID}
 * (Karaf {@code etc/io.gatehouse.yuno-NAME.cfg}, Felix {@code deploy/io.gatehouse.yuno-NAME.cfg},
 * {@code ConfigurationAdmin.getFactoryConfiguration("io.gatehouse.yuno", "NAME", "?")}), beside the yuno of the
 * framework property {@code gatehouse.config} ({@link GatehouseCore}).
 *
 * <p>Properties:
 * <ul>
 * <li>{@code config}: the Yuneta JSON tree as text ({@code {"yuno": ..., "services": [...]}}), or
 * <li>{@code config.file}: the path of a JSON file holding it (read again at every change of the configuration);
 * <li>{@code name}: the yuno (hub) name; default: {@code yuno.yuno_name} of the tree, else the configuration's
 *     name (the part of the PID after {@code ~}), else the PID;
 * <li>{@code data}: its data directory; default {@code <gatehouse.data>/yunos/<name>};
 * <li>{@code control.port} (default 0: none), {@code control.host} (127.0.0.1), {@code control.token}: its own
 *     control endpoint. Metrics and MBeans belong to the framework-property yuno only.
 * </ul>
 *
 * <p>The yuno is built once every gclass its tree names is registered and follows the gclasses like the
 * framework-property yuno (hot swap). A changed configuration is applied with {@link YunoRuntime#reconfigure}:
 * writable attribute values are written, services whose tree changed are rebuilt, others are left running.
 * Deleting the configuration stops the yuno.
 */
@Component(service = ConfiguredYuno.class, configurationPid = ConfiguredYuno.FACTORY_PID,
        configurationPolicy = ConfigurationPolicy.REQUIRE, immediate = true)
public class ConfiguredYuno {
    public static final String FACTORY_PID = "io.gatehouse.yuno";

    private static final Logger LOG = LoggerFactory.getLogger("gatehouse.core");

    private BundleContext context;
    private volatile YunoRuntime runtime;
    private ControlServer control;
    private ObjectNode tree;
    private Set<String> needed = Set.of();
    private String pid;
    private String name;
    private Path dataDir;
    private Map<String, Object> props;
    private volatile String failure;
    private boolean waitingLogged;

    /** The framework's gclasses (one whiteboard for every yuno). */
    @Reference
    private GClassTracker tracker;

    /** What this yuno hears of the tracker: the gclasses it builds from, and live upgrades while it runs. */
    private final GClassFeed gclasses = new GClassFeed("Config Admin yuno", () -> runtime, this::tryStart);

    @Activate
    void activate(BundleContext ctx, Map<String, Object> properties) {
        synchronized (this) {
            context = ctx;
            props = properties;
            pid = String.valueOf(properties.getOrDefault("service.pid", FACTORY_PID));
            try {
                tree = readTree(properties);
            } catch (ConfigException e) {
                failure = "Bad config in " + pid + ": " + e.getMessage();
                Glog.error(null, failure);
                tracker.listen(gclasses);   // a corrected configuration (modified) starts it with them
                return;
            }
            needed = YunoRuntime.gclassesNamedIn(tree);
            name = yunoName(properties, tree, pid);
            Object d = properties.get("data");
            String base = ctx.getProperty(GatehouseCore.PROP_DATA);
            dataDir = (d != null && !String.valueOf(d).isBlank() ? Paths.get(String.valueOf(d).trim())
                    : Paths.get(base == null || base.isEmpty() ? "data" : base, "yunos", name)).toAbsolutePath();
        }
        tracker.listen(gclasses);   // tells the gclasses registered so far, each trying to start the yuno
        tryStart();
    }

    @Modified
    void modified(Map<String, Object> properties) {
        ObjectNode next;
        try {
            next = readTree(properties);
        } catch (ConfigException e) {
            Glog.error(null, "Bad config, the running yuno is left as it was", "pid", pid, "error", e.getMessage());
            return;
        }
        YunoRuntime rt;
        synchronized (this) {
            props = properties;
            rt = runtime;
            if (rt == null) {
                // not started yet (waiting for gclasses, or a bad first config): start from the new tree
                tree = next;
                needed = YunoRuntime.gclassesNamedIn(next);
                failure = null;
            }
        }
        if (rt == null) {
            tryStart();
            return;
        }
        try {
            Map<String, String> outcome = rt.reconfigure(next);
            synchronized (this) {
                tree = next;
                needed = YunoRuntime.gclassesNamedIn(next);
            }
            LOG.info("yuno {} reconfigured from {}: {}", name, pid, outcome);
        } catch (ConfigException e) {
            Glog.error(null, "Bad config, the running yuno is left as it was", "pid", pid, "error", e.getMessage());
        }
    }

    @Deactivate
    void deactivate() {
        tracker.unlisten(gclasses);
        YunoRuntime rt;
        ControlServer cs;
        synchronized (this) {
            rt = runtime;
            runtime = null;
            cs = control;
            control = null;
            context = null;
        }
        if (rt != null) {
            rt.close();
            LOG.info("yuno {} stopped ({} deleted or its bundle stopped)", name, pid);
        }
        if (cs != null) cs.close(); // last: its going away tells that the yuno is down
    }

    private synchronized void tryStart() {
        if (runtime != null || failure != null || context == null || tree == null) return;
        if (!gclasses.specs().keySet().containsAll(needed)) {
            if (!waitingLogged) {
                List<String> missing = new ArrayList<>(needed);
                missing.removeAll(gclasses.specs().keySet());
                LOG.info("yuno {} ({}) waiting for gclasses {}", name, pid, missing);
                waitingLogged = true;
            }
            return;
        }
        try {
            Files.createDirectories(dataDir);
            YunoRuntime rt = YunoRuntime.builder().name(name).dataDir(dataDir)
                    .gclasses(new ArrayList<>(gclasses.specs().values())).upgradeGraceMs(tracker.graceMs())
                    .config(tree.deepCopy()).build();
            rt.start();
            runtime = rt;
            LOG.info("yuno {} running: configuration {}, data {}", name, pid, dataDir);
            startControl(rt);
        } catch (ConfigException e) {
            failure = "Bad config in " + pid + ": " + e.getMessage();
            Glog.error(null, failure);
        } catch (IOException | RuntimeException e) {
            failure = "Cannot start the yuno of " + pid + ": " + e;
            Glog.error(null, failure);
        }
    }

    private void startControl(YunoRuntime rt) {
        Object p = props.get("control.port");
        int port = p == null || String.valueOf(p).isBlank() ? 0 : Integer.parseInt(String.valueOf(p).trim());
        if (port <= 0) return;
        Object h = props.get("control.host");
        String host = h == null || String.valueOf(h).isBlank() ? "127.0.0.1" : String.valueOf(h).trim();
        Object token = props.get("control.token");
        ControlServer cs = new ControlServer(rt, token == null ? null : String.valueOf(token), !host.startsWith("127."));
        try {
            int bound = cs.start(host, port);
            control = cs;
            LOG.info("yuno {}: control endpoint listening on {}:{}", name, host, bound);
        } catch (IOException e) {
            Glog.error(null, "Control endpoint not started", "yuno", name, "port", port, "error", e.getMessage());
        }
    }

    /** The Yuneta tree of a configuration: {@code config} (JSON text) or {@code config.file} (a JSON file). */
    static ObjectNode readTree(Map<String, Object> properties) {
        Object text = properties.get("config");
        Object file = properties.get("config.file");
        if (text != null && !joined(text).isBlank()) return YunoRuntime.parseConfig(joined(text));
        if (file != null && !joined(file).isBlank()) {
            Path f = Paths.get(joined(file).trim());
            try {
                return YunoRuntime.parseConfig(Files.readString(f));
            } catch (IOException e) {
                throw new ConfigException("", "cannot read config.file " + f.toAbsolutePath() + ": " + e.getMessage());
            }
        }
        throw new ConfigException("", "the configuration has neither 'config' (the JSON tree) nor 'config.file'");
    }

    /** A property that may come as a String, a String[] or a collection (lines of a multi-line value). */
    private static String joined(Object v) {
        if (v instanceof String[]) return String.join("\n", (String[]) v);
        if (v instanceof Collection) {
            List<String> parts = new ArrayList<>();
            for (Object o : (Collection<?>) v) parts.add(String.valueOf(o));
            return String.join("\n", parts);
        }
        return String.valueOf(v);
    }

    static String yunoName(Map<String, Object> properties, ObjectNode tree, String pid) {
        Object n = properties.get("name");
        if (n != null && !String.valueOf(n).isBlank()) return String.valueOf(n).trim();
        String fromTree = tree.path("yuno").path("yuno_name").asText("");
        if (!fromTree.isEmpty()) return fromTree;
        int tilde = pid.indexOf('~');
        return tilde >= 0 ? pid.substring(tilde + 1) : pid;
    }

    /** The running yuno, or null. */
    public YunoRuntime runtime() {
        return runtime;
    }

    public String name() {
        return name;
    }

    /** Runs a command line on this yuno. */
    public ObjectNode command(String line) {
        YunoRuntime rt = runtime;
        if (rt == null) return Envelope.error(failure != null ? failure : "yuno " + name + " not running (waiting for gclasses?)");
        return rt.command(line);
    }
}
