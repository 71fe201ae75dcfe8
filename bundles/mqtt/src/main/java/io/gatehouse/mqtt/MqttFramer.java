// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * Cuts the byte stream of one connection into whole MQTT control packets, before Netty's decoder sees them.
 *
 * <pre>
 * byte 0      : packet type (high nibble) and flags
 * bytes 1..4  : Remaining Length, 7 bits per byte, high bit = "another byte follows" (at most 4 bytes)
 * then        : exactly Remaining Length bytes (variable header + payload)
 * </pre>
 *
 * Why a framer of our own in front of {@code MqttDecoder}: the decoder then always gets a complete packet (it
 * never replays a half one), a packet over the limit is refused from its fixed header alone (at most 5 bytes),
 * before a byte of its body is buffered, and the gclass knows when a packet is incomplete (its payload timer) and where to stop when the
 * input blocks. Ownership as in the TCP4H framer: {@link #decode} never releases {@code in}; it answers a
 * retained slice of it or a buffer of its own where a split packet was gathered. One per connection, one thread.
 */
final class MqttFramer {

    /** Why the framer stopped. */
    enum Error {
        NONE,
        /** More than 4 Remaining Length bytes: a malformed packet. */
        MALFORMED_LENGTH,
        /** Fixed header + Remaining Length over the limit. */
        TOO_LARGE
    }

    /** The MQTT maximum: 1 + 4 + 268,435,455 bytes. */
    static final int PROTOCOL_MAX_PACKET = 1 + 4 + 268_435_455;
    private static final int GATHER_INITIAL = 64 * 1024;

    private int maxPacketSize;
    /** Bytes of the fixed header read so far (type byte + length bytes); 0 while waiting for a packet. */
    private int headerBytes;
    private int firstByte;
    private int remaining;
    private int multiplier = 1;
    /** Packet length (fixed header included) once its header is complete; -1 before. */
    private int packetLength = -1;
    private ByteBuf partial;
    private Error error = Error.NONE;
    private long badLength;

    MqttFramer(long maxPacketSize) {
        setMaxPacketSize(maxPacketSize);
    }

    /** 0 or less: the protocol's own maximum. */
    void setMaxPacketSize(long max) {
        maxPacketSize = max <= 0 ? PROTOCOL_MAX_PACKET : (int) Math.min(max, PROTOCOL_MAX_PACKET);
    }

    int maxPacketSize() {
        return maxPacketSize;
    }

    /**
     * Consumes {@code in} up to the end of the next complete packet and answers it (fixed header included), or
     * null when {@code in} ends first or the packet is refused ({@link #error()}).
     */
    ByteBuf decode(ByteBufAllocator alloc, ByteBuf in) {
        if (error != Error.NONE) return null;
        if (packetLength < 0) {
            int start = in.readerIndex();
            if (headerBytes == 0 && partial == null) {
                // Fast path: the whole fixed header is in this input.
                if (!readHeader(in)) {
                    if (error != Error.NONE || headerBytes == 0) return null;   // refused, or nothing to read
                    // incomplete: keep what was read in a buffer of our own and carry on from there
                    partial = alloc.buffer(8);
                    partial.writeBytes(in, start, in.readerIndex() - start);
                    return null;
                }
            } else {
                int before = in.readerIndex();
                boolean done = readHeader(in);
                partial.writeBytes(in, before, in.readerIndex() - before);
                if (!done) return null;
            }
            if (partial == null) {
                // header and maybe body in this input: answer a slice when the body is here too
                if (in.readableBytes() >= remaining) {
                    int hdr = in.readerIndex() - start;
                    in.readerIndex(start);
                    ByteBuf packet = in.readRetainedSlice(hdr + remaining);
                    resetHeader();
                    return packet;
                }
                partial = alloc.buffer(Math.min(packetLength, GATHER_INITIAL), packetLength);
                partial.writeBytes(in, start, in.readerIndex() - start);
            } else {
                ByteBuf grown = alloc.buffer(Math.min(packetLength, GATHER_INITIAL), packetLength);
                grown.writeBytes(partial);
                partial.release();
                partial = grown;
            }
        }
        int missing = packetLength - partial.readableBytes();
        int take = Math.min(missing, in.readableBytes());
        partial.writeBytes(in, take);
        if (take < missing) return null;
        ByteBuf packet = partial;
        partial = null;
        resetHeader();
        return packet;
    }

    /** Reads fixed-header bytes; true once it is complete (then {@link #packetLength} is set and checked). */
    private boolean readHeader(ByteBuf in) {
        if (headerBytes == 0) {
            if (!in.isReadable()) return false;
            firstByte = in.readUnsignedByte();
            headerBytes = 1;
        }
        while (in.isReadable()) {
            int digit = in.readUnsignedByte();
            headerBytes++;
            remaining += (digit & 0x7f) * multiplier;
            multiplier *= 128;
            if ((digit & 0x80) == 0) {
                long total = (long) headerBytes + remaining;
                if (total > maxPacketSize) {
                    error = Error.TOO_LARGE;
                    badLength = total;
                    return false;
                }
                packetLength = (int) total;
                return true;
            }
            if (headerBytes == 5) {
                error = Error.MALFORMED_LENGTH;
                return false;
            }
        }
        return false;
    }

    private void resetHeader() {
        headerBytes = 0;
        firstByte = 0;
        remaining = 0;
        multiplier = 1;
        packetLength = -1;
    }

    Error error() {
        return error;
    }

    /** The packet length (at least) that was refused with {@link Error#TOO_LARGE}. */
    long badLength() {
        return badLength;
    }

    /** The first byte of the packet being read: its type in the high nibble (0 between packets). */
    int pendingType() {
        return firstByte >> 4;
    }

    /** True when part of a packet is held (the payload timer runs then). */
    boolean hasPartial() {
        return headerBytes > 0 || partial != null;
    }

    /**
     * What the framer holds, for a live upgrade: the fixed header read so far and the bytes gathered of a split
     * packet, by reference (they go with the state: the framer holds nothing afterwards). The limit is not in it:
     * it is the gobj's attribute.
     */
    ObjectNode exportState() {
        ObjectNode s = Kw.create();
        s.put("header_bytes", headerBytes).put("first_byte", firstByte).put("remaining", remaining)
                .put("multiplier", multiplier).put("packet_length", packetLength).put("error", error.name())
                .put("bad_length", badLength);
        if (partial != null) Kw.putRef(s, "partial", partial);
        partial = null;
        resetHeader();
        return s;
    }

    /**
     * Takes what {@link #exportState} gave: the next {@link #decode} goes on with the packet where the other revision
     * left it.
     *
     * @throws IllegalArgumentException when {@code s} is not such a state (nothing is taken then)
     */
    void importState(JsonNode s) {
        if (s == null || !s.path("header_bytes").isInt() || !s.path("packet_length").isInt()
                || !s.path("multiplier").isInt()) {
            throw new IllegalArgumentException("not an MQTT framer state: " + s);
        }
        ByteBuf p = Kw.ref(s, "partial", ByteBuf.class);
        if (p == null && s.has("partial")) throw new IllegalArgumentException("the framer's partial packet is not a ByteBuf");
        Error e;
        try {
            e = Error.valueOf(s.path("error").asText("NONE"));
        } catch (IllegalArgumentException bad) {
            throw new IllegalArgumentException("unknown framer error " + s.path("error"), bad);
        }
        reset();
        headerBytes = s.get("header_bytes").asInt();
        firstByte = s.path("first_byte").asInt();
        remaining = s.path("remaining").asInt();
        multiplier = s.get("multiplier").asInt();
        packetLength = s.get("packet_length").asInt();
        error = e;
        badLength = s.path("bad_length").asLong();
        partial = p;
    }

    void reset() {
        if (partial != null) {
            partial.release();
            partial = null;
        }
        resetHeader();
        error = Error.NONE;
        badLength = 0;
    }
}
