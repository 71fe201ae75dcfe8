package io.gatehouse.systests;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.queue.TrQueueFactory;
import io.gatehouse.channel.ChannelGClass;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.http.ProtHttpSrGClass;
import io.gatehouse.iogate.IoGateGClass;
import io.gatehouse.mqiogate.MqIoGateGClass;
import io.gatehouse.mqtt.ProtMqtt2GClass;
import io.gatehouse.mqtt.ProtMqttGClass;
import io.gatehouse.qiogate.QIoGateGClass;
import io.gatehouse.relay.RelayGClass;
import io.gatehouse.sink.SinkGClass;
import io.gatehouse.tcp.TcpGClass;
import io.gatehouse.tcp.TcpSGClass;
import io.gatehouse.tcp4h.ProtTcp4hGClass;
import io.gatehouse.launcher.Sender;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** What the system tests share: every gclass, the demo config with chosen ports, free ports, the sender. */
final class Gateways {
    private Gateways() {}

    static List<GClassSpec<?>> allGclasses(TrQueueFactory queues) {
        return List.of(new TcpGClass().spec(), new TcpSGClass().spec(), new ProtTcp4hGClass().spec(),
                new ChannelGClass().spec(), new IoGateGClass().spec(), new QIoGateGClass(queues).spec(),
                new MqIoGateGClass().spec(), new RelayGClass().spec(), new SinkGClass().spec(),
                new ProtHttpSrGClass().spec(), new ProtMqttGClass().spec(), new ProtMqtt2GClass().spec());
    }

    /**
     * The runtime's default config (the demo gateway) with its config variables replaced. An ingest port the caller
     * does not set gets a free one, so a test never binds the demo's fixed ports (a gateway may be running).
     */
    static ObjectNode demoConfig(Map<String, String> vars) {
        try {
            ObjectNode cfg = YunoRuntime.parseConfig(Files.readString(Path.of(System.getProperty(
                    "gatehouse.demo.config", "../runtime/felix/src/main/dist/conf/gatehouse.json"))));
            ObjectNode v = (ObjectNode) cfg.get("__json_config_variables__");
            vars.forEach(v::put);
            for (String port : new String[] {"__http_port__", "__mqtt_port__"}) {
                if (v.has(port) && !vars.containsKey(port)) v.put(port, String.valueOf(freePorts(1)[0]));
            }
            return cfg;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static int[] freePorts(int n) {
        List<ServerSocket> open = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) open.add(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()));
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

    /** Result of a {@code gatehouse send} run. */
    static final class Sent {
        final int exit;
        final String output;

        Sent(int exit, String output) {
            this.exit = exit;
            this.output = output;
        }
    }

    /** Runs {@code gatehouse send} in this JVM. */
    static Sent send(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = Sender.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Sent(exit, out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8));
    }

    /** Keeps the demo's sink services ({@code sinks}) or every other one: the two sides of a test run apart. */
    static void keepServices(ObjectNode cfg, boolean sinks) {
        ArrayNode services = (ArrayNode) cfg.get("services");
        for (int i = services.size() - 1; i >= 0; i--) {
            String name = services.get(i).get("name").asText();
            boolean isSink = name.startsWith("sink") || name.startsWith("__sink");
            if (isSink != sinks) services.remove(i);
        }
    }

    static long stat(YunoRuntime rt, String sink, String key) {
        return rt.command("stats-yuno service=" + sink).get("data").get(key).asLong();
    }

    static long distinct(YunoRuntime rt) {
        return stat(rt, "sink0", "distinct_ids") + stat(rt, "sink1", "distinct_ids");
    }

    /** Ids in [0, total) with the parity this sink serves that never arrived. */
    static long missing(YunoRuntime rt, String sink, int total) {
        ObjectNode r = rt.command("command-yuno service=" + sink + " command=check-ids from=0 to=" + (total - 1));
        return r.get("data").get("missing").asLong() - total / 2;
    }
}
