// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GClock;
import io.gatehouse.api.GObj;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.tcp.TcpGClass;
import io.gatehouse.tcp.TcpSGClass;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.StubChannel;

import java.net.Socket;
import java.net.SocketTimeoutException;

/**
 * C_PROT_TCP4H over a real C_TCP on 127.0.0.1, for the tests of what only sockets show: a server yuno whose service
 * {@code in} is a {@link Recorder} over a C_TCP_S listener and channels ({@link StubChannel}) over C_PROT_TCP4H, so
 * the recorder sees each channel's EV_ON_OPEN / EV_ON_MESSAGE / EV_ON_CLOSE with the channel as source.
 */
final class Loopback {
    private Loopback() {}

    static GClassSpec<?>[] specs() {
        return new GClassSpec<?>[] {new TcpGClass().spec(), new TcpSGClass().spec(), new ProtTcp4hGClass().spec(),
            StubChannel.SPEC, Recorder.SPEC};
    }

    /** The server: a listener on {@code port} and {@code channels} channels {@code in-1...} over C_PROT_TCP4H. */
    static String serverConfig(int port, int channels, String tcp4hKw) {
        StringBuilder sb = new StringBuilder();
        sb.append("{\"services\":[{\"name\":\"in\",\"gclass\":\"C_RECORDER\",\"children\":[");
        sb.append("{\"name\":\"listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"tcp://127.0.0.1:").append(port).append("\"}}");
        for (int i = 1; i <= channels; i++) {
            sb.append(",{\"name\":\"in-").append(i).append("\",\"gclass\":\"C_CHANNEL\",\"children\":[")
              .append("{\"name\":\"in-").append(i).append("\",\"gclass\":\"C_PROT_TCP4H\",\"kw\":{")
              .append(tcp4hKw == null ? "" : tcp4hKw).append("}}]}");
        }
        sb.append("]}]}");
        return sb.toString();
    }

    static YunoRuntime server(String config, int ioThreads, GClock clock) {
        return YunoRuntime.builder().name("t").ioThreads(ioThreads).clock(clock).gclass(specs()).config(config).build()
                .start();
    }

    static Recorder recorder(YunoRuntime rt, String service) {
        return (Recorder) rt.service(service).behavior();
    }

    /** The C_TCP under channel {@code name} of service {@code in}. */
    static GObj socketOf(YunoRuntime rt, String name) {
        return rt.call(() -> rt.service("in").child(name).lastBottom());
    }

    /** The C_PROT_TCP4H under channel {@code name} of service {@code in}. */
    static GObj protocolOf(YunoRuntime rt, String name) {
        return rt.call(() -> rt.service("in").child(name).bottom());
    }

    static long rxBytes(YunoRuntime rt, GObj tcp) {
        return rt.call(() -> tcp.readAttr("rxBytes").asLong());
    }

    static void send(YunoRuntime rt, String channel, ObjectNode kw) {
        rt.run(() -> rt.service("in").child(channel).send(Ev.EV_SEND_MESSAGE, kw, null));
    }

    /** How long until the next timer of the yuno falls due (-1: none); the core loop's current task is let finish first. */
    static long dueIn(YunoRuntime rt, ManualClock clock) {
        rt.run(() -> { });
        return clock.nextDue() < 0 ? -1 : clock.nextDue() - clock.monotonicMillis();
    }

    /** True when the peer closed within {@code ms} (a read answers -1), false when it is still open. */
    static boolean closedWithin(Socket s, int ms) throws Exception {
        s.setSoTimeout(ms);
        try {
            return s.getInputStream().read() == -1;
        } catch (SocketTimeoutException e) {
            return false;
        }
    }
}
