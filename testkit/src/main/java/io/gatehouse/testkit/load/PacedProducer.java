// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit.load;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.BitSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A producer speaking the queue protocol at a steady rate: message {@code n} is
 * {@code {"id":"m-n","tm":...,"__md_trq__":{"__msg_rowid__":n+1,"__msg_t__":1}}}, at most {@code window} unacked at
 * once, until {@link #stop}. It counts what a live-upgrade test asserts on: acks (and acks of a message already
 * acked), nacks, and connections it lost; after a lost connection it reconnects and sends every unacked message
 * again, as a real producer does.
 */
public final class PacedProducer implements AutoCloseable {
    private final int port;
    private final int ratePerSec;
    private final int window;
    private final BitSet acked = new BitSet();
    private final AtomicInteger lostConnections = new AtomicInteger();
    private long ackedCount;
    private long duplicateAcks;
    private long nacks;
    private int sent;
    private volatile boolean stopping;
    private volatile boolean closed;
    private final Thread sender;

    public PacedProducer(int port, int ratePerSec, int window) {
        this.port = port;
        this.ratePerSec = ratePerSec;
        this.window = window;
        this.sender = new Thread(this::run, "paced-producer");
        sender.setDaemon(true);
    }

    public PacedProducer start() {
        sender.start();
        return this;
    }

    /** Sends no new message from now on; what was sent is still resent until acked. */
    public void stop() {
        stopping = true;
    }

    private void run() {
        long intervalNanos = 1_000_000_000L / ratePerSec;
        while (!closed) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
                s.setTcpNoDelay(true);
                DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream(), 65536));
                Thread reader = startReader(s);
                int resendUpTo;
                synchronized (this) {
                    resendUpTo = sent;
                }
                for (int n = nextUnacked(0); n < resendUpTo; n = nextUnacked(n + 1)) write(out, n);
                out.flush();
                long next = System.nanoTime();
                while (!closed && reader.isAlive()) {
                    if (stopping) {
                        if (allAcked()) return;
                        Thread.sleep(20);
                        continue;
                    }
                    if (unacked() >= window) {
                        out.flush();
                        LockSupport.parkNanos(100_000);
                        continue;
                    }
                    long now = System.nanoTime();
                    if (now < next) {
                        out.flush();
                        LockSupport.parkNanos(Math.min(next - now, 1_000_000));
                        continue;
                    }
                    int n;
                    synchronized (this) {
                        n = sent++;
                    }
                    write(out, n);
                    next += intervalNanos;
                    if (now - next > 100_000_000L) next = now;   // fell behind: no burst to catch up
                }
                if (!closed) lostConnections.incrementAndGet();
            } catch (IOException e) {
                if (!closed) {
                    lostConnections.incrementAndGet();
                    LockSupport.parkNanos(100_000_000L);
                }
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private synchronized int nextUnacked(int from) {
        return acked.nextClearBit(from);
    }

    private synchronized long unacked() {
        return sent - ackedCount;
    }

    private static void write(DataOutputStream out, int n) throws IOException {
        byte[] b = ("{\"id\":\"m-" + n + "\",\"tm\":" + System.currentTimeMillis() + ",\"__md_trq__\":{\"__msg_rowid__\":"
                + (n + 1) + ",\"__msg_t__\":1}}").getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length + 4);
        out.write(b);
    }

    private Thread startReader(Socket s) throws IOException {
        DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 65536));
        Thread t = new Thread(() -> {
            byte[] buf = new byte[4096];
            try {
                while (true) {
                    int len = in.readInt() - 4;
                    if (len <= 0 || len > buf.length) return;
                    in.readFully(buf, 0, len);
                    String a = new String(buf, 0, len, StandardCharsets.US_ASCII);
                    int at = a.indexOf("\"__msg_rowid__\":");
                    if (at < 0) continue;
                    int k = at + 16;
                    long rowid = 0;
                    while (k < len && Character.isDigit(a.charAt(k))) rowid = rowid * 10 + (a.charAt(k++) - '0');
                    int n = (int) rowid - 1;
                    synchronized (PacedProducer.this) {
                        if (a.contains("\"result\":-")) {
                            nacks++;
                        } else if (n >= 0 && acked.get(n)) {
                            duplicateAcks++;
                        } else if (n >= 0) {
                            acked.set(n);
                            ackedCount++;
                        }
                    }
                }
            } catch (IOException closedConnection) {
                // the reader ends with the connection
            }
        }, "paced-producer-acks");
        t.setDaemon(true);
        t.start();
        return t;
    }

    public synchronized boolean allAcked() {
        return ackedCount == sent;
    }

    public synchronized int sent() {
        return sent;
    }

    public synchronized long acked() {
        return ackedCount;
    }

    public synchronized long duplicateAcks() {
        return duplicateAcks;
    }

    public synchronized long nacks() {
        return nacks;
    }

    public int lostConnections() {
        return lostConnections.get();
    }

    @Override
    public void close() {
        closed = true;
        sender.interrupt();
    }
}
