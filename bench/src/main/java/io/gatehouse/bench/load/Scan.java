package io.gatehouse.bench.load;

import io.netty.buffer.ByteBuf;

import java.nio.charset.StandardCharsets;

/**
 * Byte scans over a frame, shared by the load generator, the raw sink, the raw proxy and the delivery tracker:
 * the bench reads the few fields it needs (a rowid, a message id, a send time) straight from the bytes, so that
 * its own cost per message stays far below that of the paths it measures, and without a JSON tree.
 */
final class Scan {
    static final byte[] ROWID_KEY = "\"__msg_rowid__\":".getBytes(StandardCharsets.US_ASCII);

    private Scan() {}

    /** First index of {@code key} in the readable bytes of {@code b}, or -1. */
    static int indexOf(ByteBuf b, byte[] key) {
        return indexOf(b, key, b.readerIndex());
    }

    /** First index at or after {@code from} of {@code key} in the readable bytes of {@code b}, or -1. */
    static int indexOf(ByteBuf b, byte[] key, int from) {
        int last = b.writerIndex() - key.length;
        // candidates by the first byte, found by Netty's search (no bounds and reference-count check per byte)
        for (int i = from; i <= last; i++) {
            i = b.indexOf(i, last + 1, key[0]);
            if (i < 0) return -1;
            if (matches(b, i, key)) return i;
        }
        return -1;
    }

    /**
     * Last index of {@code key} in the readable bytes of {@code b}, or -1. The queue metadata comes last in every
     * frame the bench sees (the producer writes it last, a queue appends it, an ack is nothing else), so a scan
     * from the end finds it after a few bytes whatever the payload's size.
     */
    static int lastIndexOf(ByteBuf b, byte[] key) {
        for (int i = b.writerIndex() - key.length; i >= b.readerIndex(); i--) {
            // Netty's indexOf searches backwards when fromIndex > toIndex: [toIndex, fromIndex)
            i = b.indexOf(i + 1, b.readerIndex(), key[0]);
            if (i < 0) return -1;
            if (matches(b, i, key)) return i;
        }
        return -1;
    }

    private static boolean matches(ByteBuf b, int at, byte[] key) {
        for (int j = 1; j < key.length; j++) {
            if (b.getByte(at + j) != key[j]) return false;
        }
        return true;
    }

    /** The non-negative decimal number at {@code at} (spaces before it skipped), or -1 if there is none. */
    static long number(ByteBuf b, int at) {
        int k = at;
        int end = b.writerIndex();
        while (k < end && b.getByte(k) == ' ') k++;
        long v = 0;
        boolean any = false;
        while (k < end) {
            byte c = b.getByte(k++);
            if (c < '0' || c > '9') break;
            v = v * 10 + (c - '0');
            any = true;
        }
        return any ? v : -1;
    }

    /** The {@code __msg_rowid__} number of a producer's frame or of an ack, or -1. */
    static long rowid(ByteBuf b) {
        int at = lastIndexOf(b, ROWID_KEY);
        return at < 0 ? -1 : number(b, at + ROWID_KEY.length);
    }
}
