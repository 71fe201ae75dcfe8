package io.gatehouse.core;

import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.AttrType;
import io.gatehouse.api.GObj;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The numbers of a service for {@code /metrics}, JMX and the live page, read <b>without calling stats</b>: for
 * every gobj of the service's subtree, its numeric stats attributes (after {@code onReadAttrs}, so computed gauges
 * such as a queue's {@code msgs_in_queue} are current). The message counts behind C_CHANNEL's and C_IOGATE's rates
 * are counter attributes too, so no rate window is read: a reader polling on its own schedule does not move the
 * read-driven rate windows of seeds/000, and no rate is exported (a rate is {@code rate()} of a counter).
 *
 * <p>Kinds come from the spec, not from names: an {@link AttrType#COUNTER} attribute is a counter; other numbers (integers, reals, booleans as 0/1) are gauges. Strings, lists and dicts are left out.
 * Each sample names the gobj by its backquote path below the service (empty for the service itself, the path
 * {@code read-attrs service=S gobj=PATH} takes) and its gclass. Plus {@code connections}: the links that are up in
 * the subtree (gobjs of a gclass that declares {@link io.gatehouse.api.GClassSpec#linkUp()}). Core thread only.
 */
final class ServiceMetrics {
    enum Kind { COUNTER, GAUGE }

    /** One number of one gobj. */
    static final class Sample {
        final String stat;
        final Kind kind;
        /** Backquote path below the service; "" for the service gobj. */
        final String gobj;
        final String gclass;
        final double value;

        Sample(String stat, Kind kind, String gobj, String gclass, double value) {
            this.stat = stat;
            this.kind = kind;
            this.gobj = gobj;
            this.gclass = gclass;
            this.value = value;
        }

        /** The JMX attribute name: the gobj path with dots, then the stat ({@code output-0.msgs_in_queue}). */
        String path() {
            return gobj.isEmpty() ? stat : gobj.replace('`', '.') + "." + stat;
        }
    }

    /** Bound on the samples of one service (a gate with thousands of channels stays readable). */
    static final int MAX_SAMPLES_PER_SERVICE = 20_000;
    /** Deeper than any real stack; a guard against a cycle through a bad parent link. */
    static final int MAX_DEPTH = 32;

    private ServiceMetrics() {}

    static List<Sample> of(GObj service) {
        List<Sample> out = new ArrayList<>();
        walk(service, "", 0, out);
        // Unless the service has a "connections" stat of its own: the same series twice would fail the scrape.
        boolean own = out.stream().anyMatch(s -> s.gobj.isEmpty() && s.stat.equals("connections"));
        if (!own) out.add(new Sample("connections", Kind.GAUGE, "", service.gclassName(), connections(service)));
        return out;
    }

    private static void walk(GObj g, String path, int depth, List<Sample> out) {
        if (depth > MAX_DEPTH || g.isDestroyed()) return;
        read(g, path, out);
        Map<String, Integer> seen = new HashMap<>();
        for (GObj c : g.children()) {
            if (out.size() >= MAX_SAMPLES_PER_SERVICE) return;
            walk(c, childPath(path, c, seen), depth + 1, out);
        }
    }

    /**
     * The path of {@code child} below the service. Siblings with the same name (possible for runtime children)
     * get {@code #n} after the second one, so every series stays unique; only the first is addressable by name.
     */
    static String childPath(String parentPath, GObj child, Map<String, Integer> seen) {
        String name = child.name();
        int n = seen.merge(name, 1, Integer::sum);
        if (n > 1) name = name + "#" + n;
        return parentPath.isEmpty() ? name : parentPath + "`" + name;
    }

    /** The numbers of one gobj: its numeric stats attributes. */
    static void read(GObj g, String path, List<Sample> out) {
        if (g instanceof GObjImpl) ((GObjImpl) g).syncAttrs();
        String gclass = g.gclassName();
        for (Attr<?> a : g.gclass().attrs().values()) {
            if (!a.is(AttrFlag.STATS) || !a.isNumeric()) continue;
            Object v = g.read(a);
            double d = v instanceof Boolean ? (((Boolean) v) ? 1 : 0) : ((Number) v).doubleValue();
            out.add(new Sample(a.name(), a.type() == AttrType.COUNTER ? Kind.COUNTER : Kind.GAUGE, path, gclass, d));
        }
    }

    /**
     * Message counters of a gobj as {rx, tx}: its {@code rxMsgs}/{@code txMsgs} counter attributes, else the sum of its children's (a C_MQIOGATE: the gates of its queues); null when none of its
     * subtree counts messages. Never moves a window.
     */
    static long[] messageCounters(GObj g, int depth) {
        if (depth > MAX_DEPTH || g.isDestroyed()) return null;
        Attr<?> rx = counter(g, "rxMsgs");
        Attr<?> tx = counter(g, "txMsgs");
        if (rx != null || tx != null) {
            return new long[] {rx == null ? 0 : (Long) g.read(rx), tx == null ? 0 : (Long) g.read(tx)};
        }
        long[] sum = null;
        for (GObj c : g.children()) {
            long[] m = messageCounters(c, depth + 1);
            if (m == null) continue;
            if (sum == null) sum = new long[2];
            sum[0] += m[0];
            sum[1] += m[1];
        }
        return sum;
    }

    private static Attr<?> counter(GObj g, String name) {
        Attr<?> a = g.gclass().attr(name);
        return a != null && a.type() == AttrType.COUNTER ? a : null;
    }

    static int connections(GObj g) {
        return connections(g, 0);
    }

    private static int connections(GObj g, int depth) {
        if (depth > MAX_DEPTH) return 0;
        int n = 0;
        Attr<Boolean> up = g.gclass().linkUp();
        // A protocol over its transport (C_PROT_TCP4H over C_TCP) is one connection, not two.
        if (up != null && g.readBool(up) && !bottomIsUpLink(g)) n++;
        for (GObj c : g.children()) n += connections(c, depth + 1);
        return n;
    }

    private static boolean bottomIsUpLink(GObj g) {
        GObj b = g.bottom();
        return b != null && b.gclass().linkUp() != null && b.readBool(b.gclass().linkUp());
    }
}
