package io.gatehouse.itests;

import static org.junit.Assert.fail;
import static org.ops4j.pax.exam.CoreOptions.bundle;
import static org.ops4j.pax.exam.CoreOptions.composite;
import static org.ops4j.pax.exam.CoreOptions.frameworkProperty;
import static org.ops4j.pax.exam.CoreOptions.junitBundles;
import static org.ops4j.pax.exam.CoreOptions.mavenBundle;
import static org.ops4j.pax.exam.CoreOptions.systemProperty;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

import javax.inject.Inject;

import org.ops4j.pax.exam.Option;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;

/**
 * Base of every Pax Exam IT: composable option sets and helpers.
 *
 * <p>A new IT extends this class and combines the option sets it needs, e.g.
 * <pre>
 * &#64;RunWith(PaxExam.class) &#64;ExamReactorStrategy(PerClass.class)
 * public class Tcp4hLoopbackIT extends ITSupport {
 *     &#64;Configuration public Option[] config() {
 *         return options(base(), gatehouseBundles("api", "core", "tcp", "tcp4h"), yunoConfig("tcp4h-loopback.json"));
 *     }
 * }
 * </pre>
 * Gatehouse bundles are the reactor's fresh jars in {@code target/bundles} ({@code gatehouse.bundles.dir}), named by
 * their short name ({@code api}, {@code core}, {@code tcp4h}, ...). Third-party bundles come from the local Maven
 * repository through pax-url, offline. A config file named by {@link #yunoConfig(String)} is a test resource.
 */
public abstract class ITSupport {
    public static final String GROUP = "io.gatehouse";
    /**
     * Short names of every Gatehouse bundle the build copied to {@code target/bundles} (api and core first): the
     * bundles pom decides what is there, so a new bundle needs no line here.
     */
    public static final List<String> ALL_BUNDLES = bundlesInDir();

    @Inject
    protected BundleContext ctx;

    // --- Option sets ---

    /** Framework services, logging, JUnit and the fail-on-unresolved switch: what every IT needs. */
    public static Option base() {
        return composite(
            systemProperty("pax.exam.osgi.unresolved.fail").value("true"),
            frameworkProperty("org.osgi.framework.storage.clean").value("onFirstInit"),
            frameworkBundles(), loggingBundles(), jacksonBundles(), nettyBundles(), compressionBundles(),
            junitBundles());
    }

    /**
     * zstd, lz4 and snappy: third-party bundles the wrapped Kafka client imports. Every IT has them, since the
     * Kafka client and C_KAFKA are Gatehouse bundles like the others (target/bundles) and would not resolve alone.
     */
    public static Option compressionBundles() {
        return composite(
            mavenBundle("com.github.luben", "zstd-jni").versionAsInProject(),
            mavenBundle("at.yawk.lz4", "lz4-java").versionAsInProject(),
            mavenBundle("org.xerial.snappy", "snappy-java").versionAsInProject());
    }

    /** DS (scr and the DS API bundles it needs), Config Admin, Metatype and the Log service metatype imports. */
    public static Option frameworkBundles() {
        return composite(
            mavenBundle("org.osgi", "org.osgi.util.function").versionAsInProject(),
            mavenBundle("org.osgi", "org.osgi.util.promise").versionAsInProject(),
            mavenBundle("org.osgi", "org.osgi.service.component").versionAsInProject(),
            mavenBundle("org.apache.felix", "org.apache.felix.log").versionAsInProject(),
            mavenBundle("org.apache.felix", "org.apache.felix.configadmin").versionAsInProject(),
            mavenBundle("org.apache.felix", "org.apache.felix.metatype").versionAsInProject(),
            mavenBundle("org.apache.felix", "org.apache.felix.scr").versionAsInProject());
    }

    /** slf4j-api with its slf4j-simple binding (a bundle exporting org.slf4j.impl), logging to stdout. */
    public static Option loggingBundles() {
        return composite(
            systemProperty("org.slf4j.simpleLogger.logFile").value("System.out"),
            systemProperty("org.slf4j.simpleLogger.showDateTime").value("true"),
            mavenBundle("org.slf4j", "slf4j-api").versionAsInProject(),
            mavenBundle("org.slf4j", "slf4j-simple").versionAsInProject());
    }

    public static Option jacksonBundles() {
        return composite(
            mavenBundle("com.fasterxml.jackson.core", "jackson-annotations").versionAsInProject(),
            mavenBundle("com.fasterxml.jackson.core", "jackson-core").versionAsInProject(),
            mavenBundle("com.fasterxml.jackson.core", "jackson-databind").versionAsInProject());
    }

    /**
     * Every Netty bundle the distribution ships: the core ones, codec and handler for the transports, codec-http and
     * codec-mqtt for the ingest protocols.
     */
    public static Option nettyBundles() {
        return composite(
            mavenBundle("io.netty", "netty-common").versionAsInProject(),
            mavenBundle("io.netty", "netty-buffer").versionAsInProject(),
            mavenBundle("io.netty", "netty-resolver").versionAsInProject(),
            mavenBundle("io.netty", "netty-transport").versionAsInProject(),
            mavenBundle("io.netty", "netty-transport-native-unix-common").versionAsInProject(),
            mavenBundle("io.netty", "netty-codec").versionAsInProject(),
            mavenBundle("io.netty", "netty-handler").versionAsInProject(),
            mavenBundle("io.netty", "netty-codec-http").versionAsInProject(),
            mavenBundle("io.netty", "netty-codec-mqtt").versionAsInProject());
    }

    /** The named Gatehouse bundles ("api", "core", "tcp4h", ...) from the reactor, as {@code file:} URLs. */
    public static Option gatehouseBundles(String... names) {
        return composite(Arrays.stream(names).map(n -> bundle(bundleFile(n).toURI().toString()))
            .toArray(Option[]::new));
    }

    /** Every Gatehouse bundle of the reactor. */
    public static Option allGatehouseBundles() {
        return gatehouseBundles(ALL_BUNDLES.toArray(String[]::new));
    }

    /**
     * The framework properties the launcher sets: {@code gatehouse.config} = the test resource {@code resource}
     * (copied to a fresh directory), {@code gatehouse.data} = a fresh directory under target/itests.
     */
    public static Option yunoConfig(String resource) {
        Path dir = newTestDir("yuno");
        Path config = dir.resolve(resource.replace('/', '_'));
        try (var in = ITSupport.class.getClassLoader().getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalArgumentException("no test resource " + resource);
            }
            Files.copy(in, config);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return composite(
            frameworkProperty("gatehouse.config").value(config.toString()),
            frameworkProperty("gatehouse.data").value(dir.resolve("data").toString()));
    }

    // --- Helpers ---

    /** The jar of a Gatehouse bundle module in target/bundles (copied there by the dependency plugin). */
    public static File bundleFile(String shortName) {
        File f = new File(bundlesDir(), GROUP + "." + shortName + ".jar");
        if (!f.isFile()) {
            throw new IllegalStateException("missing " + f + " (run through Maven: mvn verify)");
        }
        return f;
    }

    private static List<String> bundlesInDir() {
        String[] jars = bundlesDir().list((d, n) -> n.startsWith(GROUP + ".") && n.endsWith(".jar"));
        List<String> names = new ArrayList<>();
        if (jars != null) {
            for (String j : jars) names.add(j.substring(GROUP.length() + 1, j.length() - ".jar".length()));
        }
        names.sort((a, b) -> Integer.compare(rank(a), rank(b)) != 0 ? Integer.compare(rank(a), rank(b)) : a.compareTo(b));
        return List.copyOf(names);
    }

    /** api, then core and the wrapped Kafka client (a library others import), then the gclass bundles. */
    private static int rank(String shortName) {
        return shortName.equals("api") ? 0 : shortName.equals("core") || shortName.equals("kafka-clients") ? 1 : 2;
    }

    public static File bundlesDir() {
        return new File(System.getProperty("gatehouse.bundles.dir", "target/bundles")).getAbsoluteFile();
    }

    /** A new empty directory under target/itests. */
    public static Path newTestDir(String prefix) {
        try {
            Path root = Path.of(System.getProperty("gatehouse.itests.dir", "target/itests")).toAbsolutePath();
            Files.createDirectories(root);
            return Files.createTempDirectory(root, prefix + "-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A TCP port free on 127.0.0.1 right now (bind to it soon: another process may take it). */
    public static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** {@code n} distinct free ports. */
    public static int[] freePorts(int n) {
        List<ServerSocket> open = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                open.add(new ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress()));
            }
            return open.stream().mapToInt(ServerSocket::getLocalPort).toArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            for (ServerSocket s : open) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // nothing to release
                }
            }
        }
    }

    /** Polls {@code condition} every 20 ms until it holds or {@code timeoutMs} passes; fails with {@code what}. */
    public static void await(String what, long timeoutMs, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out after " + timeoutMs + " ms waiting for " + what);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted waiting for " + what);
            }
        }
    }

    /** The installed bundle with this symbolic name, or null. */
    protected Bundle installedBundle(String symbolicName) {
        return Arrays.stream(ctx.getBundles()).filter(b -> symbolicName.equals(b.getSymbolicName())).findFirst()
            .orElse(null);
    }

    protected List<Bundle> gatehouseBundlesInstalled() {
        return Arrays.stream(ctx.getBundles())
            .filter(b -> b.getSymbolicName() != null && b.getSymbolicName().startsWith(GROUP + "."))
            .collect(Collectors.toList());
    }

    protected static boolean isFragment(Bundle b) {
        return b.getHeaders().get(Constants.FRAGMENT_HOST) != null;
    }

    protected static String stateName(Bundle b) {
        switch (b.getState()) {
            case Bundle.UNINSTALLED: return "UNINSTALLED";
            case Bundle.INSTALLED: return "INSTALLED";
            case Bundle.RESOLVED: return "RESOLVED";
            case Bundle.STARTING: return "STARTING";
            case Bundle.STOPPING: return "STOPPING";
            case Bundle.ACTIVE: return "ACTIVE";
            default: return Integer.toString(b.getState());
        }
    }
}
