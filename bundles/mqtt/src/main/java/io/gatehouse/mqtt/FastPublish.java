// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;

/**
 * A PUBLISH read from its bytes, without Netty's decoder: the packet every message is, whose trip through the
 * codec's {@link io.netty.channel.embedded.EmbeddedChannel} pipeline and replaying decoder was a tenth of the core
 * loop in the MQTT ingest profile. Only the plain form is read: a QoS of 0 to 2, a topic of printable ASCII without
 * wildcards, a packet id that is not 0, no 5.0 properties (a property length of 0), the lengths consistent. For
 * anything else {@link #read} answers false and the caller hands the packet to the codec, which answers it as it
 * always did: the same message, or the same error. What it reads is what the decoder would (FastPublishTest).
 *
 * <p>One per connection, on its core loop.
 */
final class FastPublish {
    private static final int PUBLISH = 3;

    /** After {@link #read}: the topic (the last one's String when the bytes are the same). */
    String topic;
    int qos;
    /** After {@link #read}: the packet id, -1 at QoS 0 (as the decoder says). */
    int packetId;
    /** After {@link #read}: the index of the payload's first byte in the packet. */
    int payloadStart;

    private byte[] lastTopicBytes = new byte[0];

    /**
     * Reads {@code packet}, one whole packet from its reader index (not consumed), on a connection of MQTT 5.0 when
     * {@code v5}; false when it is not a PUBLISH in the plain form.
     */
    boolean read(ByteBuf packet, boolean v5) {
        int at = packet.readerIndex();
        int end = packet.writerIndex();
        if (end - at < 2) return false;
        int first = packet.getUnsignedByte(at);
        if ((first >> 4) != PUBLISH) return false;
        int q = (first >> 1) & 3;
        if (q == 3) return false;
        int i = at + 1;
        int remaining = 0;
        for (int shift = 0; ; shift += 7) {
            if (i >= end || shift > 21) return false;
            byte b = packet.getByte(i++);
            remaining |= (b & 0x7f) << shift;
            if ((b & 0x80) == 0) break;
        }
        if (remaining != end - i || end - i < 2) return false;
        int topicLength = packet.getUnsignedShort(i);
        int topicStart = i + 2;
        int topicEnd = topicStart + topicLength;
        int headerEnd = topicEnd + (q > 0 ? 2 : 0) + (v5 ? 1 : 0);
        if (topicLength == 0 || headerEnd > end) return false;
        for (int k = topicStart; k < topicEnd; k++) {
            byte c = packet.getByte(k);
            if (c < 0x20 || c == 0x7f || c == '+' || c == '#') return false;   // UTF-8, control, wildcard: the decoder's
        }
        int id = -1;
        if (q > 0) {
            id = packet.getUnsignedShort(topicEnd);
            if (id == 0) return false;
        }
        if (v5 && packet.getByte(headerEnd - 1) != 0) return false;   // properties: the decoder reads them
        topic = topic(packet, topicStart, topicLength);
        qos = q;
        packetId = id;
        payloadStart = headerEnd;
        return true;
    }

    /** The ASCII topic in {@code buf[from, from + length)}: a device publishes to the same topic again and again. */
    private String topic(ByteBuf buf, int from, int length) {
        byte[] last = lastTopicBytes;
        if (last.length == length && topic != null) {
            int k = 0;
            while (k < length && buf.getByte(from + k) == last[k]) k++;
            if (k == length) return topic;
        }
        byte[] b = new byte[length];
        buf.getBytes(from, b);
        lastTopicBytes = b;
        return new String(b, StandardCharsets.US_ASCII);
    }
}
