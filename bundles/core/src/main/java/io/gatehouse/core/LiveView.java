package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.AttrType;
import io.gatehouse.api.CommandSpec;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.Param;
import io.gatehouse.api.Yuno;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the live page shows, as JSON, built on the core thread from the gobj tree (never from stats, so nothing
 * here moves a rate window):
 *
 * <ul>
 *   <li>the <b>flow</b>: every service with its gclass, state and running/playing flags, and its role in a
 *       pipeline, derived from the services themselves: a service with an {@code input} attribute (C_RELAY,
 *       C_SINK: DESIGN contract 5) consumes the services it names, and its {@code output} attribute names where it
 *       sends. Below an output, the <b>queues</b> are the innermost gobjs whose gclass
 *       {@link GClassSpec#confirmsDurability() confirms durability} (the C_QIOGATEs of a C_MQIOGATE, or the output
 *       itself), and the <b>links</b> are the outermost gobjs whose gclass declares {@link GClassSpec#linkUp()},
 *       up or down, with the peer's address ({@code peername} of the link's stack, else the {@code url} it
 *       connects to);</li>
 *   <li>the <b>numbers</b>: the sampler's latest values (rates from counters, queue gauges, process);</li>
 *   <li>the <b>drill-down</b> of one gobj: attributes, the service's gobj tree, the command table with the
 *       read-only ones marked.</li>
 * </ul>
 *
 * Services that wait for a gclass (hot swap) keep the place they had: the inputs and output last seen are
 * remembered by name.
 */
final class LiveView {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    /** The stats a queue box shows, as C_QIOGATE declares them (docs/GATES.md). */
    static final List<String> QUEUE_STATS = List.of("msgs_in_queue", "pending_acks", "oldest_pending_age_ms", "retries");
    /** Open connections listed per input (the count is always exact). */
    static final int MAX_PEERS_SHOWN = 32;
    static final int MAX_LINKS_SHOWN = 64;
    /** Yuno commands that only read. A gclass command reads when it is named view-* or list-* (or help). */
    static final Set<String> READ_ONLY_YUNO_COMMANDS = Set.of("help", "stats-yuno", "view-gobj-tree", "list-gclasses",
            "list-services", "read-attrs", "view-registry");

    /** Where a consumer service takes from and sends to, remembered while it waits for a gclass. */
    private final Map<String, Wiring> wiring = new HashMap<>();

    private static final class Wiring {
        final List<String> inputs;
        final String output;

        Wiring(List<String> inputs, String output) {
            this.inputs = inputs;
            this.output = output;
        }
    }

    /** A gobj with its path below its service. */
    static final class Found {
        final GObj gobj;
        final String path;

        Found(GObj gobj, String path) {
            this.gobj = gobj;
            this.path = path;
        }
    }

    // --- The view (core thread) ---

    /** The whole page's data: flow, numbers, process. */
    ObjectNode view(Yuno yuno, Sampler sampler, boolean writable) {
        ObjectNode v = F.objectNode();
        v.put("yuno", yuno.name());
        v.put("role", yuno.role());
        v.put("t", sampler.latestEpochMs());
        v.put("step_ms", Sampler.PERIOD_MS);
        v.put("writable", writable);
        Map<String, Double> values = sampler.latest();

        ObjectNode proc = v.putObject("process");
        proc.put("heap_used", ProcessStats.heapUsed());
        proc.put("heap_max", ProcessStats.heapMax());
        proc.put("rss", ProcessStats.rssBytes());
        putNumber(proc, "busy_pct", values.get(Sampler.BUSY));
        ObjectNode ps = proc.putObject("series");
        ps.put("heap", Sampler.HEAP);
        ps.put("rss", Sampler.RSS);
        ps.put("busy", Sampler.BUSY);

        Map<String, ObjectNode> byName = new LinkedHashMap<>();
        ArrayNode services = v.putArray("services");
        JsonNode listed = io.gatehouse.api.Envelope.data(yuno.command("list-services", Kw.create()));
        Set<String> live = new LinkedHashSet<>();
        if (listed != null) {
            for (JsonNode n : listed) {
                String name = n.path("service").asText();
                live.add(name);
                GObj g = yuno.service(name);
                ObjectNode s = g == null ? waitingService(n) : service(g, values);
                services.add(s);
                byName.put(name, s);
            }
        }
        wiring.keySet().retainAll(live);
        v.set("pipelines", pipelines(byName));
        ObjectNode vals = v.putObject("values");
        values.forEach((k, x) -> putNumber(vals, k, x));
        return v;
    }

    private ObjectNode waitingService(JsonNode listed) {
        ObjectNode s = F.objectNode();
        String name = listed.path("service").asText();
        s.put("name", name);
        s.put("gclass", listed.path("gclass").asText());
        s.put("state", listed.path("state").asText());
        s.put("running", false);
        s.put("playing", false);
        s.put("waiting", true);
        Wiring w = wiring.get(name);
        if (w != null) putWiring(s, w);
        return s;
    }

    private ObjectNode service(GObj g, Map<String, Double> values) {
        ObjectNode s = F.objectNode();
        String name = g.name();
        s.put("name", name);
        s.put("gclass", g.gclassName());
        s.put("state", g.state());
        s.put("running", g.isRunning());
        s.put("playing", g.isPlaying());
        s.put("waiting", false);
        s.put("description", g.gclass().description());
        Wiring w = wiringOf(g);
        if (w != null) {
            wiring.put(name, w);
            putWiring(s, w);
        }
        long[] m = ServiceMetrics.messageCounters(g, 0);
        ObjectNode series = s.putObject("series");
        if (m != null) {
            s.put("rx_total", m[0]);
            s.put("tx_total", m[1]);
            putNumber(s, "rx", values.get(Sampler.rxId(name)));
            putNumber(s, "tx", values.get(Sampler.txId(name)));
            series.put("rx", Sampler.rxId(name));
            series.put("tx", Sampler.txId(name));
        }
        List<Found> queues = queues(g);
        List<Found> links = new ArrayList<>();
        collectLinks(g, "", 0, queues, links);
        s.put("connections", ServiceMetrics.connections(g));
        series.put("conns", Sampler.connsId(name));
        ArrayNode listen = s.putArray("listen");
        collectListen(g, 0, listen);
        int up = 0;
        ArrayNode ls = s.putArray("links");
        for (Found f : links) {
            boolean isUp = isUp(f.gobj);
            if (isUp) up++;
            if (ls.size() < MAX_LINKS_SHOWN) ls.add(link(f));
        }
        s.put("links_total", links.size());
        s.put("links_up", up);
        ArrayNode qs = s.putArray("queues");
        for (Found q : queues) qs.add(queue(name, q, values));
        return s;
    }

    private static ObjectNode queue(String service, Found q, Map<String, Double> values) {
        ObjectNode o = F.objectNode();
        GObj g = q.gobj;
        o.put("path", q.path);
        o.put("name", g.name());
        o.put("gclass", g.gclassName());
        o.put("state", g.state());
        o.put("running", g.isRunning());
        if (g instanceof GObjImpl) ((GObjImpl) g).syncAttrs();
        ObjectNode series = o.putObject("series");
        for (String stat : QUEUE_STATS) {
            Attr<?> a = g.gclass().attr(stat);
            if (a == null || !a.isNumeric()) continue;
            Object x = g.read(a);
            o.put(stat, x instanceof Boolean ? (((Boolean) x) ? 1 : 0) : ((Number) x).longValue());
            String id = Sampler.queueId(service, q.path, stat);
            series.put(stat, id);
            if (a.type() == AttrType.COUNTER) putNumber(o, stat + "_per_s", values.get(id));
        }
        List<Found> links = new ArrayList<>();
        collectLinks(g, q.path, 0, List.of(), links);
        ArrayNode ls = o.putArray("links");
        for (Found f : links) if (ls.size() < MAX_LINKS_SHOWN) ls.add(link(f));
        return o;
    }

    private static ObjectNode link(Found f) {
        ObjectNode l = F.objectNode();
        l.put("path", f.path);
        l.put("gclass", f.gobj.gclassName());
        l.put("up", isUp(f.gobj));
        l.put("state", f.gobj.state());
        l.put("peer", peer(f.gobj));
        return l;
    }

    private static void putWiring(ObjectNode s, Wiring w) {
        ArrayNode in = s.putArray("input");
        w.inputs.forEach(in::add);
        if (w.output != null) s.put("output", w.output);
    }

    /** The {@code input}/{@code output} attributes of a consumer (C_RELAY, C_SINK), or null for other services. */
    static Wiring wiringOf(GObj g) {
        Attr<?> in = g.gclass().attr("input");
        if (in == null) return null;
        List<String> inputs = new ArrayList<>();
        JsonNode v = g.readAttr("input");
        if (v != null && v.isTextual() && !v.asText().isEmpty()) inputs.add(v.asText());
        if (v != null && v.isArray()) for (JsonNode x : v) if (x.isTextual()) inputs.add(x.asText());
        String output = null;
        if (g.gclass().attr("output") != null) {
            JsonNode o = g.readAttr("output");
            if (o != null && o.isTextual() && !o.asText().isEmpty()) output = o.asText();
        }
        return new Wiring(inputs, output);
    }

    /**
     * One row per consumer: {@code {"consumer", "inputs": [...], "output"}}, consumers with an output (the
     * forwarding path) first, each group in config order; then {@code "others"}: services in no row.
     */
    private static ObjectNode pipelines(Map<String, ObjectNode> services) {
        ObjectNode p = F.objectNode();
        ArrayNode rows = p.putArray("rows");
        Set<String> used = new LinkedHashSet<>();
        for (int pass = 0; pass < 2; pass++) {
            for (ObjectNode s : services.values()) {
                if (!s.has("input")) continue;
                boolean hasOutput = s.has("output");
                if ((pass == 0) != hasOutput) continue;
                ObjectNode row = rows.addObject();
                String name = s.path("name").asText();
                row.put("consumer", name);
                used.add(name);
                ArrayNode ins = row.putArray("inputs");
                for (JsonNode i : s.path("input")) {
                    ins.add(i.asText());
                    used.add(i.asText());
                }
                if (hasOutput) {
                    row.put("output", s.path("output").asText());
                    used.add(s.path("output").asText());
                }
            }
        }
        ArrayNode others = p.putArray("others");
        for (String n : services.keySet()) if (!used.contains(n)) others.add(n);
        return p;
    }

    // --- The tree, read for the view and the sampler ---

    /** The innermost durable gobjs of a service's subtree (its queues), with their paths. */
    static List<Found> queues(GObj service) {
        List<Found> out = new ArrayList<>();
        collectQueues(service, "", 0, out);
        return out;
    }

    private static boolean collectQueues(GObj g, String path, int depth, List<Found> out) {
        if (depth > ServiceMetrics.MAX_DEPTH || g.isDestroyed()) return false;
        boolean below = false;
        Map<String, Integer> seen = new HashMap<>();
        for (GObj c : g.children()) {
            below |= collectQueues(c, ServiceMetrics.childPath(path, c, seen), depth + 1, out);
        }
        if (below) return true;
        if (g.gclass().confirmsDurability()) {
            out.add(new Found(g, path));
            return true;
        }
        return false;
    }

    /** The outermost link gobjs below {@code g}, not descending into the queues given (they list their own). */
    private static void collectLinks(GObj g, String path, int depth, List<Found> queues, List<Found> out) {
        if (depth > ServiceMetrics.MAX_DEPTH || g.isDestroyed()) return;
        for (Found q : queues) if (q.gobj == g) return;
        if (g.gclass().linkUp() != null) {
            out.add(new Found(g, path));
            return;
        }
        Map<String, Integer> seen = new HashMap<>();
        for (GObj c : g.children()) collectLinks(c, ServiceMetrics.childPath(path, c, seen), depth + 1, queues, out);
    }

    /** Where a service listens: the {@code url} of gobjs that are not links (C_TCP_S), as configured. */
    private static void collectListen(GObj g, int depth, ArrayNode out) {
        if (depth > 2 || g.gclass().linkUp() != null || out.size() >= 8) return;
        if (depth > 0 && g.gclass().attr("url") != null) {
            JsonNode u = g.readAttr("url");
            if (u != null && u.isTextual() && !u.asText().isEmpty()) out.add(u.asText());
        }
        for (GObj c : g.children()) collectListen(c, depth + 1, out);
    }

    static boolean isUp(GObj link) {
        Attr<Boolean> up = link.gclass().linkUp();
        return up != null && link.readBool(up);
    }

    /** The peer of a link: the first {@code peername} down its stack, else the first {@code url} it connects to. */
    static String peer(GObj link) {
        String p = firstAttr(link, Kw.PEERNAME, 0);
        return p.isEmpty() ? firstAttr(link, "url", 0) : p;
    }

    private static String firstAttr(GObj g, String attr, int depth) {
        if (g == null || depth > 8) return "";
        if (g.gclass().attr(attr) != null) {
            JsonNode v = g.readAttr(attr);
            if (v != null && v.isTextual() && !v.asText().isEmpty()) return v.asText();
        }
        GObj next = g.bottom();
        if (next == null && g.children().size() == 1) next = g.children().get(0);
        return firstAttr(next, attr, depth + 1);
    }

    /** A gobj by service name and backquote path of child names ({@code #n} picks the n-th of equal names). */
    static GObj find(Yuno yuno, String service, String path) {
        GObj g = yuno.service(service);
        if (g == null || path == null || path.isEmpty()) return g;
        for (String part : path.split("`")) {
            if (g == null) return null;
            int hash = part.lastIndexOf('#');
            int nth = 1;
            if (hash > 0) {
                try {
                    nth = Integer.parseInt(part.substring(hash + 1));
                    part = part.substring(0, hash);
                } catch (NumberFormatException notAnIndex) {
                    nth = 1;
                }
            }
            GObj next = null;
            int seen = 0;
            for (GObj c : g.children()) {
                if (c.name().equals(part) && ++seen == nth) {
                    next = c;
                    break;
                }
            }
            g = next;
        }
        return g;
    }

    // --- Drill-down (core thread) ---

    /** Attributes, gobj tree of the service, command table and trace levels of one gobj; null when not found. */
    static ObjectNode detail(Yuno yuno, String service, String path) {
        GObj g = find(yuno, service, path);
        if (g == null) return null;
        ObjectNode d = F.objectNode();
        d.put("service", service);
        d.put("gobj", path == null ? "" : path);
        d.put("name", g.name());
        d.put("gclass", g.gclassName());
        d.put("description", g.gclass().description());
        d.put("state", g.state());
        d.put("running", g.isRunning());
        d.put("playing", g.isPlaying());
        d.put("disabled", g.isDisabled());
        ObjectNode values = g.attrsJson();
        ArrayNode attrs = d.putArray("attrs");
        for (Attr<?> a : g.gclass().attrs().values()) {
            ObjectNode o = attrs.addObject();
            o.put("name", a.name());
            o.put("type", a.type().name().toLowerCase());
            o.set("value", values.get(a.name()));
            o.put("stats", a.is(AttrFlag.STATS));
            o.put("writable", a.is(AttrFlag.WR));
            o.put("description", a.description());
        }
        ObjectNode treeKw = Kw.create();
        treeKw.put("service", service);
        d.set("tree", io.gatehouse.api.Envelope.data(yuno.command("view-gobj-tree", treeKw)));
        ArrayNode cmds = d.putArray("commands");
        for (CommandSpec<?> c : g.gclass().commands()) {
            ObjectNode o = cmds.addObject();
            o.put("name", c.name());
            o.put("description", c.description());
            o.put("read_only", readOnly(c.name(), null));
            ArrayNode ps = o.putArray("params");
            for (Param p : c.params()) {
                ObjectNode po = ps.addObject();
                po.put("name", p.name());
                po.put("type", p.type().name().toLowerCase());
                po.put("default", p.defaultValue());
                po.put("description", p.description());
            }
        }
        ObjectNode traces = d.putObject("trace_levels");
        g.gclass().traceLevels().forEach(traces::put);
        return d;
    }

    /**
     * Whether a command only reads: the yuno's {@link #READ_ONLY_YUNO_COMMANDS} ({@code stats-yuno} without
     * {@code stats=__reset__}), {@code command-yuno} of a read-only command, and gclass commands named
     * {@code view-*}, {@code list-*} or {@code help}. Everything else writes (enable/disable, traces, resets,
     * queue marks, write-attr) and needs the token.
     */
    static boolean readOnly(String command, JsonNode kw) {
        if (command == null) return false;
        if (command.equals("command-yuno")) return readOnly(kw == null ? null : kw.path("command").asText(null), kw);
        if (command.equals("stats-yuno")) return kw == null || !"__reset__".equals(kw.path("stats").asText(""));
        if (READ_ONLY_YUNO_COMMANDS.contains(command)) return true;
        return command.startsWith("view-") || command.startsWith("list-");
    }

    private static void putNumber(ObjectNode o, String key, Double v) {
        if (v == null || v.isNaN() || v.isInfinite()) o.putNull(key);
        else o.put(key, v);
    }
}
