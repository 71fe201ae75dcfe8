// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GClock;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.StubChannel;

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
