// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit.load;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A destination of a gateway's queue, outside the gateway: it accepts TCP4H connections, acks every message with
 * the queue protocol (its {@code __md_trq__} echoed back with {@code result: 0}), and records what a live-upgrade
 * test needs to know: which ids arrived (ids {@code m-N}), how many twice, how many connections it accepted (a
 * reconnect means a connection was closed), and when every message arrived, for the longest gap. Bounded: at most
 * {@code maxMessages} receipt times are kept.
 */
public final class AckingSink implements AutoCloseable {
    private static final byte[] MD_KEY = "\"__md_trq__\":".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ID_KEY = "\"id\":\"m-".getBytes(StandardCharsets.US_ASCII);

    private final ServerSocket server;
    private final Thread acceptor;
    private final List<Socket> sockets = new ArrayList<>();
    private final AtomicInteger accepted = new AtomicInteger();
    private final BitSet ids = new BitSet();
    private final long[] times;
    private int timesUsed;
    private long received;
    private long duplicates;
    private volatile boolean closed;

    public AckingSink(int port, int maxMessages) throws IOException {
        this.server = new ServerSocket(port, 50, InetAddress.getLoopbackAddress());
        this.times = new long[maxMessages];
        this.acceptor = new Thread(this::acceptLoop, "acking-sink-" + port);
        acceptor.setDaemon(true);
        acceptor.start();
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket s = server.accept();
                s.setTcpNoDelay(true);
                accepted.incrementAndGet();
                synchronized (sockets) {
                    sockets.add(s);
                }
                Thread t = new Thread(() -> serve(s), "acking-sink-conn");
                t.setDaemon(true);
                t.start();
            } catch (IOException e) {
                return;
            }
        }
    }

    private void serve(Socket s) {
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 65536));
             DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream(), 65536))) {
            byte[] buf = new byte[4096];
            while (!closed) {
                int len = in.readInt() - 4;
                if (len <= 0 || len > 1 << 20) return;
                if (len > buf.length) buf = new byte[len];
                in.readFully(buf, 0, len);
                long now = System.nanoTime();
                record(buf, len, now);
                byte[] ack = ackOf(buf, len);
                if (ack != null) {
                    out.writeInt(ack.length + 4);
                    out.write(ack);
                    if (in.available() == 0) out.flush();
                }
            }
        } catch (IOException e) {
            // the gateway closed the connection, or close() did
        }
    }

    private synchronized void record(byte[] b, int len, long now) {
        received++;
        long id = number(b, len, indexOf(b, len, ID_KEY, 0) + ID_KEY.length);
        if (id >= 0 && id < Integer.MAX_VALUE) {
            if (ids.get((int) id)) duplicates++;
            else ids.set((int) id);
        }
        if (timesUsed < times.length) times[timesUsed++] = now;
    }

    /** The queue-protocol ack: {@code {"__md_trq__":{...same...,"result":0}}}. */
    private static byte[] ackOf(byte[] b, int len) {
        int at = indexOf(b, len, MD_KEY, 0);
        if (at < 0) return null;
        int start = at + MD_KEY.length;
        int depth = 0;
        int end = -1;
        for (int i = start; i < len; i++) {
            if (b[i] == '{') depth++;
            else if (b[i] == '}' && --depth == 0) {
                end = i;
                break;
            }
        }
        if (end < 0) return null;
        String md = new String(b, start, end - start, StandardCharsets.UTF_8);
        return ("{\"__md_trq__\":" + md + ",\"result\":0}}").getBytes(StandardCharsets.UTF_8);
    }

    private static int indexOf(byte[] b, int len, byte[] key, int from) {
        outer:
        for (int i = from; i <= len - key.length; i++) {
            for (int j = 0; j < key.length; j++) {
                if (b[i + j] != key[j]) continue outer;
            }
            return i;
        }
        return -1 - key.length;
    }

    private static long number(byte[] b, int len, int at) {
        if (at < 0) return -1;
        long v = 0;
        int i = at;
        for (; i < len && b[i] >= '0' && b[i] <= '9'; i++) v = v * 10 + (b[i] - '0');
        return i == at ? -1 : v;
    }

    public int connectionsAccepted() {
        return accepted.get();
    }

    public synchronized long received() {
        return received;
    }

    public synchronized long duplicates() {
        return duplicates;
    }

    public synchronized boolean has(int id) {
        return ids.get(id);
    }

    public synchronized int distinct() {
        return ids.cardinality();
    }

    /** The longest time without a message in [fromNanos, toNanos] (the first gap starts at fromNanos), ms. */
    /** The gaps of at least {@code minMs} in [from, to]: "at +offset ms: length ms", for a report. */
    public synchronized java.util.List<String> gapsOver(long fromNanos, long toNanos, double minMs) {
        java.util.List<String> out = new java.util.ArrayList<>();
        long prev = fromNanos;
        for (int i = 0; i < timesUsed; i++) {
            long t = times[i];
            if (t < fromNanos) continue;
            if (t > toNanos) break;
            if ((t - prev) / 1e6 >= minMs) out.add(String.format("+%.0f: %.1f", (prev - fromNanos) / 1e6, (t - prev) / 1e6));
            prev = t;
        }
        return out;
    }

    public synchronized double longestGapMs(long fromNanos, long toNanos) {
        long longest = 0;
        long prev = fromNanos;
        for (int i = 0; i < timesUsed; i++) {
            long t = times[i];
            if (t < fromNanos) continue;
            if (t > toNanos) break;
            longest = Math.max(longest, t - prev);
            prev = t;
        }
        return longest / 1e6;
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        synchronized (sockets) {
            for (Socket s : sockets) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // closing anyway
                }
            }
        }
    }
}
