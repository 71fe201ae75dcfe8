// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.channel.ChannelGClass;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.iogate.IoGateGClass;
import io.gatehouse.tcp.TcpGClass;
import io.gatehouse.tcp.TcpSGClass;
import io.gatehouse.testkit.AckPeer;
import io.gatehouse.testkit.Ports;
import org.eclipse.paho.client.mqttv3.IMqttDeliveryToken;
import org.eclipse.paho.client.mqttv3.MqttAsyncClient;
import org.eclipse.paho.client.mqttv3.MqttClient;
import org.eclipse.paho.client.mqttv3.MqttConnectOptions;
import org.eclipse.paho.client.mqttv3.MqttException;
import org.eclipse.paho.client.mqttv3.MqttMessage;
import org.eclipse.paho.client.mqttv3.persist.MemoryPersistence;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * C_PROT_MQTT over a real C_TCP_S listener ({@code mqtt://127.0.0.1:<free port>}), against clients nobody here
 * wrote: Debian's mosquitto_pub / mosquitto_sub (MQTT 3.1.1 and 5, QoS 0/1/2) and Eclipse Paho (QoS 1 and 2,
 * its reconnect and resend). The relay is stood in for by testkit's {@link AckPeer}, which answers each message's
 * {@code __md_trq__} the way C_RELAY does once the output confirmed it (or holds the answer, as a queue until its
 * fsync).
 */
@Timeout(180)
class MqttInteropTest {
    @TempDir
    Path data;

    private YunoRuntime rt;
    private int port;
    private AckPeer acker;

    @AfterEach
    void tearDown() {
        if (rt != null) rt.close();
    }

    private void start(String mqttKw) throws IOException {
        start(mqttKw, "mqtt", "");
    }

    private void start(String mqttKw, String schema, String listenerKw) throws IOException {
        port = Ports.free();
        String cfg = "{\"services\": [{\"name\": \"mqtt\", \"gclass\": \"C_IOGATE\", \"children\": ["
                + "  {\"name\": \"mqtt-listen\", \"gclass\": \"C_TCP_S\", \"kw\": {\"url\": \"" + schema
                + "://127.0.0.1:" + port + "\"" + listenerKw + "}}],"
                + " \"[^^children^^]\": {\"__range__\": 4, \"__vars__\": {}, \"__content__\": {\"name\": \"mq-(^^__range__^^)\","
                + "   \"gclass\": \"C_CHANNEL\", \"children\": [{\"name\": \"mq-(^^__range__^^)\", \"gclass\": \"C_PROT_MQTT\","
                + "   \"kw\": {" + mqttKw + "}}]}}}]}";
        rt = YunoRuntime.builder().name("interop").dataDir(data)
                .gclass(ProtMqtt.SPEC, ProtMqtt.SPEC2, new TcpGClass().spec(), new TcpSGClass().spec(),
                        new ChannelGClass().spec(), new IoGateGClass().spec())
                .config(cfg).build().start();
        rt.gclassArrived(AckPeer.SPEC);
        acker = rt.call(() -> {
            GObj g = rt.yuno().root().createVolatileChild("acker", AckPeer.GCLASS, null);
            rt.yuno().service("mqtt").subscribe(null, g);
            return (AckPeer) g.behavior();
        });
    }

    private static void assumeMosquittoClients() {
        Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/mosquitto_pub")),
                "mosquitto-clients not installed (.ci/run installs it)");
    }

    /** Runs a command to its end (30 s at most); answers exit code and output. */
    private static String[] run(String... cmd) throws Exception {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return new String[] {"timeout", new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8)};
            }
            return new String[] {String.valueOf(p.exitValue()),
                    new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8)};
        } finally {
            p.destroyForcibly();
        }
    }

    private String[] pub(String version, int qos, String topic, String msg, String... extra) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("mosquitto_pub", "-h", "127.0.0.1", "-p", String.valueOf(port),
                "-V", version, "-q", String.valueOf(qos), "-t", topic, "-m", msg));
        cmd.addAll(List.of(extra));
        return run(cmd.toArray(String[]::new));
    }

    @Test
    void shouldTakeMosquittoPubAtEveryQosOn311And5() throws Exception {
        assumeMosquittoClients();
        start("");
        int n = 0;
        for (String v : new String[] {"mqttv311", "mqttv5"}) {
            for (int q = 0; q <= 2; q++) {
                String[] r = pub(v, q, "devices/7", "{\"id\":\"x-17\",\"v\":\"" + v + "-" + q + "\"}");
                assertEquals("0", r[0], v + " q" + q + ": " + r[1]);
                n++;
                assertTrue(acker.awaitReceived(n, 5000));
                ObjectNode m = acker.received().get(n - 1);
                assertEquals("x-17", m.get("id").asText());
                assertEquals("devices/7", m.get("mqtt_topic").asText());
                assertEquals(v + "-" + q, m.get("v").asText());
            }
        }
        String[] wrapped = pub("mqttv5", 1, "raw/bytes", "not json");
        assertEquals("0", wrapped[0], wrapped[1]);
        assertTrue(acker.awaitReceived(n + 1, 5000));
        assertEquals("bm90IGpzb24=", acker.received().get(n).get("mqtt_payload_base64").asText());
    }

    @Test
    void shouldTakeMosquittoPubOverTls() throws Exception {
        assumeMosquittoClients();
        io.gatehouse.testkit.TestCerts certs = io.gatehouse.testkit.TestCerts.generate("localhost");
        Path ca = data.resolve("ca.pem");
        Files.writeString(ca, certs.certPem);
        start("", "mqtts", ",\"crypto\": {\"ssl_certificate\": " + Kw.MAPPER.writeValueAsString(certs.certPem)
                + ", \"ssl_certificate_key\": " + Kw.MAPPER.writeValueAsString(certs.keyPem) + "}");
        for (String v : new String[] {"mqttv311", "mqttv5"}) {
            String[] r = pub(v, 1, "secure/1", "{\"id\":\"tls-" + v + "\"}", "--cafile", ca.toString(), "--insecure");
            assertEquals("0", r[0], v + " over TLS: " + r[1]);
        }
        assertTrue(acker.awaitReceived(2, 5000));
        assertEquals("tls-mqttv5", acker.received().get(1).get("id").asText());
    }

    @Test
    void shouldPubackEveryLineOfAMosquittoPubStream() throws Exception {
        assumeMosquittoClients();
        start("");
        Path lines = data.resolve("lines.txt");
        StringBuilder sb = new StringBuilder();
        int count = 2000;
        for (int i = 0; i < count; i++) sb.append("{\"id\":").append(i).append("}\n");
        Files.writeString(lines, sb);
        for (String v : new String[] {"mqttv311", "mqttv5"}) {
            String[] r = run("sh", "-c", "mosquitto_pub -h 127.0.0.1 -p " + port + " -V " + v + " -q 1 -t stream -l < " + lines);
            assertEquals("0", r[0], r[1]);
        }
        assertTrue(acker.awaitReceived(2 * count, 10_000));
    }

    @Test
    void shouldRefuseAMessageTheQueueRefusesWithTheCodeOf5AndACloseOn311() throws Exception {
        assumeMosquittoClients();
        start("");
        acker.policy = m -> -1;
        String[] v5 = pub("mqttv5", 1, "t", "{}");
        String[] v311 = pub("mqttv311", 1, "t", "{}");
        System.out.println("refused, 5.0: exit " + v5[0] + " " + v5[1].trim() + " | 3.1.1: exit " + v311[0] + " " + v311[1].trim());
        // mosquitto_pub exits 0 after a failed publish on 5.0 but says why (the reason code we sent)
        assertTrue(v5[1].contains("Quota exceeded"), "mosquitto_pub reports the refused publish: " + v5[1]);
        assertNotEquals("0", v311[0], "3.1.1: the connection was closed before a PUBACK: " + v311[1]);
    }

    @Test
    void shouldCheckUsernameAndPasswordFromTheConfig() throws Exception {
        assumeMosquittoClients();
        start("\"users\": {\"alice\": \"wonder\"}");
        assertEquals("0", pub("mqttv311", 1, "t", "{}", "-u", "alice", "-P", "wonder")[0]);
        String[] bad311 = pub("mqttv311", 1, "t", "{}", "-u", "alice", "-P", "nope");
        String[] bad5 = pub("mqttv5", 1, "t", "{}", "-u", "alice", "-P", "nope");
        String[] anon = pub("mqttv5", 1, "t", "{}");
        assertNotEquals("0", bad311[0]);
        assertNotEquals("0", bad5[0]);
        assertNotEquals("0", anon[0]);
        System.out.println("refused CONNECTs: " + bad311[1].trim() + " | " + bad5[1].trim() + " | " + anon[1].trim());
        assertTrue((bad311[1] + bad5[1]).toLowerCase().contains("bad user name or password")
                || (bad311[1] + bad5[1]).toLowerCase().contains("bad username or password"), bad311[1] + bad5[1]);
        assertEquals(1, acker.received().size());
    }

    @Test
    void shouldRefuseMosquittoSubOnBothVersions() throws Exception {
        assumeMosquittoClients();
        start("");
        for (String v : new String[] {"mqttv311", "mqttv5"}) {
            String[] r = run("mosquitto_sub", "-h", "127.0.0.1", "-p", String.valueOf(port), "-V", v, "-t", "#",
                    "-C", "1", "-W", "5");
            System.out.println("mosquitto_sub " + v + ": exit " + r[0] + " " + r[1].trim());
            assertTrue(!"0".equals(r[0]) || r[1].contains("denied"), "the subscription is refused: " + r[1]);
        }
    }

    @Test
    void shouldDeliverPahoQos1AndQos2WithOnePubackOrPubrecEach() throws Exception {
        start("");
        MqttClient c = new MqttClient("tcp://127.0.0.1:" + port, "paho-sync", new MemoryPersistence());
        MqttConnectOptions o = new MqttConnectOptions();
        o.setMqttVersion(MqttConnectOptions.MQTT_VERSION_3_1_1);
        o.setCleanSession(true);
        // Paho's synchronous publish returns on its token before its own in-flight count is decremented (another
        // thread does it), so on a busy machine a sequential loop can hit the default limit of 10 ("Too many
        // publishes in progress", eclipse-paho/paho.mqtt.java#551). One publish at a time is what this test sends;
        // the limit only has to allow it.
        o.setMaxInflight(1000);
        c.connect(o);
        int n = 200;
        for (int i = 0; i < n; i++) {
            c.publish("paho/q1", ("{\"id\":" + i + ",\"qos\":1}").getBytes(StandardCharsets.UTF_8), 1, false);
            c.publish("paho/q2", ("{\"id\":" + i + ",\"qos\":2}").getBytes(StandardCharsets.UTF_8), 2, false);
        }
        c.disconnect();
        c.close();
        assertTrue(acker.awaitReceived(2 * n, 5000));
        assertEquals(2 * n, acker.received().size(), "each publish queued once");
    }

    @Test
    void shouldLetPahoResendAfterAReconnectWithoutQueuingQos2Twice() throws Exception {
        start("\"timeout_acks_after_close\": 60000");
        acker.policy = m -> null;   // nothing is durable yet
        MqttAsyncClient c = new MqttAsyncClient("tcp://127.0.0.1:" + port, "paho-resend", new MemoryPersistence());
        MqttConnectOptions o = new MqttConnectOptions();
        o.setMqttVersion(MqttConnectOptions.MQTT_VERSION_3_1_1);
        o.setCleanSession(false);
        o.setAutomaticReconnect(true);
        o.setMaxInflight(200);
        c.connect(o).waitForCompletion(10_000);
        int n = 50;
        List<IMqttDeliveryToken> tokens = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            tokens.add(c.publish("paho/q1", new MqttMessage(("{\"id\":\"q1-" + i + "\"}").getBytes(StandardCharsets.UTF_8)) {{ setQos(1); }}));
            tokens.add(c.publish("paho/q2", new MqttMessage(("{\"id\":\"q2-" + i + "\"}").getBytes(StandardCharsets.UTF_8)) {{ setQos(2); }}));
        }
        assertTrue(acker.awaitReceived(2 * n, 10_000));
        for (IMqttDeliveryToken t : tokens) assertTrue(!t.isComplete(), "nothing is acked before it is durable");

        // the gateway drops the connection: Paho reconnects by itself and sends again what was not acked
        rt.run(() -> rt.service("mqtt").send(Ev.EV_DROP, null, null));
        assertTrue(acker.awaitReceived(3 * n, 30_000), "the QoS 1 resends come up again: " + acker.received().size());
        Thread.sleep(500);   // and the QoS 2 resends are held back, not queued again
        rt.run(() -> {
            acker.policy = m -> 0;
            acker.answerHeld(0);
        });
        for (IMqttDeliveryToken t : tokens) t.waitForCompletion(30_000);
        c.disconnect().waitForCompletion(10_000);
        c.close();

        Map<String, Integer> seen = new HashMap<>();
        for (ObjectNode m : acker.received()) seen.merge(m.get("id").asText(), 1, Integer::sum);
        for (int i = 0; i < n; i++) {
            assertEquals(1, seen.getOrDefault("q2-" + i, 0), "QoS 2 q2-" + i + " queued once");
            assertTrue(seen.getOrDefault("q1-" + i, 0) >= 1, "QoS 1 q1-" + i + " delivered");
        }
        System.out.println("paho resend: " + acker.received().size() + " messages up for " + 2 * n
                + " publishes (QoS 1 resends may repeat, QoS 2 never)");
    }

    @Test
    void shouldKeepServingAfterAClientIsRefused() throws MqttException, IOException, InterruptedException {
        start("\"users\": {\"u\": \"p\"}");
        MqttClient bad = new MqttClient("tcp://127.0.0.1:" + port, "paho-bad", new MemoryPersistence());
        MqttConnectOptions o = new MqttConnectOptions();
        o.setUserName("u");
        o.setPassword("wrong".toCharArray());
        try {
            bad.connect(o);
            throw new AssertionError("a bad password connected");
        } catch (MqttException e) {
            assertEquals(MqttException.REASON_CODE_FAILED_AUTHENTICATION, e.getReasonCode());
        }
        bad.close();
        MqttClient good = new MqttClient("tcp://127.0.0.1:" + port, "paho-good", new MemoryPersistence());
        o.setPassword("p".toCharArray());
        good.connect(o);
        good.publish("t", "{\"ok\":true}".getBytes(StandardCharsets.UTF_8), 1, false);
        good.disconnect();
        good.close();
        assertTrue(acker.awaitReceived(1, 5000));
    }
}
