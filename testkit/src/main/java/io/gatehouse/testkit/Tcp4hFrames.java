// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;

/**
 * TCP4H frames for raw peers in socket tests (a plain {@link java.net.Socket} on the other end of a gateway): a
 * 4-byte big-endian header holding the payload length + 4, then the payload.
 */
public final class Tcp4hFrames {
    private Tcp4hFrames() {}

    /** The frame of {@code payload} (UTF-8). */
    public static byte[] of(String payload) {
        return of(payload.getBytes(StandardCharsets.UTF_8));
    }

    /** The frame of {@code payload}. */
    public static byte[] of(byte[] payload) {
        byte[] f = new byte[payload.length + 4];
        int l = payload.length + 4;
        f[0] = (byte) (l >>> 24);
        f[1] = (byte) (l >>> 16);
        f[2] = (byte) (l >>> 8);
        f[3] = (byte) l;
        System.arraycopy(payload, 0, f, 4, payload.length);
        return f;
    }

    /** Reads one frame from a blocking stream and answers its payload as UTF-8 text; null at the end of the stream. */
    public static String read(InputStream in) throws IOException {
        byte[] h = in.readNBytes(4);
        if (h.length < 4) return null;
        int l = ((h[0] & 0xFF) << 24) | ((h[1] & 0xFF) << 16) | ((h[2] & 0xFF) << 8) | (h[3] & 0xFF);
        return new String(in.readNBytes(l - 4), StandardCharsets.UTF_8);
    }

    /**
     * A producer far faster than a gateway: connects to 127.0.0.1:{@code port} and writes frames of
     * {@code payloadSize} bytes, 64 per write, as fast as the socket takes them, for {@code ms} or until
     * {@code maxBytes} were written. Answers the bytes written by then. The writer blocks when TCP backpressure
     * reaches it; that is what the flow-control tests measure.
     */
    public static long flood(int port, int payloadSize, long ms, long maxBytes) throws Exception {
        AtomicLong written = new AtomicLong();
        byte[] frame = of(new byte[payloadSize]);
        byte[] batch = new byte[frame.length * 64];
        for (int i = 0; i < 64; i++) System.arraycopy(frame, 0, batch, i * frame.length, frame.length);
        try (Socket s = new Socket("127.0.0.1", port)) {
            OutputStream out = s.getOutputStream();
            Thread t = new Thread(() -> {
                try {
                    while (written.get() < maxBytes) {
                        out.write(batch);
                        written.addAndGet(batch.length);
                    }
                } catch (IOException ignored) {
                    // closed at the end of the window
                }
            }, "tcp4h-flood");
            t.setDaemon(true);
            t.start();
            t.join(ms);
            long w = written.get();
            s.close();
            t.join(5000);
            return w;
        }
    }
}
