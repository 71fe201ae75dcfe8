// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.itests;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.BitSet;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * An MQTT 3.1.1 device publishing at a steady rate into C_PROT_MQTT, for the live-upgrade test: one connection,
 * client id {@code clientId}, clean session 0, message {@code n} is {@code {"id":"m-<base + n>"}}, QoS 1 for even
 * {@code n} and QoS 2 for odd (PUBLISH, PUBREC, PUBREL, PUBCOMP), at most {@code window} unanswered at once. A message
 * counts as acked at its PUBACK or PUBREC (the gateway sends them once the message is durable). It counts what the
 * test asserts on: acks, answers it did not expect (an ack for a packet id not in flight), and connections lost;
 * after a lost connection it reconnects and resends what was not answered (DUP set) and the PUBRELs not completed,
 * as a real client does. Raw bytes over a socket: the probe needs no MQTT library.
 */
final class PacedMqttProducer implements AutoCloseable {
    private final int port;
    private final String clientId;
    private final int base;
    private final int ratePerSec;
    private final int window;
    /** Packet id (1..65535) → message number in flight, -1 when free; QoS 2 after PUBREC stays until PUBCOMP. */
    private final int[] inFlight = new int[65536];
    private final boolean[] released = new boolean[65536];
    private final BitSet acked = new BitSet();
    private final AtomicInteger lostConnections = new AtomicInteger();
    private int nextPacketId = 1;
    private int inFlightCount;
    private long ackedCount;
    private long unexpected;
    private long completed;
    private int sent;
    private volatile boolean stopping;
    private volatile boolean closed;
    private volatile boolean connected;
    private volatile String refusal;
    private final Thread sender;

    PacedMqttProducer(int port, String clientId, int base, int ratePerSec, int window) {
        this.port = port;
        this.clientId = clientId;
        this.base = base;
        this.ratePerSec = ratePerSec;
        this.window = window;
        java.util.Arrays.fill(inFlight, -1);
        this.sender = new Thread(this::run, "paced-mqtt-producer");
        sender.setDaemon(true);
    }

    PacedMqttProducer start() {
        sender.start();
        return this;
    }

    /** Sends no new message from now on; what is in flight is still resent until answered. */
    void stop() {
        stopping = true;
    }

    private void run() {
        long intervalNanos = 1_000_000_000L / ratePerSec;
        while (!closed) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
                s.setTcpNoDelay(true);
                OutputStream out = new BufferedOutputStream(s.getOutputStream(), 65536);
                DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 65536));
                out.write(connect());
                out.flush();
                int type = in.readUnsignedByte();
                int len = in.readUnsignedByte();
                byte[] ack = new byte[len];
                in.readFully(ack);
                if (type != 0x20 || len != 2 || ack[1] != 0) {
                    refusal = "CONNACK " + Integer.toHexString(type) + " code " + (len == 2 ? ack[1] : -1);
                    return;
                }
                connected = true;
                Thread reader = startReader(s, in, out);
                synchronized (this) {   // what the last connection left unanswered, in packet-id order
                    for (int id = 1; id < 65536; id++) {
                        if (inFlight[id] < 0) continue;
                        if (released[id]) out.write(new byte[] {0x62, 2, (byte) (id >> 8), (byte) id});
                        else out.write(publish(id, inFlight[id], true));
                    }
                }
                out.flush();
                long next = System.nanoTime();
                while (!closed && reader.isAlive()) {
                    if (stopping) {
                        if (allAcked()) {
                            synchronized (this) {
                                if (inFlightCount == 0) {   // every PUBCOMP in too: a clean DISCONNECT
                                    out.write(new byte[] {(byte) 0xe0, 0});
                                    out.flush();
                                    return;
                                }
                            }
                        }
                        out.flush();
                        Thread.sleep(20);
                        continue;
                    }
                    long now = System.nanoTime();
                    if (now < next) {
                        out.flush();
                        LockSupport.parkNanos(Math.min(next - now, 1_000_000));
                        continue;
                    }
                    byte[] p;
                    synchronized (this) {
                        if (inFlightCount >= window || inFlight[nextPacketId] >= 0) {
                            p = null;
                        } else {
                            int id = nextPacketId;
                            nextPacketId = id == 65535 ? 1 : id + 1;
                            int n = sent++;
                            inFlight[id] = n;
                            inFlightCount++;
                            p = publish(id, n, false);
                        }
                    }
                    if (p == null) {
                        out.flush();
                        LockSupport.parkNanos(200_000);
                        continue;
                    }
                    synchronized (out) {
                        out.write(p);
                    }
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
            } finally {
                connected = false;
            }
        }
    }

    private byte[] connect() {
        byte[] id = clientId.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream v = new ByteArrayOutputStream();
        v.writeBytes(new byte[] {0, 4, 'M', 'Q', 'T', 'T', 4, 0x00, 0, 60});   // 3.1.1, clean session 0, keep-alive 60 s
        v.write(id.length >> 8);
        v.write(id.length);
        v.writeBytes(id);
        return packet(0x10, v.toByteArray());
    }

    private byte[] publish(int packetId, int n, boolean dup) {
        int qos = (n & 1) == 0 ? 1 : 2;
        ByteArrayOutputStream v = new ByteArrayOutputStream();
        byte[] topic = "devices/liveupgrade".getBytes(StandardCharsets.US_ASCII);
        v.write(0);
        v.write(topic.length);
        v.writeBytes(topic);
        v.write(packetId >> 8);
        v.write(packetId);
        v.writeBytes(("{\"id\":\"m-" + (base + n) + "\",\"tm\":" + System.currentTimeMillis() + "}")
                .getBytes(StandardCharsets.UTF_8));
        return packet(0x30 | qos << 1 | (dup ? 0x08 : 0), v.toByteArray());
    }

    private static byte[] packet(int first, byte[] body) {
        ByteArrayOutputStream b = new ByteArrayOutputStream(body.length + 5);
        b.write(first);
        int len = body.length;
        do {
            int d = len % 128;
            len /= 128;
            b.write(len > 0 ? d | 0x80 : d);
        } while (len > 0);
        b.writeBytes(body);
        return b.toByteArray();
    }

    private Thread startReader(Socket s, DataInputStream in, OutputStream out) {
        Thread t = new Thread(() -> {
            try {
                while (true) {
                    int type = in.readUnsignedByte() & 0xf0;
                    int len = in.readUnsignedByte();
                    if (len != 2) return;   // PUBACK, PUBREC, PUBCOMP of 3.1.1 are 2 bytes; anything else ends it
                    int id = in.readUnsignedShort();
                    synchronized (PacedMqttProducer.this) {
                        int n = inFlight[id];
                        if (type == 0x40 || type == 0x50) {   // PUBACK, PUBREC: durable
                            if (n < 0 || released[id]) {
                                unexpected++;
                            } else {
                                if (acked.get(n)) unexpected++;
                                acked.set(n);
                                ackedCount++;
                                if (type == 0x40) {
                                    inFlight[id] = -1;
                                    inFlightCount--;
                                } else {
                                    released[id] = true;
                                }
                            }
                        } else if (type == 0x70) {   // PUBCOMP
                            if (n < 0 || !released[id]) {
                                unexpected++;
                            } else {
                                released[id] = false;
                                inFlight[id] = -1;
                                inFlightCount--;
                                completed++;
                            }
                        } else {
                            return;
                        }
                    }
                    if (type == 0x50) {
                        synchronized (out) {
                            out.write(new byte[] {0x62, 2, (byte) (id >> 8), (byte) id});
                            if (in.available() == 0) out.flush();
                        }
                    }
                }
            } catch (IOException closedConnection) {
                // the reader ends with the connection
            }
        }, "paced-mqtt-producer-acks");
        t.setDaemon(true);
        t.start();
        return t;
    }

    synchronized boolean allAcked() {
        return ackedCount == sent;
    }

    /** Every message acked and every QoS 2 exchange completed (PUBCOMP). */
    synchronized boolean allDone() {
        return ackedCount == sent && inFlightCount == 0;
    }

    boolean connected() {
        return connected;
    }

    /** Why the gateway refused the CONNECT, null if it did not. */
    String refusal() {
        return refusal;
    }

    synchronized int sent() {
        return sent;
    }

    synchronized long acked() {
        return ackedCount;
    }

    synchronized long unexpected() {
        return unexpected;
    }

    synchronized long completed() {
        return completed;
    }

    int lostConnections() {
        return lostConnections.get();
    }

    @Override
    public void close() {
        closed = true;
        sender.interrupt();
    }
}
