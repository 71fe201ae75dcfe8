package io.gatehouse.core.osgi;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.Glog;
import io.gatehouse.core.ConfigException;
import io.gatehouse.core.ControlServer;
import io.gatehouse.core.YunoRuntime;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.BundleException;
import org.osgi.framework.FrameworkEvent;
import org.osgi.framework.FrameworkListener;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;
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

    private static final Logger LOG = LoggerFactory.getLogger("gatehouse.core");

    private final Map<String, GClassSpec<?>> specs = new LinkedHashMap<>();
    private BundleContext context;
    private FrameworkListener startListener;
    private volatile YunoRuntime runtime;
    private ControlServer control;
    private volatile String failure;

    @Reference(cardinality = ReferenceCardinality.MULTIPLE, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void addGClass(GClass gclass) {
        GClassSpec<?> spec = gclass.spec();
        YunoRuntime rt;
        synchronized (this) {
            specs.put(spec.name(), spec);
            rt = runtime;
        }
        if (rt != null && !rt.isClosed()) {
            List<String> rebuilt = rt.gclassArrived(spec);
            if (!rebuilt.isEmpty()) LOG.info("gclass {} arrived: services rebuilt {}", spec.name(), rebuilt);
        }
    }

    void removeGClass(GClass gclass) {
        String name = gclass.spec().name();
        YunoRuntime rt;
        synchronized (this) {
            specs.remove(name);
            rt = runtime;
        }
        if (rt != null && !rt.isClosed()) {
            List<String> down = rt.gclassLeft(name);
            if (!down.isEmpty()) LOG.info("gclass {} left: services destroyed until it returns {}", name, down);
        }
    }

    @Activate
    void activate(BundleContext ctx) {
        this.context = ctx;
        Bundle system = ctx.getBundle(0);
        if (system.getState() == Bundle.ACTIVE) {
            startYuno();
        } else {
            startListener = event -> {
                if (event.getType() == FrameworkEvent.STARTED) startYuno();
            };
            ctx.addFrameworkListener(startListener);
        }
    }

    @Deactivate
    void deactivate() {
        if (startListener != null) {
            try {
                context.removeFrameworkListener(startListener);
            } catch (IllegalStateException ignored) {
                // the framework is already stopping
            }
        }
        YunoRuntime rt = runtime;
        runtime = null;
        if (control != null) control.close();
        if (rt != null) rt.close();
    }

    private synchronized void startYuno() {
        if (runtime != null || failure != null) return;
        String config = context.getProperty(PROP_CONFIG);
        String data = context.getProperty(PROP_DATA);
        String name = context.getProperty(PROP_YUNO_NAME);
        Path dataDir = Paths.get(data == null || data.isEmpty() ? "data" : data).toAbsolutePath();
        try {
            Files.createDirectories(dataDir);
            YunoRuntime.Builder b = YunoRuntime.builder()
                    .name(name == null || name.isEmpty() ? "gatehouse" : name)
                    .dataDir(dataDir)
                    .gclasses(new ArrayList<>(specs.values()));
            if (config != null && !config.isEmpty()) {
                Path file = Paths.get(config);
                if (!Files.isRegularFile(file)) throw new ConfigException("", "config file not found: " + file.toAbsolutePath());
                b.config(file);
            }
            YunoRuntime rt = b.build();
            rt.start();
            runtime = rt;
            LOG.info("yuno {} running: config {}, data {}", rt.yuno().name(), config, dataDir);
            startControl(rt);
        } catch (ConfigException e) {
            fatal("Bad config: " + e.getMessage());
        } catch (Exception e) {
            fatal("Cannot start the yuno: " + e);
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

    /** Registered gclass names. */
    public synchronized List<String> gclassNames() {
        return new ArrayList<>(specs.keySet());
    }
}
