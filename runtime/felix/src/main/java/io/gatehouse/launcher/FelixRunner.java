package io.gatehouse.launcher;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.ServiceLoader;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.BundleException;
import org.osgi.framework.Constants;
import org.osgi.framework.FrameworkEvent;
import org.osgi.framework.launch.Framework;
import org.osgi.framework.launch.FrameworkFactory;

/**
 * Runs the Felix distribution in the foreground until it stops.
 *
 * <p>Layout of the distribution ({@code gatehouse.home}): {@code bin/} (this launcher and the Felix framework jar),
 * {@code bundle/} (every jar is installed; all but fragments are started), {@code conf/config.properties}
 * (framework properties), {@code conf/system.properties} (JVM system properties, e.g. the slf4j-simple format),
 * {@code conf/gatehouse.json} (the default yuno config), {@code deploy/} (watched by FileInstall).
 *
 * <p>Contract with core, as framework properties: {@value #PROP_CONFIG} (absolute path of the config file),
 * {@value #PROP_DATA} (absolute path of the data directory), {@value #PROP_CONTROL_PORT} (only with
 * {@code --control}), {@value #PROP_HOME}. To end the process with a non-zero code (a fatal config error),
 * core sets the system property {@value #EXIT_CODE_PROPERTY} (e.g. "2") and stops the system bundle; the launcher
 * exits with that code once the framework has stopped. A stop caused by SIGTERM/SIGINT exits 0.
 */
final class FelixRunner {
    static final String PROP_HOME = "gatehouse.home";
    static final String PROP_CONFIG = "gatehouse.config";
    static final String PROP_DATA = "gatehouse.data";
    static final String PROP_CONTROL_PORT = "gatehouse.control.port";
    static final String EXIT_CODE_PROPERTY = "gatehouse.exit.code";

    static final int EXIT_CONFIG = 2;
    static final long STOP_TIMEOUT_MS = 30_000;

    private static final Pattern VAR = Pattern.compile("\\$\\{([^}]+)}");
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSZ");

    private final RunOptions opts;
    private final Path home;
    private final PrintStream out = System.out;

    /** Set once a signal (or the JVM shutting down) asked us to stop: the exit code is then 0. */
    private final AtomicBoolean stopRequested = new AtomicBoolean();
    private volatile Framework framework;

    FelixRunner(RunOptions opts, Path home) {
        this.opts = opts;
        this.home = home;
    }

    /** The distribution directory: {@code -Dgatehouse.home}, else the parent of the directory holding this jar. */
    static Path findHome() {
        String prop = System.getProperty(PROP_HOME);
        if (prop != null && !prop.isBlank()) {
            return Path.of(prop).toAbsolutePath().normalize();
        }
        try {
            Path jar = Path.of(FelixRunner.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            return jar.getParent().getParent().toAbsolutePath().normalize();
        } catch (URISyntaxException | NullPointerException e) {
            return Path.of("").toAbsolutePath();
        }
    }

    int run() {
        Path cwd = Path.of("").toAbsolutePath();
        Path config = (opts.config() != null ? cwd.resolve(opts.config()) : home.resolve("conf/gatehouse.json")).normalize();
        Path data = cwd.resolve(opts.data() != null ? opts.data() : Path.of("data")).normalize();
        if (!Files.isRegularFile(config) || !Files.isReadable(config)) {
            log("ERROR", "config file not found or not readable: " + config);
            return EXIT_CONFIG;
        }
        try {
            Files.createDirectories(data);
        } catch (IOException e) {
            log("ERROR", "cannot create data directory " + data + ": " + e);
            return 1;
        }
        try (FileChannel lockFile = FileChannel.open(data.resolve("gatehouse.lock"),
                StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock lock = lockFile.tryLock()) {
            if (lock == null) {
                log("ERROR", "data directory " + data + " is in use by another Gatehouse process");
                return 1;
            }
            return runLocked(config, data);
        } catch (IOException e) {
            log("ERROR", "cannot lock data directory " + data + ": " + e);
            return 1;
        }
    }

    private int runLocked(Path config, Path data) {
        Map<String, String> vars = new HashMap<>();
        vars.put(PROP_HOME, home.toString());
        vars.put(PROP_DATA, data.toString());
        try {
            loadSystemProperties(home.resolve("conf/system.properties"), vars);
        } catch (IOException e) {
            log("ERROR", "cannot read conf/system.properties: " + e);
            return 1;
        }
        Map<String, String> props;
        try {
            props = frameworkProperties(home.resolve("conf/config.properties"), vars);
        } catch (IOException e) {
            log("ERROR", "cannot read conf/config.properties: " + e);
            return 1;
        }
        props.putIfAbsent(Constants.FRAMEWORK_STORAGE, data.resolve("felix-cache").toString());
        props.put(PROP_HOME, home.toString());
        props.put(PROP_CONFIG, config.toString());
        props.put(PROP_DATA, data.toString());
        if (opts.controlPort() != null) {
            props.put(PROP_CONTROL_PORT, Integer.toString(opts.controlPort()));
        }
        if (opts.console()) {
            // Gogo reads commands from stdin (e.g. lb, scr:list, gate:*); end of input stops the framework.
            props.remove("gosh.args");
        } else {
            props.put("gosh.args", "--nointeractive");
        }
        installSignalHandlers();
        Runtime.getRuntime().addShutdownHook(new Thread(this::stopOnShutdown, "gatehouse-shutdown"));

        log("INFO", "starting Gatehouse: config=" + config + " data=" + data
            + (opts.controlPort() != null ? " control=" + opts.controlPort() : ""));
        try {
            while (true) {
                System.clearProperty(EXIT_CODE_PROPERTY);
                Framework fw = newFramework(props);
                FrameworkEvent ev = fw.waitForStop(0);
                framework = null;
                switch (ev.getType()) {
                    case FrameworkEvent.STOPPED_UPDATE:
                    case FrameworkEvent.STOPPED_SYSTEM_REFRESHED:
                        log("INFO", "framework updated; restarting");
                        props.put(Constants.FRAMEWORK_STORAGE_CLEAN, "none");
                        continue;
                    case FrameworkEvent.ERROR:
                        log("ERROR", "framework stopped with an error: " + ev.getThrowable());
                        return 1;
                    default:
                        return exitCode();
                }
            }
        } catch (BundleException | RuntimeException e) {
            log("ERROR", "cannot start the framework: " + e);
            e.printStackTrace(out);
            return 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 1;
        }
    }

    private Framework newFramework(Map<String, String> props) throws BundleException {
        Iterator<FrameworkFactory> factories = ServiceLoader.load(FrameworkFactory.class,
            FelixRunner.class.getClassLoader()).iterator();
        if (!factories.hasNext()) {
            throw new BundleException("no OSGi framework on the class path (bin/org.apache.felix.framework.jar)");
        }
        Framework fw = factories.next().newFramework(props);
        fw.init();
        framework = fw;
        if (stopRequested.get()) {
            fw.stop();
            return fw;
        }
        BundleContext ctx = fw.getBundleContext();
        ctx.addFrameworkListener(ev -> {
            if (ev.getType() == FrameworkEvent.ERROR) {
                Throwable t = ev.getThrowable();
                log("ERROR", "bundle " + ev.getBundle().getSymbolicName() + ": " + (t != null ? t.getMessage() : "error"));
            }
        });
        List<Bundle> installed = new ArrayList<>();
        for (Path jar : bundleJars(home.resolve("bundle"))) {
            try {
                installed.add(ctx.installBundle(jar.toUri().toString()));
            } catch (BundleException e) {
                log("ERROR", "cannot install " + jar.getFileName() + ": " + e.getMessage());
            }
        }
        // Marked for start while the framework is still at start level 0: fw.start() then resolves and starts them
        // all before it fires STARTED, which is when core builds the yuno (every gclass has registered by then).
        for (Bundle b : installed) {
            if (isFragment(b)) {
                continue;
            }
            try {
                b.start();
            } catch (BundleException | IllegalStateException e) {
                log("ERROR", "bundle " + b.getSymbolicName() + " cannot be started: " + e.getMessage());
            }
        }
        fw.start();
        long active = installed.stream().filter(b -> b.getState() == Bundle.ACTIVE).count();
        long fragments = installed.stream().filter(FelixRunner::isFragment).count();
        log("INFO", "Gatehouse running: " + active + " bundles active, " + fragments + " fragments, "
            + (installed.size() - active - fragments) + " not active; stop with Ctrl-C or SIGTERM");
        return fw;
    }

    private static boolean isFragment(Bundle b) {
        return b.getHeaders().get(Constants.FRAGMENT_HOST) != null;
    }

    private static List<Path> bundleJars(Path dir) {
        try (Stream<Path> s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(".jar")).sorted().collect(Collectors.toList());
        } catch (IOException e) {
            return List.of();
        }
    }

    private int exitCode() {
        if (stopRequested.get()) {
            log("INFO", "Gatehouse stopped");
            return 0;
        }
        String code = System.getProperty(EXIT_CODE_PROPERTY);
        if (code == null || code.isBlank()) {
            log("INFO", "Gatehouse stopped");
            return 0;
        }
        try {
            int c = Integer.parseInt(code.trim());
            log(c == 0 ? "INFO" : "ERROR", "Gatehouse stopped with exit code " + c);
            return c;
        } catch (NumberFormatException e) {
            log("ERROR", "Gatehouse stopped with a malformed " + EXIT_CODE_PROPERTY + "='" + code + "'");
            return 1;
        }
    }

    // --- Stopping ---

    /**
     * SIGTERM and SIGINT stop the framework and let {@link #run()} return 0. A second signal while stopping
     * halts at once. Without {@code sun.misc.Signal} the shutdown hook does the same work.
     */
    private void installSignalHandlers() {
        try {
            for (String name : new String[] {"TERM", "INT"}) {
                sun.misc.Signal.handle(new sun.misc.Signal(name), sig -> onSignal(sig.getName()));
            }
        } catch (Throwable e) {
            log("WARN", "no signal handlers (" + e + "); stopping from the shutdown hook instead");
        }
    }

    private void onSignal(String name) {
        if (!stopRequested.compareAndSet(false, true)) {
            log("WARN", "SIG" + name + " again while stopping; halting");
            Runtime.getRuntime().halt(130);
        }
        log("INFO", "SIG" + name + " received; stopping");
        Thread t = new Thread(() -> stopFramework(), "gatehouse-stop");
        t.setDaemon(true);
        t.start();
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(STOP_TIMEOUT_MS);
            } catch (InterruptedException e) {
                return;
            }
            log("ERROR", "framework did not stop within " + STOP_TIMEOUT_MS / 1000 + " s; halting");
            Runtime.getRuntime().halt(1);
        }, "gatehouse-stop-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }

    /** The JVM is exiting for another reason (System.exit elsewhere, SIGHUP, or no signal handlers). */
    private void stopOnShutdown() {
        boolean first = stopRequested.compareAndSet(false, true);
        Framework fw = framework;
        if (fw == null || (fw.getState() & (Bundle.STARTING | Bundle.ACTIVE)) == 0) {
            return;
        }
        stopFramework();
        try {
            fw.waitForStop(STOP_TIMEOUT_MS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        out.flush();
        if (first) {
            // Stopped by a signal we could not trap: a clean stop still exits 0.
            Runtime.getRuntime().halt(0);
        }
    }

    private void stopFramework() {
        Framework fw = framework;
        if (fw == null) {
            return;
        }
        try {
            fw.stop();
        } catch (BundleException | RuntimeException e) {
            log("ERROR", "stopping the framework: " + e);
        }
    }

    // --- Properties ---

    private void loadSystemProperties(Path file, Map<String, String> vars) throws IOException {
        if (!Files.exists(file)) {
            return;
        }
        for (Map.Entry<String, String> e : read(file).entrySet()) {
            if (System.getProperty(e.getKey()) == null) {
                System.setProperty(e.getKey(), substitute(e.getValue(), vars));
            }
        }
    }

    private static Map<String, String> frameworkProperties(Path file, Map<String, String> vars) throws IOException {
        Map<String, String> props = new HashMap<>();
        if (Files.exists(file)) {
            for (Map.Entry<String, String> e : read(file).entrySet()) {
                props.put(e.getKey(), substitute(e.getValue(), vars));
            }
        }
        return props;
    }

    private static Map<String, String> read(Path file) throws IOException {
        Properties p = new Properties();
        try (InputStream in = Files.newInputStream(file)) {
            p.load(in);
        }
        Map<String, String> m = new HashMap<>();
        for (String k : p.stringPropertyNames()) {
            m.put(k, p.getProperty(k).trim());
        }
        return m;
    }

    /** Replaces {@code ${name}} with a launcher variable or a system property; unknown names stay as they are. */
    static String substitute(String value, Map<String, String> vars) {
        Matcher m = VAR.matcher(value);
        StringBuilder sb = new StringBuilder();
        while (m.find()) {
            String name = m.group(1);
            String v = vars.containsKey(name) ? vars.get(name) : System.getProperty(name);
            m.appendReplacement(sb, Matcher.quoteReplacement(v != null ? v : m.group()));
        }
        m.appendTail(sb);
        return sb.toString();
    }

    private void log(String level, String msg) {
        out.println(ZonedDateTime.now().format(TIME) + " [" + Thread.currentThread().getName() + "] " + level
            + " launcher - " + msg);
        out.flush();
    }
}
