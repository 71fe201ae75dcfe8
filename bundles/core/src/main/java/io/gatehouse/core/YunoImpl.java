package io.gatehouse.core;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GClock;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Glog;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.api.Yuno;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;

import java.io.IOException;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A yuno: the gclass registry it builds from, the gobj tree built from a Yuneta config, its services and
 * its core thread. Everything but the registry and {@link #execute} runs on the core thread.
 */
final class YunoImpl implements Yuno {
    static final boolean DEBUG_EXCEPTIONS = Boolean.getBoolean("gatehouse.debug");

    /** Yuneta keys any gclass may carry that have no meaning here (pointers, legacy). */
    static final Set<String> GENERIC_UNUSED_KEYS = Set.of("user_data", "user_data2", "persistent_channels");

    /** Node keys of the config tree; everything else at node level is an error. */
    private static final Set<String> NODE_KEYS = Set.of("name", "gclass", "kw", "children", "zchilds",
            "[^^children^^]", "default_service", "as_service", "service", "autostart", "autoplay", "disabled",
            "pure_child", "priority", "__json_config_variables__", "__comment__", "comment");

    private static final ObjectMapper CONFIG_MAPPER = new ObjectMapper()
            .enable(JsonParser.Feature.ALLOW_COMMENTS)
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

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
    private final YunoCommands commands;
    private final RegistryImpl registry;
    private boolean running;
    private boolean autoplay;

    /** A top-level entry of {@code services}, kept so the service can be built again (hot swap). */
    static final class ServiceNode {
        final String name;
        final ObjectNode node;
        final int priority;
        final boolean autostart;
        final boolean autoplay;
        final int order;
        GObjImpl gobj;
        /** Gclasses that were live in the subtree when it was destroyed (dynamic children included). */
        final Set<String> neededGclasses = new HashSet<>();

        ServiceNode(String name, ObjectNode node, int priority, boolean autostart, boolean autoplay, int order) {
            this.name = name;
            this.node = node;
            this.priority = priority;
            this.autostart = autostart;
            this.autoplay = autoplay;
            this.order = order;
        }
    }

    YunoImpl(String name, String role, EventLoop loop, EventLoopGroup ioGroup, int ioThreads, GClock clock, Path dataDir) {
        this.name = name;
        this.role = role == null || role.isEmpty() ? name : role;
        this.loop = loop;
        this.ioGroup = ioGroup == null ? loop : ioGroup;
        this.ioThreads = ioGroup == null ? 0 : ioThreads;
        this.clock = clock;
        this.timers = new Timers(loop, clock);
        this.dataDir = dataDir;
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

    /** Parses config text, with line and column in the error. */
    static ObjectNode parseConfig(String text) {
        try {
            JsonNode n = CONFIG_MAPPER.readTree(text);
            if (n == null || !n.isObject()) throw new ConfigException("", "the config must be a JSON object");
            return (ObjectNode) n;
        } catch (JsonProcessingException e) {
            var loc = e.getLocation();
            String where = loc == null ? "" : " at line " + loc.getLineNr() + ", column " + loc.getColumnNr();
            throw new ConfigException("", "config is not valid JSON: " + e.getOriginalMessage() + where);
        }
    }

    /** Most worker loops {@code io_threads} may ask for: a typo such as 1000 is a config error, not 1000 threads. */
    static final int MAX_IO_THREADS = 64;

    /**
     * The {@code io_threads} of a config's {@code yuno} section (0 when absent): how many worker loops serve the
     * yuno's sockets. Read before the yuno exists, because the loops are made with it.
     */
    static int ioThreadsOf(ObjectNode config) {
        JsonNode y = config == null ? null : config.get("yuno");
        JsonNode n = y == null || !y.isObject() ? null : y.get("io_threads");
        if (n == null || n.isNull()) return 0;
        long v = -1;
        if (n.isIntegralNumber()) {
            v = n.asLong();
        } else if (n.isTextual()) {
            try {
                v = Long.parseLong(n.asText().trim());
            } catch (NumberFormatException e) {
                v = -1;
            }
        }
        if (v < 0 || v > MAX_IO_THREADS) {
            throw new ConfigException("yuno", "'io_threads' must be an integer from 0 to " + MAX_IO_THREADS + ", got " + n);
        }
        return (int) v;
    }

    /**
     * Reads the {@code yuno}, {@code global} and {@code services} sections into service nodes (globals merged,
     * variables substituted). Nothing is created yet; every structural error is thrown here.
     */
    void loadConfig(ObjectNode config) {
        Loaded l = read(config);
        autoplay = l.autoplay;
        registry.configure(l.yunoSection);
        globalVars.putAll(l.vars);
        serviceNodes.addAll(l.nodes);
        if (l.traceLevels != null) pendingTraceLevels = l.traceLevels;
    }

    /** A config read into service nodes, not applied yet. */
    static final class Loaded {
        boolean autoplay;
        JsonNode yunoSection;
        final Map<String, String> vars = new HashMap<>();
        final List<ServiceNode> nodes = new ArrayList<>();
        ObjectNode traceLevels;
    }

    /** Reads a config (globals merged, variables substituted, structure checked); changes nothing. */
    private Loaded read(ObjectNode config) {
        Loaded l = new Loaded();
        JsonNode yunoSection = config.get("yuno");
        if (yunoSection != null && !yunoSection.isObject()) throw new ConfigException("yuno", "'yuno' must be a dict");
        l.yunoSection = yunoSection;
        l.autoplay = yunoSection != null && Kw.getBool(yunoSection, "autoplay", false);
        JsonNode traceLevels = yunoSection == null ? null : yunoSection.get("trace_levels");
        if (traceLevels != null && traceLevels.isObject()) l.traceLevels = (ObjectNode) traceLevels;
        JsonNode global = config.get("global");
        if (global != null && !global.isObject()) throw new ConfigException("global", "'global' must be a dict");
        Map<String, String> allVars = new HashMap<>(baseVars);
        JsonNode vars = config.get("__json_config_variables__");
        if (vars != null && vars.isObject()) {
            vars.fields().forEachRemaining(e -> {
                if (e.getValue().isTextual()) l.vars.put(e.getKey(), e.getValue().asText());
            });
        }
        allVars.putAll(l.vars);
        JsonNode list = config.get("services");
        if (list == null) return l;
        if (!list.isArray()) throw new ConfigException("services", "'services' must be a list");
        Set<String> names = new HashSet<>();
        int order = 0;
        for (JsonNode s : list) {
            if (!s.isObject()) throw new ConfigException("services", "every service must be a dict");
            String sname = Kw.getString(s, "name", "");
            if (sname.isEmpty()) throw new ConfigException("services[" + order + "]", "a service needs a non-empty 'name'");
            if (!names.add(sname)) throw new ConfigException(sname, "duplicate service name '" + sname + "'");
            ObjectNode node = ((ObjectNode) s).deepCopy();
            applyGlobals(node, sname, global == null ? null : (ObjectNode) global);
            Map<String, String> v = new HashMap<>(allVars);
            JsonNode own = node.remove("__json_config_variables__");
            if (own != null && own.isObject()) {
                own.fields().forEachRemaining(e -> {
                    if (e.getValue().isTextual()) v.put(e.getKey(), e.getValue().asText());
                });
            }
            node = (ObjectNode) Variables.substitute(node, v);
            int priority = (int) Kw.getLong(node, "priority", 5);
            if (priority < 0 || priority > 9) priority = 5;
            boolean autostart = Kw.getBool(node, "autostart", true);
            boolean autoplaySvc = Kw.getBool(node, "autoplay", false);
            ServiceNode sn = new ServiceNode(sname, node, priority, autostart, autoplaySvc, order++);
            validateNode(node, sname);
            l.nodes.add(sn);
        }
        return l;
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
        Loaded l = read(config);
        JsonNode wanted = l.yunoSection == null ? null : l.yunoSection.get("io_threads");
        int io = ioThreadsOf(config);
        if (wanted != null && io != ioThreads) {
            // The loops own live sockets: changing them means a restart, which a reconfigure must not do by itself.
            Glog.warn(null, "io_threads changed: applies when the yuno starts again", "io_threads", ioThreads,
                    "configured", io);
        }
        Map<String, ServiceNode> old = new LinkedHashMap<>();
        for (ServiceNode sn : serviceNodes) old.put(sn.name, sn);
        Map<String, String> outcome = new LinkedHashMap<>();
        List<ServiceNode> toWrite = new ArrayList<>();
        List<ServiceNode> toBuild = new ArrayList<>();
        // Removed, and rebuilt ones, go first (highest priority number first, as at a stop).
        List<ServiceNode> gone = new ArrayList<>();
        for (ServiceNode sn : old.values()) {
            if (l.nodes.stream().noneMatch(n -> n.name.equals(sn.name))) {
                gone.add(sn);
                outcome.put(sn.name, "removed");
            }
        }
        for (ServiceNode n : l.nodes) {
            ServiceNode o = old.get(n.name);
            if (o == null) {
                toBuild.add(n);
                outcome.put(n.name, "added");
            } else if (o.node.equals(n.node)) {
                n.gobj = o.gobj;
                n.neededGclasses.addAll(o.neededGclasses);
                outcome.put(n.name, "unchanged");
            } else if (o.gobj != null && onlyWritableKwChanged(o, n)) {
                n.gobj = o.gobj;
                toWrite.add(n);
                outcome.put(n.name, "written");
            } else {
                gone.add(o);
                toBuild.add(n);
                outcome.put(n.name, "rebuilt");
            }
        }
        // Attribute names and types of what will be built or written, checked before anything changes.
        for (ServiceNode n : toBuild) checkAttrs(n.node, n.name, false);
        for (ServiceNode n : toWrite) checkAttrs(n.node, n.name, false);
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
            ObjectNode oldKw = Kw.getDict(old.get(sn.name).node, "kw");
            ObjectNode newKw = Kw.getDict(sn.node, "kw");
            for (String k : changedKeys(oldKw, newKw)) {
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
            for (ServiceNode sn : built) startService(sn);
        }
        return outcome;
    }

    /**
     * The checks {@code applyKw} makes at build time, without building: every kw key is an attribute of the node's
     * gclass (or a Yuneta key Gatehouse accepts) and its value converts to the attribute's type (not inside templates,
     * whose values hold variables until expanded). Nodes of gclasses not registered are skipped (they wait).
     */
    private void checkAttrs(JsonNode node, String path, boolean inTemplate) {
        GClassSpec<?> spec = gclasses.get(Kw.getString(node, "gclass", ""));
        JsonNode kw = node.get("kw");
        if (spec != null && kw != null && kw.isObject()) {
            var it = kw.fields();
            while (it.hasNext()) {
                var e = it.next();
                String k = e.getKey();
                if (k.equals("subscriber")) continue;
                Attr<?> a = spec.attr(k);
                if (a == null) {
                    if (spec.unusedYunetaKeys().contains(k) || GENERIC_UNUSED_KEYS.contains(k)) continue;
                    throw new ConfigException(path, "attribute '" + k + "' unknown in gclass " + spec.name());
                }
                if (inTemplate) continue;
                try {
                    a.fromJson(e.getValue());
                } catch (IllegalArgumentException ex) {
                    throw new ConfigException(path, ex.getMessage());
                }
            }
        }
        JsonNode children = node.has("children") ? node.get("children") : node.get("zchilds");
        if (children != null && children.isArray()) {
            int i = 0;
            for (JsonNode c : children) checkAttrs(c, path + "/" + childLabel(c, i++), inTemplate);
        }
        JsonNode tpl = node.get("[^^children^^]");
        if (tpl != null && tpl.get("__content__") != null) checkAttrs(tpl.get("__content__"), path + "/[^^children^^]", true);
    }

    /** True when the two nodes differ only in the service's own kw, and only in keys of writable attributes. */
    private static boolean onlyWritableKwChanged(ServiceNode o, ServiceNode n) {
        ObjectNode a = o.node.deepCopy();
        ObjectNode b = n.node.deepCopy();
        JsonNode ka = a.remove("kw");
        JsonNode kb = b.remove("kw");
        if (!a.equals(b)) return false;
        ObjectNode oldKw = ka instanceof ObjectNode ? (ObjectNode) ka : null;
        ObjectNode newKw = kb instanceof ObjectNode ? (ObjectNode) kb : null;
        GClassSpec<?> spec = o.gobj.gclass();
        Set<String> changed = changedKeys(oldKw, newKw);
        if (changed.isEmpty()) return false;
        for (String k : changed) {
            Attr<?> attr = spec.attr(k);
            if (attr == null || !attr.is(AttrFlag.WR)) return false;
        }
        return true;
    }

    private static Set<String> changedKeys(ObjectNode a, ObjectNode b) {
        Set<String> keys = new java.util.TreeSet<>();
        if (a != null) a.fieldNames().forEachRemaining(keys::add);
        if (b != null) b.fieldNames().forEachRemaining(keys::add);
        keys.removeIf(k -> java.util.Objects.equals(a == null ? null : a.get(k), b == null ? null : b.get(k)));
        return keys;
    }

    private ObjectNode pendingTraceLevels;

    /** Merges {@code global} keys {@code "<gclass or service>.<attr>"} into the service node and its kw. */
    private void applyGlobals(ObjectNode node, String sname, ObjectNode global) {
        if (global == null) return;
        String gclass = Kw.getString(node, "gclass", "");
        Iterator<Map.Entry<String, JsonNode>> it = global.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            String key = e.getKey();
            int dot = key.indexOf('.');
            if (dot <= 0) continue;
            String target = key.substring(0, dot);
            String attr = key.substring(dot + 1);
            if (!target.equals(gclass) && !target.equalsIgnoreCase(sname)) continue;
            ObjectNode kw = node.has("kw") && node.get("kw").isObject() ? (ObjectNode) node.get("kw") : node.putObject("kw");
            if (attr.equals("kw")) {
                if (e.getValue().isObject()) kw.setAll((ObjectNode) e.getValue().deepCopy());
            } else if (NODE_KEYS.contains(attr)) {
                node.set(attr, e.getValue().deepCopy());
            } else {
                kw.set(attr, e.getValue().deepCopy());
            }
        }
    }

    /** Structural checks of a node subtree: known node keys, gclass present, templates complete. */
    private void validateNode(JsonNode node, String path) {
        Iterator<String> keys = node.fieldNames();
        while (keys.hasNext()) {
            String k = keys.next();
            if (!NODE_KEYS.contains(k)) throw new ConfigException(path, "unknown key '" + k + "' in a service node");
        }
        if (Kw.getString(node, "gclass", "").isEmpty()) throw new ConfigException(path, "node without 'gclass'");
        JsonNode kw = node.get("kw");
        if (kw != null && !kw.isObject() && !kw.isNull()) throw new ConfigException(path, "'kw' must be a dict");
        JsonNode children = node.has("children") ? node.get("children") : node.get("zchilds");
        if (children != null) {
            if (!children.isArray()) throw new ConfigException(path, "'children' must be a list");
            int i = 0;
            for (JsonNode c : children) {
                if (!c.isObject()) throw new ConfigException(path, "every child must be a dict");
                validateNode(c, path + "/" + childLabel(c, i++));
            }
        }
        JsonNode tpl = node.get("[^^children^^]");
        if (tpl != null) {
            if (!tpl.isObject() || !tpl.has("__range__") || !tpl.has("__vars__") || !tpl.has("__content__")) {
                throw new ConfigException(path, "'[^^children^^]' needs __range__, __vars__ and __content__");
            }
            rangeOf(tpl.get("__range__"), path);
            if (!tpl.get("__content__").isObject()) throw new ConfigException(path, "'__content__' must be a dict");
            if (!tpl.get("__vars__").isObject()) throw new ConfigException(path, "'__vars__' must be a dict");
        }
    }

    private static String childLabel(JsonNode c, int i) {
        String n = Kw.getString(c, "name", "");
        return n.isEmpty() ? Kw.getString(c, "gclass", "?") + "[" + i + "]" : n;
    }

    static long[] rangeOf(JsonNode r, String path) {
        if (r.isArray() && r.size() == 2 && r.get(0).canConvertToLong() && r.get(1).canConvertToLong()) {
            return new long[] {r.get(0).asLong(), r.get(1).asLong()};
        }
        if (r.isIntegralNumber()) return new long[] {1, r.asLong()};
        if (r.isTextual()) {
            try {
                return new long[] {1, Long.parseLong(r.asText().trim())};
            } catch (NumberFormatException e) {
                throw new ConfigException(path, "'__range__' must be a number or [first, last], got \"" + r.asText() + "\"");
            }
        }
        throw new ConfigException(path, "'__range__' must be a number or [first, last]");
    }

    /** Every gclass named in a node subtree. */
    static void gclassesOf(JsonNode node, Set<String> out) {
        String g = Kw.getString(node, "gclass", "");
        if (!g.isEmpty()) out.add(g);
        JsonNode children = node.has("children") ? node.get("children") : node.get("zchilds");
        if (children != null && children.isArray()) for (JsonNode c : children) gclassesOf(c, out);
        JsonNode tpl = node.get("[^^children^^]");
        if (tpl != null && tpl.has("__content__")) gclassesOf(tpl.get("__content__"), out);
    }

    /** Gclasses named by the config that are not registered (service name → missing gclass names). */
    Map<String, Set<String>> missingGclasses() {
        Map<String, Set<String>> out = new LinkedHashMap<>();
        for (ServiceNode sn : serviceNodes) {
            Set<String> need = new HashSet<>();
            gclassesOf(sn.node, need);
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
        GObjImpl g = createFromNode(root, sn.node, sn.name, true);
        sn.gobj = g;
        sn.neededGclasses.clear();
        services.put(sn.name, g);
    }

    private GObjImpl createFromNode(GObjImpl parent, ObjectNode node, String path, boolean isService) {
        String gclassName = Kw.getString(node, "gclass", "");
        GClassSpec<?> spec = gclasses.get(gclassName);
        if (spec == null) throw new ConfigException(path, "gclass '" + gclassName + "' NOT FOUND");
        String gname = Kw.getString(node, "name", "");
        ObjectNode kw = Kw.getDict(node, "kw");
        boolean pure = Kw.getBool(node, "pure_child", false);
        GObjImpl g = new GObjImpl(this, spec, gname, parent, isService, false, pure, node);
        try {
            g.applyKw(kw, path);
            if (isService) g.applyPersistent(loadPersistent(g));
            g.createBehavior();
            parent.addChild(g);
            subscribeByModel(g, kw, true);
            g.behavior().onCreate();
            if (parent != root) parent.behavior().onChildAdded(g);
            if (Kw.getBool(node, "disabled", false)) g.disable();
            JsonNode children = node.get("children");
            if (children == null && node.has("zchilds")) {
                Glog.error(g, "'zchilds' is DEPRECATED, use 'children'");
                children = node.get("zchilds");
            }
            int created = 0;
            if (children != null) {
                int i = 0;
                for (JsonNode c : children) {
                    createFromNode(g, (ObjectNode) c, path + "/" + childLabel(c, i++), false);
                    created++;
                }
            }
            JsonNode tpl = node.get("[^^children^^]");
            if (tpl != null) {
                long[] range = rangeOf(tpl.get("__range__"), path);
                ObjectNode vars = (ObjectNode) tpl.get("__vars__");
                for (long i = range[0]; i <= range[1]; i++) {
                    Map<String, String> v = new HashMap<>(globalVars);
                    vars.fields().forEachRemaining(e -> {
                        if (e.getValue().isTextual()) v.put(e.getKey(), e.getValue().asText());
                    });
                    v.put("__range__", String.valueOf(i));
                    ObjectNode content = (ObjectNode) Variables.substitute(tpl.get("__content__"), v);
                    createFromNode(g, content, path + "/" + childLabel(content, (int) i), false);
                }
            } else if (created == 1) {
                // Bottom auto-wiring: a single explicit child is the next layer down (never with a template).
                g.setBottom(g.childrenView().get(0));
            }
            return g;
        } catch (ConfigException e) {
            g.destroy();
            throw e;
        } catch (RuntimeException e) {
            g.destroy();
            throw new ConfigException(path, e.getMessage() == null ? e.toString() : e.getMessage());
        }
    }

    GObj createRuntimeChild(GObjImpl parent, String childName, String gclassName, ObjectNode kw, boolean isVolatile) {
        GClassSpec<?> spec = gclasses.get(gclassName);
        if (spec == null) {
            Glog.error(parent, "gclass NOT FOUND", "gclass", gclassName, "name", childName);
            return null;
        }
        GObjImpl g = new GObjImpl(this, spec, childName, parent, false, isVolatile, !isVolatile, null);
        try {
            g.applyKw(kw, parent.fullName() + "/" + childName);
            g.createBehavior();
            parent.addChild(g);
            subscribeByModel(g, kw, false);
            g.behavior().onCreate();
            parent.behavior().onChildAdded(g);
            return g;
        } catch (RuntimeException e) {
            Glog.error(parent, "Cannot create child", "gclass", gclassName, "name", childName, "error", e.getMessage());
            g.destroy();
            return null;
        }
    }

    /**
     * Who hears a new gobj: the {@code subscriber} of its kw (a gobj reference, or a service name resolved when
     * that service exists), else its parent unless the parent is the yuno (services have no implicit subscriber).
     */
    private void subscribeByModel(GObjImpl g, ObjectNode kw, boolean fromConfig) {
        JsonNode sub = kw == null ? null : kw.get("subscriber");
        if (sub != null && !sub.isNull()) {
            GObj ref = Kw.ref(kw, "subscriber", GObj.class);
            if (ref != null) {
                g.subscribe(null, ref);
                return;
            }
            if (sub.isTextual() && !sub.asText().isEmpty()) {
                namedSubscribers.put(g, sub.asText());
                return;
            }
        }
        if (g.parent() != root && g.parent() != null) {
            if (fromConfig || g.gclass().subscriptionModel() == GClassSpec.SubscriptionModel.CHILD || g.isPureChild()) {
                g.subscribe(null, g.parent());
            }
        }
    }

    /** Gobjs whose kw named a subscriber service: resolved after every build, so rebuilt services rejoin. */
    private final Map<GObjImpl, String> namedSubscribers = new LinkedHashMap<>();

    void resolveNamedSubscribers() {
        namedSubscribers.entrySet().removeIf(e -> e.getKey().isDestroyed());
        for (Map.Entry<GObjImpl, String> e : namedSubscribers.entrySet()) {
            GObj target = services.get(e.getValue());
            if (target == null) {
                Glog.warn(e.getKey(), "subscriber service gobj NOT FOUND (yet)", "subscriber", e.getValue());
                continue;
            }
            e.getKey().subscribe(null, target);
        }
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

    // --- Hot swap ---

    /**
     * A gclass went away: every service whose subtree holds a gobj of it is stopped and destroyed (the whole
     * service, so gobjs that gclasses created at run time go too) and waits to be built again.
     */
    List<String> gclassLeft(String gclassName) {
        unregister(gclassName);
        List<String> affected = new ArrayList<>();
        for (ServiceNode sn : serviceNodes) {
            if (sn.gobj == null) continue;
            Set<String> live = new HashSet<>();
            collectGclasses(sn.gobj, live);
            if (!live.contains(gclassName)) continue;
            Glog.info(null, "Service destroyed: its gclass left", "service", sn.name, "gclass", gclassName);
            sn.gobj.destroy();
            services.remove(sn.name);
            sn.gobj = null;
            sn.neededGclasses.addAll(live);
            affected.add(sn.name);
        }
        return affected;
    }

    /** A gclass (re)appeared: build and start the services that were waiting for it. */
    List<String> gclassArrived(GClassSpec<?> spec) {
        register(spec);
        List<String> rebuilt = new ArrayList<>();
        if (!running) return rebuilt;
        Map<String, Set<String>> missing = missingGclasses();
        for (ServiceNode sn : serviceNodes) {
            if (sn.gobj != null || missing.containsKey(sn.name)) continue;
            try {
                buildService(sn);
                resolveNamedSubscribers();
                startService(sn);
                rebuilt.add(sn.name);
                Glog.info(null, "Service rebuilt", "service", sn.name, "gclass", spec.name());
            } catch (ConfigException e) {
                Glog.error(null, "Service cannot be rebuilt", "service", sn.name, "error", e.getMessage());
            }
        }
        return rebuilt;
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

    private Path persistentFile(GObjImpl g) {
        String safe = g.fullName().replaceAll("[^A-Za-z0-9_.-]", "_");
        return dataDir.resolve("persistent").resolve(safe + ".json");
    }

    private ObjectNode loadPersistent(GObjImpl g) {
        if (dataDir == null) return null;
        Path f = persistentFile(g);
        if (!Files.exists(f)) return null;
        try {
            JsonNode n = Kw.MAPPER.readTree(Files.readString(f));
            return n instanceof ObjectNode ? (ObjectNode) n : null;
        } catch (IOException e) {
            Glog.error(g, "Cannot read persistent attributes, defaults used", "file", f.toString(), "error", e.getMessage());
            return null;
        }
    }

    void savePersistent(GObjImpl g) {
        if (dataDir == null || !g.isService()) return;
        Path f = persistentFile(g);
        try {
            Files.createDirectories(f.getParent());
            Path tmp = f.resolveSibling(f.getFileName() + ".tmp");
            Files.write(tmp, Kw.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(g.persistentJson())
                    .getBytes(StandardCharsets.UTF_8));
            try (var ch = java.nio.channels.FileChannel.open(tmp, java.nio.file.StandardOpenOption.WRITE)) {
                ch.force(true);
            }
            try {
                Files.move(tmp, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, f, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException e) {
            Glog.error(g, "Cannot save persistent attributes", "file", f.toString(), "error", e.getMessage());
        }
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
