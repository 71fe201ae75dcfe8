// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.POJONode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

/**
 * The TCP4H deframer: a byte-level state machine with no Netty pipeline and no gobj, used by the gclass
 * ({@link ProtTcp4h}) and, in the tests, by a Netty decoder that drives it through an EmbeddedChannel.
 *
 * <pre>
 * offset 0..3 : uint32 big-endian L   (L = payload length + 4: the header counts itself)
 * offset 4..  : payload, exactly L - 4 bytes
 *
 * BEFORE DECODE (14 bytes, maybe split anywhere)       AFTER DECODE (2 frames)
 * +-------------+-------+-------------+-----+          +-------+   +-----+
 * | 00 00 00 07 | "abc" | 00 00 00 07 | "de"|  -----&gt;  | "abc" |   | ... | (the rest waits)
 * +-------------+-------+-------------+-----+          +-------+   +-----+
 * </pre>
 *
 * Rules (from {@code c_prot_tcp4h.c}): {@code n = L - 4} with unsigned 32-bit wrap; {@code L == 4} is the
 * error {@link Error#ZERO_LENGTH}; {@code n > maxPktSize} (which includes {@code L} in 0..3, wrapping to about
 * 4 GiB) is {@link Error#TOO_LONG}; {@code n == maxPktSize} is accepted. After an error the framer stops:
 * {@link #decode} answers null until {@link #reset}.
 *
 * <p>Ownership: {@link #decode} never releases {@code in}; it returns either a retained slice of {@code in}
 * (the whole payload was in this input) or a buffer of its own where a split payload was gathered. The caller
 * owns the returned frame. A payload being gathered is held by the framer until complete or {@link #reset}.
 * Not thread-safe: one framer per connection, used from one thread.
 */
public final class Tcp4hFramer {

    /** Header size in bytes. */
    public static final int HEADER_SIZE = 4;
    /** Default maximum payload, Yuneta's max block (16 MiB). */
    public static final int DEFAULT_MAX_PKT_SIZE = 16 * 1024 * 1024;
    /** The largest payload a Java buffer can hold (with its header). */
    public static final int MAX_MAX_PKT_SIZE = Integer.MAX_VALUE - 8;
    /** First capacity of a payload buffer gathered across reads; it grows up to the payload length. */
    private static final int GATHER_INITIAL = 64 * 1024;

    /** Why the framer stopped. */
    public enum Error {
        NONE,
        /** Header value 4: "frame_length cannot be 0". */
        ZERO_LENGTH,
        /** Payload length over max_pkt_size (header values 0..3 included): "tcp4h head too long". */
        TOO_LONG
    }

    private int header;
    private int headerBytes;
    /** Payload length of the frame whose header is complete; -1 while waiting for a header. */
    private int payloadLength = -1;
    /** The payload being gathered across inputs, or null. */
    private ByteBuf partial;
    private Error error = Error.NONE;
    private long badHeader;

    /**
     * The largest payload accepted for a {@code max_pkt_size} value: 0 or less means {@link #DEFAULT_MAX_PKT_SIZE},
     * and nothing goes over what a Java buffer holds.
     */
    public static int limit(long maxPktSize) {
        return maxPktSize <= 0 ? DEFAULT_MAX_PKT_SIZE : (int) Math.min(maxPktSize, MAX_MAX_PKT_SIZE);
    }

    /**
     * Consumes bytes of {@code in} up to the end of the next complete frame and returns its payload, or returns
     * null when {@code in} is exhausted without completing one, or when a header is bad (see {@link #error()}).
     * Call it again while it returns frames: bytes after a frame stay in {@code in}. A header is checked against
     * {@code maxPktSize} as given to the call that completes it (see {@link #limit}): the caller passes its limit
     * as it is now, so a changed limit applies from the next header on.
     */
    public ByteBuf decode(ByteBufAllocator alloc, ByteBuf in, long maxPktSize) {
        if (error != Error.NONE) {
            return null;
        }
        if (payloadLength < 0) {
            if (headerBytes == 0 && in.readableBytes() >= HEADER_SIZE) {
                header = in.readInt();
            } else {
                while (headerBytes < HEADER_SIZE && in.isReadable()) {
                    header = (header << 8) | in.readUnsignedByte();
                    headerBytes++;
                }
                if (headerBytes < HEADER_SIZE) {
                    return null;
                }
            }
            long l = header & 0xFFFFFFFFL;
            header = 0;
            headerBytes = 0;
            if (!checkHeader(l, limit(maxPktSize))) {
                return null;
            }
            payloadLength = (int) (l - HEADER_SIZE);
        }
        int n = payloadLength;
        if (partial == null) {
            if (in.readableBytes() >= n) {
                payloadLength = -1;
                return in.readRetainedSlice(n);
            }
            if (!in.isReadable()) {
                return null;
            }
            partial = alloc.buffer(Math.min(n, GATHER_INITIAL), n);
        }
        int missing = n - partial.readableBytes();
        int take = Math.min(missing, in.readableBytes());
        partial.writeBytes(in, take);
        if (take < missing) {
            return null;
        }
        ByteBuf frame = partial;
        partial = null;
        payloadLength = -1;
        return frame;
    }

    private boolean checkHeader(long l, int maxPktSize) {
        long n = (l - HEADER_SIZE) & 0xFFFFFFFFL;
        if (l == HEADER_SIZE) {
            error = Error.ZERO_LENGTH;
            badHeader = l;
            return false;
        }
        if (n > maxPktSize) {
            error = Error.TOO_LONG;
            badHeader = l;
            return false;
        }
        return true;
    }

    /** The reason the framer stopped, or {@link Error#NONE}. */
    public Error error() {
        return error;
    }

    /** The header value (L) that caused the error. */
    public long badHeader() {
        return badHeader;
    }

    /** True while a header is complete and its payload is not (the payload timeout runs then). */
    public boolean inPayload() {
        return payloadLength >= 0;
    }

    /** True when part of a header or of a payload is held. */
    public boolean hasPartial() {
        return headerBytes > 0 || payloadLength >= 0;
    }

    /** Bytes of payload gathered so far and held by the framer. */
    public int heldBytes() {
        return partial == null ? 0 : partial.readableBytes();
    }

    /**
     * For a live upgrade: where the framer is in the stream (part of a header, or a header and part of its payload,
     * the gathered bytes by reference), so that another revision's framer goes on mid-frame. This framer is then
     * empty, and releases nothing of what it gave.
     */
    public ObjectNode exportState() {
        ObjectNode s = JsonNodeFactory.instance.objectNode();
        s.put("header", header);
        s.put("header_bytes", headerBytes);
        s.put("payload_length", payloadLength);
        s.put("error", error.name());
        s.put("bad_header", badHeader);
        if (partial != null) s.putPOJO("partial", partial);
        partial = null;
        reset();
        return s;
    }

    /**
     * Goes on from where another framer stopped ({@link #exportState}). IllegalArgumentException when the state is not
     * one a framer can be in; nothing is taken then.
     */
    public void importState(JsonNode s) {
        int hb = s.path("header_bytes").asInt(0);
        int pl = s.path("payload_length").asInt(-1);
        Error e = Error.valueOf(s.path("error").asText(Error.NONE.name()));
        JsonNode pn = s.get("partial");
        ByteBuf p = null;
        if (pn != null && !pn.isNull()) {
            if (!(pn instanceof POJONode) || !(((POJONode) pn).getPojo() instanceof ByteBuf)) {
                throw new IllegalArgumentException("the gathered payload is not a buffer");
            }
            p = (ByteBuf) ((POJONode) pn).getPojo();
        }
        if (hb < 0 || hb >= HEADER_SIZE || pl < -1 || (pl >= 0 && hb != 0)
                || (p != null && (pl < 0 || p.readableBytes() >= pl))) {
            throw new IllegalArgumentException("not a framer state: header_bytes " + hb + ", payload_length " + pl
                    + ", gathered " + (p == null ? 0 : p.readableBytes()));
        }
        reset();
        header = s.path("header").asInt(0);
        headerBytes = hb;
        payloadLength = pl;
        partial = p;
        error = e;
        badHeader = s.path("bad_header").asLong(0);
    }

    /** Back to "waiting for a header", releasing a payload being gathered and clearing the error. */
    public void reset() {
        if (partial != null) {
            partial.release();
            partial = null;
        }
        header = 0;
        headerBytes = 0;
        payloadLength = -1;
        error = Error.NONE;
        badHeader = 0;
    }
}
