// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Kw;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.Recorder;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every trace level C_TCP and C_TCP_S declare changes what they say: {@code connections}, {@code traffic} and
 * {@code listen} here, {@code tls} in {@link TcpTlsTest}. Levels are set as an operator sets them, in the yuno's
 * {@code trace_levels}.
 */
@Timeout(30)
class TcpTraceLevelsTest {

    private static String traced(String gclass, String levels, String config) {
        return "{\"yuno\":{\"trace_levels\":{\"" + gclass + "\":[" + levels + "]}}," + config.substring(1);
    }

    @Test
    void shouldHaveATestForEveryDeclaredTraceLevel() {
        assertEquals(Set.of(Tcp.TRACE_CONNECTIONS, Tcp.TRACE_TRAFFIC, Tcp.TRACE_TLS), Tcp.SPEC.traceLevels().keySet());
        assertEquals(Set.of(TcpS.TRACE_LISTEN), TcpS.SPEC.traceLevels().keySet());
    }

    @Test
    void shouldSayConnectionsAndEveryReadAndWriteWhenTracedConnectionsAndTraffic() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 5, InetAddress.getLoopbackAddress()); LogCapture logs = new LogCapture();
             YunoRuntime rt = Support.runtime(traced("C_TCP", "\"connections\",\"traffic\"",
                     Support.tcpConfig(ss.getLocalPort(), null)))) {
            Recorder rec = Support.startClient(rt);
            try (Socket peer = ss.accept()) {
                peer.setSoTimeout(5000);
                assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                LogCapture.Rec connected = logs.with("Connected").get(0);
                assertEquals(LogCapture.Level.INFO, connected.level);
                assertEquals("Connected To", connected.fields.get("msg2"));
                assertEquals("127.0.0.1:" + peer.getLocalPort(), connected.fields.get("remote-addr"));

                ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer("abc", StandardCharsets.UTF_8));
                rt.run(() -> rt.yuno().service("cli").send(Ev.EV_TX_DATA, kw, null));
                assertEquals(3, peer.getInputStream().readNBytes(3).length);
                assertEquals(3, logs.with("write").get(0).fields.get("bytes"));
                peer.getOutputStream().write(new byte[] {1, 2});
                assertNotNull(rec.await(Ev.EV_RX_DATA, 5000));
                assertEquals(2, logs.with("read").get(0).fields.get("bytes"));
            }
            assertNotNull(rec.await(Ev.EV_DISCONNECTED, 5000));
            LogCapture.Rec gone = logs.with("Disconnected").get(0);
            assertEquals(LogCapture.Level.INFO, gone.level);
            assertEquals("Disconnected To", gone.fields.get("msg2"));
        }
    }

    @Test
    void shouldSayConnectionsOnlyAtDebugAndNoTrafficWhenNotTraced() throws Exception {
        try (ServerSocket ss = new ServerSocket(0, 5, InetAddress.getLoopbackAddress()); LogCapture logs = new LogCapture();
             YunoRuntime rt = Support.runtime(Support.tcpConfig(ss.getLocalPort(), null))) {
            Recorder rec = Support.startClient(rt);
            try (Socket peer = ss.accept()) {
                assertNotNull(rec.await(Ev.EV_CONNECTED, 5000));
                ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer("abc", StandardCharsets.UTF_8));
                rt.run(() -> rt.yuno().service("cli").send(Ev.EV_TX_DATA, kw, null));
                peer.setSoTimeout(5000);
                assertEquals(3, peer.getInputStream().readNBytes(3).length);
            }
            assertEquals(LogCapture.Level.DEBUG, logs.with("Connected").get(0).level);
            assertEquals(0, logs.count("write"));
        }
    }

    @Test
    void shouldSayListeningAtInfoOnlyWhenTracedListen() {
        int port = Ports.free();
        try (LogCapture logs = new LogCapture();
             YunoRuntime rt = Support.runtime(traced("C_TCP_S", "\"listen\"", Support.serverConfig(port, 1, null)))) {
            rt.start();
            LogCapture.Rec listening = logs.with("Listening...").get(0);
            assertEquals(LogCapture.Level.INFO, listening.level);
            assertEquals(port, listening.fields.get("lPort"));
        }
        int other = Ports.free();
        try (LogCapture logs = new LogCapture(); YunoRuntime rt = Support.runtime(Support.serverConfig(other, 1, null))) {
            rt.start();
            assertEquals(LogCapture.Level.DEBUG, logs.with("Listening...").get(0).level);
        }
    }

    @Test
    void shouldNotAcceptATraceLevelNobodyDeclared() {
        try (YunoRuntime rt = Support.runtime(Support.tcpConfig(Ports.free(), null))) {
            rt.start();
            ObjectNode r = rt.command("trace-on service=cli level=tls-verbose");
            assertTrue(r.path("result").asInt() < 0, r.toString());
        }
    }
}
