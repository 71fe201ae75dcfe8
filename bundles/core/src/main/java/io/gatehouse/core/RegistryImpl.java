package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.Registry;
import io.gatehouse.support.Glog;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The yuno's registry (seeds/003, Stem): names to gobjs, aliases, links to other hubs by hub name, routes
 * learnt from the {@code from} of arriving messages, and the {@value Registry#DEFAULT} link alias. Delivery and
 * dispatch rules are in {@link Registry}'s javadoc. Core thread only: no locks.
 */
final class RegistryImpl implements Registry {
    /** A message forwarded more often than this is dropped: a routing loop (DEFAULT links pointing at each other). */
    static final int MAX_HOPS = 16;
    /** Learnt routes kept (the oldest is forgotten first). */
    static final int MAX_ROUTES = 4096;
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    private final YunoImpl yuno;
    private final Map<String, GObj> cells = new HashMap<>();
    private final Map<String, GObj> targeted = new HashMap<>();
    private final Map<String, String> aliases = new TreeMap<>();
    /** Direct links by hub name, the most recent first (two hubs may hold portals to each other). */
    private final Map<String, Deque<Link>> links = new TreeMap<>();
    private final Map<Link, String> hubOfLink = new IdentityHashMap<>();
    private final Map<String, Link> linkAliases = new TreeMap<>();
    private final LinkedHashMap<String, Link> routes = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Link> eldest) {
            return size() > MAX_ROUTES;
        }
    };

    // Counters (the registry's stats: view-registry and the metrics endpoint).
    long delivered;
    long forwarded;
    long dropped;
    long bounced;

    RegistryImpl(YunoImpl yuno) {
        this.yuno = yuno;
    }

    /** Reads {@code "aliases": {"alias": "service"}} of the config's {@code yuno} section. */
    void configure(JsonNode yunoSection) {
        JsonNode a = yunoSection == null ? null : yunoSection.get("aliases");
        if (a == null || !a.isObject()) return;
        a.fields().forEachRemaining(e -> {
            if (e.getValue().isTextual()) alias(e.getKey(), e.getValue().asText());
        });
    }

    // --- Names ---

    @Override
    public String hub() {
        return yuno.name();
    }

    private static String key(String service, String target) {
        return service + '\u0000' + target;
    }

    @Override
    public void register(String service, String target, GObj gobj) {
        if (service == null || service.isEmpty() || gobj == null) throw new IllegalArgumentException("register needs a service name and a gobj");
        if (target == null || target.isEmpty()) cells.put(service, gobj);
        else targeted.put(key(service, target), gobj);
    }

    @Override
    public void unregister(String service, String target, GObj gobj) {
        if (service == null) return;
        if (target == null || target.isEmpty()) cells.remove(service, gobj);
        else targeted.remove(key(service, target), gobj);
    }

    @Override
    public void alias(String alias, String service) {
        if (alias == null || alias.isEmpty() || service == null || service.isEmpty()) {
            throw new IllegalArgumentException("alias needs two names");
        }
        aliases.put(alias, service);
    }

    @Override
    public void unalias(String alias) {
        aliases.remove(alias);
    }

    private String resolveAlias(String service) {
        for (int i = 0; i < 8 && aliases.containsKey(service); i++) service = aliases.get(service);
        return service;
    }

    @Override
    public GObj lookup(String service, String target) {
        if (service == null) service = "";
        service = resolveAlias(service);
        boolean noTarget = target == null || target.isEmpty();
        if (noTarget) {
            GObj g = live(cells, service);
            if (g != null) return g;
            if (service.isEmpty() || service.equals(YUNO)) return yuno.root();
            g = yuno.service(service);
            if (g == null) g = yuno.root().child(service);
            return g;
        }
        GObj g = live(targeted, key(service, target));
        if (g != null) return g;
        // service + target also names the child (backquote path) of a service: a channel of a gate.
        GObj s = service.isEmpty() || service.equals(YUNO) ? null : lookup(service, null);
        if (s == null) return null;
        for (String part : target.split("`")) {
            s = s.child(part);
            if (s == null) return null;
        }
        return s;
    }

    private static GObj live(Map<String, GObj> m, String k) {
        GObj g = m.get(k);
        if (g != null && g.isDestroyed()) {
            m.remove(k);
            return null;
        }
        return g;
    }

    // --- Links ---

    @Override
    public void addLink(String hub, Link link) {
        if (hub == null || hub.isEmpty() || link == null) throw new IllegalArgumentException("addLink needs a hub name and a link");
        String old = hubOfLink.put(link, hub);
        if (old != null && !old.equals(hub)) removeFrom(old, link);
        Deque<Link> d = links.computeIfAbsent(hub, h -> new ArrayDeque<>());
        d.remove(link);
        d.addFirst(link);
        routes.remove(hub);
        // Names with '~' are short-lived command clients (one per `gatehouse cmd --hub`): not worth an info line.
        if (hub.indexOf('~') < 0) Glog.info(null, "Hub linked", "hub", hub, "link", link.describe());
    }

    private void removeFrom(String hub, Link link) {
        Deque<Link> d = links.get(hub);
        if (d == null) return;
        d.remove(link);
        if (d.isEmpty()) links.remove(hub);
    }

    @Override
    public void removeLink(Link link) {
        String hub = hubOfLink.remove(link);
        if (hub != null) {
            removeFrom(hub, link);
            if (hub.indexOf('~') < 0) Glog.info(null, "Hub unlinked", "hub", hub, "link", link.describe());
        }
        routes.values().removeIf(l -> l == link);
    }

    @Override
    public void aliasLink(String alias, Link link) {
        linkAliases.put(alias, link);
    }

    @Override
    public void unaliasLink(String alias, Link link) {
        linkAliases.remove(alias, link);
    }

    /** The open link that reaches {@code hub}: direct first, then a learnt route; null if none. */
    Link linkTo(String hub) {
        Deque<Link> d = links.get(hub);
        if (d != null) {
            for (Link l : d) if (l.isOpen()) return l;
        }
        Link r = routes.get(hub);
        return r != null && r.isOpen() ? r : null;
    }

    private Link defaultLink(Link arrivedOn) {
        Link l = linkAliases.get(DEFAULT);
        // Never send a message back out of the link it came in by (split horizon): that is a loop.
        return l != null && l != arrivedOn && l.isOpen() ? l : null;
    }

    private void learn(String fromHub, Link link) {
        if (fromHub.isEmpty() || fromHub.equals(hub()) || links.containsKey(fromHub)) return;
        routes.put(fromHub, link);
    }

    // --- Delivery ---

    @Override
    public int deliver(ObjectNode msg) {
        return deliverFrom(null, msg);
    }

    @Override
    public int deliverFrom(Link link, ObjectNode msg) {
        if (msg == null) return -1;
        JsonNode toNode = msg.get("to");
        if (toNode != null && toNode.isTextual()) {
            toNode = parseAddress(toNode.asText());
            msg.set("to", toNode);
        }
        if (!(toNode instanceof ObjectNode)) {
            return undeliverable(msg, "message without 'to' address", link);
        }
        ObjectNode to = (ObjectNode) toNode;
        ObjectNode from = msg.get("from") instanceof ObjectNode ? (ObjectNode) msg.get("from") : null;
        if (link == null) {
            // A local sender: its answers come back to this hub.
            if (from == null) {
                from = msg.putObject("from");
            }
            if (Kw.getString(from, "hub", "").isEmpty()) from.put("hub", hub());
        } else if (from != null) {
            learn(Kw.getString(from, "hub", ""), link);
        }
        String hub = Kw.getString(to, "hub", "");
        if (!hub.isEmpty() && !hub.equals(hub())) {
            Link l = linkTo(hub);
            if (l == null) l = defaultLink(link);
            if (l == null) return undeliverable(msg, "hub '" + hub + "' not reachable from hub '" + hub() + "'", link);
            return forward(l, msg, link);
        }
        String service = Kw.getString(to, "service", "");
        String target = Kw.getString(to, "target", "");
        GObj g = lookup(service, target);
        if (g == null) {
            if (hub.isEmpty()) {
                Link l = defaultLink(link);
                if (l != null) return forward(l, msg, link);
            }
            return undeliverable(msg, "service '" + service + "'" + (target.isEmpty() ? "" : " target '" + target + "'")
                    + " not found in hub '" + hub() + "'", link);
        }
        return dispatch(g, msg, link);
    }

    /** {@code "hub/service/target"}, {@code "service"} or {@code "hub/service"}. */
    static ObjectNode parseAddress(String text) {
        ObjectNode a = F.objectNode();
        String[] p = text.split("/", -1);
        if (p.length == 1) {
            a.put("service", p[0]);
        } else {
            a.put("hub", p[0]);
            a.put("service", p[1]);
            if (p.length > 2) a.put("target", p[2]);
        }
        return a;
    }

    private int forward(Link l, ObjectNode msg, Link arrivedOn) {
        int hops = (int) Kw.getLong(msg, "hops", 0);
        if (hops >= MAX_HOPS) return undeliverable(msg, "too many hops (" + hops + "): a routing loop?", arrivedOn);
        msg.put("hops", hops + 1);
        if (!l.send(msg)) return undeliverable(msg, "link closed: " + l.describe(), arrivedOn);
        forwarded++;
        return 0;
    }

    private int dispatch(GObj g, ObjectNode msg, Link link) {
        String type = type(msg);
        if (type.equals("cmd")) {
            ObjectNode answer = runCommand(g, msg);
            delivered++;
            reply(msg, answer);
            return 0;
        }
        String ev = "EV_" + type.toUpperCase(Locale.ROOT).replaceAll("[^A-Z0-9_]", "_");
        if (!g.acceptsEvent(ev)) {
            ev = g.acceptsEvent(Ev.EV_ON_MESSAGE) ? Ev.EV_ON_MESSAGE
                    : g.acceptsEvent(Ev.EV_SEND_MESSAGE) ? Ev.EV_SEND_MESSAGE : null;
        }
        if (ev == null) {
            return undeliverable(msg, g.shortName() + " has no input for message type '" + type + "' in state "
                    + g.state(), link);
        }
        ObjectNode kw;
        JsonNode k = msg.get("kw");
        if (k instanceof ObjectNode) {
            kw = (ObjectNode) k;
        } else {
            kw = msg.deepCopy();
            kw.remove("to");
        }
        delivered++;
        int r = g.send(ev, kw, null);
        if (r < 0 && Kw.getBool(msg, "bounce", false)) {
            reply(msg, Envelope.error(g.shortName() + " refused " + ev + " (" + r + ")"));
        }
        return r < 0 ? -1 : 0;
    }

    private static String type(ObjectNode msg) {
        String t = Kw.getString(msg, "type", "");
        if (!t.isEmpty()) return t;
        return msg.has("command") ? "cmd" : "msg";
    }

    /** Runs a {@code cmd}: a command line ({@code "stats-yuno service=x"}) or a name, plus {@code kw}. */
    private ObjectNode runCommand(GObj g, ObjectNode msg) {
        String text = Kw.getString(msg, "command", "").trim();
        if (text.isEmpty()) return Envelope.error("cmd message without 'command'");
        String command;
        ObjectNode kw;
        try {
            CommandLine cl = CommandLine.parse(text);
            command = cl.command;
            kw = cl.kw;
        } catch (IllegalArgumentException e) {
            return Envelope.error(e.getMessage());
        }
        JsonNode extra = msg.get("kw");
        if (extra instanceof ObjectNode) kw.setAll((ObjectNode) extra.deepCopy());
        try {
            ObjectNode answer = g == yuno.root() ? yuno.command(command, kw) : g.command(command, kw, null);
            return answer == null ? Envelope.error("command '" + command + "' answered nothing") : answer;
        } catch (RuntimeException e) {
            Glog.error(g, "Command failed", "command", command, "error", String.valueOf(e));
            return Envelope.error("command '" + command + "' failed: " + e.getMessage());
        }
    }

    /** Sends {@code envelope} back to the {@code from} of {@code msg}, as a {@code reply} message. */
    private void reply(ObjectNode msg, ObjectNode envelope) {
        JsonNode from = msg.get("from");
        if (!(from instanceof ObjectNode) || from.size() == 0) {
            Glog.info(null, "Answer without 'from' to go to, dropped", "result", Envelope.result(envelope),
                    "comment", Kw.getString(envelope, "comment", ""));
            return;
        }
        ObjectNode r = F.objectNode();
        r.set("to", from.deepCopy());
        ObjectNode me = r.putObject("from");
        me.put("hub", hub());
        JsonNode to = msg.get("to");
        if (to instanceof ObjectNode) {
            String s = Kw.getString(to, "service", "");
            if (!s.isEmpty()) me.put("service", s);
            String t = Kw.getString(to, "target", "");
            if (!t.isEmpty()) me.put("target", t);
        }
        r.put("type", "reply");
        if (msg.has("id")) r.set("id", msg.get("id"));
        r.set("reply", envelope);
        deliverFrom(null, r);
    }

    private int undeliverable(ObjectNode msg, String reason, Link arrivedOn) {
        dropped++;
        String type = type(msg);
        Glog.warn(null, "Message not delivered", "reason", reason, "type", type,
                "to", String.valueOf(msg.get("to")), "from", String.valueOf(msg.get("from")),
                "via", arrivedOn == null ? "" : arrivedOn.describe());
        boolean answer = type.equals("cmd") || Kw.getBool(msg, "bounce", false);
        // Never answer an answer: two hubs would bounce a lost reply at each other forever.
        if (answer && !type.equals("reply") && !type.equals("bounce")) {
            bounced++;
            ObjectNode e = Envelope.error(reason);
            if (!type.equals("cmd")) {
                ObjectNode data = F.objectNode();
                data.put("type", type);
                if (msg.has("kw")) data.set("kw", msg.get("kw"));
                e.set("data", data);
            }
            reply(msg, e);
        }
        return -1;
    }

    // --- View ---

    @Override
    public ObjectNode view() {
        ObjectNode v = F.objectNode();
        v.put("hub", hub());
        ArrayNode services = v.putArray("services");
        for (GObj s : yuno.services()) services.add(s.name());
        ObjectNode reg = v.putObject("registered");
        cells.forEach((k, g) -> {
            if (!g.isDestroyed()) reg.put(k, g.fullName());
        });
        targeted.forEach((k, g) -> {
            if (!g.isDestroyed()) reg.put(k.replace('\u0000', '/'), g.fullName());
        });
        ObjectNode al = v.putObject("aliases");
        aliases.forEach(al::put);
        ObjectNode ln = v.putObject("links");
        links.forEach((hub, d) -> {
            ArrayNode a = ln.putArray(hub);
            for (Link l : d) a.add(l.describe() + (l.isOpen() ? "" : " (closed)"));
        });
        ObjectNode la = v.putObject("link_aliases");
        linkAliases.forEach((a, l) -> la.put(a, l.describe() + (l.isOpen() ? "" : " (closed)")));
        ObjectNode rt = v.putObject("routes");
        new TreeMap<>(routes).forEach((h, l) -> rt.put(h, l.describe()));
        ObjectNode st = v.putObject("stats");
        st.put("delivered", delivered);
        st.put("forwarded", forwarded);
        st.put("dropped", dropped);
        st.put("bounced", bounced);
        st.put("links", hubOfLink.size());
        return v;
    }

    /** Open links (for the metrics endpoint). */
    int openLinks() {
        int n = 0;
        for (Iterator<Link> it = hubOfLink.keySet().iterator(); it.hasNext(); ) {
            if (it.next().isOpen()) n++;
        }
        return n;
    }
}
