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
 * length over the limit, CONNECT twice, PUBLISH before CONNECT, and a slowloris flood (as many half-CONNECT
 * connections as the demo has MQTT channels). Each connection is closed with an error log; afterwards a Paho
 * producer is served, nothing it got acked is lost, and the control endpoint answers.
 */
class MqttMalformedIT {
    /** CONNECT, MQTT 3.1.1, clean session, keep-alive 60, client id "m". */
    static final byte[] CONNECT = {0x10, 0x0d, 0x00, 0x04, 'M', 'Q', 'T', 'T', 0x04, 0x02, 0x00, 0x3c, 0x00, 0x01, 'm'};
    /** PUBLISH QoS 0, topic "t", payload {}. */
    static final byte[] PUBLISH = {0x30, 0x05, 0x00, 0x01, 't', '{', '}'};

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
        bad.put("CONNECT twice", concat(CONNECT, CONNECT));
        bad.put("PUBLISH before CONNECT", PUBLISH);
        Map<String, String> results = new LinkedHashMap<>();
        try (Reliability.IdSink s0 = new Reliability.IdSink(p.sink0, ledger);
             Reliability.IdSink s1 = new Reliability.IdSink(p.sink1, ledger);
             GatewayProcess gw = new GatewayProcess(config, work.resolve("data"), log, p.control)) {
            gw.start();
            gw.awaitListening(p.mqtt, 60_000);
            for (Map.Entry<String, byte[]> e : bad.entrySet()) {
                results.put(e.getKey(), MalformedInputIT.probe(p.mqtt, e.getValue(), 15_000));
            }
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
            Reliability.awaitDelivered(ledger, producer.ackedIds(), 30_000);
            long lost = ledger.lost(producer.ackedIds());
            String cmd = Reliability.command(p.control, "stats-yuno service=__mqtt_side__").get("result").asText();
            String text = Reliability.log(log);
            StringBuilder extra = new StringBuilder();
            results.forEach((k, v) -> extra.append(k).append(" -> ").append(v).append("; "));
            extra.append("log has: ");
            String[] needles = {"Malformed MQTT packet", "MQTT packet too large", "second CONNECT",
                "first packet is not CONNECT", "Timeout waiting CONNECT"};
            for (String n : needles) if (text.contains(n)) extra.append('"').append(n).append("\" ");
            Reliability.report("mqtt malformed input", producer.ackedCount(), producer.ackedCount() - lost, lost,
                    ledger.duplicates(), extra.toString());
            for (Map.Entry<String, String> e : results.entrySet()) {
                if (e.getKey().contains("slowloris")) continue;
                assertTrue(e.getValue().startsWith("closed"), e.getKey() + " must close the connection: " + e.getValue());
            }
            for (String n : needles) assertTrue(text.contains(n), "the log says why: " + n);
            assertTrue(served, "a producer is served after the malformed connections");
            assertEquals(16, closed, "every slowloris connection was closed by the gateway");
            assertEquals(0, lost, "acked messages lost");
            assertEquals("0", cmd, "the control endpoint answers");
            assertEquals(0, gw.stop(), "SIGTERM stops the gateway with exit 0");
        }
    }
}
