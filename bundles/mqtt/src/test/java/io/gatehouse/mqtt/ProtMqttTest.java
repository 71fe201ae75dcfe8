// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.channel.ChannelGClass;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.FakeSocket;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Revision;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.mqtt.MqttConnAckMessage;
import io.netty.handler.codec.mqtt.MqttConnectReturnCode;
import io.netty.handler.codec.mqtt.MqttMessage;
import io.netty.handler.codec.mqtt.MqttMessageType;
import io.netty.handler.codec.mqtt.MqttProperties;
import io.netty.handler.codec.mqtt.MqttPubReplyMessageVariableHeader;
import io.netty.handler.codec.mqtt.MqttReasonCodeAndPropertiesVariableHeader;
import io.netty.handler.codec.mqtt.MqttSubAckMessage;
import io.netty.handler.codec.mqtt.MqttVersion;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Base64;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * C_PROT_MQTT row by row, over a fake transport (no socket): the test is the client (Netty's codec on its side),
 * the Recorder above the channel is the relay, acks are sent down as the relay sends them, and the ManualClock
 * moves the handshake, keep-alive and payload timers.
 */
@Timeout(60)
class ProtMqttTest {
    private static final String CONFIG = "{\"services\": [{\"name\": \"up\", \"gclass\": \"C_RECORDER\", \"children\": ["
            + "  {\"name\": \"ch\", \"gclass\": \"C_CHANNEL\", \"children\": ["
            + "     {\"name\": \"mq\", \"gclass\": \"%s\", \"kw\": {%s}, \"children\": ["
            + "        {\"name\": \"tcp\", \"gclass\": \"C_FAKE_SOCKET\"}]}]}]}]}";

    @TempDir
    Path data;

    private final ManualClock clock = new ManualClock();
    private LogCapture logs;
    /** How many EV_TX_DATA of each transport the test has read already. */
    private final Map<FakeSocket, Integer> taken = new IdentityHashMap<>();

    private YunoRuntime rt;
    private Recorder up;
    private GObj ch;
    private GObj mq;
    private FakeSocket tcp;
    private TestClient client;

    @BeforeEach
    void setUp() {
        logs = new LogCapture();
    }

    @AfterEach
    void tearDown() {
        if (rt != null) rt.close();
        logs.close();
    }

    private void start(String kw) {
        start(ProtMqtt.GCLASS, kw);
    }

    private void start(String gclass, String kw) {
        if (rt != null) rt.close();
        rt = YunoRuntime.builder().name("mqtttest").clock(clock).dataDir(data)
                .gclass(ProtMqtt.SPEC, ProtMqtt.SPEC2, FakeSocket.SPEC, new ChannelGClass().spec(), Recorder.SPEC)
                .config(String.format(CONFIG, gclass, kw)).build().start();
        found();
    }

    /** The gobjs of the one-connection config (again after a rebuild of the service). */
    private void found() {
        up = (Recorder) rt.service("up").behavior();
        ch = rt.call(() -> rt.service("up").child("ch"));
        mq = rt.call(() -> ch.bottom());
        tcp = (FakeSocket) rt.call(() -> mq.bottom().behavior());
    }

    /** Two connections of the same yuno: gobjs mq1 and mq2, their transports {@link #socket}(1) and (2). */
    private void startTwo(String name) {
        String two = "{\"services\": [{\"name\": \"up\", \"gclass\": \"C_RECORDER\", \"children\": ["
                + " {\"name\": \"ch1\", \"gclass\": \"C_CHANNEL\", \"children\": [{\"name\": \"mq1\", \"gclass\": \"C_PROT_MQTT\","
                + "   \"children\": [{\"name\": \"tcp1\", \"gclass\": \"C_FAKE_SOCKET\"}]}]},"
                + " {\"name\": \"ch2\", \"gclass\": \"C_CHANNEL\", \"children\": [{\"name\": \"mq2\", \"gclass\": \"C_PROT_MQTT\","
                + "   \"children\": [{\"name\": \"tcp2\", \"gclass\": \"C_FAKE_SOCKET\"}]}]}]}]}";
        rt = YunoRuntime.builder().name(name).clock(clock).dataDir(data)
                .gclass(ProtMqtt.SPEC, ProtMqtt.SPEC2, FakeSocket.SPEC, new ChannelGClass().spec(), Recorder.SPEC)
                .config(two).build().start();
        up = (Recorder) rt.service("up").behavior();
    }

    private FakeSocket socket(int n) {
        return (FakeSocket) rt.call(() -> rt.service("up").child("ch" + n).bottom().bottom().behavior());
    }

    private List<MqttMessage> connect(MqttVersion v, String clientId) {
        client = new TestClient(v);
        return connect(client.connect(clientId));
    }

    private List<MqttMessage> connect(byte[] connectPacket) {
        rt.run(tcp::connect);
        rt.run(() -> tcp.receive(connectPacket));
        return written();
    }

    private void rx(byte[] bytes) {
        rt.run(() -> tcp.receive(bytes));
    }

    private List<MqttMessage> written() {
        return written(tcp, client);
    }

    /** What the gobj wrote to {@code s} since the last call, decoded by {@code c}. */
    private List<MqttMessage> written(FakeSocket s, TestClient c) {
        List<FakeSocket.Sent> tx = s.sent(Ev.EV_TX_DATA);
        int from = taken.getOrDefault(s, 0);
        taken.put(s, tx.size());
        ByteBuf all = Unpooled.buffer();
        for (FakeSocket.Sent x : tx.subList(from, tx.size())) all.writeBytes(x.bytes);
        return c.read(all);
    }

    private static int drops(FakeSocket s) {
        return s.sent(Ev.EV_DROP).size();
    }

    private int drops() {
        return drops(tcp);
    }

    /** Whether the gobj's last word to its transport was EV_PAUSE_INPUT. */
    private boolean paused() {
        boolean paused = false;
        for (FakeSocket.Sent x : tcp.sent()) {
            if (x.event.equals(Ev.EV_PAUSE_INPUT)) paused = true;
            else if (x.event.equals(Ev.EV_RESUME_INPUT)) paused = false;
        }
        return paused;
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) n += p.length;
        byte[] out = new byte[n];
        int o = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, o, p.length);
            o += p.length;
        }
        return out;
    }

    private static MqttConnectReturnCode connAckCode(List<MqttMessage> out) {
        assertEquals(MqttMessageType.CONNACK, out.get(0).fixedHeader().messageType(), out.toString());
        return ((MqttConnAckMessage) out.get(0)).variableHeader().connectReturnCode();
    }

    private static int reason(MqttMessage m) {
        Object h = m.variableHeader();
        if (h instanceof MqttPubReplyMessageVariableHeader) return ((MqttPubReplyMessageVariableHeader) h).reasonCode() & 0xff;
        if (h instanceof MqttReasonCodeAndPropertiesVariableHeader) return ((MqttReasonCodeAndPropertiesVariableHeader) h).reasonCode() & 0xff;
        return 0;
    }

    private ObjectNode message(Recorder.Event e) throws Exception {
        return Kw.parse(Unpooled.wrappedBuffer(e.payload));
    }

    /** The relay's answer for a message that went up: its __md_trq__ with result added, sent down the channel. */
    private void answer(ObjectNode msg, int result) {
        ObjectNode md = ((ObjectNode) msg.get(Kw.MD_TRQ)).deepCopy();
        md.put(Kw.RESULT, result);
        ObjectNode ack = Kw.create();
        ack.set(Kw.MD_TRQ, md);
        ByteBuf b = Unpooled.buffer();
        Kw.writeJson(ack, b);
        rt.run(() -> ch.send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(b), null));
    }

    /** Whether a log record (its level, gobj, message or fields) says {@code text}. */
    private boolean logged(String text) {
        return countLogs(text) > 0;
    }

    private long countLogs(String text) {
        return logs.all().stream().filter(r -> r.toString().contains(text)).count();
    }

    private long stat(String attr) {
        return rt.call(() -> mq.readAttr(attr).asLong());
    }

    // --- CONNECT / CONNACK ---

    @Test
    void shouldAcceptAConnectAndOpenTheChannelOn311() {
        start("");
        List<MqttMessage> out = connect(MqttVersion.MQTT_3_1_1, "dev-1");
        assertEquals(MqttConnectReturnCode.CONNECTION_ACCEPTED, connAckCode(out));
        assertFalse(((MqttConnAckMessage) out.get(0)).variableHeader().isSessionPresent());
        Recorder.Event open = up.await(Ev.EV_ON_OPEN, 2000);
        assertEquals("dev-1", open.kw.get("mqtt_client_id").asText());
        assertEquals(St.ST_CONNECTED, rt.call(mq::state));
        assertEquals(4, stat("protocol_version"));
    }

    @Test
    void shouldAnnounceTheServerLimitsOn5() {
        start("\"receive_maximum\": 7, \"max_packet_size\": 4096, \"max_keepalive\": 30, \"max_qos\": 1");
        client = new TestClient(MqttVersion.MQTT_5);
        List<MqttMessage> out = connect(client.encode(client.connectBuilder("dev-5").keepAlive(0).build()));
        assertEquals(MqttConnectReturnCode.CONNECTION_ACCEPTED, connAckCode(out));
        MqttProperties p = ((MqttConnAckMessage) out.get(0)).variableHeader().properties();
        assertEquals(7, p.getProperty(MqttProperties.MqttPropertyType.RECEIVE_MAXIMUM.value()).value());
        assertEquals(4096, p.getProperty(MqttProperties.MqttPropertyType.MAXIMUM_PACKET_SIZE.value()).value());
        assertEquals(30, p.getProperty(MqttProperties.MqttPropertyType.SERVER_KEEP_ALIVE.value()).value());
        assertEquals(1, p.getProperty(MqttProperties.MqttPropertyType.MAXIMUM_QOS.value()).value());
        assertEquals(0, p.getProperty(MqttProperties.MqttPropertyType.WILDCARD_SUBSCRIPTION_AVAILABLE.value()).value());
        assertEquals(30, stat("keepalive"));
    }

    @Test
    void shouldAssignAClientIdToAnEmptyOneAndRefuseItForAPersistent311Session() {
        start("");
        client = new TestClient(MqttVersion.MQTT_5);
        List<MqttMessage> out = connect(client.encode(client.connectBuilder("").build()));
        assertEquals(MqttConnectReturnCode.CONNECTION_ACCEPTED, connAckCode(out));
        String assigned = (String) ((MqttConnAckMessage) out.get(0)).variableHeader().properties()
                .getProperty(MqttProperties.MqttPropertyType.ASSIGNED_CLIENT_IDENTIFIER.value()).value();
        assertTrue(assigned.startsWith("gatehouse-"), assigned);
        rt.run(tcp::disconnect);
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        out = connect(client.encode(client.connectBuilder("").cleanSession(false).build()));
        assertEquals(MqttConnectReturnCode.CONNECTION_REFUSED_IDENTIFIER_REJECTED, connAckCode(out));
    }

    @Test
    void shouldRefuseBadCredentialsWithTheCodeOfEachVersion() {
        start("\"users\": {\"alice\": \"wonder\"}");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        assertEquals(MqttConnectReturnCode.CONNECTION_REFUSED_NOT_AUTHORIZED,
                connAckCode(connect(client.connect("anon"))));
        assertEquals(1, drops());
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        assertEquals(MqttConnectReturnCode.CONNECTION_REFUSED_BAD_USER_NAME_OR_PASSWORD, connAckCode(connect(
                client.encode(client.connectBuilder("a").hasUser(true).username("alice").hasPassword(true).password("no").build()))));
        client = new TestClient(MqttVersion.MQTT_5);
        assertEquals(MqttConnectReturnCode.CONNECTION_REFUSED_BAD_USERNAME_OR_PASSWORD, connAckCode(connect(
                client.encode(client.connectBuilder("a").hasUser(true).username("mallory").hasPassword(true).password("x").build()))));
        client = new TestClient(MqttVersion.MQTT_5);
        assertEquals(MqttConnectReturnCode.CONNECTION_REFUSED_NOT_AUTHORIZED_5, connAckCode(connect(client.connect("anon5"))));
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        assertEquals(MqttConnectReturnCode.CONNECTION_ACCEPTED, connAckCode(connect(
                client.encode(client.connectBuilder("a").hasUser(true).username("alice").hasPassword(true).password("wonder").build()))));
        assertEquals(4, stat("connects_refused"));
        assertTrue(logged("MQTT CONNECT refused"));
        assertFalse(logs.all().toString().contains("wonder"), "a password is never logged");
        assertEquals(1, up.count(Ev.EV_ON_OPEN), "only the accepted connection opened the channel");
    }

    @Test
    void shouldAcceptASha256Password() throws Exception {
        String hex = hex(java.security.MessageDigest.getInstance("SHA-256").digest("s3cret".getBytes(StandardCharsets.UTF_8)));
        start("\"users\": {\"bob\": \"sha256:" + hex + "\"}");
        client = new TestClient(MqttVersion.MQTT_5);
        assertEquals(MqttConnectReturnCode.CONNECTION_ACCEPTED, connAckCode(connect(
                client.encode(client.connectBuilder("b").hasUser(true).username("bob").hasPassword(true).password("s3cret").build()))));
    }

    private static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }

    @Test
    void shouldCloseWhenNoConnectComesWithinTheHandshakeTimeout() {
        start("\"timeout_handshake\": 2000");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        rt.run(tcp::connect);
        clock.advance(1900);
        assertEquals(0, drops());
        clock.advance(200);
        assertEquals(1, drops());
        assertTrue(logged("Timeout waiting CONNECT"));
        assertEquals(0, up.count(Ev.EV_ON_OPEN));
        assertEquals(0, up.count(Ev.EV_ON_CLOSE), "no close for a channel that never opened");
    }

    @Test
    void shouldCloseOnAPublishBeforeConnect() {
        start("");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        rt.run(tcp::connect);
        rx(client.publish("a/b", 1, 1, "{}"));
        assertEquals(1, drops());
        assertTrue(logged("first packet is not CONNECT"));
        assertEquals(0, up.count(Ev.EV_ON_MESSAGE));
    }

    @Test
    void shouldCloseOnASecondConnect() {
        start("");
        connect(MqttVersion.MQTT_5, "twice");
        rx(client.connect("twice"));
        assertTrue(logged("second CONNECT"));
        List<MqttMessage> out = written();
        assertEquals(MqttMessageType.DISCONNECT, out.get(0).fixedHeader().messageType());
        assertEquals(0x82, reason(out.get(0)));
        assertEquals(1, drops());
        assertNotNull(up.await(Ev.EV_ON_CLOSE, 2000));
    }

    @Test
    void shouldRefuseAnUnknownProtocolLevel() {
        start("");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        // CONNECT "MQTT" level 9
        byte[] bad = {0x10, 0x0c, 0x00, 0x04, 'M', 'Q', 'T', 'T', 0x09, 0x02, 0x00, 0x3c, 0x00, 0x00};
        List<MqttMessage> out = connect(bad);
        assertEquals(MqttConnectReturnCode.CONNECTION_REFUSED_UNACCEPTABLE_PROTOCOL_VERSION, connAckCode(out));
        assertEquals(1, drops());
    }

    // --- PUBLISH and acks ---

    @Test
    void shouldSendQos0UpWithTheTopicAndNoAckData() throws Exception {
        start("");
        connect(MqttVersion.MQTT_3_1_1, "q0");
        rx(client.publish("devices/7", 0, 0, "{\"id\":\"x-17\",\"v\":1}"));
        ObjectNode m = message(up.await(Ev.EV_ON_MESSAGE, 2000));
        assertEquals("x-17", m.get("id").asText());
        assertEquals("devices/7", m.get("mqtt_topic").asText());
        assertNull(m.get(Kw.MD_TRQ));
        assertTrue(written().isEmpty(), "QoS 0 is not answered");
    }

    @Test
    void shouldWrapAPayloadThatIsNotAJsonObject() throws Exception {
        start("");
        connect(MqttVersion.MQTT_3_1_1, "wrap");
        rx(client.publish("raw/1", 0, 0, "hello \"world\""));
        rx(client.publish("raw/2", 0, 0, "[1,2,3]"));
        rx(client.publish("raw/3", 0, 0, "{\"a\":1} trailing"));
        rx(client.publish("raw/4", 0, 0, ""));
        rx(client.publish("raw/5", 0, 0, "{}"));
        for (String[] want : new String[][] {{"raw/1", "hello \"world\""}, {"raw/2", "[1,2,3]"},
                {"raw/3", "{\"a\":1} trailing"}, {"raw/4", ""}}) {
            ObjectNode m = message(up.await(Ev.EV_ON_MESSAGE, 2000));
            assertEquals(want[0], m.get("mqtt_topic").asText());
            assertEquals(want[1], new String(Base64.getDecoder().decode(m.get("mqtt_payload_base64").asText()), StandardCharsets.UTF_8));
        }
        ObjectNode empty = message(up.await(Ev.EV_ON_MESSAGE, 2000));
        assertEquals("{\"mqtt_topic\":\"raw/5\"}", empty.toString());
    }

    @Test
    void shouldNotLetAPayloadForgeTheTopicOrTheAckData() throws Exception {
        start("");
        connect(MqttVersion.MQTT_3_1_1, "forge");
        rx(client.publish("real/topic", 1, 3, "{\"mqtt_topic\":\"fake\",\"__md_trq__\":{\"mqtt_packet_id\":99}}"));
        ObjectNode m = message(up.await(Ev.EV_ON_MESSAGE, 2000));
        assertEquals("real/topic", m.get("mqtt_topic").asText());
        assertEquals(3, m.get(Kw.MD_TRQ).get("mqtt_packet_id").asInt());
    }

    @Test
    void shouldPubackQos1OnlyOnceTheAckComes() throws Exception {
        start("");
        connect(MqttVersion.MQTT_3_1_1, "q1");
        rx(client.publish("t", 1, 11, "{\"id\":1}"));
        ObjectNode m = message(up.await(Ev.EV_ON_MESSAGE, 2000));
        JsonNode md = m.get(Kw.MD_TRQ);
        assertEquals(11, md.get("mqtt_packet_id").asInt());
        assertEquals(1, md.get("mqtt_qos").asInt());
        assertTrue(written().isEmpty(), "no PUBACK before the message is durable");
        assertEquals(1, stat("inflight"));
        answer(m, 0);
        List<MqttMessage> out = written();
        assertEquals(MqttMessageType.PUBACK, out.get(0).fixedHeader().messageType());
        assertEquals(11, ((MqttPubReplyMessageVariableHeader) out.get(0).variableHeader()).messageId());
        assertEquals(0, stat("inflight"));
        answer(m, 0);
        assertTrue(written().isEmpty(), "a second ack of the same message is not a second PUBACK");
    }

    @Test
    void shouldAnswerARefusalWithReason97On5AndCloseOn311() throws Exception {
        start("");
        connect(MqttVersion.MQTT_5, "nack5");
        rx(client.publish("t", 1, 1, "{}"));
        answer(message(up.await(Ev.EV_ON_MESSAGE, 2000)), -1);
        List<MqttMessage> out = written();
        assertEquals(MqttMessageType.PUBACK, out.get(0).fixedHeader().messageType());
        assertEquals(0x97, reason(out.get(0)));
        assertEquals(0, drops(), "5.0 stays connected");
        rx(client.publish("t", 2, 2, "{}"));
        answer(message(up.await(Ev.EV_ON_MESSAGE, 2000)), -1);
        out = written();
        assertEquals(MqttMessageType.PUBREC, out.get(0).fixedHeader().messageType());
        assertEquals(0x97, reason(out.get(0)));
        rt.run(tcp::disconnect);

        connect(MqttVersion.MQTT_3_1_1, "nack311");
        rx(client.publish("t", 1, 1, "{}"));
        answer(message(up.await(Ev.EV_ON_MESSAGE, 2000)), -1);
        assertTrue(written().isEmpty(), "3.1.1 has no failure PUBACK");
        assertEquals(1, drops(), "the connection is closed so the client sends it again");
        assertTrue(logged("MQTT message refused by the queue"));
        assertEquals(3, stat("nacks"));
    }

    @Test
    void shouldRunTheQos2FlowAndNotQueueAResendTwice() throws Exception {
        start("");
        connect(MqttVersion.MQTT_3_1_1, "q2");
        byte[] pub = client.publish("t", 2, 5, "{\"id\":5}");
        rx(pub);
        ObjectNode m = message(up.await(Ev.EV_ON_MESSAGE, 2000));
        rx(pub);   // resent before the PUBREC: not queued again, no answer yet
        assertTrue(written().isEmpty());
        answer(m, 0);
        List<MqttMessage> out = written();
        assertEquals(1, out.size(), out.toString());
        assertEquals(MqttMessageType.PUBREC, out.get(0).fixedHeader().messageType());
        rx(pub);   // resent after the PUBREC (it was lost): PUBREC again, still not queued
        assertEquals(MqttMessageType.PUBREC, written().get(0).fixedHeader().messageType());
        rx(client.pubrel(5));
        out = written();
        assertEquals(MqttMessageType.PUBCOMP, out.get(0).fixedHeader().messageType());
        assertEquals(1, up.count(Ev.EV_ON_MESSAGE), "queued once");
        assertEquals(2, stat("qos2_duplicates"));
        rx(pub);   // after PUBREL the id is free: a new message
        assertNotNull(up.await(Ev.EV_ON_MESSAGE, 2000));
        assertEquals(2, up.count(Ev.EV_ON_MESSAGE));
    }

    @Test
    void shouldNoteAQos2IdOnlyOnceTheQueuesWroteWhatTheyTook() throws Exception {
        Positions queues = new Positions();
        queues.positions = "";   // a trqueue before api.queue 1.7: no note of positions
        // the queues could not write what they took: the id is not noted, so after a crash the resend is queued
        // again (twice rather than lost)
        queues.writes = false;
        startWith(queues);
        byte[] pub = client.publish("t", 2, 7, "{\"id\":7}");
        rx(pub);
        up.await(Ev.EV_ON_MESSAGE, 2000);
        assertEquals(1, queues.calls.get(), "asked once, before noting the id");
        queues.writes = true;
        startWith(queues);
        rx(pub);
        assertNotNull(up.await(Ev.EV_ON_MESSAGE, 2000), "not noted: queued again");
        assertEquals(2, queues.calls.get());
        // written: noted, and a resend after a crash is answered, not queued
        startWith(queues);
        rx(pub);
        assertEquals(MqttMessageType.PUBREC, written().get(0).fixedHeader().messageType());
        assertEquals(0, up.count(Ev.EV_ON_MESSAGE), "noted: not queued again");
        // QoS 1 notes nothing: the queues are not asked
        rx(client.publish("t", 1, 8, "{\"id\":8}"));
        up.await(Ev.EV_ON_MESSAGE, 2000);
        assertEquals(2, queues.calls.get());
    }

    /**
     * A queue factory that says where its queues stand ({@link #positions}) and, standing for the process started
     * again, which records an earlier run wrote after given positions ({@link #earlier}); its write of what it holds
     * back answers {@link #writes}, and is counted.
     */
    static final class Positions implements io.gatehouse.api.queue.TrQueueFactory {
        volatile String positions = "cXVldWU.41";
        volatile boolean writes = true;
        final java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
        final Map<String, List<byte[]>> earlier = new java.util.concurrent.ConcurrentHashMap<>();
        final List<String> askedAfter = new java.util.concurrent.CopyOnWriteArrayList<>();

        @Override
        public io.gatehouse.api.queue.TrQueue open(java.nio.file.Path p, String db, String topic, String tkey, int sf,
                                                   long backup, io.gatehouse.api.queue.TrQueueOptions o) {
            throw new UnsupportedOperationException("no queue in this test");
        }

        @Override
        public boolean writeHeldBack() {
            calls.incrementAndGet();
            return writes;
        }

        @Override
        public String positions() {
            return positions;
        }

        @Override
        public List<byte[]> earlierRecordsAfter(String at, int max) {
            askedAfter.add(at);
            List<byte[]> r = earlier.getOrDefault(at, List.of());
            return r.subList(0, Math.min(max, r.size()));
        }
    }

    private void startWith(io.gatehouse.api.queue.TrQueueFactory queues) {
        if (rt != null) rt.close();
        rt = YunoRuntime.builder().name("mqtttest").clock(clock).dataDir(data)
                .gclass(ProtMqtt.SPEC, ProtMqtt.SPEC2, FakeSocket.SPEC, new ChannelGClass().spec(), Recorder.SPEC)
                .extension(io.gatehouse.api.queue.TrQueueFactory.class, queues)
                .config(String.format(CONFIG, ProtMqtt.GCLASS, "")).build().start();
        found();
        taken.clear();
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        connect(client.encode(client.connectBuilder("kept").cleanSession(false).build()));
    }

    private List<String> sessionsLog() throws Exception {
        return java.nio.file.Files.readAllLines(data.resolve("mqtt").resolve("sessions.log"));
    }

    private static byte[] utf8(String s) {
        return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    }

    /** A client id as the session store's lines name it. */
    private static String logKey(String clientId) {
        return java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(utf8(clientId));
    }

    @Test
    void shouldNoteWhereTheQueuesStandBeforeAQos2MessageGoesUp() throws Exception {
        Positions queues = new Positions();
        startWith(queues);
        String key = logKey("kept");
        rx(client.publish("t", 2, 7, "{\"id\":7}"));
        up.await(Ev.EV_ON_MESSAGE, 2000);
        List<String> lines = sessionsLog();
        int intent = lines.indexOf("I " + key + " 7 cXVldWU.41");
        assertTrue(intent >= 0, lines.toString());
        assertEquals(intent, lines.size() - 1, "the id's A line waits for the next line that must be written: " + lines);
        rx(client.publish("t", 1, 8, "{\"id\":8}"));
        up.await(Ev.EV_ON_MESSAGE, 2000);
        assertEquals(lines.size(), sessionsLog().size(), "QoS 1 notes nothing");
        rx(client.pubrel(7));   // its R goes before the PUBCOMP, and takes the A with it
        assertEquals(MqttMessageType.PUBCOMP, written().get(0).fixedHeader().messageType());
        lines = sessionsLog();
        assertEquals(List.of("I " + key + " 7 cXVldWU.41", "A " + key + " 7", "R " + key + " 7"),
                lines.subList(intent, lines.size()));
        // positions that a log line cannot hold are not noted (the resend may then be queued twice, as before)
        queues.positions = "two words";
        rx(client.publish("t", 2, 9, "{\"id\":9}"));
        up.await(Ev.EV_ON_MESSAGE, 2000);
        assertFalse(sessionsLog().stream().anyMatch(l -> l.startsWith("I " + key + " 9")), sessionsLog().toString());
    }

    @Test
    void shouldAnswerAResendAfterAKillWhenTheQueueTookItsMessageAndQueueItWhenNot() throws Exception {
        Positions queues = new Positions();
        queues.writes = false;   // the kill comes between the queue taking the message and its id being noted
        startWith(queues);
        byte[] took = client.publish("t", 2, 7, "{\"id\":7}");
        byte[] missed = client.publish("t", 2, 8, "{\"id\":8,\"n\":1.50}");
        rx(took);
        up.await(Ev.EV_ON_MESSAGE, 2000);
        queues.positions = "cXVldWU.42";
        rx(missed);
        up.await(Ev.EV_ON_MESSAGE, 2000);
        rt.close();
        rt = null;

        // started again: the queue holds id 7's message in the row after its noted position (as the relay and the
        // queue store it: spaced otherwise, the ack data gone, a __ key of the queue's); the row after id 8's holds
        // another message
        queues.writes = true;
        queues.earlier.put("cXVldWU.41", List.of(utf8("{\"__t__\":5, \"id\": 7, \"mqtt_topic\": \"t\"}")));
        queues.earlier.put("cXVldWU.42", List.of(utf8("{\"id\":8,\"n\":1.5,\"mqtt_topic\":\"other\"}")));
        startWith(queues);
        rx(took);
        List<MqttMessage> out = written();
        assertEquals(1, out.size(), out.toString());
        assertEquals(MqttMessageType.PUBREC, out.get(0).fixedHeader().messageType());
        assertEquals(0, up.count(Ev.EV_ON_MESSAGE), "found in the queue: not queued twice");
        assertEquals(1, stat("qos2_duplicates"));
        assertTrue(logged("the queue took its message before the kill"));
        rx(missed);
        assertNotNull(up.await(Ev.EV_ON_MESSAGE, 2000), "not in the queue: queued now");
        assertTrue(logged("its message is not in the queues, queued now"));
        assertEquals(List.of("cXVldWU.41", "cXVldWU.42"), queues.askedAfter);
        rx(client.pubrel(7));
        assertEquals(MqttMessageType.PUBCOMP, written().get(0).fixedHeader().messageType());

        // id 7 was settled: after one more restart its resend is a PUBREC from the session (no look in the queues),
        // and after its PUBREL nothing of it is left
        rx(client.publish("t", 2, 7, "{\"id\":70}"));
        assertNotNull(up.await(Ev.EV_ON_MESSAGE, 2000), "released: a new message");
        startWith(queues);
        assertEquals(List.of("cXVldWU.41", "cXVldWU.42"), queues.askedAfter, "nothing left to look up");
    }

    @Test
    void shouldLeaveNothingToLookUpForAMessageTheQueueRefused() throws Exception {
        Positions queues = new Positions();
        startWith(queues);
        String key = logKey("kept");
        rx(client.publish("t", 2, 7, "{\"id\":7}"));
        answer(message(up.await(Ev.EV_ON_MESSAGE, 2000)), -1);   // refused: 3.1.1 closes, the client sends it again
        List<String> lines = sessionsLog();
        assertTrue(lines.indexOf("R " + key + " 7") > lines.indexOf("I " + key + " 7"), lines.toString());
        startWith(queues);
        queues.earlier.put("cXVldWU.41", List.of(utf8("{\"id\":7,\"mqtt_topic\":\"t\"}")));
        rx(client.publish("t", 2, 7, "{\"id\":7}"));
        assertNotNull(up.await(Ev.EV_ON_MESSAGE, 2000), "refused before: queued now, without a look in the queues");
        assertTrue(queues.askedAfter.isEmpty(), queues.askedAfter.toString());
    }

    @Test
    void shouldKeepQos2IdsOfAPersistentSessionAcrossARestart() throws Exception {
        start("");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        assertEquals(MqttConnectReturnCode.CONNECTION_ACCEPTED,
                connAckCode(connect(client.encode(client.connectBuilder("keep").cleanSession(false).build()))));
        byte[] pubDurable = client.publish("t", 2, 1, "{\"id\":1}");
        byte[] pubInFlight = client.publish("t", 2, 2, "{\"id\":2}");
        rx(pubDurable);
        rx(pubInFlight);
        answer(message(up.await(Ev.EV_ON_MESSAGE, 2000)), 0);   // id 1 durable, PUBREC lost on the way
        up.await(Ev.EV_ON_MESSAGE, 2000);                        // id 2 taken, its ack never comes (crash)
        rt.close();
        rt = null;

        start("");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        List<MqttMessage> out = connect(client.encode(client.connectBuilder("keep").cleanSession(false).build()));
        assertTrue(((MqttConnAckMessage) out.get(0)).variableHeader().isSessionPresent(), "the session survived");
        rx(pubDurable);
        rx(pubInFlight);
        out = written();
        assertEquals(2, out.size(), out.toString());
        assertEquals(MqttMessageType.PUBREC, out.get(0).fixedHeader().messageType());
        assertEquals(MqttMessageType.PUBREC, out.get(1).fixedHeader().messageType());
        assertEquals(0, up.count(Ev.EV_ON_MESSAGE), "neither resend is queued again");

        // a clean session starts empty
        rt.run(tcp::disconnect);
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        out = connect(client.connect("keep"));
        assertFalse(((MqttConnAckMessage) out.get(0)).variableHeader().isSessionPresent());
        rx(pubDurable);
        assertNotNull(up.await(Ev.EV_ON_MESSAGE, 2000));
    }

    @Test
    void shouldEndASessionWhenItsExpiryPasses() {
        start("\"max_session_expiry_interval\": 60");
        client = new TestClient(MqttVersion.MQTT_5);
        MqttProperties p = new MqttProperties();
        p.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.SESSION_EXPIRY_INTERVAL.value(), 3600));
        List<MqttMessage> out = connect(client.encode(client.connectBuilder("exp").cleanSession(false).properties(p).build()));
        assertEquals(60, ((MqttConnAckMessage) out.get(0)).variableHeader().properties()
                .getProperty(MqttProperties.MqttPropertyType.SESSION_EXPIRY_INTERVAL.value()).value(), "capped and said");
        rt.run(tcp::disconnect);
        clock.advance(30_000);
        client = new TestClient(MqttVersion.MQTT_5);
        out = connect(client.encode(client.connectBuilder("exp").cleanSession(false).properties(p).build()));
        assertTrue(((MqttConnAckMessage) out.get(0)).variableHeader().isSessionPresent());
        rt.run(tcp::disconnect);
        clock.advance(61_000);
        client = new TestClient(MqttVersion.MQTT_5);
        out = connect(client.encode(client.connectBuilder("exp").cleanSession(false).properties(p).build()));
        assertFalse(((MqttConnAckMessage) out.get(0)).variableHeader().isSessionPresent(), "expired");
    }

    @Test
    void shouldAnswerPubrelOfAnUnknownIdWithPubcomp() {
        start("");
        connect(MqttVersion.MQTT_5, "rel");
        rx(client.pubrel(42));
        List<MqttMessage> out = written();
        assertEquals(MqttMessageType.PUBCOMP, out.get(0).fixedHeader().messageType());
        assertEquals(0x92, reason(out.get(0)));
    }

    @Test
    void shouldCompleteAPubrelOfAnIdWhoseLinesAKillTookButItsIntent() throws Exception {
        // the gateway was killed after PUBREC: the id's A and D lines were waiting, only its I line is in the log
        String key = logKey("cut5");
        java.nio.file.Files.createDirectories(data.resolve("mqtt"));
        java.nio.file.Files.writeString(data.resolve("mqtt").resolve("sessions.log"),
                "S " + key + " -1\nI " + key + " 9 cXVldWU.41\n");
        start("");
        client = new TestClient(MqttVersion.MQTT_5);
        MqttProperties props = new MqttProperties();
        props.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.SESSION_EXPIRY_INTERVAL.value(), 3600));
        List<MqttMessage> out = connect(client.encode(client.connectBuilder("cut5").cleanSession(false).properties(props).build()));
        assertTrue(((MqttConnAckMessage) out.get(0)).variableHeader().isSessionPresent());
        rx(client.pubrel(9));
        out = written();
        assertEquals(MqttMessageType.PUBCOMP, out.get(0).fixedHeader().messageType());
        assertEquals(0, reason(out.get(0)), "the id is known: Success, not Packet Identifier not found");
        assertEquals("R " + key + " 9", sessionsLog().get(sessionsLog().size() - 1));
    }

    // --- Keep-alive, PING, DISCONNECT, Will ---

    @Test
    void shouldCloseAfterOneAndAHalfKeepAlivesWithoutAPacket() {
        start("");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        connect(client.encode(client.connectBuilder("ka").keepAlive(10).build()));
        clock.advance(9_000);
        rx(client.simple(MqttMessageType.PINGREQ));
        assertEquals(MqttMessageType.PINGRESP, written().get(0).fixedHeader().messageType());
        clock.advance(14_000);   // 14 s after the PINGREQ: still within 15
        assertEquals(0, drops());
        clock.advance(1_500);
        assertEquals(1, drops());
        assertTrue(logged("keep-alive timeout"));
        assertNotNull(up.await(Ev.EV_ON_CLOSE, 2000));
    }

    @Test
    void shouldPublishTheWillOnAnUncleanCloseOnly() throws Exception {
        start("");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        connect(client.encode(client.connectBuilder("w1").willFlag(true).willTopic("status/w1")
                .willMessage("{\"state\":\"gone\"}").build()));
        rt.run(tcp::disconnect);   // the socket went away: the Will goes up before the close
        Recorder.Event e = up.await(Ev.EV_ON_MESSAGE, 2000);
        ObjectNode will = message(e);
        assertEquals("gone", will.get("state").asText());
        assertEquals("status/w1", will.get("mqtt_topic").asText());
        assertTrue(will.get("mqtt_will").asBoolean());
        assertNotNull(up.await(Ev.EV_ON_CLOSE, 2000));

        client = new TestClient(MqttVersion.MQTT_3_1_1);
        connect(client.encode(client.connectBuilder("w2").willFlag(true).willTopic("status/w2").willMessage("x").build()));
        rx(client.simple(MqttMessageType.DISCONNECT));
        assertEquals(1, drops());
        assertNotNull(up.await(Ev.EV_ON_CLOSE, 2000));
        assertEquals(1, up.count(Ev.EV_ON_MESSAGE), "a normal DISCONNECT discards the Will");
        assertEquals(1, stat("wills"));
    }

    // --- Limits and flow control ---

    @Test
    void shouldStopReadingAtReceiveMaximumAndResumeOnAcks() throws Exception {
        start("\"receive_maximum\": 2");
        connect(MqttVersion.MQTT_3_1_1, "rm");
        rx(concat(client.publish("t", 1, 1, "{}"), client.publish("t", 1, 2, "{}"), client.publish("t", 1, 3, "{}")));
        assertTrue(up.awaitCount(Ev.EV_ON_MESSAGE, 2, 2000));
        assertEquals(2, up.count(Ev.EV_ON_MESSAGE), "the third waits: reading stopped");
        assertTrue(paused());
        assertTrue(rt.call(() -> mq.readAttr("input_blocked").asBoolean()));
        answer(message(up.await(Ev.EV_ON_MESSAGE, 2000)), 0);
        assertTrue(up.awaitCount(Ev.EV_ON_MESSAGE, 3, 2000), "the held PUBLISH goes up once one was acked");
        assertTrue(paused(), "two in flight again");
        answer(message(up.await(Ev.EV_ON_MESSAGE, 2000)), 0);
        answer(message(up.await(Ev.EV_ON_MESSAGE, 2000)), 0);
        assertFalse(paused());
        assertEquals(3, written().size());
    }

    @Test
    void shouldDisconnectA5ClientThatExceedsTheReceiveMaximum() throws Exception {
        start("\"receive_maximum\": 1");
        connect(MqttVersion.MQTT_5, "rm5");
        rx(client.publish("t", 2, 1, "{}"));
        answer(message(up.await(Ev.EV_ON_MESSAGE, 2000)), 0);
        assertEquals(MqttMessageType.PUBREC, written().get(0).fixedHeader().messageType());
        rx(client.publish("t", 1, 2, "{}"));   // id 1 still awaits PUBREL: 2 unacked, 1 announced
        List<MqttMessage> out = written();
        assertEquals(MqttMessageType.DISCONNECT, out.get(0).fixedHeader().messageType());
        assertEquals(0x93, reason(out.get(0)));
        assertEquals(1, up.count(Ev.EV_ON_MESSAGE));
    }

    @Test
    void shouldCloseOnAPacketOverTheMaximumSize() {
        start("\"max_packet_size\": 100");
        connect(MqttVersion.MQTT_5, "big");
        rx(client.publish("t", 1, 1, "x".repeat(200)));
        List<MqttMessage> out = written();
        assertEquals(MqttMessageType.DISCONNECT, out.get(0).fixedHeader().messageType());
        assertEquals(0x95, reason(out.get(0)));
        assertEquals(1, drops());
        assertTrue(logged("MQTT packet too large"));
        assertEquals(0, up.count(Ev.EV_ON_MESSAGE));
    }

    @Test
    void shouldRefuseARemainingLengthOverTheLimitFromItsHeaderAlone() {
        start("");
        connect(MqttVersion.MQTT_3_1_1, "huge");
        rx(new byte[] {0x30, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x7f});   // PUBLISH of 256 MiB announced
        assertEquals(1, drops());
        assertTrue(logged("MQTT packet too large"));
    }

    @Test
    void shouldCloseOnGarbageAndSayItOnce() {
        start("");
        connect(MqttVersion.MQTT_3_1_1, "garbage");
        byte[] junk = new byte[4096];
        new java.util.Random(3).nextBytes(junk);
        junk[0] = (byte) 0xf0;   // type 15 (AUTH) with flags: malformed on 3.1.1
        junk[1] = 0x05;
        rx(junk);
        rx(junk);   // more bytes after our close: discarded silently
        assertEquals(1, drops());
        assertEquals(1, countLogs("Malformed MQTT packet") + countLogs("MQTT protocol error"), logs.all().toString());
    }

    @Test
    void shouldLoseNothingWhenGarbageFollowsMessagesInFlight() throws Exception {
        start("");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        connect(client.encode(client.connectBuilder("bad-after").cleanSession(false).build()));
        rx(client.publish("t", 1, 1, "{\"id\":1}"));
        answer(message(up.await(Ev.EV_ON_MESSAGE, 2000)), 0);
        assertEquals(MqttMessageType.PUBACK, written().get(0).fixedHeader().messageType(), "acked: it is queued");
        byte[] pub2 = client.publish("t", 2, 2, "{\"id\":2}");
        rx(pub2);
        ObjectNode m2 = message(up.await(Ev.EV_ON_MESSAGE, 2000));   // up, its ack on the way
        byte[] junk = new byte[64];
        new java.util.Random(5).nextBytes(junk);
        junk[0] = (byte) 0xf0;
        junk[1] = 0x05;
        // garbage, then a PUBLISH in the same read: the connection closes at the garbage, the PUBLISH is not taken
        rx(concat(junk, client.publish("t", 1, 3, "{\"id\":3}")));
        assertEquals(1, drops());
        assertEquals(1, countLogs("Malformed MQTT packet") + countLogs("MQTT protocol error"), logs.all().toString());
        rt.run(() -> { });   // the close the drop causes
        assertEquals(0, up.count(Ev.EV_ON_CLOSE), "the channel waits for the ack of the message in flight");
        answer(m2, 0);
        assertNotNull(up.await(Ev.EV_ON_CLOSE, 2000), "its ack came: the channel closes");

        client = new TestClient(MqttVersion.MQTT_3_1_1);
        List<MqttMessage> out = connect(client.encode(client.connectBuilder("bad-after").cleanSession(false).build()));
        assertTrue(((MqttConnAckMessage) out.get(0)).variableHeader().isSessionPresent());
        rx(pub2);   // the client resends what it never saw answered
        assertEquals(MqttMessageType.PUBREC, written().get(0).fixedHeader().messageType(), "answered from the session");
        rx(client.publish("t", 1, 3, "{\"id\":3}"));
        assertEquals(3, message(up.await(Ev.EV_ON_MESSAGE, 2000)).get("id").asInt(), "the PUBLISH after the garbage, resent");
        assertEquals(3, up.count(Ev.EV_ON_MESSAGE), "1, 2 and 3 once each: nothing lost, the QoS 2 one not twice");
    }

    @Test
    void shouldCloseOnAFiveByteRemainingLength() {
        start("");
        connect(MqttVersion.MQTT_3_1_1, "len5");
        rx(new byte[] {0x30, (byte) 0x80, (byte) 0x80, (byte) 0x80, (byte) 0x80, 0x01});
        assertEquals(1, drops());
        assertTrue(logged("remaining length over 4 bytes"));
    }

    @Test
    void shouldCloseAPacketLeftIncomplete() {
        start("\"timeout_payload\": 1000");
        connect(MqttVersion.MQTT_3_1_1, "half");
        byte[] p = client.publish("t", 1, 1, "{\"id\":1}");
        rx(Arrays.copyOf(p, p.length - 3));
        clock.advance(900);
        assertEquals(0, drops());
        rx(new byte[0]);
        clock.advance(1100);
        assertEquals(1, drops());
        assertTrue(logged("Timeout waiting the rest of an MQTT packet"));
    }

    @Test
    void shouldReassembleAPacketSplitAcrossReads() throws Exception {
        start("");
        connect(MqttVersion.MQTT_3_1_1, "split");
        byte[] p = concat(client.publish("split/1", 0, 0, "{\"n\":1}"), client.publish("split/2", 0, 0, "{\"n\":2}"));
        for (byte b : p) rx(new byte[] {b});
        assertEquals(1, message(up.await(Ev.EV_ON_MESSAGE, 2000)).get("n").asInt());
        assertEquals(2, message(up.await(Ev.EV_ON_MESSAGE, 2000)).get("n").asInt());
    }

    @Test
    void shouldHonourTheInputThresholdAndItsCredit() {
        start("\"input_threshold_msgs\": 2");
        connect(MqttVersion.MQTT_3_1_1, "thr");
        rx(concat(client.publish("t", 0, 0, "{}"), client.publish("t", 0, 0, "{}"), client.publish("t", 0, 0, "{}")));
        assertTrue(up.awaitCount(Ev.EV_ON_MESSAGE, 2, 2000));
        List<Recorder.Event> got = up.events(Ev.EV_ON_MESSAGE);
        assertEquals(2, got.size());
        assertTrue(got.get(1).kw.get(Kw.IS_BLOCKED).asBoolean(), "the message that crossed says so");
        assertTrue(paused());
        rt.run(() -> ch.send(Ev.EV_RESUME_INPUT, null, null));
        assertTrue(up.awaitCount(Ev.EV_ON_MESSAGE, 3, 2000));
    }

    // --- Topics, subscriptions, aliases ---

    @Test
    void shouldRefuseATopicOutsideTheConfiguredFilters() {
        start("\"topics\": [\"devices/+/telemetry\", \"status/#\"]");
        connect(MqttVersion.MQTT_5, "topics5");
        rx(client.publish("devices/7/telemetry", 0, 0, "{}"));
        rx(client.publish("status", 0, 0, "{}"));
        rx(client.publish("other/x", 1, 4, "{}"));
        assertTrue(up.awaitCount(Ev.EV_ON_MESSAGE, 2, 2000));
        List<MqttMessage> out = written();
        assertEquals(MqttMessageType.PUBACK, out.get(0).fixedHeader().messageType());
        assertEquals(0x87, reason(out.get(0)));
        assertEquals(2, up.count(Ev.EV_ON_MESSAGE));
        rt.run(tcp::disconnect);
        connect(MqttVersion.MQTT_3_1_1, "topics311");
        rx(client.publish("other/x", 1, 4, "{}"));
        assertEquals(1, drops());
    }

    @Test
    void shouldRefuseSubscriptionsWithTheCodesOfEachVersion() {
        start("");
        connect(MqttVersion.MQTT_3_1_1, "sub311");
        rx(client.subscribe(9, "a/#", "b"));
        MqttSubAckMessage s = (MqttSubAckMessage) written().get(0);
        assertEquals(List.of(0x80, 0x80), s.payload().reasonCodes());
        rt.run(tcp::disconnect);
        connect(MqttVersion.MQTT_5, "sub5");
        rx(client.subscribe(9, "a/#"));
        s = (MqttSubAckMessage) written().get(0);
        assertEquals(List.of(0x87), s.payload().reasonCodes());
        assertEquals(0, drops(), "a refused subscription keeps the connection");
    }

    @Test
    void shouldResolveTopicAliases() throws Exception {
        start("");
        connect(MqttVersion.MQTT_5, "alias");
        MqttProperties a = new MqttProperties();
        a.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.TOPIC_ALIAS.value(), 3));
        rx(client.publish("long/topic/name", 0, 0, "{\"n\":1}", a));
        rx(client.publish("", 0, 0, "{\"n\":2}", a));
        message(up.await(Ev.EV_ON_MESSAGE, 2000));
        assertEquals("long/topic/name", message(up.await(Ev.EV_ON_MESSAGE, 2000)).get("mqtt_topic").asText());
        MqttProperties bad = new MqttProperties();
        bad.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.TOPIC_ALIAS.value(), 11));
        rx(client.publish("x", 0, 0, "{}", bad));
        assertEquals(0x94, reason(written().get(0)));
    }

    // --- Sessions between connections ---

    @Test
    void shouldTakeASessionOverFromTheConnectionThatHeldIt() {
        startTwo("takeover");
        FakeSocket t1 = socket(1);
        FakeSocket t2 = socket(2);
        TestClient c1 = new TestClient(MqttVersion.MQTT_5);
        TestClient c2 = new TestClient(MqttVersion.MQTT_5);
        rt.run(t1::connect);
        rt.run(() -> t1.receive(c1.connect("same")));
        rt.run(t2::connect);
        rt.run(() -> t2.receive(c2.connect("same")));
        List<MqttMessage> old = written(t1, c1);
        assertEquals(MqttMessageType.DISCONNECT, old.get(1).fixedHeader().messageType());
        assertEquals(0x8E, reason(old.get(1)));
        assertEquals(1, drops(t1));
        assertEquals(0, drops(t2));
        assertEquals(MqttConnectReturnCode.CONNECTION_ACCEPTED, connAckCode(written(t2, c2)));
    }

    @Test
    void shouldKeepTheChannelOpenForTheAcksOfAClosedConnection() throws Exception {
        start("\"timeout_acks_after_close\": 2000");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        connect(client.encode(client.connectBuilder("late").cleanSession(false).build()));
        byte[] pub = client.publish("t", 2, 7, "{\"id\":7}");
        rx(pub);
        ObjectNode m = message(up.await(Ev.EV_ON_MESSAGE, 2000));
        rt.run(tcp::disconnect);
        assertEquals(0, up.count(Ev.EV_ON_CLOSE), "the channel waits for the ack of the message in flight");
        answer(m, 0);
        assertNotNull(up.await(Ev.EV_ON_CLOSE, 2000), "the last ack closes the channel");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        connect(client.encode(client.connectBuilder("late").cleanSession(false).build()));
        rx(pub);   // its PUBREC never reached the client: the resend is answered from the session
        assertEquals(MqttMessageType.PUBREC, written().get(0).fixedHeader().messageType());
        assertEquals(1, up.count(Ev.EV_ON_MESSAGE));
        // no ack at all: the channel closes after timeout_acks_after_close
        rx(client.publish("t", 1, 8, "{}"));
        up.await(Ev.EV_ON_MESSAGE, 2000);
        rt.run(tcp::disconnect);
        clock.advance(1900);
        assertEquals(1, up.count(Ev.EV_ON_CLOSE));
        clock.advance(200);
        assertEquals(2, up.count(Ev.EV_ON_CLOSE));
    }

    @Test
    void shouldAnswerAResendOnANewConnectionOnceTheOldOneGetsItsAck() throws Exception {
        startTwo("resend");
        GObj ch1 = rt.call(() -> rt.service("up").child("ch1"));
        FakeSocket t1 = socket(1);
        FakeSocket t2 = socket(2);
        TestClient c1 = new TestClient(MqttVersion.MQTT_3_1_1);
        byte[] pub = c1.publish("t", 2, 3, "{\"id\":3}");
        rt.run(t1::connect);
        rt.run(() -> t1.receive(c1.encode(c1.connectBuilder("dev").cleanSession(false).build())));
        rt.run(() -> t1.receive(pub));
        ObjectNode m = message(up.await(Ev.EV_ON_MESSAGE, 2000));
        rt.run(t1::disconnect);   // gone before the message was durable

        TestClient c2 = new TestClient(MqttVersion.MQTT_3_1_1);
        rt.run(t2::connect);
        rt.run(() -> t2.receive(c2.encode(c2.connectBuilder("dev").cleanSession(false).build())));
        rt.run(() -> t2.receive(pub));   // the resend on the new connection
        List<MqttMessage> out = written(t2, c2);
        assertEquals(1, out.size(), "CONNACK only: no PUBREC before the message is durable");
        ObjectNode md = ((ObjectNode) m.get(Kw.MD_TRQ)).deepCopy();
        md.put(Kw.RESULT, 0);
        ObjectNode ack = Kw.create();
        ack.set(Kw.MD_TRQ, md);
        ByteBuf b = Unpooled.buffer();
        Kw.writeJson(ack, b);
        rt.run(() -> ch1.send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(b), null));   // the ack reaches the old connection
        out = written(t2, c2);
        assertEquals(MqttMessageType.PUBREC, out.get(0).fixedHeader().messageType(), "the new connection answers it");
        assertEquals(1, up.count(Ev.EV_ON_MESSAGE), "queued once");
    }

    // --- Live upgrade ---

    @Test
    void shouldKeepTheConnectionMidPacketAndItsAcksAcrossALiveUpgrade() throws Exception {
        start("");
        client = new TestClient(MqttVersion.MQTT_5);
        connect(client.encode(client.connectBuilder("up").cleanSession(false).build()));
        byte[] pub2 = client.publish("t", 2, 2, "{\"id\":2}");
        rx(client.publish("t", 1, 1, "{\"id\":1}"));
        rx(pub2);
        ObjectNode m1 = message(up.await(Ev.EV_ON_MESSAGE, 2000));
        ObjectNode m2 = message(up.await(Ev.EV_ON_MESSAGE, 2000));
        byte[] p3 = client.publish("t", 1, 3, "{\"id\":3}");
        rx(Arrays.copyOf(p3, 6));   // a packet split across the upgrade
        GObj before = mq;

        Revision.handOver(rt, Revision.next(ProtMqtt.SPEC), 1);
        assertSame(before, rt.call(() -> ch.bottom()), "the same gobj");
        assertEquals(St.ST_CONNECTED, rt.call(mq::state));
        answer(m1, 0);   // acks of what the old revision sent up, to the new one
        answer(m2, 0);
        List<MqttMessage> out = written();
        assertEquals(List.of(MqttMessageType.PUBACK, MqttMessageType.PUBREC),
                List.of(out.get(0).fixedHeader().messageType(), out.get(1).fixedHeader().messageType()), out.toString());
        rx(Arrays.copyOfRange(p3, 6, p3.length));
        ObjectNode m3 = message(up.await(Ev.EV_ON_MESSAGE, 2000));
        assertEquals(3, m3.get("id").asInt(), "the packet read across the upgrade went up whole");
        rx(pub2);   // the QoS 2 resend: the session store came along, it is not queued again
        assertEquals(MqttMessageType.PUBREC, written().get(0).fixedHeader().messageType());
        rx(client.pubrel(2));
        assertEquals(MqttMessageType.PUBCOMP, written().get(0).fixedHeader().messageType());
        answer(m3, -1);   // still 5.0 (the codec's channel came along): a refusal is a PUBACK 0x97, not a close
        out = written();
        assertEquals(MqttMessageType.PUBACK, out.get(0).fixedHeader().messageType());
        assertEquals(0x97, reason(out.get(0)));
        assertEquals(3, up.count(Ev.EV_ON_MESSAGE), "nothing queued twice, nothing lost");
        assertEquals(0, drops(), "the connection stayed open");
        assertEquals(1, up.count(Ev.EV_ON_OPEN));
        assertEquals(0, up.count(Ev.EV_ON_CLOSE));
    }

    @Test
    void shouldKeepTheDeadlinesOfItsTimersAcrossALiveUpgrade() {
        start("\"timeout_handshake\": 2000");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        rt.run(tcp::connect);
        clock.advance(1500);
        Revision.handOver(rt, Revision.next(ProtMqtt.SPEC), 1);
        clock.advance(400);
        assertEquals(0, drops());
        clock.advance(200);
        assertEquals(1, drops(), "the CONNECT was due 2 s after the connection, upgrade or not");
        assertTrue(logged("Timeout waiting CONNECT"));

        rt.run(() -> { });   // the close of that drop
        connect(client.encode(client.connectBuilder("ka").keepAlive(10).build()));
        clock.advance(10_000);
        Revision.handOver(rt, Revision.next(ProtMqtt.SPEC), 1);
        clock.advance(4_000);
        assertEquals(1, drops());
        clock.advance(1_500);
        assertEquals(2, drops(), "closed 1.5 keep-alives after the CONNECT, across the upgrade");
        assertTrue(logged("keep-alive timeout"));
    }

    @Test
    void shouldHoldWhatComesWhileSuspendedAndGoOnWithTheNextRevision() throws Exception {
        start("");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        connect(client.encode(client.connectBuilder("susp").cleanSession(false).keepAlive(10).build()));
        rx(client.publish("t", 1, 1, "{\"id\":1}"));
        ObjectNode m1 = message(up.await(Ev.EV_ON_MESSAGE, 2000));

        // a Bundle.update(): the gclasses go before their new revision exists
        rt.gclassesGone(List.of(ProtMqtt.GCLASS, ProtMqtt.GCLASS2));
        assertTrue(paused(), "reading stopped");
        answer(m1, 0);                                   // the ack waits in core
        rx(client.publish("t", 2, 2, "{\"id\":2}"));   // so does a read that was on its way
        assertTrue(written().isEmpty());
        assertEquals(1, up.count(Ev.EV_ON_MESSAGE));
        clock.advance(20_000);   // longer than 1.5 keep-alives: the suspension does not count against the client
        assertEquals(0, drops());

        ObjectNode report = rt.gclassesArrived(List.of(Revision.next(ProtMqtt.SPEC), Revision.next(ProtMqtt.SPEC2)));
        assertEquals(1, report.path("gobjs_migrated").asInt(), report.toString());
        assertEquals(0, report.path("rebuilt").size(), report.toString());
        assertEquals(MqttMessageType.PUBACK, written().get(0).fixedHeader().messageType());
        assertEquals(2, message(up.await(Ev.EV_ON_MESSAGE, 2000)).get("id").asInt());
        assertFalse(paused(), "reading resumed");
        clock.advance(14_000);
        assertEquals(0, drops());
        clock.advance(1_500);
        assertEquals(1, drops(), "the keep-alive runs again, from the last packet");
    }

    @Test
    void shouldRebuildFromItsSessionsOnDiskWhenTheNextRevisionRefusesTheState() throws Exception {
        start("");
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        connect(client.encode(client.connectBuilder("swap").cleanSession(false).build()));
        byte[] pub = client.publish("t", 2, 9, "{\"id\":9}");
        rx(pub);
        answer(message(up.await(Ev.EV_ON_MESSAGE, 2000)), 0);
        assertEquals(MqttMessageType.PUBREC, written().get(0).fixedHeader().messageType());
        GObj before = mq;
        // a revision that hands over a state version 2, then one that takes version 1 only
        Revision.handOver(rt, Revision.of(ProtMqtt.SPEC, 2, ProtMqtt::new), 1);
        ObjectNode report = rt.gclassArrived(ProtMqtt.SPEC);
        assertEquals(0, report.path("gobjs_migrated").asInt(), report.toString());
        assertEquals("up", report.path("rebuilt").path(0).path("service").asText(), report.toString());
        assertTrue(report.path("rebuilt").path(0).path("reason").asText().contains("takes state version 1, not 2"),
                report.toString());
        assertEquals(1, logs.count("Live upgrade not possible, service rebuilt from its config"));
        assertTrue(rt.call(before::isDestroyed), "the connection's gobj went with its service");

        found();
        client = new TestClient(MqttVersion.MQTT_3_1_1);
        List<MqttMessage> out = connect(client.encode(client.connectBuilder("swap").cleanSession(false).build()));
        assertTrue(((MqttConnAckMessage) out.get(0)).variableHeader().isSessionPresent(), "the session came back from disk");
        rx(pub);   // the PUBREC was lost in the rebuild: the resend is answered, not queued again
        assertEquals(MqttMessageType.PUBREC, written().get(0).fixedHeader().messageType());
        assertEquals(0, up.count(Ev.EV_ON_MESSAGE));
    }

    @Test
    void shouldLoadUnderItsYunetaName() {
        start(ProtMqtt.GCLASS2, "\"iamServer\": true, \"timeout_handshake\": 5000, \"tranger_queues\": null");
        assertEquals(MqttConnectReturnCode.CONNECTION_ACCEPTED, connAckCode(connect(MqttVersion.MQTT_3_1_1, "yuneta")));
        assertEquals("C_PROT_MQTT2", rt.call(mq::gclassName));
    }

    @Test
    void shouldRefuseClientModeAtCreate() {
        boolean failed = false;
        try {
            start("\"iamServer\": false");
        } catch (RuntimeException e) {
            failed = true;
        }
        assertTrue(failed, "iamServer false is a config error");
        rt = null;
    }

    @Test
    void shouldTellAPeerThatSendsMessagesDownItIsAnIngestOnce() {
        start("");
        connect(MqttVersion.MQTT_3_1_1, "down");
        for (int i = 0; i < 3; i++) {
            ObjectNode kw = Kw.create();
            kw.put("hello", i);
            rt.run(() -> ch.send(Ev.EV_SEND_MESSAGE, kw, null));
        }
        assertEquals(1, countLogs("C_PROT_MQTT is an ingest"));
        assertTrue(written().isEmpty());
    }
}
