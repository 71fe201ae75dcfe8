// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledHeapByteBuf;

import java.nio.charset.StandardCharsets;

/**
 * Buffers for message payloads (gbuffers) with room reserved in front of them, so the protocol gobj below
 * writes its frame header in place instead of copying the payload behind the header into a second buffer.
 *
 * <pre>
 *  readerIndex = HEADROOM                     after C_PROT_TCP4H framed it in place
 *  +----------+----------------+              +------+---+----------------+
 *  | (unused) | payload ...    |   ------&gt;    |      |hdr| payload ...    |
 *  +----------+----------------+              +------+---+----------------+
 *             ^ readerIndex                          ^ readerIndex - 4
 * </pre>
 *
 * A producer that allocates with {@link #allocate} loses nothing if the protocol below has no header (the
 * room stays unused); a payload without room is copied as before. Bytes before the reader index are free
 * only in a buffer nobody else can see: {@link #canPrepend} accepts a root buffer (not a slice, duplicate or
 * composite, whose bytes may be shared) holding a single reference.
 */
public final class Gbuffers {
    private Gbuffers() {}

    /** Bytes reserved in front of a payload by {@link #allocate}: enough for TCP4H (4) and a websocket frame (14). */
    public static final int HEADROOM = 16;

    private static final Class<?> SIMPLE_LEAK_AWARE = load("io.netty.buffer.SimpleLeakAwareByteBuf");
    private static final Class<?> ADVANCED_LEAK_AWARE = load("io.netty.buffer.AdvancedLeakAwareByteBuf");

    private static Class<?> load(String name) {
        try {
            return Class.forName(name, false, ByteBuf.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            return null;   // another Netty: no buffer is taken for a leak-aware wrapper, payloads are copied
        }
    }

    /**
     * A pooled buffer for a payload of about {@code payloadCapacity} bytes (it grows as usual), with
     * {@link #HEADROOM} bytes reserved before its reader index. Write the payload with the write methods.
     */
    public static ByteBuf allocate(ByteBufAllocator alloc, int payloadCapacity) {
        return withHeadroom(alloc.buffer(HEADROOM + Math.max(0, payloadCapacity)));
    }

    /** {@link #allocate} with the default allocator. */
    public static ByteBuf allocate(int payloadCapacity) {
        return allocate(ByteBufAllocator.DEFAULT, payloadCapacity);
    }

    /**
     * {@link #allocate} on the heap, not pooled: for a small buffer that lives a moment on the core loop (an ack on
     * its way to a socket, where the tx buffer copies it into its batch). It reaches no pool arena and is never
     * sampled by Netty's leak detector, whose stack trace per sample cost more than such a buffer in a relay profile.
     * It is not counted in the default allocator's heap metric either: that count is two atomic updates per buffer,
     * 1.4 % of a durable forward's core loop, for a figure nothing here reads.
     */
    public static ByteBuf allocateHeap(int payloadCapacity) {
        return withHeadroom(new UnpooledHeapByteBuf(UnpooledByteBufAllocator.DEFAULT,
                HEADROOM + Math.max(0, payloadCapacity), Integer.MAX_VALUE));
    }

    private static ByteBuf withHeadroom(ByteBuf b) {
        return b.setIndex(HEADROOM, HEADROOM);
    }

    /**
     * Writes the JSON object {@code src[start, end)} (its '{' at start, white space after its '}' allowed) into
     * {@code out} with {@code mdHead} and {@code index} added as its last key, e.g. {@code "__md_trq__":{...,"msg":} then the index and
     * the two closing braces: a receiver takes the last of duplicate keys, so an object's own key of that name cannot
     * stand in for it. False, with nothing written, when the range is not an object's braces.
     */
    public static boolean writeWithLastKey(ByteBuf out, ByteBuf src, int start, int end, byte[] mdHead, long index) {
        int from = start;
        int close = end - 1;
        while (close > from && JsonScan.isWs(src.getByte(close))) close--;
        if (close <= from || src.getByte(from) != '{' || src.getByte(close) != '}') return false;
        int inner = close - 1;
        while (inner > from && JsonScan.isWs(src.getByte(inner))) inner--;
        boolean empty = inner == from;   // only white space between '{' and '}'
        out.writeBytes(src, from, (empty ? from + 1 : close) - from);
        if (!empty) out.writeByte(',');
        out.writeBytes(mdHead);
        writeDecimal(out, index);
        out.writeByte('}').writeByte('}');
        return true;
    }

    /**
     * {@code v} in decimal ASCII, as {@link Long#toString} writes it, with no String made: for numbers written into
     * messages on the hot path (queue metadata, acks, message ids). Two digits per division, as Long.toString does.
     */
    public static void writeDecimal(ByteBuf out, long v) {
        if (v >= 0 && v < 10) {
            out.writeByte('0' + (int) v);
            return;
        }
        if (v == Long.MIN_VALUE) {
            out.writeCharSequence(Long.toString(v), StandardCharsets.US_ASCII);
            return;
        }
        long m = Math.abs(v);
        int len = digits(m) + (v < 0 ? 1 : 0);
        out.ensureWritable(len);
        int at = out.writerIndex();
        if (out.hasArray()) {
            // the digits go straight into the array: no scratch, no bounds check per byte (a fifth of the MQTT
            // ingest's message building went to this method when it wrote through a scratch array)
            writeDigits(out.array(), out.arrayOffset() + at, len, m, v < 0);
        } else {
            byte[] d = new byte[len];
            writeDigits(d, 0, len, m, v < 0);
            out.setBytes(at, d);
        }
        out.writerIndex(at + len);
    }

    /** The number of decimal digits of {@code m} (not negative). */
    private static int digits(long m) {
        int n = 1;
        for (long p = 10; n < 19 && m >= p; p *= 10) n++;
        return n;
    }

    /** {@code m} in {@code len} bytes at {@code a[from]}, after a minus sign when {@code negative}. */
    private static void writeDigits(byte[] a, int from, int len, long m, boolean negative) {
        int p = from + len;
        while (m > Integer.MAX_VALUE) {
            long q = m / 100;
            int r = (int) (m - q * 100);
            m = q;
            a[--p] = DIGIT_ONES[r];
            a[--p] = DIGIT_TENS[r];
        }
        // the rest in int arithmetic, as Long.toString does: a rowid or a time in milliseconds is mostly here
        int i = (int) m;
        while (i >= 100) {
            int q = i / 100;
            int r = i - q * 100;
            i = q;
            a[--p] = DIGIT_ONES[r];
            a[--p] = DIGIT_TENS[r];
        }
        a[--p] = DIGIT_ONES[i];
        if (i >= 10) a[--p] = DIGIT_TENS[i];
        if (negative) a[--p] = '-';
    }

    private static final byte[] DIGIT_TENS = new byte[100];
    private static final byte[] DIGIT_ONES = new byte[100];

    static {
        for (int i = 0; i < 100; i++) {
            DIGIT_TENS[i] = (byte) ('0' + i / 10);
            DIGIT_ONES[i] = (byte) ('0' + i % 10);
        }
    }

    /**
     * True when {@code n} bytes before the reader index of {@code buf} may be overwritten: the caller owns the
     * buffer, it holds the only reference, it shares its memory with no other buffer, and the room is there.
     */
    public static boolean canPrepend(ByteBuf buf, int n) {
        if (buf.readerIndex() < n || buf.refCnt() != 1 || buf.isReadOnly()) return false;
        ByteBuf root = buf;
        Class<?> c = buf.getClass();
        if (c == SIMPLE_LEAK_AWARE || c == ADVANCED_LEAK_AWARE) {
            // Netty's leak detector wraps sampled buffers; the wrapper shares its indexes with the buffer it wraps.
            root = buf.unwrap();
            if (root == null || root.refCnt() != 1) return false;
        }
        return root.unwrap() == null && !(root instanceof CompositeByteBuf);
    }

    /**
     * Moves the reader index back by 4 and writes {@code value} there as a big-endian int (a TCP4H header).
     * Call only after {@link #canPrepend}{@code (buf, 4)} answered true.
     */
    public static ByteBuf prependInt(ByteBuf buf, int value) {
        int r = buf.readerIndex() - 4;
        buf.setInt(r, value);
        buf.readerIndex(r);
        return buf;
    }
}
