package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.CommandSpec;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;

import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The yuno's own commands, as Yuneta's agent answers them. A command the yuno does not have, given with
 * {@code service=NAME}, runs on that service (so {@code view-channels service=__input_side__} works).
 */
final class YunoCommands {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private interface Cmd {
        ObjectNode run(ObjectNode kw);
    }

    private final YunoImpl yuno;
    private final Map<String, Cmd> table = new TreeMap<>();
    private final Map<String, String> help = new TreeMap<>();
    /** Commands that run off the core thread (they wait for the core loop), added by the container. */
    private final Map<String, YunoRuntime.ExternalCommand> external = new java.util.concurrent.ConcurrentHashMap<>();

    YunoCommands(YunoImpl yuno) {
        this.yuno = yuno;
        add("help", "List the commands, or the commands of a service with service=NAME.", this::help);
        add("stats-yuno", "Stats of a service: service=NAME [stats=FILTER] (__reset__ resets).", this::statsYuno);
        add("command-yuno", "Run a command of a service: service=NAME command=CMD [params].", this::commandYuno);
        add("view-gobj-tree", "The gobj tree (of one service with service=NAME).", this::viewTree);
        add("list-gclasses", "The registered gclasses.", this::listGclasses);
        add("list-services", "The services with their gclass and state.", this::listServices);
        add("read-attrs", "Attributes of a gobj: service=NAME [gobj=child`path].", this::readAttrs);
        add("write-attr", "Write an attribute: service=NAME [gobj=child`path] attr=NAME value=VALUE.", this::writeAttr);
        add("trace-on", "Set a trace level: service=NAME [gobj=child`path] level=LEVEL.", kw -> trace(kw, true));
        add("trace-off", "Clear a trace level: service=NAME [gobj=child`path] level=LEVEL.", kw -> trace(kw, false));
        add("view-registry", "The registry: hub name, aliases, links to other hubs, learnt routes, counters.",
                kw -> Envelope.ok(yuno.registry().view()));
    }

    private void add(String name, String description, Cmd cmd) {
        table.put(name, cmd);
        help.put(name, description);
    }

    void addExternal(String name, String description, YunoRuntime.ExternalCommand cmd) {
        external.put(name, cmd);
        synchronized (help) {
            help.put(name, description);
        }
    }

    YunoRuntime.ExternalCommand external(String name) {
        return external.get(name);
    }

    ObjectNode run(String command, ObjectNode kw) {
        Cmd c = table.get(command);
        if (c != null) return c.run(kw);
        if (external.containsKey(command)) {
            return Envelope.error("command '" + command + "' runs off the core thread: ask through the control "
                    + "endpoint or YunoRuntime.command");
        }
        String service = Kw.getString(kw, "service", "");
        if (!service.isEmpty()) {
            GObj g = target(kw);
            if (g == null) return unknownService(kw);
            ObjectNode params = kw.deepCopy();
            params.remove("service");
            params.remove("gobj");
            return g.command(command, params, null);
        }
        return Envelope.error("command '" + command + "' not available; try 'help'");
    }

    private GObj target(ObjectNode kw) {
        return yuno.find(Kw.getString(kw, "service", ""), Kw.getString(kw, "gobj", ""));
    }

    private ObjectNode unknownService(ObjectNode kw) {
        String s = Kw.getString(kw, "service", "");
        String g = Kw.getString(kw, "gobj", "");
        return Envelope.error("service '" + s + "'" + (g.isEmpty() ? "" : " gobj '" + g + "'") + " not found");
    }

    private ObjectNode help(ObjectNode kw) {
        if (kw.has("service")) {
            GObj g = target(kw);
            return g == null ? unknownService(kw) : g.command("help", F.objectNode(), null);
        }
        ArrayNode lines = F.arrayNode();
        synchronized (help) {
            help.forEach((k, v) -> lines.add(k + ": " + v));
        }
        return Envelope.ok(yuno.role() + "^" + yuno.name() + ": " + lines.size() + " commands", lines);
    }

    private ObjectNode statsYuno(ObjectNode kw) {
        String service = Kw.getString(kw, "service", "");
        GObj g = service.isEmpty() ? first() : target(kw);
        if (g == null) return service.isEmpty() ? Envelope.error("no service") : unknownService(kw);
        String filter = Kw.getString(kw, "stats", "");
        ObjectNode st = g.stats(filter, kw, null);
        if (st != null && st.has("result") && st.has("data")) return st;
        return Envelope.ok(st);
    }

    private GObj first() {
        List<GObj> s = yuno.services();
        return s.isEmpty() ? null : s.get(0);
    }

    private ObjectNode commandYuno(ObjectNode kw) {
        GObj g = target(kw);
        if (g == null) return unknownService(kw);
        String cmd = Kw.getString(kw, "command", "");
        if (cmd.isEmpty()) return Envelope.error("command-yuno needs command=CMD");
        ObjectNode params = kw.deepCopy();
        params.remove("service");
        params.remove("gobj");
        params.remove("command");
        return g.command(cmd, params, null);
    }

    private ObjectNode viewTree(ObjectNode kw) {
        if (kw.has("service")) {
            GObj g = target(kw);
            return g == null ? unknownService(kw) : Envelope.ok(yuno.tree(g));
        }
        return Envelope.ok(yuno.tree(yuno.root()));
    }

    private ObjectNode listGclasses(ObjectNode kw) {
        ArrayNode out = F.arrayNode();
        List<GClassSpec<?>> specs = new java.util.ArrayList<>(yuno.gclasses().values());
        specs.sort(java.util.Comparator.comparing(GClassSpec::name));
        for (GClassSpec<?> s : specs) {
            ObjectNode o = out.addObject();
            o.put("gclass", s.name());
            o.put("description", s.description());
            ArrayNode attrs = o.putArray("attrs");
            for (Attr<?> a : s.attrs().values()) attrs.add(a.name());
            ArrayNode cmds = o.putArray("commands");
            for (CommandSpec<?> c : s.commands()) cmds.add(c.name());
            ArrayNode states = o.putArray("states");
            s.fsm().states().forEach(states::add);
        }
        return Envelope.ok(out.size() + " gclasses", out);
    }

    private ObjectNode listServices(ObjectNode kw) {
        ArrayNode out = F.arrayNode();
        for (ServiceNode sn : yuno.serviceNodes()) {
            ObjectNode o = out.addObject();
            o.put("service", sn.name);
            o.put("gclass", Kw.getString(sn.node, "gclass", ""));
            o.put("priority", sn.priority);
            if (sn.gobj == null) {
                o.put("state", "waiting for gclasses");
            } else {
                o.put("state", sn.gobj.state());
                o.put("running", sn.gobj.isRunning());
                o.put("playing", sn.gobj.isPlaying());
            }
        }
        return Envelope.ok(out);
    }

    private ObjectNode readAttrs(ObjectNode kw) {
        GObj g = target(kw);
        return g == null ? unknownService(kw) : Envelope.ok(g.attrsJson());
    }

    private ObjectNode writeAttr(ObjectNode kw) {
        GObj g = target(kw);
        if (g == null) return unknownService(kw);
        String attr = Kw.getString(kw, "attr", "");
        JsonNode value = kw.get("value");
        if (attr.isEmpty() || value == null) return Envelope.error("write-attr needs attr=NAME value=VALUE");
        try {
            g.writeAttr(attr, value);
        } catch (IllegalArgumentException e) {
            return Envelope.error(e.getMessage());
        }
        ObjectNode data = F.objectNode();
        data.set(attr, g.readAttr(attr));
        return Envelope.ok("attribute written", data);
    }

    private ObjectNode trace(ObjectNode kw, boolean on) {
        GObj g = target(kw);
        if (g == null) return unknownService(kw);
        String level = Kw.getString(kw, "level", "");
        if (level.isEmpty()) return Envelope.error("trace needs level=LEVEL");
        try {
            g.setTrace(level, on);
        } catch (IllegalArgumentException e) {
            return Envelope.error(e.getMessage());
        }
        ObjectNode data = F.objectNode();
        data.put("gobj", g.shortName());
        data.put("level", level);
        data.put("on", on);
        return Envelope.ok(data);
    }
}
