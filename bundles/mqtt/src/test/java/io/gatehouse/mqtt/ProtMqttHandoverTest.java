// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
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
import io.netty.handler.codec.mqtt.MqttMessage;
import io.netty.handler.codec.mqtt.MqttMessageType;
import io.netty.handler.codec.mqtt.MqttVersion;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A live upgrade of C_PROT_MQTT, in the pattern of the other bundles' handover tests: the connection stays, with
 * the same transport below, its counters, and a QoS 1 ack of what the old revision sent up answered by the new one;
 * an unconnected gobj stays unconnected; a state of another version or shape is refused whole. The rows about a
 * packet split across the upgrade, the timers' deadlines, a suspension and a rebuild from the sessions on disk are
 * in ProtMqttTest ("Live upgrade").
 */
@Timeout(30)
class ProtMqttHandoverTest {
    private static final String CONFIG = "{\"services\": [{\"name\": \"up\", \"gclass\": \"C_RECORDER\", \"children\": ["
            + "  {\"name\": \"ch\", \"gclass\": \"C_CHANNEL\", \"children\": ["
            + "     {\"name\": \"mq\", \"gclass\": \"C_PROT_MQTT\", \"children\": ["
            + "        {\"name\": \"tcp\", \"gclass\": \"C_FAKE_SOCKET\"}]}]}]}]}";

    @TempDir
    Path data;

    private final ManualClock clock = new ManualClock();
    private final LogCapture logs = new LogCapture();
    private YunoRuntime rt;
    private int taken;

    @BeforeEach
    void setUp() {
        rt = YunoRuntime.builder().name("mqttup").clock(clock).dataDir(data).upgradeGraceMs(60_000)
                .gclass(ProtMqtt.SPEC, ProtMqtt.SPEC2, FakeSocket.SPEC, new ChannelGClass().spec(), Recorder.SPEC)
                .config(CONFIG).build().start();
    }

    @AfterEach
    void tearDown() {
        rt.close();
        logs.close();
    }

    private GObj ch() {
        return rt.call(() -> rt.service("up").child("ch"));
    }

    private GObj mq() {
        return rt.call(() -> ch().bottom());
    }

    private FakeSocket tcp() {
        return rt.call(() -> (FakeSocket) mq().bottom().behavior());
    }

    private Recorder up() {
        return rt.call(() -> (Recorder) rt.service("up").behavior());
    }

    private List<MqttMessage> written(TestClient c) {
        List<FakeSocket.Sent> tx = tcp().sent(Ev.EV_TX_DATA);
        ByteBuf all = Unpooled.buffer();
        for (FakeSocket.Sent x : tx.subList(taken, tx.size())) all.writeBytes(x.bytes);
        taken = tx.size();
        return c.read(all);
    }

    private void answer(Recorder.Event e, int result) throws Exception {
        ObjectNode msg = Kw.parse(Unpooled.wrappedBuffer(e.payload));
        ObjectNode md = ((ObjectNode) msg.get(Kw.MD_TRQ)).deepCopy();
        md.put(Kw.RESULT, result);
        ObjectNode ack = Kw.create();
        ack.set(Kw.MD_TRQ, md);
        ByteBuf b = Unpooled.buffer();
        Kw.writeJson(ack, b);
        rt.run(() -> ch().send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(b), null));
    }

    @Test
    void shouldKeepTheConnectionItsCountersAndItsAcksAcrossTheUpgrade() throws Exception {
        TestClient c = new TestClient(MqttVersion.MQTT_3_1_1);
        FakeSocket tcp = tcp();
        rt.run(tcp::connect);
        rt.run(() -> tcp.receive(c.connect("dev")));
        assertEquals(MqttMessageType.CONNACK, written(c).get(0).fixedHeader().messageType());
        rt.run(() -> tcp.receive(c.publish("t", 1, 1, "{\"id\":1}")));
        Recorder.Event m1 = up().await(Ev.EV_ON_MESSAGE, 2000);
        GObjBehavior old = rt.call(() -> mq().behavior());

        Revision.handOver(rt, Revision.next(ProtMqtt.SPEC), 1);

        assertNotSame(old, rt.call(() -> mq().behavior()), "a new behaviour");
        assertSame(tcp, tcp(), "the same transport below");
        assertEquals(St.ST_CONNECTED, rt.call(() -> mq().state()));
        assertEquals(1, rt.call(() -> mq().readAttr("publish_qos1").asLong()), "the counters as they were");
        assertEquals(1, rt.call(() -> mq().readAttr("inflight").asLong()));
        answer(m1, 0);
        List<MqttMessage> out = written(c);
        assertEquals(MqttMessageType.PUBACK, out.get(0).fixedHeader().messageType(), "the new revision answers it");
        rt.run(() -> tcp.receive(c.publish("t", 1, 2, "{\"id\":2}")));
        answer(up().await(Ev.EV_ON_MESSAGE, 2000), 0);
        assertEquals(MqttMessageType.PUBACK, written(c).get(0).fixedHeader().messageType(), "and goes on reading");
        assertEquals(0, tcp.sent(Ev.EV_DROP).size(), "never closed");
        assertEquals(1, up().count(Ev.EV_ON_OPEN));
        assertEquals(0, up().count(Ev.EV_ON_CLOSE));
    }

    @Test
    void shouldKeepAnUnconnectedGobjUnconnected() {
        Revision.handOver(rt, Revision.next(ProtMqtt.SPEC), 1);
        assertEquals(St.ST_DISCONNECTED, rt.call(() -> mq().state()));
        TestClient c = new TestClient(MqttVersion.MQTT_5);
        FakeSocket tcp = tcp();
        rt.run(tcp::connect);
        rt.run(() -> tcp.receive(c.connect("later")));
        assertEquals(MqttMessageType.CONNACK, written(c).get(0).fixedHeader().messageType(), "a connection after it works");
    }

    @Test
    void shouldRefuseAStateOfAnotherVersionOrShapeWhole() {
        ProtMqtt fresh = rt.call(() -> (ProtMqtt) ProtMqtt.SPEC.factory().apply(mq()));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> fresh.onImport(Kw.create(), 2));
        assertTrue(e.getMessage().contains("takes state version 1, not 2"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> fresh.onImport(Kw.create(), 1),
                "a state without its parts");
    }
}
