package io.gatehouse.systests;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Malformed MQTT on the demo gateway's MQTT port (the real process): garbage, a truncated CONNECT, a remaining
 * length over the limit, a PUBLISH over {@code max_packet_size} sent whole, CONNECT twice, a CONNECT of an unknown
 * protocol level, PUBLISH before CONNECT, garbage after messages that were acked on the same connection, and a
 * slowloris flood (as many half-CONNECT connections as the demo has MQTT channels). Each connection is closed with
 * an error log; what was acked before the garbage reaches the sinks; afterwards a Paho producer is served, nothing it
 * got acked is lost, and the control endpoint answers.
 */
class MqttMalformedIT {
    /** CONNECT, MQTT 3.1.1, clean session, keep-alive 60, client id "m". */
    static final byte[] CONNECT = {0x10, 0x0d, 0x00, 0x04, 'M', 'Q', 'T', 'T', 0x04, 0x02, 0x00, 0x3c, 0x00, 0x01, 'm'};
    /** PUBLISH QoS 0, topic "t", payload {}. */
    static final byte[] PUBLISH = {0x30, 0x05, 0x00, 0x01, 't', '{', '}'};

    /** CONNECT with protocol level 9 (no such MQTT). */
    static final byte[] CONNECT_LEVEL_9 = {0x10, 0x0d, 0x00, 0x04, 'M', 'Q', 'T', 'T', 0x09, 0x02, 0x00, 0x3c, 0x00, 0x01, 'n'};

    /** PUBLISH QoS 1 of {@code {"id":"msg-N"}} to topic "t", packet id {@code packetId}. */
    static byte[] publishQos1(int packetId, long n) {
        byte[] body = ("{\"id\":\"msg-" + n + "\"}").getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        byte[] p = new byte[2 + 3 + 2 + body.length];
        p[0] = 0x32;
        p[1] = (byte) (p.length - 2);
        p[2] = 0;
        p[3] = 1;
        p[4] = 't';
        p[5] = (byte) (packetId >> 8);
        p[6] = (byte) packetId;
        System.arraycopy(body, 0, p, 7, body.length);
        return p;
    }

    /** A PUBLISH QoS 0 of {@code size} bytes in all, sent whole (the Remaining Length in 3 bytes). */
    static byte[] publishOfSize(int size) {
        byte[] p = new byte[size];
        int remaining = size - 4;
        p[0] = 0x30;
        p[1] = (byte) (remaining % 128 | 0x80);
        p[2] = (byte) (remaining / 128 % 128 | 0x80);
        p[3] = (byte) (remaining / 16384);
        p[4] = 0;
        p[5] = 1;
        p[6] = 't';
        java.util.Arrays.fill(p, 7, size, (byte) 'x');
        return p;
    }

    /**
     * CONNECT (persistent session "acked-then-garbage"), three QoS 1 PUBLISHes of ids {@code from..from+2}, their
     * PUBACKs read (so the gateway said they are durable), then garbage on the same connection: answers which ids
     * were acked and how the connection ended.
     */
    static String ackedThenGarbage(int port, long from, java.util.BitSet acked, byte[] garbage) throws IOException {
        byte[] id = "acked-then-garbage".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        byte[] connect = new byte[2 + 10 + 2 + id.length];
        byte[] head = {0x10, (byte) (connect.length - 2), 0x00, 0x04, 'M', 'Q', 'T', 'T', 0x04, 0x00, 0x00, 0x3c};
        System.arraycopy(head, 0, connect, 0, head.length);
        connect[12] = 0;
        connect[13] = (byte) id.length;
        System.arraycopy(id, 0, connect, 14, id.length);
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 2000);
            s.setSoTimeout(15_000);
            java.io.OutputStream o = s.getOutputStream();
            java.io.DataInputStream in = new java.io.DataInputStream(s.getInputStream());
            o.write(concat(connect, publishQos1(1, from), publishQos1(2, from + 1), publishQos1(3, from + 2)));
            o.flush();
            byte[] connack = new byte[4];
            in.readFully(connack);
            if (connack[0] != 0x20 || connack[3] != 0) return "CONNECT refused";
            for (int i = 0; i < 3; i++) {
                byte[] puback = new byte[4];
                in.readFully(puback);
                if (puback[0] != 0x40) return "not a PUBACK: " + puback[0];
                acked.set((int) (from + ((puback[2] & 0xff) << 8 | (puback[3] & 0xff)) - 1));
            }
            o.write(garbage);
            o.flush();
            long t0 = System.currentTimeMillis();
            try {
                while (in.read() >= 0) {
                    // nothing more is expected: read until the close
                }
                return "closed after " + (System.currentTimeMillis() - t0) + " ms";
            } catch (java.net.SocketTimeoutException e) {
                return "open";
            } catch (IOException reset) {
                return "closed (reset) after " + (System.currentTimeMillis() - t0) + " ms";
            }
        }
    }

    static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] b : parts) n += b.length;
        byte[] out = new byte[n];
        int o = 0;
        for (byte[] b : parts) {
            System.arraycopy(b, 0, out, o, b.length);
            o += b.length;
        }
        return out;
    }

    @Test
    @Timeout(600)
    void shouldCloseMalformedMqttConnectionsAndKeepServing() throws Exception {
        Path work = Reliability.work("mqtt-malformed");
        Reliability.Ports p = new Reliability.Ports();
        Path config = Reliability.writeConfig(work, Reliability.gatewayConfig(p));
        Path log = work.resolve("gateway.log");
        Reliability.Ledger ledger = new Reliability.Ledger();
        byte[] garbage = new byte[512];
        new Random(11).nextBytes(garbage);
        garbage[0] = (byte) 0xf3;   // a reserved flag pattern: malformed as a first packet
        Map<String, byte[]> bad = new LinkedHashMap<>();
        bad.put("garbage", garbage);
        bad.put("truncated CONNECT, then silence", java.util.Arrays.copyOf(CONNECT, 7));
        bad.put("remaining length over the limit (256 MiB announced)",
                concat(CONNECT, new byte[] {0x30, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f}));
        bad.put("remaining length of 5 bytes", concat(CONNECT, new byte[] {0x30, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, 0x01}));
        bad.put("a PUBLISH of 600 KiB, over max_packet_size (512 KiB), sent whole", concat(CONNECT, publishOfSize(600 * 1024)));
        bad.put("CONNECT twice", concat(CONNECT, CONNECT));
        bad.put("CONNECT of protocol level 9", CONNECT_LEVEL_9);
        bad.put("PUBLISH before CONNECT", PUBLISH);
        Map<String, String> results = new LinkedHashMap<>();
        try (Reliability.IdSink s0 = new Reliability.IdSink(p.sink0, ledger);
             Reliability.IdSink s1 = new Reliability.IdSink(p.sink1, ledger);
             GatewayProcess gw = new GatewayProcess(config, work.resolve("data"), log, p.control)) {
            gw.start();
            gw.awaitListening(p.mqtt, 60_000);
            for (Map.Entry<String, byte[]> e : bad.entrySet()) {
                String r;
                try {
                    r = MalformedInputIT.probe(p.mqtt, e.getValue(), 15_000);
                } catch (IOException resetWhileSending) {
                    r = "closed (reset while the test was still sending: " + resetWhileSending.getMessage() + ")";
                }
                results.put(e.getKey(), r);
            }
            java.util.BitSet ackedBeforeGarbage = new java.util.BitSet();
            results.put("3 QoS 1 PUBLISHes acked, then garbage on the same connection",
                    ackedThenGarbage(p.mqtt, 100_000, ackedBeforeGarbage, garbage));
            // slowloris flood: as many connections as the demo's MQTT channels (16), one byte of a CONNECT each
            List<Socket> flood = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                Socket s = new Socket();
                s.connect(new InetSocketAddress("127.0.0.1", p.mqtt), 2000);
                s.getOutputStream().write(CONNECT, 0, 1);
                s.getOutputStream().flush();
                flood.add(s);
            }
            // timeout_handshake (5 s) closes them; then a producer is served
            MqttProducer producer = new MqttProducer(p.mqtt, "after-malformed", 1, 0, 2000);
            long t0 = System.nanoTime();
            boolean served = producer.run(60_000);
            double servedS = (System.nanoTime() - t0) / 1e9;
            int closed = 0;
            for (Socket s : flood) {
                s.setSoTimeout(1);
                try {
                    if (s.getInputStream().read() < 0) closed++;
                } catch (SocketTimeoutException still) {
                    // open
                } catch (IOException reset) {
                    closed++;
                }
                s.close();
            }
            results.put("16 slowloris connections, then a Paho producer of 2000 QoS 1",
                    (served ? "served" : "NOT served") + String.format(" after %.1f s; %d of 16 closed", servedS, closed));
            java.util.BitSet allAcked = producer.ackedIds();
            allAcked.or(ackedBeforeGarbage);
            // and Debian's mosquitto_pub, as the README shows it, at QoS 1 on 3.1.1 and QoS 2 on 5 (when installed)
            boolean mosquitto = java.nio.file.Files.isExecutable(Path.of("/usr/bin/mosquitto_pub"));
            for (int i = 0; mosquitto && i < 2; i++) {
                Process mp = new ProcessBuilder("mosquitto_pub", "-h", "127.0.0.1", "-p", String.valueOf(p.mqtt),
                        "-V", i == 0 ? "mqttv311" : "mqttv5", "-q", String.valueOf(i + 1), "-t", "devices/7",
                        "-m", "{\"id\":\"msg-" + (100_010 + i) + "\"}").redirectErrorStream(true).start();
                boolean done = mp.waitFor(30, java.util.concurrent.TimeUnit.SECONDS);
                String said = new String(mp.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();
                if (!done) mp.destroyForcibly();
                results.put("mosquitto_pub QoS " + (i + 1) + (i == 0 ? " 3.1.1" : " 5"),
                        done && mp.exitValue() == 0 ? "served" : "NOT served: " + said);
                if (done && mp.exitValue() == 0) allAcked.set(100_010 + i);
            }
            if (!mosquitto) results.put("mosquitto_pub", "not installed: skipped (.ci/run installs mosquitto-clients)");
            Reliability.awaitDelivered(ledger, allAcked, 30_000);
            long lost = ledger.lost(allAcked);
            String cmd = Reliability.command(p.control, "stats-yuno service=__mqtt_side__").get("result").asText();
            String text = Reliability.log(log);
            StringBuilder extra = new StringBuilder();
            results.forEach((k, v) -> extra.append(k).append(" -> ").append(v).append("; "));
            extra.append("log has: ");
            String[] needles = {"Malformed MQTT packet", "MQTT packet too large", "second CONNECT",
                "first packet is not CONNECT", "Timeout waiting CONNECT", "MQTT CONNECT refused"};
            for (String n : needles) if (text.contains(n)) extra.append('"').append(n).append("\" ");
            Reliability.report("mqtt malformed input", producer.ackedCount(), producer.ackedCount() - lost, lost,
                    ledger.duplicates(), extra.toString());
            for (Map.Entry<String, String> e : results.entrySet()) {
                if (e.getKey().contains("slowloris")) continue;
                if (e.getKey().startsWith("mosquitto_pub")) {
                    assertTrue(e.getValue().startsWith("served") || e.getValue().startsWith("not installed"),
                            e.getKey() + ": " + e.getValue());
                    continue;
                }
                assertTrue(e.getValue().startsWith("closed"), e.getKey() + " must close the connection: " + e.getValue());
            }
            for (String n : needles) assertTrue(text.contains(n), "the log says why: " + n);
            assertTrue(served, "a producer is served after the malformed connections");
            assertEquals(16, closed, "every slowloris connection was closed by the gateway");
            assertEquals(3, ackedBeforeGarbage.cardinality(), "the 3 PUBLISHes before the garbage were acked");
            assertEquals(0, lost, "acked messages lost");
            assertEquals("0", cmd, "the control endpoint answers");
            assertEquals(0, gw.stop(), "SIGTERM stops the gateway with exit 0");
        }
    }
}
