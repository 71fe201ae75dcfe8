package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GClock;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.api.Yuno;
import io.gatehouse.support.Glog;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * A yuno: the gclass registry it builds from, the gobj tree built from a Yuneta config, its services and
 * its core thread. Everything but the registry and {@link #execute} runs on the core thread.
 */
final class YunoImpl implements Yuno {
    static final boolean DEBUG_EXCEPTIONS = Boolean.getBoolean("gatehouse.debug");

    private final String name;
    private final String role;
    private final EventLoop loop;
    /** The core loop itself (io_threads 0) or the worker group, owned and shut down by YunoRuntime. */
    private final EventLoopGroup ioGroup;
    private final int ioThreads;
    private final GClock clock;
    private final Timers timers;
    private final Path dataDir;
    private final Map<String, GClassSpec<?>> gclasses = new ConcurrentHashMap<>();
    private final Map<Class<?>, Object> extensions = new ConcurrentHashMap<>();
    private final List<ServiceNode> serviceNodes = new ArrayList<>();
    private final Map<String, GObjImpl> services = new LinkedHashMap<>();
    private final Set<String> unusedLogged = new HashSet<>();
    private final Map<String, String> globalVars = new HashMap<>();
    /** The variables every config gets (yuno name, role, host...), before its own. */
    private final Map<String, String> baseVars = new HashMap<>();
    private final GObjImpl root;
    private final PersistentAttrs persistent;
    private final TreeBuilder builder;
    private final YunoCommands commands;
    private final RegistryImpl registry;
    private boolean running;
    private boolean autoplay;

    YunoImpl(String name, String role, EventLoop loop, EventLoopGroup ioGroup, int ioThreads, GClock clock, Path dataDir) {
        this.name = name;
        this.role = role == null || role.isEmpty() ? name : role;
        this.loop = loop;
        this.ioGroup = ioGroup == null ? loop : ioGroup;
        this.ioThreads = ioGroup == null ? 0 : ioThreads;
        this.clock = clock;
        this.timers = new Timers(loop, clock);
        this.dataDir = dataDir;
        this.persistent = new PersistentAttrs(dataDir);
        this.builder = new TreeBuilder(this, persistent);
        this.root = new GObjImpl(this, YunoGClass.SPEC, name, null, false, false, false, null);
        this.root.createBehavior();
        this.commands = new YunoCommands(this);
        this.registry = new RegistryImpl(this);
        extensions.put(io.gatehouse.api.Registry.class, registry);
        globalVars.put("__yuno_name__", name);
        globalVars.put("__yuno_role__", this.role);
        globalVars.put("__yuno_role_plus_name__", this.role + "^" + name);
        globalVars.put("__yuno_id__", name);
        globalVars.put("__yuno_tag__", "");
        globalVars.put("__node_owner__", "");
        globalVars.put("__realm_id__", "");
        globalVars.put("__realm_owner__", "");
        globalVars.put("__realm_role__", "");
        globalVars.put("__realm_name__", "");
        globalVars.put("__realm_env__", "");
        globalVars.put("__hostname__", hostname());
        baseVars.putAll(globalVars);
    }

    private static String hostname() {
        try {
            return InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }

    // --- Yuno ---

    @Override public String name() { return name; }
    @Override public String role() { return role; }
    @Override public EventLoop eventLoop() { return loop; }
    @Override public EventLoopGroup ioGroup() { return ioGroup; }
    @Override public GClock clock() { return clock; }
    /** The variables a config's templates see: the yuno's own and the config's {@code __json_config_variables__}. */
    Map<String, String> globalVars() { return globalVars; }
    Timers timers() { return timers; }
    @Override public Path dataDir() { return dataDir; }
    @Override public GObj root() { return root; }
    @Override public boolean inCoreThread() { return loop.inEventLoop(); }

    @Override
    public void execute(Runnable task) {
        if (loop.inEventLoop()) task.run();
        else loop.execute(task);
    }

    @Override
    public GObj service(String serviceName) {
        return serviceName == null ? null : services.get(serviceName);
    }

    @Override
    public List<GObj> services() {
        return new ArrayList<>(services.values());
    }

    @Override
    public GClassSpec<?> gclass(String gclassName) {
        return gclassName == null ? null : gclasses.get(gclassName);
    }

    Map<String, GClassSpec<?>> gclasses() {
        return gclasses;
    }

    void addExternalCommand(String name, String description, YunoRuntime.ExternalCommand cmd) {
        commands.addExternal(name, description, cmd);
    }

    YunoRuntime.ExternalCommand externalCommand(String name) {
        return commands.external(name);
    }

    @Override
    public ObjectNode command(String command, ObjectNode kw) {
        return commands.run(command, kw == null ? JsonNodeFactory.instance.objectNode() : kw);
    }

    @Override
    public <T> T lookup(Class<T> type) {
        return type.cast(extensions.get(type));
    }

    void putExtension(Class<?> type, Object value) {
        if (value == null) extensions.remove(type);
        else extensions.put(type, value);
    }

    boolean isRunning() { return running; }

    int ioThreads() { return ioThreads; }

    RegistryImpl registry() { return registry; }

    List<ServiceNode> serviceNodes() { return serviceNodes; }

    // --- Registry ---

    void register(GClassSpec<?> spec) {
        gclasses.put(spec.name(), spec);
    }

    GClassSpec<?> unregister(String gclassName) {
        return gclasses.remove(gclassName);
    }

    // --- Building from a config ---

    /**
     * Reads the {@code yuno}, {@code global} and {@code services} sections into service nodes (globals merged,
     * variables substituted). Nothing is created yet; every structural error is thrown here.
     */
    void loadConfig(ObjectNode config) {
        ConfigReader.Loaded l = ConfigReader.read(config, baseVars);
        autoplay = l.autoplay;
        registry.configure(l.yunoSection);
        globalVars.putAll(l.vars);
        serviceNodes.addAll(l.nodes);
        if (l.traceLevels != null) pendingTraceLevels = l.traceLevels;
    }

    /**
     * Applies a new config to the running yuno (Config Admin {@code @Modified}). Services are matched by name, their
     * nodes compared after globals and variables: an unchanged service stays as it is; a service whose only change is
     * the value of writable attributes in its own {@code kw} gets them written (its gclass's {@code onWriting}); any
     * other change rebuilds that service alone (stop, destroy, build from the new node, start: queues are on disk and
     * reopen); services no longer in the config are stopped and destroyed; new ones are built and started. A new
     * service whose gclass is not registered waits for it, as in a hot swap. A bad config changes nothing.
     *
     * @return what happened, per service: {@code unchanged}, {@code written}, {@code rebuilt}, {@code removed},
     *         {@code added}, or {@code waiting} (for gclasses)
     */
    Map<String, String> reconfigure(ObjectNode config) {
        ConfigReader.Loaded l = ConfigReader.read(config, baseVars);
        JsonNode wanted = l.yunoSection == null ? null : l.yunoSection.get("io_threads");
        int io = ConfigReader.ioThreadsOf(config);
        if (wanted != null && io != ioThreads) {
            // The loops own live sockets: changing them means a restart, which a reconfigure must not do by itself.
            Glog.warn(null, "io_threads changed: applies when the yuno starts again", "io_threads", ioThreads,
                    "configured", io);
        }
        ConfigDiff diff = ConfigDiff.of(serviceNodes, l);
        Map<String, String> outcome = diff.outcome;
        List<ServiceNode> gone = diff.gone;
        List<ServiceNode> toBuild = diff.toBuild;
        List<ServiceNode> toWrite = diff.toWrite;
        // Attribute names and types of what will be built or written, checked before anything changes.
        for (ServiceNode n : toBuild) ConfigReader.checkAttrs(n.node, n.name, false, gclasses);
        for (ServiceNode n : toWrite) ConfigReader.checkAttrs(n.node, n.name, false, gclasses);
        gone.sort(Comparator.<ServiceNode>comparingInt(s -> -s.priority).thenComparingInt(s -> -s.order));
        for (ServiceNode sn : gone) {
            if (sn.gobj != null) {
                sn.gobj.stopTree();
                sn.gobj.destroy();
                if (services.get(sn.name) == sn.gobj) services.remove(sn.name);
                sn.gobj = null;
            }
            Glog.info(null, "Service destroyed: its config changed", "service", sn.name, "what", outcome.get(sn.name));
        }
        autoplay = l.autoplay;
        registry.configure(l.yunoSection);
        globalVars.keySet().retainAll(baseVars.keySet());
        globalVars.putAll(baseVars);
        globalVars.putAll(l.vars);
        serviceNodes.clear();
        serviceNodes.addAll(l.nodes);
        for (ServiceNode sn : toWrite) {
            ObjectNode oldKw = Kw.getDict(diff.old.get(sn.name).node, "kw");
            ObjectNode newKw = Kw.getDict(sn.node, "kw");
            for (String k : ConfigDiff.changedKeys(oldKw, newKw)) {
                JsonNode v = newKw == null ? null : newKw.get(k);
                Attr<?> a = sn.gobj.gclass().attr(k);
                try {
                    sn.gobj.writeAttr(k, v != null ? v : a.defaultJson());
                } catch (IllegalArgumentException e) {
                    // The gclass refused it and kept its previous value (logged by the gobj); the rest goes on.
                    Glog.error(null, "Config change not applied", "service", sn.name, "attr", k,
                            "error", String.valueOf(e.getMessage()));
                }
            }
            Glog.info(null, "Service attributes written: its config changed", "service", sn.name);
        }
        Map<String, Set<String>> missing = missingGclasses();
        List<ServiceNode> built = new ArrayList<>();
        for (ServiceNode sn : toBuild) {
            if (missing.containsKey(sn.name)) {
                outcome.put(sn.name, "waiting");
                continue;
            }
            try {
                buildService(sn);
                built.add(sn);
            } catch (ConfigException e) {
                Glog.error(null, "Service cannot be built", "service", sn.name, "error", e.getMessage());
                outcome.put(sn.name, "error: " + e.getMessage());
            }
        }
        resolveNamedSubscribers();
        if (l.traceLevels != null) {
            pendingTraceLevels = l.traceLevels;
            applyTraceLevels();
        }
        if (running) {
            built.sort(Comparator.<ServiceNode>comparingInt(s -> s.priority).thenComparingInt(s -> s.order));
            for (ServiceNode sn : built) startAfterIo(sn);
        }
        return outcome;
    }

    private final List<ServiceNode> toStartAfterIo = new ArrayList<>();
    private CompletableFuture<Void> startedAfterIo = CompletableFuture.completedFuture(null);

    /**
     * Starts a service built in this task on a later turn of the core loop, after its selector has run. The JDK
     * closes a listening socket registered with a selector only at that selector's next select: a listener rebuilt
     * in the task that closed the old one on the same port would find the port still bound ("Address already in
     * use"). Services queued together start in the order they were queued.
     */
    private void startAfterIo(ServiceNode sn) {
        if (toStartAfterIo.isEmpty()) {
            CompletableFuture<Void> done = new CompletableFuture<>();
            startedAfterIo = done;
            // A scheduled task, not execute(): Netty moves due scheduled tasks to the task queue once per loop turn,
            // so this runs after the next select even when the loop is busy with other tasks.
            loop.schedule(() -> {
                List<ServiceNode> now = new ArrayList<>(toStartAfterIo);
                toStartAfterIo.clear();
                try {
                    if (running) for (ServiceNode n : now) startService(n);
                } finally {
                    done.complete(null);
                }
            }, 0, TimeUnit.MILLISECONDS);
        }
        toStartAfterIo.add(sn);
    }

    /** Completes once the services queued by a reconfigure or an upgrade's rebuild have been started. */
    CompletableFuture<Void> startedAfterIo() {
        return startedAfterIo;
    }

    private ObjectNode pendingTraceLevels;

    /** Gclasses named by the config that are not registered (service name → missing gclass names). */
    Map<String, Set<String>> missingGclasses() {
        Map<String, Set<String>> out = new LinkedHashMap<>();
        for (ServiceNode sn : serviceNodes) {
            Set<String> need = new HashSet<>();
            ConfigReader.gclassesOf(sn.node, need);
            need.addAll(sn.neededGclasses);
            need.removeIf(gclasses::containsKey);
            if (!need.isEmpty()) out.put(sn.name, need);
        }
        return out;
    }

    /** Builds every service not built yet. All or nothing: on error, what this call built is destroyed. */
    void buildAll() {
        List<ServiceNode> built = new ArrayList<>();
        try {
            for (ServiceNode sn : serviceNodes) {
                if (sn.gobj != null) continue;
                buildService(sn);
                built.add(sn);
            }
            resolveNamedSubscribers();
            applyTraceLevels();
        } catch (RuntimeException e) {
            for (ServiceNode sn : built) {
                if (sn.gobj != null) sn.gobj.destroy();
                sn.gobj = null;
            }
            throw e;
        }
    }

    private void applyTraceLevels() {
        if (pendingTraceLevels == null) return;
        pendingTraceLevels.fields().forEachRemaining(e -> {
            for (GObjImpl g : allGobjs()) {
                if (g.gclassName().equals(e.getKey()) || g.name().equals(e.getKey())) {
                    for (JsonNode l : e.getValue()) {
                        try {
                            g.setTrace(l.asText(), true);
                        } catch (IllegalArgumentException unknown) {
                            // trace_levels names a gclass or a service: a level another gobj of it lacks is no error
                            // for this one, but a level nobody has is said (once per gobj) so a typo shows.
                            Glog.warn(g, "trace_levels: level unknown in this gclass, ignored", "level", l.asText());
                        }
                    }
                }
            }
        });
    }

    void buildService(ServiceNode sn) {
        sn.gobj = null;
        GObjImpl g = builder.createFromNode(root, sn.node, sn.name, true);
        sn.gobj = g;
        sn.neededGclasses.clear();
        services.put(sn.name, g);
    }

    GObj createRuntimeChild(GObjImpl parent, String childName, String gclassName, ObjectNode kw, boolean isVolatile) {
        return builder.createRuntimeChild(parent, childName, gclassName, kw, isVolatile);
    }

    /** Gobjs whose kw named a subscriber service subscribe to it, now that it may exist (rebuilt services rejoin). */
    void resolveNamedSubscribers() {
        builder.resolveNamedSubscribers(services);
    }

    // --- Running ---

    /** Starts services by priority (0 first), then plays: Yuneta's run_services, priority 9 included. */
    void startServices() {
        running = true;
        List<ServiceNode> byPriority = new ArrayList<>(serviceNodes);
        byPriority.sort(Comparator.<ServiceNode>comparingInt(s -> s.priority).thenComparingInt(s -> s.order));
        for (ServiceNode sn : byPriority) startService(sn);
    }

    void startService(ServiceNode sn) {
        GObjImpl g = sn.gobj;
        if (g == null || g.isDestroyed()) return;
        if (!sn.autostart && !sn.autoplay) return;
        if (g.gclass().playable()) {
            g.start();
            if (sn.autoplay || autoplay) g.play();
        } else {
            g.startTree();
        }
    }

    void stopAll() {
        running = false;
        List<ServiceNode> rev = new ArrayList<>(serviceNodes);
        rev.sort(Comparator.<ServiceNode>comparingInt(s -> -s.priority).thenComparingInt(s -> -s.order));
        for (ServiceNode sn : rev) {
            if (sn.gobj != null && !sn.gobj.isDestroyed()) sn.gobj.stopTree();
        }
    }

    void destroyAll() {
        stopAll();
        List<ServiceNode> rev = new ArrayList<>(serviceNodes);
        java.util.Collections.reverse(rev);
        for (ServiceNode sn : rev) {
            if (sn.gobj != null) sn.gobj.destroy();
            sn.gobj = null;
        }
        for (GObj c : root.children()) c.destroy();
    }

    // --- Hot swap and live upgrade ---

    /** How long suspended gobjs wait for the new revision of their gclass before their services are rebuilt. */
    private long upgradeGraceMs = DEFAULT_UPGRADE_GRACE_MS;
    static final long DEFAULT_UPGRADE_GRACE_MS = 30_000;
    /** Gclass names whose gobjs are suspended, waiting for a revision, with the timer that gives up. */
    private final Map<String, io.gatehouse.api.Cancellable> suspendedGclasses = new LinkedHashMap<>();

    void upgradeGraceMs(long ms) {
        this.upgradeGraceMs = ms;
    }

    /**
     * The serving revision of some gclasses went away with none to take over (a {@code Bundle.update()} has begun,
     * or the bundle stopped): their gobjs are suspended, not destroyed, so their connections stay open and their
     * state stays in memory while the framework installs the new revision. New services that need these gclasses
     * wait. If no revision comes within the grace period, the services holding these gobjs are rebuilt: destroyed
     * now, built again when the gclass returns.
     */
    List<String> gclassesGone(java.util.Collection<String> names) {
        List<String> affected = new ArrayList<>();
        for (String name : names) {
            unregister(name);
            int n = 0;
            for (GObjImpl g : allGobjs()) {
                if (g.gclassName().equals(name) && !g.isDestroyed()) {
                    g.suspend();
                    n++;
                }
            }
            if (n == 0) continue;
            affected.add(name);
            io.gatehouse.api.Cancellable old = suspendedGclasses.remove(name);
            if (old != null) old.cancel();
            suspendedGclasses.put(name, timers.schedule(upgradeGraceMs, () -> giveUpWaiting(name)));
            Glog.info(null, "Upgrade: gobjs suspended until the new revision of their gclass is there",
                    "gclass", name, "gobjs", n, "grace_ms", upgradeGraceMs);
        }
        return affected;
    }

    private void giveUpWaiting(String gclassName) {
        if (suspendedGclasses.remove(gclassName) == null) return;
        Set<String> services = new java.util.LinkedHashSet<>();
        for (GObjImpl g : allGobjs()) {
            if (g.gclassName().equals(gclassName) && g.isSuspended()) {
                GObj s = Handover.serviceOf(g);
                if (s != null) services.add(s.name());
            }
        }
        Glog.warn(null, "Upgrade: no revision of the gclass came within the grace period, its services go down until"
                + " it returns", "gclass", gclassName, "grace_ms", upgradeGraceMs, "services", services.toString());
        for (ServiceNode sn : serviceNodes) {
            if (sn.gobj == null || !services.contains(sn.name)) continue;
            Set<String> live = new HashSet<>();
            collectGclasses(sn.gobj, live);
            destroyService(sn);
            sn.neededGclasses.addAll(live);
        }
    }

    /**
     * A revision of some gclasses is serving now (several names come together when they share a bundle). Gobjs of
     * those gclasses, running another revision or suspended waiting for one, are handed over to it in this task
     * ({@link Handover}); services that were waiting for these gclasses are built and started.
     */
    Handover.Report gclassesArrived(List<GClassSpec<?>> specs) {
        for (GClassSpec<?> spec : specs) {
            register(spec);
            io.gatehouse.api.Cancellable waiting = suspendedGclasses.remove(spec.name());
            if (waiting != null) waiting.cancel();
        }
        Handover.Report report = Handover.run(this, specs);
        if (report.migrated > 0 || !report.rebuilt.isEmpty()) {
            Glog.info(null, "Upgrade: gobjs handed over to the new revision", "gclasses", report.gclasses.toString(),
                    "gobjs", report.migrated, "rebuilt", report.rebuilt.keySet().toString(),
                    "pause_ms", report.pauseMicros / 1000.0);
        }
        rebuildServices(report.rebuilt.keySet());
        if (!running) return report;
        Map<String, Set<String>> missing = missingGclasses();
        for (ServiceNode sn : serviceNodes) {
            if (sn.gobj != null || missing.containsKey(sn.name)) continue;
            try {
                buildService(sn);
                resolveNamedSubscribers();
                startService(sn);
                Glog.info(null, "Service built", "service", sn.name, "gclasses", report.gclasses.toString());
            } catch (ConfigException e) {
                Glog.error(null, "Service cannot be built", "service", sn.name, "error", e.getMessage());
            }
        }
        return report;
    }

    /** Destroys these services and builds them again from their config nodes (a hot swap's rebuild). */
    void rebuildServices(Set<String> names) {
        for (ServiceNode sn : serviceNodes) {
            if (sn.gobj == null || !names.contains(sn.name)) continue;
            destroyService(sn);
            if (!missingGclasses().containsKey(sn.name)) {
                try {
                    buildService(sn);
                    resolveNamedSubscribers();
                    if (running) startAfterIo(sn);
                } catch (ConfigException e) {
                    Glog.error(null, "Service cannot be built", "service", sn.name, "error", e.getMessage());
                }
            }
        }
    }

    private void destroyService(ServiceNode sn) {
        sn.gobj.stopTree();
        sn.gobj.destroy();
        if (services.get(sn.name) == sn.gobj) services.remove(sn.name);
        sn.gobj = null;
    }

    /** Gclass names whose gobjs wait, suspended, for a revision. */
    Set<String> suspendedGclasses() {
        return new java.util.LinkedHashSet<>(suspendedGclasses.keySet());
    }

    private static void collectGclasses(GObj g, Set<String> out) {
        out.add(g.gclassName());
        for (GObj c : ((GObjImpl) g).childrenView()) collectGclasses(c, out);
    }

    List<GObjImpl> allGobjs() {
        List<GObjImpl> out = new ArrayList<>();
        collect(root, out);
        return out;
    }

    private static void collect(GObjImpl g, List<GObjImpl> out) {
        out.add(g);
        for (GObj c : g.childrenView()) collect((GObjImpl) c, out);
    }

    void forget(GObjImpl g) {
        if (g.isService() && services.get(g.name()) == g) services.remove(g.name());
    }

    // --- Logging helpers ---

    void infoUnusedOnce(GObjImpl g, String key) {
        if (unusedLogged.add(g.gclassName() + "." + key)) {
            Glog.info(g, "Config key known from Yuneta, not used by Gatehouse", "key", key);
        }
    }

    // --- Persistent attributes ---

    void savePersistent(GObjImpl g) {
        persistent.save(g);
    }

    /** The gobj tree as JSON: name, gclass, state, running, playing, disabled, children. */
    ObjectNode tree(GObj g) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("name", g.name());
        o.put("gclass", g.gclassName());
        o.put("state", g.state());
        o.put("running", g.isRunning());
        o.put("playing", g.isPlaying());
        o.put("disabled", g.isDisabled());
        if (g.bottom() != null) o.put("bottom", g.bottom().name());
        ArrayNode ch = o.putArray("children");
        for (GObj c : g.children()) ch.add(tree(c));
        return o;
    }

    /** Finds a gobj by service name and an optional backquote path of child names below it. */
    GObj find(String serviceName, String path) {
        GObj g = services.get(serviceName);
        if (g == null || path == null || path.isEmpty()) return g;
        for (String part : path.split("`")) {
            if (g == null) return null;
            g = g.child(part);
        }
        return g;
    }

    @Override
    public String toString() {
        return "yuno " + role + "^" + name;
    }

    /** The gclass of the yuno's own gobj: one idle state, no events. */
    static final class YunoGClass implements GObjBehavior {
        static final GClassSpec<YunoGClass> SPEC = GClassSpec.builder(GClassNames.C_YUNO, YunoGClass.class)
                .description("The yuno: parent of every service")
                .fsm(Fsm.<YunoGClass>builder().state(St.ST_IDLE).build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(g -> new YunoGClass())
                .build();
    }

    static String lower(String s) {
        return s.toLowerCase(Locale.ROOT);
    }
}
