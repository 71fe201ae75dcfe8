// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Ports for tests that listen: on 127.0.0.1, picked by the kernel, free when asked for. */
public final class Ports {
    private Ports() {}

    /**
     * A port free on 127.0.0.1 now. Another process may take it before the test binds it, which on a shared
     * machine is rare enough; a test that cannot afford it binds port 0 and reads the port back instead.
     */
    public static int free() {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port on 127.0.0.1", e);
        }
    }
}
