package io.gatehouse.itests;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * Talks to a yuno's control endpoint from a test, as {@code ./gatehouse cmd} does: one TCP4H frame with
 * {@code {"command": "..."}} out, one envelope back. Answers the raw JSON text.
 */
final class ControlLink {
    private ControlLink() {}

    static String command(int port, String line) throws IOException {
        return command(port, line, 10_000);
    }

    /** The command's answer, waited for up to {@code timeoutMs}. */
    static String command(int port, String line, int timeoutMs) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(timeoutMs);
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            String escaped = line.replace("\\", "\\\\").replace("\"", "\\\"");
            byte[] b = ("{\"command\": \"" + escaped + "\"}").getBytes(StandardCharsets.UTF_8);
            out.writeInt(b.length + 4);
            out.write(b);
            out.flush();
            DataInputStream in = new DataInputStream(s.getInputStream());
            int n = in.readInt();
            byte[] a = new byte[n - 4];
            in.readFully(a);
            return new String(a, StandardCharsets.UTF_8);
        }
    }

    /** The command's answer, or null while the endpoint is not there yet. */
    static String tryCommand(int port, String line) {
        try {
            return command(port, line);
        } catch (IOException e) {
            return null;
        }
    }
}
