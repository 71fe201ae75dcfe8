// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import io.netty.buffer.ByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.mqtt.MqttDecoder;
import io.netty.handler.codec.mqtt.MqttEncoder;
import io.netty.handler.codec.mqtt.MqttMessage;
import io.netty.handler.codec.mqtt.MqttMessageFactory;
import io.netty.handler.codec.mqtt.MqttVersion;
import io.netty.util.AttributeKey;
import io.netty.util.ReferenceCountUtil;

/**
 * Netty's codec-mqtt for one connection, outside any socket pipeline: C_TCP owns the socket and hands the gclass
 * its reads as EV_RX_DATA, so the decoder and encoder sit in an {@link EmbeddedChannel} of their own. The decoder
 * keeps the protocol version of the CONNECT it decoded in that channel, and the encoder writes v5 properties and
 * reason codes by it, as they would in a real pipeline.
 *
 * <p>The framer in front hands {@link #decode} whole packets, one at a time, so each call answers exactly one
 * message (or an invalid one whose {@link DecoderResult} holds the cause). One per connection, one thread.
 */
final class MqttCodec {
    /** Where MqttDecoder keeps the version (MqttCodecUtil.MQTT_VERSION_KEY, package-private in Netty). */
    private static final AttributeKey<MqttVersion> VERSION = AttributeKey.valueOf("NETTY_CODEC_MQTT_VERSION");

    private final EmbeddedChannel ch;

    MqttCodec(int maxPacketSize, int maxClientIdLength) {
        ch = new EmbeddedChannel(new MqttDecoder(maxPacketSize, maxClientIdLength), MqttEncoder.INSTANCE);
    }

    /**
     * The codec of a connection another revision of the gclass made (a live upgrade hands its channel over: the
     * version its decoder read from the CONNECT goes with it).
     *
     * @throws IllegalArgumentException when {@code ch} is not a codec's channel
     */
    MqttCodec(EmbeddedChannel ch) {
        if (ch == null || ch.pipeline().get(MqttDecoder.class) == null || ch.pipeline().get(MqttEncoder.class) == null) {
            throw new IllegalArgumentException("not an MQTT codec channel: " + ch);
        }
        this.ch = ch;
    }

    /** The channel the decoder and encoder sit in, for the next revision (it owns it from then on). */
    EmbeddedChannel channel() {
        return ch;
    }

    /** Decodes one whole packet (consumed). Never null: a failure is an invalid message. */
    MqttMessage decode(ByteBuf packet) {
        Object m;
        try {
            ch.writeInbound(packet);
            m = ch.readInbound();
            // a whole packet decodes to one message; anything more would be the decoder's, not the peer's
            for (Object extra; (extra = ch.readInbound()) != null; ) ReferenceCountUtil.release(extra);
        } catch (RuntimeException e) {
            return MqttMessageFactory.newInvalidMessage(e);
        }
        if (m instanceof MqttMessage) return (MqttMessage) m;
        ReferenceCountUtil.release(m);
        return MqttMessageFactory.newInvalidMessage(new IllegalStateException("packet decoded to nothing"));
    }

    /** Encodes one message into a buffer the caller owns. */
    ByteBuf encode(MqttMessage m) {
        ch.writeOutbound(m);
        return ch.readOutbound();
    }

    /** The version of the CONNECT decoded on this connection (MQTT 3.1.1 before one was). */
    MqttVersion version() {
        MqttVersion v = ch.attr(VERSION).get();
        return v == null ? MqttVersion.MQTT_3_1_1 : v;
    }

    /** Releases what the codec still holds. */
    void close() {
        ch.finishAndReleaseAll();
    }
}
