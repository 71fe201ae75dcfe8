// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import java.util.ArrayList;
import java.util.List;

/** Live threads by name, for tests that check a yuno's threads end with it. */
public final class Threads {
    private Threads() {}

    /** Names of the live threads whose name starts with {@code prefix}. */
    public static List<String> named(String prefix) {
        List<String> out = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith(prefix)) out.add(t.getName());
        }
        return out;
    }

    /** The io_threads worker loops of the yunos named {@code yunoName} ({@code gatehouse-io-<yuno>-*}). */
    public static List<String> ioWorkers(String yunoName) {
        return named("gatehouse-io-" + yunoName + "-");
    }

    /**
     * The threads named {@code prefix...} still alive after waiting up to {@code timeoutMs} for them to end (a
     * closed event loop group's threads end just after its termination is signalled); empty when all ended.
     */
    public static List<String> left(String prefix, long timeoutMs) {
        Poll.until(() -> named(prefix).isEmpty(), timeoutMs);
        return named(prefix);
    }
}
