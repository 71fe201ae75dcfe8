package io.gatehouse.launcher;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code gatehouse cmd [--host H] [--port P] [--hub NAME] [--token T] 'COMMAND key=value ...'}: sends one command
 * to a running yuno's control endpoint and prints the JSON envelope. With {@code --hub} the endpoint acts for this
 * short-lived client as a hub of its own and sends the command to hub NAME through its portals. Exit 0 when
 * {@code result} is 0 or more, 1 when it is negative, 2 when the endpoint cannot be reached.
 */
final class ControlClient {
    private ControlClient() {}

    static int run(List<String> args, PrintStream out, PrintStream err) {
        String host = "127.0.0.1";
        int port = 1991;
        String token = System.getenv("GATEHOUSE_TOKEN");
        String hub = null;
        List<String> words = new ArrayList<>();
        try {
            for (int i = 0; i < args.size(); i++) {
                String a = args.get(i);
                switch (a) {
                    case "--host": host = args.get(++i); break;
                    case "--port": port = Integer.parseInt(args.get(++i)); break;
                    case "--token": token = args.get(++i); break;
                    case "--hub": hub = args.get(++i); break;
                    default: words.add(a);
                }
            }
        } catch (IndexOutOfBoundsException | NumberFormatException e) {
            err.println("gatehouse cmd: bad option: " + e.getMessage());
            return Main.EXIT_USAGE;
        }
        if (words.isEmpty()) {
            err.println("usage: gatehouse cmd [--host H] [--port P] [--hub NAME] [--token T] 'COMMAND key=value ...'");
            return Main.EXIT_USAGE;
        }
        String line = String.join(" ", words);
        StringBuilder req = new StringBuilder("{\"command\":").append(Json.quote(line));
        if (token != null && !token.isEmpty()) req.append(",\"token\":").append(Json.quote(token));
        // Another hub: the endpoint sends the command there through its portals and relays the reply's envelope.
        if (hub != null && !hub.isEmpty()) req.append(",\"hub\":").append(Json.quote(hub));
        req.append('}');
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 5000);
            s.setSoTimeout(30_000);
            OutputStream o = new BufferedOutputStream(s.getOutputStream());
            Frames.write(o, req.toString().getBytes(StandardCharsets.UTF_8));
            o.flush();
            byte[] answer = Frames.read(new DataInputStream(s.getInputStream()));
            if (answer == null) {
                err.println("gatehouse cmd: the control endpoint closed the connection");
                return 2;
            }
            String text = new String(answer, StandardCharsets.UTF_8);
            out.println(Json.pretty(text));
            return Json.intField(text, "result", -1) < 0 ? 1 : 0;
        } catch (IOException e) {
            err.println("gatehouse cmd: cannot reach the control endpoint " + host + ":" + port + ": " + e.getMessage());
            return 2;
        }
    }
}
