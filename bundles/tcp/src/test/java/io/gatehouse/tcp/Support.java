// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GClock;
import io.gatehouse.api.Kw;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Revision;
import io.gatehouse.testkit.StubChannel;
import io.gatehouse.testkit.TestCerts;

import java.io.IOException;
import java.net.Socket;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The yunos and configs of this bundle's tests: C_TCP and C_TCP_S under the stand-ins of {@link TestGClasses} and the
 * testkit's {@link StubChannel}.
 */
final class Support {
    private Support() {}

    static GClassSpec<?>[] specs() {
        return new GClassSpec<?>[] {new TcpGClass().spec(), new TcpSGClass().spec(), TestGClasses.Framer.SPEC,
            StubChannel.SPEC, TestGClasses.Gate.SPEC};
    }

    static YunoRuntime runtime(String config) {
        return runtime(config, 0);
    }

    /** A runtime whose sockets are served by {@code ioThreads} worker loops (0 = the core loop). */
    static YunoRuntime runtime(String config, int ioThreads) {
        return runtime(config, ioThreads, GClock.SYSTEM);
    }

    /** As {@link #runtime(String, int)}, on {@code clock} (a ManualClock moves its timers). */
    static YunoRuntime runtime(String config, int ioThreads, GClock clock) {
        return YunoRuntime.builder().name("t").ioThreads(ioThreads).clock(clock).gclass(specs()).config(config).build();
    }

    /** The next revision of the bundle: both gclasses at once, as the tracker hands a bundle's gclasses over. */
    static List<GClassSpec<?>> nextRevision() {
        return List.of(Revision.next(Tcp.SPEC), Revision.next(TcpS.SPEC));
    }

    /** Upgrades {@code rt} to {@link #nextRevision} and checks it was live: {@code gobjs} handed over, nothing rebuilt. */
    static ObjectNode upgradeLive(YunoRuntime rt, int gobjs) {
        ObjectNode report = rt.gclassesArrived(nextRevision());
        assertEquals(gobjs, report.path("gobjs_migrated").asInt(), report.toString());
        assertEquals(0, report.path("rebuilt").size(), report.toString());
        return report;
    }

    /** Starts {@code rt} and its C_TCP service {@code cli} (a manual-start gclass), recording what cli publishes. */
    static Recorder startClient(YunoRuntime rt) {
        Recorder rec = Recorder.create(rt, "rec");
        rt.run(() -> rt.yuno().service("cli").subscribe(null, rec.gobj()));
        rt.start();
        rt.run(() -> rt.yuno().service("cli").start());
        return rec;
    }

    /** A lone C_TCP service {@code cli} with {@code url} tcp://127.0.0.1:port and the given kw entries. */
    static String tcpConfig(int port, String kw) {
        return "{\"services\":[{\"name\":\"cli\",\"gclass\":\"C_TCP\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port + "\""
                + (kw == null ? "" : "," + kw) + "}}]}";
    }

    /** Client side: a gate, a channel, the test framer and C_TCP connecting to {@code port}. */
    static String clientConfig(int port, String tcpKw) {
        return "{\"services\":[{\"name\":\"out\",\"gclass\":\"C_TEST_GATE\",\"autostart\":true,\"children\":["
                + "{\"name\":\"out\",\"gclass\":\"C_CHANNEL\",\"children\":["
                + "{\"name\":\"out\",\"gclass\":\"C_TEST_FRAMER\",\"children\":["
                + "{\"name\":\"out\",\"gclass\":\"C_TCP\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port + "\""
                + (tcpKw == null ? "" : "," + tcpKw) + "}}]}]}]}]}";
    }

    /** {@link #serverConfig} on a TLS listener ({@code tcps://}) serving {@code certs}. */
    static String tlsServerConfig(int port, int channels, TestCerts certs) {
        String crypto = "\"crypto\":{\"ssl_certificate\":" + json(certs.certPem) + ",\"ssl_certificate_key\":"
                + json(certs.keyPem) + "}";
        return serverConfig(port, channels, crypto).replace("tcp://127.0.0.1:", "tcps://127.0.0.1:");
    }

    /** {@link #clientConfig} over TLS ({@code tcp4hs://}), trusting {@code trustedPem}, reconnecting after 300 ms. */
    static String tlsClientConfig(int port, String trustedPem) {
        return clientConfig(port, "\"crypto\":{\"ssl_trusted_certificate\":" + json(trustedPem) + "},"
                + "\"timeout_between_connections\":300").replace("tcp://127.0.0.1:", "tcp4hs://127.0.0.1:");
    }

    private static String json(String s) {
        return Kw.MAPPER.valueToTree(s).toString();
    }

    /** What a listener in legacy mode says when it closes a connection beyond its channels. */
    static final String LEGACY_REFUSED = "TCP_S: Connection not accepted: no free child tree found";

    /** {@link #serverConfig} with the listener in legacy mode: connections beyond the channels are closed. */
    static String legacyServerConfig(int port, int channels) {
        return serverConfig(port, channels, "\"child_tree_filter\":{\"kw\":{\"__gclass_name__\":\"C_CHANNEL\"}}");
    }

    /** Connects {@code n} times to a listener that must close each connection at once (legacy mode, channels busy). */
    static void refused(int port, int n) throws IOException {
        for (int i = 0; i < n; i++) {
            try (Socket b = new Socket("127.0.0.1", port)) {
                b.setSoTimeout(5000);
                assertEquals(-1, b.getInputStream().read(), "closed at once");
            }
        }
    }

    /** Server side: a gate {@code in} with a listener and {@code channels} channels over the test framer. */
    static String serverConfig(int port, int channels, String listenerKw) {
        StringBuilder sb = new StringBuilder();
        sb.append("{\"services\":[{\"name\":\"in\",\"gclass\":\"C_TEST_GATE\",\"autostart\":true,\"children\":[");
        sb.append("{\"name\":\"listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"tcp://127.0.0.1:").append(port)
                .append("\"").append(listenerKw == null ? "" : "," + listenerKw).append("}}");
        for (int i = 1; i <= channels; i++) {
            sb.append(",{\"name\":\"in-").append(i).append("\",\"gclass\":\"C_CHANNEL\",\"children\":[")
              .append("{\"name\":\"in-").append(i).append("\",\"gclass\":\"C_TEST_FRAMER\"}]}");
        }
        sb.append("]}]}");
        return sb.toString();
    }
}
