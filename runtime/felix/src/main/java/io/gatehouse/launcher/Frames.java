package io.gatehouse.launcher;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;

/** TCP4H framing for the command-line clients: a 4-byte big-endian header holding payload length + 4. */
final class Frames {
    static final int MAX_PAYLOAD = 16 * 1024 * 1024;

    private Frames() {}

    static void write(OutputStream out, byte[] payload) throws IOException {
        int n = payload.length + 4;
        out.write(new byte[] {(byte) (n >>> 24), (byte) (n >>> 16), (byte) (n >>> 8), (byte) n});
        out.write(payload);
    }

    /** Reads one frame's payload; null at a clean end of stream. */
    static byte[] read(DataInputStream in) throws IOException {
        int n;
        try {
            n = in.readInt();
        } catch (EOFException e) {
            return null;
        }
        if (n <= 4 || n - 4 > MAX_PAYLOAD) throw new IOException("bad frame header " + n);
        byte[] b = new byte[n - 4];
        in.readFully(b);
        return b;
    }
}
