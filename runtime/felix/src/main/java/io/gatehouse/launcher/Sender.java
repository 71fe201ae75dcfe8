package io.gatehouse.launcher;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * {@code gatehouse send}: a producer that speaks the queue protocol, so nothing it sends can be lost
 * unnoticed. Each message is {@code {"id": "msg-N", "seq": N, "tm": ..., "pad": ...,
 * "__md_trq__": {"__msg_rowid__": N+1, "__msg_t__": ...}}} in a TCP4H frame; the gateway acks it once it is
 * durably queued. Up to {@code --window} messages are unacked at once; after a reconnect, or when acks stop
 * coming for {@code --resend-after} seconds, every unacked message is sent again (at-least-once).
 *
 * <p>Exit 0 when every message was acked (or sent, with {@code --no-ack}), 1 on timeout, 2 when the
 * gateway never answered.
 */
public final class Sender {
    private String host = "127.0.0.1";
    private int port = 2000;
    private long count = 1000;
    private long start;
    private int size = 128;
    private int window = 1000;
    private String prefix = "msg-";
    private long timeoutMs = 120_000;
    private long resendAfterMs = 10_000;
    private boolean ack = true;
    private boolean quiet;

    private final Object lock = new Object();
    private BitSet acked;
    private long ackedCount;
    private long lastAckAt;
    private volatile Semaphore credit;
    private long resent;
    private long sentTotal;

    public static int run(List<String> args, PrintStream out, PrintStream err) {
        Sender s = new Sender();
        try {
            for (int i = 0; i < args.size(); i++) {
                String a = args.get(i);
                switch (a) {
                    case "--host": s.host = args.get(++i); break;
                    case "--port": s.port = Integer.parseInt(args.get(++i)); break;
                    case "--count": s.count = Long.parseLong(args.get(++i)); break;
                    case "--start": s.start = Long.parseLong(args.get(++i)); break;
                    case "--size": s.size = Integer.parseInt(args.get(++i)); break;
                    case "--window": s.window = Integer.parseInt(args.get(++i)); break;
                    case "--prefix": s.prefix = args.get(++i); break;
                    case "--timeout": s.timeoutMs = (long) (Double.parseDouble(args.get(++i)) * 1000); break;
                    case "--resend-after": s.resendAfterMs = (long) (Double.parseDouble(args.get(++i)) * 1000); break;
                    case "--no-ack": s.ack = false; break;
                    case "--quiet": s.quiet = true; break;
                    default: throw new IllegalArgumentException("unknown option " + a);
                }
            }
            if (s.count < 0 || s.count > Integer.MAX_VALUE - 1 || s.window < 1 || s.size < 0) {
                throw new IllegalArgumentException("--count, --window or --size out of range");
            }
        } catch (RuntimeException e) {
            err.println("gatehouse send: " + e.getMessage());
            err.println("usage: gatehouse send [--host H] [--port P] [--count N] [--start N] [--size BYTES]"
                    + " [--window W] [--prefix P] [--timeout S] [--resend-after S] [--no-ack] [--quiet]");
            return Main.EXIT_USAGE;
        }
        return s.send(out, err);
    }

    private byte[] message(long n, long now) {
        String head = "{\"id\":\"" + prefix + (start + n) + "\",\"seq\":" + (start + n) + ",\"tm\":" + now + ",\"pad\":\"";
        String tail = "\",\"__md_trq__\":{\"__msg_rowid__\":" + (n + 1) + ",\"__msg_t__\":" + now + "}}";
        int pad = Math.max(0, size - head.length() - tail.length());
        StringBuilder sb = new StringBuilder(head.length() + pad + tail.length()).append(head);
        for (int i = 0; i < pad; i++) sb.append('x');
        return sb.append(tail).toString().getBytes(StandardCharsets.UTF_8);
    }

    private int send(PrintStream out, PrintStream err) {
        acked = new BitSet((int) count);
        long t0 = System.currentTimeMillis();
        long deadline = t0 + timeoutMs;
        boolean everConnected = false;
        long cursor = 0;
        while (System.currentTimeMillis() < deadline) {
            synchronized (lock) {
                if (ack && ackedCount >= count) break;
            }
            if (!ack && cursor >= count) break;
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(host, port), 3000);
                s.setTcpNoDelay(true);
                if (everConnected && !quiet) err.println("gatehouse send: reconnected, resending what is not acked");
                everConnected = true;
                credit = new Semaphore(window);
                lastAckOrConnectMs = System.currentTimeMillis();
                if (ack) startReader(s);
                OutputStream o = new BufferedOutputStream(s.getOutputStream(), 64 * 1024);
                cursor = ack ? 0 : cursor;
                cursor = pump(o, cursor, deadline);
                o.flush();
                if (!ack) {
                    s.shutdownOutput();
                    break;
                }
            } catch (IOException e) {
                if (!everConnected && System.currentTimeMillis() + 500 >= deadline) break;
                sleep(300);
            }
        }
        long ms = Math.max(1, System.currentTimeMillis() - t0);
        long done;
        synchronized (lock) {
            done = ack ? ackedCount : Math.min(cursor, count);
        }
        out.printf("sent %d messages (%d resent) to %s:%d in %.2f s: %.0f msgs/s; %s %d of %d%n",
                sentTotal, resent, host, port, ms / 1000.0, done * 1000.0 / ms, ack ? "acked" : "written", done, count);
        if (!everConnected) {
            err.println("gatehouse send: cannot connect to " + host + ":" + port);
            return 2;
        }
        return done >= count ? 0 : 1;
    }

    /** Sends every message not yet acked from {@code cursor}, in order; answers where it stopped. */
    private long pump(OutputStream o, long cursor, long deadline) throws IOException {
        long pass = 0;
        while (System.currentTimeMillis() < deadline) {
            long n = nextUnacked(cursor);
            if (n >= count) {
                o.flush();
                if (!ack) return count;
                if (!waitForAcks(deadline)) {
                    // acks stopped coming on a live connection: send the unacked ones again
                    cursor = 0;
                    pass++;
                    continue;
                }
                return count;
            }
            if (!credit.tryAcquire()) {
                o.flush();
                try {
                    while (!credit.tryAcquire(200, TimeUnit.MILLISECONDS)) {
                        if (readerDead) throw new IOException("connection lost");
                        if (System.currentTimeMillis() >= deadline) return n;
                        // The window is full and acks stopped (messages dropped on a live connection, e.g. while
                        // the gateway rebuilds a service): reconnect, which sends every unacked message again.
                        if (System.currentTimeMillis() - lastAckOrConnectMs >= resendAfterMs) {
                            throw new IOException("no ack for " + resendAfterMs + " ms with the window full");
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IOException("interrupted");
                }
            }
            if (readerDead) throw new IOException("connection lost");
            Frames.write(o, message(n, System.currentTimeMillis()));
            sentTotal++;
            if (pass > 0 || sentBefore.get((int) n)) resent++;
            sentBefore.set((int) n);
            cursor = n + 1;
        }
        return cursor;
    }

    private final BitSet sentBefore = new BitSet();
    /** When this connection last brought an ack (or was opened): a full window with no ack since resends. */
    private volatile long lastAckOrConnectMs;
    private volatile boolean readerDead;

    private long nextUnacked(long from) {
        if (!ack) return from;
        synchronized (lock) {
            int i = acked.nextClearBit((int) from);
            return Math.min(i, count);
        }
    }

    /** True when every message got acked; false when acks stopped for resend-after. */
    private boolean waitForAcks(long deadline) throws IOException {
        synchronized (lock) {
            lastAckAt = System.currentTimeMillis();
            long seen = ackedCount;
            while (ackedCount < count) {
                if (readerDead) throw new IOException("connection lost");
                long now = System.currentTimeMillis();
                if (now >= deadline) return true;
                if (ackedCount != seen) {
                    seen = ackedCount;
                    lastAckAt = now;
                }
                if (now - lastAckAt >= resendAfterMs) return false;
                try {
                    lock.wait(200);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return true;
                }
            }
            return true;
        }
    }

    private void startReader(Socket s) throws IOException {
        readerDead = false;
        // buffered: the gateway sends the acks of a commit in one flush, and a frame read from the socket's own stream
        // was a read call for its header and another for its body
        DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 64 * 1024));
        Semaphore myCredit = credit;
        Thread t = new Thread(() -> {
            try {
                byte[] frame;
                while ((frame = Frames.read(in)) != null) {
                    String text = new String(frame, StandardCharsets.UTF_8);
                    long rowid = Json.longField(text, "__msg_rowid__", -1);
                    long result = Json.longField(text, "result", 0);
                    if (rowid < 1 || rowid > count) continue;
                    int n = (int) (rowid - 1);
                    lastAckOrConnectMs = System.currentTimeMillis();
                    synchronized (lock) {
                        if (result >= 0 && !acked.get(n)) {
                            acked.set(n);
                            ackedCount++;
                            lock.notifyAll();
                        }
                    }
                    myCredit.release();
                }
            } catch (IOException ignored) {
                // the connection is gone: the writer reconnects and resends
            } finally {
                readerDead = true;
                synchronized (lock) {
                    lock.notifyAll();
                }
            }
        }, "gatehouse-send-acks");
        t.setDaemon(true);
        t.start();
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
