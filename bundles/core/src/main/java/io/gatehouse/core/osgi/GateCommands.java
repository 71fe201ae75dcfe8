package io.gatehouse.core.osgi;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Gogo shell commands ({@code gate:cmd}, {@code gate:stats}, {@code gate:tree}, {@code gate:gclasses},
 * {@code gate:hub HUB 'command'}, {@code gate:yuno [NAME 'command']} for Config Admin yunos) on the same command path as the control endpoint. They work in the Felix Gogo
 * shell and in the Karaf shell (which runs Gogo commands registered with {@code osgi.command.scope}).
 *
 * <p>Each command prints its answer (Gogo routes {@code System.out} to the session) instead of returning it:
 * Karaf prints a returned value only in an interactive console, not for {@code bin/client 'gate:cmd ...'} or
 * batch input, and printed text can be piped ({@code gate:cmd list-services | grep relay}).
 */
@Component(service = GateCommands.class, property = {
        "osgi.command.scope=gate",
        "osgi.command.function=cmd",
        "osgi.command.function=stats",
        "osgi.command.function=tree",
        "osgi.command.function=gclasses",
        "osgi.command.function=hub",
        "osgi.command.function=bundles",
        "osgi.command.function=update",
        "osgi.command.function=yuno"
})
public class GateCommands {

    @Reference
    private GatehouseCore core;

    /** Yunos configured through Config Admin (factory PID io.gatehouse.yuno). */
    @Reference(cardinality = org.osgi.service.component.annotations.ReferenceCardinality.MULTIPLE,
            policy = org.osgi.service.component.annotations.ReferencePolicy.DYNAMIC)
    private volatile java.util.List<ConfiguredYuno> configured;

    /** {@code gate:yuno NAME 'list-services'}: a command for a Config Admin yuno; {@code gate:yuno} lists them. */
    public void yuno(String... args) {
        java.util.List<ConfiguredYuno> all = configured == null ? java.util.List.of() : configured;
        if (args.length == 0) {
            for (ConfiguredYuno y : all) System.out.println(y.name() + (y.runtime() != null ? "  running" : "  not running"));
            return;
        }
        String line = String.join(" ", java.util.Arrays.copyOfRange(args, 1, args.length));
        for (ConfiguredYuno y : all) {
            if (args[0].equals(y.name())) {
                System.out.println(pretty(y.command(line)));
                return;
            }
        }
        System.out.println(pretty(io.gatehouse.api.Envelope.error("no Config Admin yuno named '" + args[0] + "'")));
    }

    /** {@code gate:cmd 'stats-yuno service=__input_side__'}: prints the JSON envelope. */
    public void cmd(String... words) {
        System.out.println(pretty(core.command(String.join(" ", words))));
    }

    /** {@code gate:hub B 'stats-yuno service=x'}: a command for another hub, through the portals. */
    public void hub(String hub, String... words) {
        System.out.println(pretty(core.command(hub, String.join(" ", words))));
    }

    /** {@code gate:stats SERVICE}: the stats envelope of a service. */
    public void stats(String service) {
        System.out.println(pretty(core.command("stats-yuno service=" + service)));
    }

    /** {@code gate:tree}: the gobj tree with gclass, state and running flag. */
    public void tree() {
        ObjectNode e = core.command("view-gobj-tree");
        JsonNode data = e.get("data");
        if (data == null || !data.isObject()) {
            System.out.println(pretty(e));
            return;
        }
        StringBuilder sb = new StringBuilder();
        render(data, 0, sb);
        System.out.print(sb);
    }

    /** {@code gate:bundles}: every bundle with its version, state, gclasses and the gobjs using each. */
    public void bundles() {
        System.out.println(pretty(core.command("list-bundles")));
    }

    /**
     * {@code gate:update BSN URL [rollback]}: a live upgrade of one bundle (the new revision installed and started
     * beside the old one, then every gobj handed over); {@code rollback} allows a lower version.
     */
    public void update(String bsn, String url, String... options) {
        boolean rollback = java.util.Arrays.asList(options).contains("rollback");
        ObjectNode kw = Kw.create().put("name", bsn).put("url", url).put("rollback", rollback);
        System.out.println(pretty(core.command("update-bundle", kw)));
    }

    /** {@code gate:gclasses}: the registered gclasses. */
    public void gclasses() {
        System.out.println(String.join("\n", core.gclassNames()));
    }

    private static void render(JsonNode n, int depth, StringBuilder sb) {
        sb.append("  ".repeat(depth)).append(n.path("gclass").asText()).append('^').append(n.path("name").asText())
                .append("  ").append(n.path("state").asText())
                .append(n.path("running").asBoolean() ? "  running" : "  stopped")
                .append(n.path("disabled").asBoolean() ? "  disabled" : "").append('\n');
        for (JsonNode c : n.path("children")) render(c, depth + 1, sb);
    }

    private static String pretty(JsonNode n) {
        try {
            return Kw.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(n);
        } catch (JsonProcessingException e) {
            return String.valueOf(n);
        }
    }
}
