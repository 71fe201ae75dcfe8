// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Poll;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Tcp4hFrames;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.net.Socket;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * C_PROT_TCP4H's {@code timeout_header} (the opt-in slowloris guard) over a real C_TCP: a connection whose frame header
 * stays incomplete is closed, its peer named in "Timeout waiting frame header", and with the only channel held by a
 * slowloris a waiting connection is served once the guard fired. The guard's timer runs on a {@link ManualClock};
 * only the bytes through the sockets are waited for. (Every case of the guard is in {@link ProtTcp4hTest}.)
 */
@Timeout(60)
class Tcp4hHeaderTimeoutTest {
    static final String HEADER_TIMEOUT = "Timeout waiting frame header";

    /** Waits for {@code s} to open channel in-1, writes {@code bytes} and waits until the server has read them. */
    private static Recorder openAndWrite(YunoRuntime srv, Socket s, byte[] bytes) throws Exception {
        Recorder rec = Loopback.recorder(srv, "in");
        assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
        GObj tcp = Loopback.socketOf(srv, "in-1");
        s.getOutputStream().write(bytes);
        assertTrue(Poll.until(() -> Loopback.rxBytes(srv, tcp) == bytes.length, 5000));
        return rec;
    }

    @Test
    void shouldCloseAHalfHeaderAfterTimeoutHeaderAndNameThePeer() throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        try (LogCapture logs = new LogCapture();
             YunoRuntime srv = Loopback.server(Loopback.serverConfig(port, 1, "\"timeout_header\":300"), 0, clock);
             Socket s = new Socket("127.0.0.1", port)) {
            Recorder rec = openAndWrite(srv, s, new byte[] {0, 0});
            clock.advance(299);
            assertEquals(0, rec.count(Ev.EV_ON_CLOSE));
            clock.advance(1);
            assertTrue(Loopback.closedWithin(s, 5000), "half a header is closed");
            LogCapture.Rec r = logs.with(HEADER_TIMEOUT).get(0);
            assertEquals("127.0.0.1:" + s.getLocalPort(), r.fields.get("peername"), r.fields.toString());
            assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
            assertEquals(0, logs.count("Event NOT DEFINED in state"), logs.all().toString());
        }
    }

    @Test
    void shouldServeTheNextConnectionOnceTheGuardClosedASlowlorisOnTheOnlyChannel() throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        try (LogCapture logs = new LogCapture();
             YunoRuntime srv = Loopback.server(Loopback.serverConfig(port, 1, "\"timeout_header\":300"), 0, clock);
             Socket slow = new Socket("127.0.0.1", port)) {
            Recorder rec = openAndWrite(srv, slow, new byte[] {0, 0, 0});
            try (Socket good = new Socket("127.0.0.1", port)) {
                good.getOutputStream().write(Tcp4hFrames.of("served"));
                GObj listener = srv.call(() -> srv.service("in").child("listen"));
                assertTrue(Poll.until(() -> srv.call(() -> listener.readAttr("connxs").asLong()) == 2, 5000),
                        "the second connection waits for the channel");
                assertEquals(0, rec.count(Ev.EV_ON_MESSAGE));
                clock.advance(300);
                assertTrue(Loopback.closedWithin(slow, 5000));
                assertEquals("served", rec.await(Ev.EV_ON_MESSAGE, 10_000).payloadText());
                assertEquals(1, logs.count(HEADER_TIMEOUT));
                Loopback.send(srv, "in-1", Kw.withGbuffer(Unpooled.copiedBuffer("welcome", StandardCharsets.UTF_8)));
                good.setSoTimeout(5000);
                assertEquals("welcome", Tcp4hFrames.read(good.getInputStream()), "the good one holds the channel now");
            }
        }
    }

    @Test
    void shouldKeepAHalfHeaderOpenByDefault() throws Exception {
        int port = Ports.free();
        ManualClock clock = new ManualClock();
        try (LogCapture logs = new LogCapture();
             YunoRuntime srv = Loopback.server(Loopback.serverConfig(port, 1, null), 0, clock);
             Socket s = new Socket("127.0.0.1", port)) {
            Recorder rec = openAndWrite(srv, s, new byte[] {0, 0});
            clock.advance(3_600_000);
            assertEquals(0, logs.count(HEADER_TIMEOUT));
            // still open both ways: an answer reaches the peer
            Loopback.send(srv, "in-1", Kw.withGbuffer(Unpooled.copiedBuffer("still", StandardCharsets.UTF_8)));
            s.setSoTimeout(5000);
            assertEquals("still", Tcp4hFrames.read(s.getInputStream()));
            assertEquals(0, rec.count(Ev.EV_ON_CLOSE));
        }
    }
}
