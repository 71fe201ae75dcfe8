// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.mqtt.MqttMessage;
import io.netty.handler.codec.mqtt.MqttPublishMessage;
import io.netty.handler.codec.mqtt.MqttVersion;
import io.netty.util.AttributeKey;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What {@link FastPublish} reads is what Netty's decoder reads from the same bytes, and whatever it leaves to the
 * decoder (other packets, odd topics, properties, broken lengths) it leaves untouched.
 */
class FastPublishTest {
    private static final String[] TOPICS = {"devices/7", "a", "telemetry/site-3/room 12/temp", "sport/+/x", "a/#",
        "caf\u00e9/1", "tab\there", "nul\u0000x", "", "$SYS/x", "x".repeat(300), "del\u007f"};

    /** A PUBLISH as a client writes it: {@code props} the 5.0 property bytes (length included), null on 3.1.1. */
    private static byte[] publish(int qos, boolean dup, boolean retain, byte[] topic, int topicLengthField, int id,
                                  byte[] props, byte[] payload) {
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        body.write(topicLengthField >> 8);
        body.write(topicLengthField & 0xff);
        body.writeBytes(topic);
        if (qos > 0) {
            body.write(id >> 8);
            body.write(id & 0xff);
        }
        if (props != null) body.writeBytes(props);
        body.writeBytes(payload);
        ByteArrayOutputStream p = new ByteArrayOutputStream();
        p.write(0x30 | (dup ? 8 : 0) | (qos << 1) | (retain ? 1 : 0));
        int len = body.size();
        do {
            int digit = len % 128;
            len /= 128;
            p.write(len > 0 ? digit | 0x80 : digit);
        } while (len > 0);
        p.writeBytes(body.toByteArray());
        return p.toByteArray();
    }

    private static MqttCodec codec(boolean v5) {
        MqttCodec c = new MqttCodec(1 << 20, 64);
        if (v5) {
            c.channel().attr(AttributeKey.<MqttVersion>valueOf("NETTY_CODEC_MQTT_VERSION")).set(MqttVersion.MQTT_5);
        }
        return c;
    }

    /**
     * True when the fast read took it; then the decoder read the same. A fresh decoder each time: after a refusal
     * Netty's discards all that follows (the connection is closed then).
     */
    private static boolean same(FastPublish fast, boolean v5, byte[] packet) {
        MqttCodec codec = codec(v5);
        try {
            return same(fast, codec, v5, packet);
        } finally {
            codec.close();
        }
    }

    private static boolean same(FastPublish fast, MqttCodec codec, boolean v5, byte[] packet) {
        ByteBuf in = Unpooled.buffer(packet.length + 3);
        in.writeBytes(new byte[] {7, 7, 7}).readerIndex(3);
        in.writeBytes(packet);
        boolean took = fast.read(in, v5);
        assertEquals(3, in.readerIndex(), "the read consumes nothing");
        MqttMessage m = codec.decode(Unpooled.wrappedBuffer(packet));
        try {
            if (!took) return false;
            assertTrue(m.decoderResult().isSuccess(), () -> "the decoder refused what the fast read took: "
                    + m.decoderResult() + " " + ByteBufUtil.hexDump(packet));
            MqttPublishMessage p = (MqttPublishMessage) m;
            assertEquals(p.variableHeader().topicName(), fast.topic);
            assertEquals(p.fixedHeader().qosLevel().value(), fast.qos);
            assertEquals(p.variableHeader().packetId(), fast.packetId);
            assertTrue(p.variableHeader().properties().isEmpty());
            byte[] payload = new byte[in.writerIndex() - fast.payloadStart];
            in.getBytes(fast.payloadStart, payload);
            assertArrayEquals(ByteBufUtil.getBytes(p.payload()), payload);
            return true;
        } finally {
            io.netty.util.ReferenceCountUtil.release(m);
        }
    }

    @Test
    void shouldReadThePlainPublishAsTheDecoderDoesAndLeaveTheRest() {
        byte[] json = "{\"id\":\"x-17\"}".getBytes(StandardCharsets.US_ASCII);
        byte[] t = "devices/7".getBytes(StandardCharsets.US_ASCII);
        for (boolean v5 : new boolean[] {false, true}) {
            FastPublish fast = new FastPublish();
            byte[] none = v5 ? new byte[] {0} : null;
            for (int qos = 0; qos <= 2; qos++) {
                assertTrue(same(fast, v5, publish(qos, false, false, t, t.length, 17, none, json)), "QoS " + qos);
                assertTrue(same(fast, v5, publish(qos, true, true, t, t.length, 65535, none, new byte[0])));
            }
            byte[][] left = {
                publish(1, false, false, "a/+".getBytes(StandardCharsets.US_ASCII), 3, 1, none, json),   // wildcard
                publish(1, false, false, "caf\u00e9".getBytes(StandardCharsets.UTF_8), 5, 1, none, json), // UTF-8
                publish(1, false, false, t, t.length, 0, none, json),                                       // id 0
                publish(1, false, false, new byte[0], 0, 1, none, json),                                   // no topic
                publish(1, false, false, t, 200, 1, none, json),                                           // topic past the end
                {0x36, 2, 0, 1},                                                                           // QoS 3
                {(byte) 0xc0, 0},                                                                          // PINGREQ
                {0x62, 2, 0, 1},                                                                           // PUBREL
            };
            for (byte[] p : left) assertFalse(same(fast, v5, p), ByteBufUtil.hexDump(p));
        }
        byte[] alias = {3, 0x23, 0, 5};   // a 5.0 Topic Alias property: the decoder reads properties
        assertFalse(same(new FastPublish(), true, publish(1, false, false, t, t.length, 1, alias, json)));
    }

    @Test
    void shouldAgreeWithTheDecoderOnRandomPackets() {
        Random r = new Random(17);
        int taken = 0;
        for (boolean v5 : new boolean[] {false, true}) {
            FastPublish fast = new FastPublish();
            for (int i = 0; i < 3000; i++) {
                byte[] topic = TOPICS[r.nextInt(TOPICS.length)].getBytes(StandardCharsets.UTF_8);
                int lengthField = r.nextInt(20) == 0 ? r.nextInt(400) : topic.length;
                byte[] props = !v5 ? null : r.nextInt(4) == 0 ? new byte[] {3, 0x23, 0, (byte) (1 + r.nextInt(9))}
                        : new byte[] {0};
                byte[] payload = new byte[r.nextInt(r.nextInt(10) == 0 ? 20_000 : 300)];
                r.nextBytes(payload);
                int qos = r.nextInt(10) == 0 ? 3 : r.nextInt(3);
                int id = r.nextInt(30) == 0 ? 0 : 1 + r.nextInt(65535);
                byte[] p = publish(qos, r.nextBoolean(), r.nextBoolean(), topic, lengthField, id, props, payload);
                if (r.nextInt(25) == 0) p[0] = (byte) (r.nextInt(16) << 4 | (p[0] & 0xf));   // another type
                if (same(fast, v5, p)) taken++;
            }
        }
        assertTrue(taken > 1000, "the plain packets (about a third) are read fast: " + taken);
    }
}
