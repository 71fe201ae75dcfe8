// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.mqtt.MqttConnectMessage;
import io.netty.handler.codec.mqtt.MqttDecoder;
import io.netty.handler.codec.mqtt.MqttEncoder;
import io.netty.handler.codec.mqtt.MqttFixedHeader;
import io.netty.handler.codec.mqtt.MqttMessage;
import io.netty.handler.codec.mqtt.MqttMessageBuilders;
import io.netty.handler.codec.mqtt.MqttMessageIdVariableHeader;
import io.netty.handler.codec.mqtt.MqttMessageType;
import io.netty.handler.codec.mqtt.MqttProperties;
import io.netty.handler.codec.mqtt.MqttQoS;
import io.netty.handler.codec.mqtt.MqttVersion;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** The client side of the wire in unit tests: Netty's own codec, encoding what a client sends, decoding what it reads. */
final class TestClient {
    private final EmbeddedChannel ch = new EmbeddedChannel(new MqttDecoder(), MqttEncoder.INSTANCE);
    final MqttVersion version;

    TestClient(MqttVersion version) {
        this.version = version;
    }

    byte[] encode(MqttMessage m) {
        ch.writeOutbound(m);
        ByteBuf b = ch.readOutbound();
        byte[] out = ByteBufUtil.getBytes(b);
        b.release();
        return out;
    }

    MqttMessageBuilders.ConnectBuilder connectBuilder(String clientId) {
        return MqttMessageBuilders.connect().protocolVersion(version).clientId(clientId).cleanSession(true).keepAlive(60);
    }

    byte[] connect(String clientId) {
        return encode(connectBuilder(clientId).build());
    }

    byte[] connect(MqttConnectMessage m) {
        return encode(m);
    }

    byte[] publish(String topic, int qos, int id, String payload) {
        return encode(MqttMessageBuilders.publish().topicName(topic).qos(MqttQoS.valueOf(qos)).messageId(id)
                .payload(Unpooled.copiedBuffer(payload, StandardCharsets.UTF_8)).build());
    }

    byte[] publish(String topic, int qos, int id, String payload, MqttProperties props) {
        return encode(MqttMessageBuilders.publish().topicName(topic).qos(MqttQoS.valueOf(qos)).messageId(id)
                .properties(props).payload(Unpooled.copiedBuffer(payload, StandardCharsets.UTF_8)).build());
    }

    byte[] pubrel(int id) {
        return encode(new MqttMessage(new MqttFixedHeader(MqttMessageType.PUBREL, false, MqttQoS.AT_LEAST_ONCE, false, 0),
                MqttMessageIdVariableHeader.from(id)));
    }

    byte[] simple(MqttMessageType type) {
        return encode(new MqttMessage(new MqttFixedHeader(type, false, MqttQoS.AT_MOST_ONCE, false, 0)));
    }

    byte[] subscribe(int id, String... filters) {
        MqttMessageBuilders.SubscribeBuilder b = MqttMessageBuilders.subscribe().messageId(id);
        for (String f : filters) b.addSubscription(MqttQoS.AT_LEAST_ONCE, f);
        return encode(b.build());
    }

    /** Decodes what the server wrote (released). */
    List<MqttMessage> read(ByteBuf written) {
        ch.writeInbound(written);
        List<MqttMessage> out = new ArrayList<>();
        for (Object m; (m = ch.readInbound()) != null; ) out.add((MqttMessage) m);
        return out;
    }
}
