// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GClock;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Poll;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Tcp4hFrames;
import io.gatehouse.testkit.TestCerts;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The TCP4H wire (the external contract) with a raw peer on one end and C_PROT_TCP4H over C_TCP on the other, with
 * the sockets on the core loop (io_threads 0) and on worker loops (2); and a client C_PROT_TCP4H that makes its own
 * C_TCP from {@code url}, plain and TLS. timeout_payload runs on a {@link ManualClock}.
 */
@Timeout(60)
class ProtTcp4hLoopbackTest {

    private static ObjectNode msg(String s) {
        return Kw.withGbuffer(Unpooled.copiedBuffer(s, StandardCharsets.UTF_8));
    }

    @ParameterizedTest(name = "io_threads {0}")
    @ValueSource(ints = {0, 2})
    void shouldFollowTheWireFormatWithARawPeer(int io) throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        String cfg = Loopback.serverConfig(port, 1, "\"max_pkt_size\":1024,\"timeout_payload\":300");
        try (LogCapture logs = new LogCapture(); YunoRuntime srv = Loopback.server(cfg, io, clock)) {
            Recorder rec = Loopback.recorder(srv, "in");
            GObj tcp = Loopback.socketOf(srv, "in-1");
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.setTcpNoDelay(true);
                s.setSoTimeout(5000);
                OutputStream out = s.getOutputStream();
                InputStream in = s.getInputStream();
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                // one frame; two frames in one write
                out.write(new byte[] {0, 0, 0, 9, 'h', 'e', 'l', 'l', 'o'});
                assertEquals("hello", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                out.write(new byte[] {0, 0, 0, 6, 'a', 'b', 0, 0, 0, 7, 'c', 'd', 'e'});
                assertEquals("ab", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                assertEquals("cde", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                // one byte per read: each byte is seen by the server before the next is written
                byte[] split = Tcp4hFrames.of("split");
                long before = Loopback.rxBytes(srv, tcp);
                for (int i = 0; i < split.length; i++) {
                    out.write(split[i]);
                    long want = before + i + 1;
                    assertTrue(Poll.until(() -> Loopback.rxBytes(srv, tcp) == want, 5000));
                }
                assertEquals("split", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                // exactly max_pkt_size is delivered
                byte[] big = new byte[1024];
                Arrays.fill(big, (byte) 'q');
                out.write(Tcp4hFrames.of(big));
                assertEquals(1024, rec.await(Ev.EV_ON_MESSAGE, 5000).payload.length);
                // a gbuffer is framed as it is; a kw without one as compact JSON
                Loopback.send(srv, "in-1", msg("hello"));
                assertEquals("hello", Tcp4hFrames.read(in));
                Loopback.send(srv, "in-1", Kw.create().put("a", 1));
                assertEquals("{\"a\":1}", Tcp4hFrames.read(in));
                // a header of 4 closes with an error
                out.write(new byte[] {0, 0, 0, 4});
                assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
                assertTrue(logs.await("frame_length cannot be 0", 1, 5000));
                assertEquals(-1, in.read());
            }
            // a header under 4 is "too long"
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                s.getOutputStream().write(new byte[] {0, 0, 0, 2});
                assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
                assertTrue(logs.await("tcp4h head too long", 1, 5000));
                s.setSoTimeout(5000);
                assertEquals(-1, s.getInputStream().read());
            }
            // one byte over max_pkt_size
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                s.getOutputStream().write(new byte[] {0, 0, 0x04, 0x05});
                assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
                assertTrue(logs.await("tcp4h head too long", 2, 5000));
            }
            // a payload that never completes is dropped after timeout_payload
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                GObj again = Loopback.socketOf(srv, "in-1");
                s.getOutputStream().write(new byte[] {0, 0, 0, 0x0E, 1, 2, 3});
                assertTrue(Poll.until(() -> Loopback.rxBytes(srv, again) == 7, 5000));
                clock.advance(300);
                assertEquals(1, logs.count("Timeout waiting PAYLOAD data"));
                assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
                s.setSoTimeout(5000);
                assertEquals(-1, s.getInputStream().read());
            }
            assertEquals(0, logs.count("Event NOT DEFINED in state"), logs.all().toString());
        }
    }

    @ParameterizedTest(name = "io_threads {0}, tls {1}")
    @CsvSource({"0, false", "2, false", "0, true"})
    void shouldMakeItsTransportFromUrlAndTalkToAServer(int io, boolean tls) throws Exception {
        TestCerts certs = tls ? TestCerts.generate("localhost") : null;
        int port = Ports.free();
        String srvCfg = Loopback.serverConfig(port, 1, null);
        if (tls) {
            String crypto = "\"crypto\":{\"ssl_certificate\":" + json(certs.certPem) + ",\"ssl_certificate_key\":"
                    + json(certs.keyPem) + "}";
            srvCfg = srvCfg.replace("\"url\":\"tcp://127.0.0.1:" + port + "\"",
                    "\"url\":\"tcps://127.0.0.1:" + port + "\"," + crypto);
        }
        // The client's C_PROT_TCP4H has a url and no bottom: it makes a C_TCP child with url, crypto and tcp_kw.
        String cliCfg = "{\"services\":[{\"name\":\"out\",\"gclass\":\"C_RECORDER\",\"children\":["
                + "{\"name\":\"out\",\"gclass\":\"C_CHANNEL\",\"children\":["
                + "{\"name\":\"out\",\"gclass\":\"C_PROT_TCP4H\",\"kw\":{\"url\":\"" + (tls ? "tcp4hs" : "tcp4h")
                + "://127.0.0.1:" + port + "\","
                + (tls ? "\"crypto\":{\"ssl_trusted_certificate\":" + json(certs.certPem) + "}," : "")
                + "\"tcp_kw\":{\"timeout_between_connections\":300}}}]}]}]}";
        try (YunoRuntime srv = Loopback.server(srvCfg, io, GClock.SYSTEM);
             YunoRuntime cli = Loopback.server(cliCfg, io, GClock.SYSTEM)) {
            Recorder srec = Loopback.recorder(srv, "in");
            Recorder crec = Loopback.recorder(cli, "out");
            assertNotNull(crec.await(Ev.EV_ON_OPEN, 10_000));
            assertNotNull(srec.await(Ev.EV_ON_OPEN, 10_000));
            GObj made = cli.call(() -> cli.service("out").child("out").bottom().bottom());
            assertEquals("C_TCP", made.gclassName());
            assertEquals(300L, cli.call(() -> made.readAttr("timeout_between_connections").asLong()), "tcp_kw passed on");
            assertEquals(tls, cli.call(() -> made.readAttr("secure_connected").asBoolean()));
            cli.run(() -> cli.service("out").child("out").send(Ev.EV_SEND_MESSAGE, msg("ping"), null));
            assertEquals("ping", srec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
            Loopback.send(srv, "in-1", msg("pong"));
            assertEquals("pong", crec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
        }
    }

    private static String json(String s) {
        return Kw.MAPPER.valueToTree(s).toString();
    }
}
