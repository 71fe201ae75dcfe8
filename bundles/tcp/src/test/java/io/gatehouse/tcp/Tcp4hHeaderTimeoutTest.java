package io.gatehouse.tcp;

import io.gatehouse.api.Ev;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.core.YunoRuntime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;

import static org.junit.jupiter.api.Assertions.*;

/**
 * C_PROT_TCP4H {@code timeout_header} (opt-in slowloris guard): a connection that sends no complete frame after
 * connecting, or leaves a frame header incomplete, is closed after that time with
 * "Timeout waiting frame header"; an idle connection between complete frames is not. With the only channel held
 * by a slowloris, a waiting connection is served once the guard fired.
 */
@Timeout(120)
class Tcp4hHeaderTimeoutTest {
    static final String HEADER_TIMEOUT = "Timeout waiting frame header";

    /** Answers true when the peer closed within ms (read -1), false when still open. */
    static boolean closedWithin(Socket s, int ms) throws Exception {
        s.setSoTimeout(ms);
        try {
            return s.getInputStream().read() == -1;
        } catch (SocketTimeoutException e) {
            return false;
        }
    }

    @Test
    void shouldCloseAHalfHeaderOrASilentConnectionAndKeepAnIdleOne() throws Exception {
        int port = Support.freePort();
        try (Support.Logs logs = new Support.Logs();
             YunoRuntime srv = Support.runtime(Support.serverConfig(port, 2, null, "\"timeout_header\":300"))) {
            Recorder rec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, rec.gobj()));
            srv.start();
            // half a header, then silence: closed, with its peer in the log
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                long t0 = System.nanoTime();
                s.getOutputStream().write(new byte[] {0, 0});
                assertTrue(closedWithin(s, 10_000), "half a header is closed");
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertTrue(ms >= 250, "not before timeout_header: " + ms);
                assertTrue(logs.await(HEADER_TIMEOUT, 1, 5000));
                Support.Rec r = logs.with(HEADER_TIMEOUT).get(0);
                assertEquals("127.0.0.1:" + s.getLocalPort(), r.fields.get("peername"), r.fields.toString());
                assertNotNull(rec.await(Ev.EV_ON_CLOSE, 5000));
            }
            // connected and nothing sent: closed too
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertTrue(closedWithin(s, 10_000), "a connection without any frame is closed");
                assertTrue(logs.await(HEADER_TIMEOUT, 2, 5000));
            }
            // header bytes dripped one at a time: the guard is not restarted by each byte
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertTrue(rec.awaitCount(Ev.EV_ON_OPEN, 3, 5000));
                OutputStream out = s.getOutputStream();
                out.write(Support.frame("first"));
                assertEquals("first", rec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
                long t0 = System.nanoTime();
                boolean closed = false;
                for (int i = 0; i < 3 && !closed; i++) {
                    out.write(0);
                    out.flush();
                    closed = closedWithin(s, 200);
                }
                assertTrue(closed || closedWithin(s, 10_000), "a dripped header is closed");
                assertTrue((System.nanoTime() - t0) / 1_000_000 < 5_000);
                assertTrue(logs.await(HEADER_TIMEOUT, 3, 5000));
            }
            // complete frames with idle time between them: kept open; a frame and a partial header in one write
            // is timed from that frame
            try (Socket s = new Socket("127.0.0.1", port)) {
                OutputStream out = s.getOutputStream();
                out.write(Support.frame("a"));
                assertTrue(rec.awaitCount(Ev.EV_ON_MESSAGE, 2, 5000));
                assertFalse(closedWithin(s, 900), "idle between complete frames is allowed");
                out.write(Support.frame("b"));
                assertTrue(rec.awaitCount(Ev.EV_ON_MESSAGE, 3, 5000));
                assertFalse(closedWithin(s, 900));
                byte[] f = Support.frame("c");
                byte[] plus = java.util.Arrays.copyOf(f, f.length + 2);
                out.write(plus);
                assertTrue(rec.awaitCount(Ev.EV_ON_MESSAGE, 4, 5000));
                assertTrue(closedWithin(s, 10_000), "the header after c stays incomplete");
                assertTrue(logs.await(HEADER_TIMEOUT, 4, 5000));
            }
            assertEquals(0, logs.with("Event NOT DEFINED in state").size(), logs.all().toString());
        }
    }

    @Test
    void aSlowlorisOnTheOnlyChannelLetsTheNextConnectionInOnceTheGuardFired() throws Exception {
        int port = Support.freePort();
        try (Support.Logs logs = new Support.Logs();
             YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1, null, "\"timeout_header\":300"))) {
            Recorder rec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, rec.gobj()));
            srv.start();
            try (Socket slow = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                slow.getOutputStream().write(new byte[] {0, 0, 0});
                try (Socket good = new Socket("127.0.0.1", port)) {
                    good.getOutputStream().write(Support.frame("served"));
                    assertEquals("served", rec.await(Ev.EV_ON_MESSAGE, 10_000).payloadText());
                    assertTrue(closedWithin(slow, 5000));
                    assertEquals(1, logs.with(HEADER_TIMEOUT).size());
                    InputStream in = good.getInputStream();
                    assertFalse(closedWithin(good, 200));
                    assertEquals(0, in.available());
                }
            }
        }
    }

    @Test
    void shouldKeepAHalfHeaderOpenByDefault() throws Exception {
        int port = Support.freePort();
        try (Support.Logs logs = new Support.Logs();
             YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1, null, null))) {
            Recorder rec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, rec.gobj()));
            srv.start();
            try (Socket s = new Socket("127.0.0.1", port)) {
                assertNotNull(rec.await(Ev.EV_ON_OPEN, 5000));
                s.getOutputStream().write(new byte[] {0, 0});
                assertFalse(closedWithin(s, 1000), "Yuneta keeps it open (timeout_header 0)");
                assertEquals(0, logs.with(HEADER_TIMEOUT).size());
            }
        }
    }
}
