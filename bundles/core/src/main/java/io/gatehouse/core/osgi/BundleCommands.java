// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core.osgi;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.core.YunoRuntime;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;
import org.osgi.framework.BundleException;
import org.osgi.framework.Constants;
import org.osgi.framework.Version;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.jar.JarInputStream;
import java.util.jar.Manifest;

/**
 * The yuno's bundle commands, {@code list-bundles} and {@code update-bundle}, on the control endpoint, Gogo
 * ({@code gate:bundles}, {@code gate:update}) and the Karaf shell.
 *
 * <p>{@code update-bundle name=BSN url=URL [rollback=true]} is the recommended upgrade path: the new revision is
 * installed and started beside the old one (the slow part: download, resolve, activate, class loading, while the
 * old revision keeps serving), and once it has registered its gclasses every gobj moves to it in one core-loop
 * task. The old revision stays installed, idle, so taking the new one away again is a rollback. Where the
 * container has a {@code deploy/} directory the jar is put there too, so the upgrade survives a restart; where
 * FileInstall watches that directory it installs the jar (it knows bundles by name, version and its own checksums,
 * and would update a bundle installed here beside its jar moments later), else this command does.
 */
final class BundleCommands {
    private static final Logger LOG = LoggerFactory.getLogger("gatehouse.core");
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    /** Longest wait for a started revision to register its gclasses and take over. */
    private static final long TAKE_OVER_TIMEOUT_MS = 60_000;
    /** Longest wait for FileInstall to install a jar put into deploy/, and again to start it. */
    private static final long FILE_INSTALL_TIMEOUT_MS = 30_000;
    /**
     * FileInstall installs, refreshes and starts a jar in one scan: a bundle it installed that is still not active
     * this long after it appeared will not be started by it (it does not resolve, or its activator throws), and the
     * command's own start then says why, without keeping the operator waiting for the whole timeout.
     */
    private static final long FILE_INSTALL_SETTLE_MS = 5_000;
    private static final String FILE_INSTALL_BSN = "org.apache.felix.fileinstall";

    private final BundleContext context;
    private final GClassTracker tracker;
    private final GClassFeed feed;
    private final YunoRuntime runtime;
    private final Path deployDir;
    private final ExecutorService worker = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "gatehouse-update-bundle");
        t.setDaemon(true);
        return t;
    });

    BundleCommands(BundleContext context, GClassTracker tracker, GClassFeed feed, YunoRuntime runtime) {
        this.context = context;
        this.tracker = tracker;
        this.feed = feed;
        this.runtime = runtime;
        this.deployDir = deployDir(context);
    }

    void register() {
        runtime.addCommand("list-bundles", "Every bundle: symbolic_name, version, state, last_modified, the gclasses it"
                + " provides and how many gobjs use each.", kw -> CompletableFuture.supplyAsync(this::listBundles, worker));
        runtime.addCommand("update-bundle", "Upgrade a bundle live: name=BSN url=URL [rollback=true to go to a lower"
                + " version]; answers the versions, the gobjs migrated, the rebuilds and the pause.",
                kw -> CompletableFuture.supplyAsync(() -> updateBundle(kw), worker));
        runtime.addCommand("list-upgrades", "The last live upgrades (at most " + GClassFeed.HISTORY + "): gclasses, gobjs"
                + " migrated, services rebuilt and why, pause.", kw -> {
                    ArrayNode a = F.arrayNode();
                    feed.history().forEach(a::add);
                    return CompletableFuture.completedFuture(Envelope.ok(a.size() + " upgrades", a));
                });
    }

    void close() {
        worker.shutdownNow();
    }

    private static Path deployDir(BundleContext ctx) {
        for (String p : new String[] {"gatehouse.deploy.dir", "gatehouse.home", "karaf.base"}) {
            String v = ctx.getProperty(p);
            if (v == null || v.isBlank()) continue;
            Path d = p.equals("gatehouse.deploy.dir") ? Paths.get(v) : Paths.get(v, "deploy");
            if (Files.isDirectory(d)) return d.toAbsolutePath();
        }
        return null;
    }

    // --- list-bundles ---

    ObjectNode listBundles() {
        Map<Long, List<GClassSpec<?>>> byBundle = tracker.specsByBundle();
        Map<String, Long> serving = tracker.servingBundles();
        Map<GClassSpec<?>, Integer> gobjs = runtime.call(() -> {
            Map<GClassSpec<?>, Integer> count = new IdentityHashMap<>();
            countGobjs(runtime.yuno().root(), count);
            return count;
        });
        ArrayNode out = F.arrayNode();
        for (Bundle b : context.getBundles()) {
            ObjectNode o = out.addObject();
            o.put("id", b.getBundleId());
            o.put("symbolic_name", String.valueOf(b.getSymbolicName()));
            o.put("version", b.getVersion().toString());
            o.put("state", stateName(b.getState()));
            o.put("last_modified", Instant.ofEpochMilli(b.getLastModified()).toString());
            ArrayNode gc = o.putArray("gclasses");
            for (GClassSpec<?> s : byBundle.getOrDefault(b.getBundleId(), List.of())) {
                ObjectNode g = gc.addObject();
                g.put("gclass", s.name());
                g.put("serving", Long.valueOf(b.getBundleId()).equals(serving.get(s.name())));
                g.put("gobjs", gobjs.getOrDefault(s, 0));
                g.put("state_version", s.stateVersion());
            }
        }
        return Envelope.ok(out.size() + " bundles", out);
    }

    private static void countGobjs(GObj g, Map<GClassSpec<?>, Integer> count) {
        count.merge(g.gclass(), 1, Integer::sum);
        for (GObj c : g.children()) countGobjs(c, count);
    }

    private static String stateName(int s) {
        switch (s) {
            case Bundle.ACTIVE: return "ACTIVE";
            case Bundle.RESOLVED: return "RESOLVED";
            case Bundle.INSTALLED: return "INSTALLED";
            case Bundle.STARTING: return "STARTING";
            case Bundle.STOPPING: return "STOPPING";
            default: return "UNINSTALLED";
        }
    }

    // --- update-bundle ---

    ObjectNode updateBundle(ObjectNode kw) {
        String bsn = Kw.getString(kw, "name", "");
        String url = Kw.getString(kw, "url", "");
        boolean rollback = Kw.getBool(kw, "rollback", false);
        if (bsn.isEmpty() || url.isEmpty()) return Envelope.error("update-bundle needs name=BSN url=URL");
        Path jar;
        try {
            jar = fetch(url);
        } catch (IOException | IllegalArgumentException e) {
            return Envelope.error("cannot read " + url + ": " + e.getMessage());
        }
        try {
            return install(bsn, jar, rollback);
        } finally {
            try {
                Files.deleteIfExists(jar);
            } catch (IOException ignored) {
                // a temp file left in java.io.tmpdir
            }
        }
    }

    private ObjectNode install(String bsn, Path jar, boolean rollback) {
        Manifest mf;
        try (InputStream in = Files.newInputStream(jar); JarInputStream j = new JarInputStream(in)) {
            mf = j.getManifest();
        } catch (IOException e) {
            return Envelope.error("not a jar: " + e.getMessage());
        }
        String jarBsn = mf == null ? null : mf.getMainAttributes().getValue(Constants.BUNDLE_SYMBOLICNAME);
        if (jarBsn == null) return Envelope.error("the jar is not a bundle (no Bundle-SymbolicName)");
        jarBsn = jarBsn.split(";")[0].trim();
        if (!jarBsn.equals(bsn)) {
            return Envelope.error("the jar is bundle " + jarBsn + ", not " + bsn + ": nothing changed");
        }
        Version version;
        try {
            version = Version.parseVersion(mf.getMainAttributes().getValue(Constants.BUNDLE_VERSION));
        } catch (IllegalArgumentException e) {
            return Envelope.error("bad Bundle-Version: " + e.getMessage());
        }
        Bundle current = highest(bsn);
        if (current == null) return Envelope.error("no bundle " + bsn + " installed: install it, not update it");
        Version old = current.getVersion();
        int cmp = version.compareTo(old);
        if (cmp == 0) return Envelope.error(bsn + " " + version + " is already the serving version");
        if (cmp < 0 && !rollback) {
            return Envelope.error(version + " is lower than the serving " + old + ": say rollback=true to go back to it");
        }
        Set<String> gclasses = new LinkedHashSet<>();
        for (GClassSpec<?> s : tracker.specsByBundle().getOrDefault(current.getBundleId(), List.of())) gclasses.add(s.name());
        LinkedBlockingQueue<ObjectNode> reports = new LinkedBlockingQueue<>();
        Consumer<ObjectNode> watch = r -> {
            Set<String> names = new LinkedHashSet<>();
            r.path("gclasses").forEach(n -> names.add(n.asText()));
            if (names.containsAll(gclasses)) reports.add(r);
        };
        feed.watchReports(watch);
        Bundle installed = null;
        // This command's own bundle (installed here, or by FileInstall for it): the one a failure undoes. A revision
        // that was installed already (a rollback to the original) is never uninstalled.
        boolean ours = false;
        Path deployed = null;
        try {
            Bundle existing = find(bsn, version);
            if (existing != null) {
                installed = existing;
            } else {
                ours = true;
                if (deployDir != null) {
                    deployed = deployDir.resolve(bsn + "-" + version + ".jar");
                    Path tmp = deployDir.resolve("." + bsn + "-" + version + ".jar.part");
                    Files.copy(jar, tmp, StandardCopyOption.REPLACE_EXISTING);
                    Files.move(tmp, deployed, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
                }
                if (deployed != null && fileInstallWatches()) {
                    // FileInstall knows bundles by name and version, and its own checksums: a bundle installed here
                    // beside its jar in deploy/ would be updated by it (stopped, updated, refreshed, started) moments
                    // later, under the gobjs and the next command. It installs the jar, then.
                    installed = awaitFileInstall(bsn, version);
                    if (installed == null) {
                        LOG.warn("update-bundle {}: FileInstall did not install {} within {} ms: installing it here",
                                bsn, deployed, FILE_INSTALL_TIMEOUT_MS);
                    }
                }
                if (installed == null) {
                    String location = deployed != null ? deployed.toFile().toURI().normalize().toString()
                            : "gatehouse:update:" + bsn + ":" + version;
                    try (InputStream in = Files.newInputStream(jar)) {
                        installed = context.installBundle(location, in);
                    }
                }
            }
            try {
                installed.start();
            } catch (BundleException e) {
                if (ours) undo(installed, deployed);
                return Envelope.error(bsn + " " + version + " does not start, " + old + " keeps serving: " + e.getMessage());
            }
            // A rollback retires the higher revisions only once the one it goes back to runs beside them: the gobjs
            // then move straight to it (retired first, they would move to whatever else is highest, and again).
            // "Runs" means registered: a bundle is ACTIVE before SCR has registered its components (FileInstall's
            // start, or ours, returns first), and a higher revision retired in that gap hands the gobjs to whatever
            // else is registered, the original say, then to this one: two moves, and an answer naming the wrong one.
            if (cmp < 0) {
                if (!gclasses.isEmpty() && !awaitRegistered(installed, gclasses)) {
                    if (ours) undo(installed, deployed);
                    return Envelope.error(bsn + " " + version + " started but did not register " + gclasses + " within "
                            + TAKE_OVER_TIMEOUT_MS + " ms: " + (ours ? "uninstalled, " : "") + old + " keeps serving");
                }
                retireHigher(bsn, version);
            }
            if (gclasses.isEmpty()) {
                return Envelope.ok(bsn + " " + version + " started (it provides no gclass)", versions(bsn, old, version));
            }
            ObjectNode report = reports.poll(TAKE_OVER_TIMEOUT_MS, TimeUnit.MILLISECONDS);
            if (report == null) {
                if (ours) undo(installed, deployed);
                return Envelope.error(bsn + " " + version + " started but did not register " + gclasses + " within "
                        + TAKE_OVER_TIMEOUT_MS + " ms: " + (ours ? "uninstalled, " + old + " keeps serving"
                        : "it stays installed"));
            }
            ObjectNode data = versions(bsn, old, version);
            data.setAll(report);
            LOG.info("update-bundle {}: {} -> {}: {}", bsn, old, version, report);
            return Envelope.ok(bsn + " " + old + " -> " + version, data);
        } catch (IOException | BundleException | IllegalStateException e) {
            if (ours) undo(installed, deployed);
            return Envelope.error("cannot install " + bsn + " " + version + ": " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            if (ours) undo(installed, deployed);
            return Envelope.error("interrupted");
        } finally {
            feed.unwatchReports(watch);
        }
    }

    /**
     * FileInstall runs and watches {@link #deployDir}: its bundle is active, and {@code felix.fileinstall.dir}, when
     * it is a framework property (the Felix runtime, the tests; Karaf configures it otherwise), names that directory.
     */
    private boolean fileInstallWatches() {
        boolean running = false;
        for (Bundle b : context.getBundles()) {
            if (FILE_INSTALL_BSN.equals(b.getSymbolicName()) && b.getState() == Bundle.ACTIVE) running = true;
        }
        if (!running) return false;
        String dir = context.getProperty("felix.fileinstall.dir");
        if (dir == null || dir.isBlank()) return true;
        try {
            return Paths.get(dir.trim()).toAbsolutePath().normalize().equals(deployDir.normalize());
        } catch (java.nio.file.InvalidPathException e) {
            return false;
        }
    }

    /** The bundle FileInstall installs from the jar put into deploy/, once it is there; null if it does not come. */
    private Bundle awaitFileInstall(String bsn, Version version) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(FILE_INSTALL_TIMEOUT_MS);
        while (System.nanoTime() < deadline) {
            Bundle b = find(bsn, version);
            if (b != null && b.getState() != Bundle.UNINSTALLED) {
                // FileInstall installs, refreshes, then starts: a start from here before it is done would be stopped
                // again by that refresh. It gets a while to start the bundle; the caller's start then says why not.
                long started = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(FILE_INSTALL_TIMEOUT_MS);
                long settled = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(FILE_INSTALL_SETTLE_MS);
                while (b.getState() != Bundle.ACTIVE && b.getState() != Bundle.UNINSTALLED
                        && System.nanoTime() < started
                        && (b.getState() == Bundle.STARTING || System.nanoTime() < settled)) {
                    Thread.sleep(20);
                }
                return b;
            }
            Thread.sleep(20);
        }
        return null;
    }

    /** Whether {@code b} has registered every one of {@code gclasses} with the tracker within the take-over timeout. */
    private boolean awaitRegistered(Bundle b, Set<String> gclasses) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TAKE_OVER_TIMEOUT_MS);
        while (true) {
            Set<String> names = new LinkedHashSet<>();
            for (GClassSpec<?> s : tracker.specsByBundle().getOrDefault(b.getBundleId(), List.of())) names.add(s.name());
            if (names.containsAll(gclasses)) return true;
            if (System.nanoTime() >= deadline || b.getState() == Bundle.UNINSTALLED) return false;
            Thread.sleep(10);
        }
    }

    /** Undoes this command's own install: the bundle (if it got that far) and its jar in deploy/. */
    private void undo(Bundle b, Path deployed) {
        if (b != null) {
            try {
                b.uninstall();
            } catch (BundleException | IllegalStateException e) {
                LOG.warn("update-bundle: could not uninstall {}: {}", b, e.getMessage());
            }
        }
        if (deployed != null) {
            try {
                Files.deleteIfExists(deployed);
            } catch (IOException e) {
                LOG.warn("update-bundle: could not remove {}: {}", deployed, e.getMessage());
            }
        }
    }

    private static ObjectNode versions(String bsn, Version old, Version now) {
        ObjectNode d = F.objectNode();
        d.put("symbolic_name", bsn);
        d.put("old_version", old.toString());
        d.put("new_version", now.toString());
        return d;
    }

    /** A rollback: the revisions above the wanted one leave (their jars out of deploy/ too), the lower one serves. */
    private void retireHigher(String bsn, Version wanted) throws BundleException {
        for (Bundle b : context.getBundles()) {
            if (bsn.equals(b.getSymbolicName()) && b.getVersion().compareTo(wanted) > 0) {
                Path file = deployedFile(b);
                b.uninstall();
                if (file != null) {
                    try {
                        Files.deleteIfExists(file);
                    } catch (IOException e) {
                        LOG.warn("rollback: could not remove {} from deploy/: {}", file, e.getMessage());
                    }
                }
            }
        }
    }

    private Path deployedFile(Bundle b) {
        if (deployDir == null) return null;
        try {
            Path p = Paths.get(URI.create(b.getLocation()));
            return p.startsWith(deployDir) ? p : null;
        } catch (IllegalArgumentException | java.nio.file.FileSystemNotFoundException e) {
            return null;
        }
    }

    private Bundle highest(String bsn) {
        Bundle best = null;
        for (Bundle b : context.getBundles()) {
            if (!bsn.equals(b.getSymbolicName()) || b.getState() == Bundle.UNINSTALLED) continue;
            if (best == null || b.getVersion().compareTo(best.getVersion()) > 0) best = b;
        }
        return best;
    }

    private Bundle find(String bsn, Version v) {
        for (Bundle b : context.getBundles()) {
            if (bsn.equals(b.getSymbolicName()) && b.getVersion().equals(v)) return b;
        }
        return null;
    }

    private static Path fetch(String url) throws IOException {
        Path tmp = Files.createTempFile("gatehouse-update-", ".jar");
        try (InputStream in = new URL(url).openStream()) {
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e instanceof IOException ? (IOException) e : new IOException(e.getMessage(), e);
        }
        return tmp;
    }
}
