// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.Poll;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.TestCerts;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * TLS on both sides (tcps listener, tcp4hs client) with a certificate generated at test time; with the sockets on
 * the core loop (io_threads 0) and on worker loops (2), where the handshake events cross to the core loop.
 */
@Timeout(60)
class TcpTlsTest {
    private static TestCerts certs;
    private static TestCerts other;

    @BeforeAll
    static void makeCerts() throws Exception {
        certs = TestCerts.generate("localhost");
        other = TestCerts.generate("someone-else");
    }

    private static String serverCfg(int port) {
        return Support.tlsServerConfig(port, 1, certs);
    }

    private static String clientCfg(int port, String trusted) {
        return Support.tlsClientConfig(port, trusted);
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldRoundTripOverTls(int io) throws Exception {
        int port = Ports.free();
        try (LogCapture logs = new LogCapture();
             YunoRuntime srv = Support.runtime(serverCfg(port), io);
             YunoRuntime cli = Support.runtime(clientCfg(port, certs.certPem), io)) {
            Recorder srec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, srec.gobj()));
            srv.start();
            Recorder crec = Recorder.create(cli, "rec");
            cli.run(() -> cli.yuno().service("out").subscribe(null, crec.gobj()));
            cli.run(() -> cli.yuno().service("out").lastBottom().setTrace(Tcp.TRACE_TLS, true));
            cli.start();
            assertNotNull(crec.await(Ev.EV_ON_OPEN, 10000));
            // trace "tls": the protocol and cipher a handshake agreed
            LogCapture.Rec done = logs.with("TLS handshake done").get(0);
            assertTrue(String.valueOf(done.fields.get("protocol")).startsWith("TLS"), done.toString());
            assertFalse(String.valueOf(done.fields.get("cipher")).isEmpty(), done.toString());
            assertNotNull(srec.await(Ev.EV_ON_OPEN, 10000));
            ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer("secret", StandardCharsets.UTF_8));
            cli.run(() -> cli.yuno().service("out").send(Ev.EV_SEND_MESSAGE, kw, null));
            assertEquals("secret", srec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
            ObjectNode back = Kw.withGbuffer(Unpooled.copiedBuffer("back", StandardCharsets.UTF_8));
            srv.run(() -> srv.yuno().service("in").send(Ev.EV_SEND_MESSAGE, back, null));
            assertEquals("back", crec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
            GObj ctcp = cli.call(() -> cli.yuno().service("out").children().get(0).lastBottom());
            assertTrue(cli.call(() -> ctcp.readAttr("secure_connected").asBoolean()));
            GObj stcp = srv.call(() -> srv.yuno().service("in").child("in-1").lastBottom());
            assertTrue(srv.call(() -> stcp.readAttr("secure_connected").asBoolean()));
        }
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldNotOpenWhenTheServerIsNotTrusted(int io) throws Exception {
        int port = Ports.free();
        try (LogCapture logs = new LogCapture();
             YunoRuntime srv = Support.runtime(serverCfg(port), io); YunoRuntime cli = Support.runtime(clientCfg(port, other.certPem), io)) {
            Recorder srec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, srec.gobj()));
            srv.start();
            Recorder crec = Recorder.create(cli, "rec");
            cli.run(() -> cli.yuno().service("out").subscribe(null, crec.gobj()));
            cli.run(() -> cli.yuno().service("out").lastBottom().setTrace(Tcp.TRACE_TLS, true));
            cli.start();
            // trace "tls": the client says why its handshake failed; the socket then closes without an open
            assertTrue(logs.await("TLS handshake failed", 1, 10_000), logs.all().toString());
            assertTrue(Poll.until(() -> logs.with("Disconnected").stream().anyMatch(r -> r.gobj.equals("C_TCP^out")
                    && String.valueOf(r.fields.get("cause")).contains("SSLHandshakeException")), 10_000),
                    String.valueOf(logs.with("Disconnected")));
            assertEquals(0, crec.count(Ev.EV_ON_OPEN));
            assertEquals(0, srec.count(Ev.EV_ON_OPEN), "the server opens only after a handshake");
        }
    }
}
