// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import io.netty.buffer.PooledByteBufAllocator;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Collects what is printed on System.err (where slf4j-simple writes Netty's leak reports) while still printing it,
 * so a test class can fail on "LEAK:" instead of only printing it. Start it in {@code @BeforeAll}, assert
 * {@code stop()} is empty in {@code @AfterAll}. The paranoid leak detector reports a leaked buffer once it was
 * garbage collected and another buffer is tracked: {@link #stop} collects and allocates to bring the reports out.
 */
public final class LeakWatch {
    private final PrintStream original = System.err;
    private final ByteArrayOutputStream seen = new ByteArrayOutputStream();

    public LeakWatch() {
        OutputStream tee = new OutputStream() {
            @Override
            public void write(int b) {
                original.write(b);
                synchronized (seen) {
                    seen.write(b);
                }
            }

            @Override
            public void write(byte[] b, int off, int len) {
                original.write(b, off, len);
                synchronized (seen) {
                    seen.write(b, off, len);
                }
            }
        };
        System.setErr(new PrintStream(tee, true));
    }

    /** Stops collecting; answers the first leak report seen (empty when none). */
    public String stop() throws InterruptedException {
        try {
            for (int r = 0; r < 5; r++) {
                System.gc();
                Thread.sleep(50);   // lets the reference queue fill: a GC pause, not a timer
                for (int i = 0; i < 100; i++) PooledByteBufAllocator.DEFAULT.directBuffer(16).release();
            }
        } finally {
            System.setErr(original);
        }
        String all;
        synchronized (seen) {
            all = seen.toString(StandardCharsets.UTF_8);
        }
        int i = all.indexOf("LEAK:");
        return i < 0 ? "" : all.substring(i, Math.min(all.length(), i + 4000));
    }
}
