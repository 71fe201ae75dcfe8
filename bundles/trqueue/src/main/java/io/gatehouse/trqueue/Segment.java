// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * One segment file: a 64-byte header, then 8-byte aligned frames. The whole file is mapped so that an ack (a
 * 2-byte flag store), a content read and an append (one copy of the frame) cost no system call. The file space
 * under the mapping is allocated ahead of the write position with real writes ({@link FileOps#allocate}), so a
 * full disk is an IOException at allocation time and never a fault on a mapped page.
 */
final class Segment {
    static final int MAGIC = 0x47545251; // "GTRQ"
    static final int VERSION = 1;
    static final int HEADER = 64;
    static final int REC_HEADER = 40;
    static final int OFF_LEN = 0;
    static final int OFF_CRC = 4;
    static final int OFF_ROWID = 8;
    static final int OFF_T = 16;
    static final int OFF_TM = 24;
    static final int OFF_FLAG = 32;
    static final int OFF_SYSFLAG = 34;
    static final int OFF_GEN = 36;
    /**
     * A gap marker: damaged bytes that an open set aside and replaced, so that later opens skip them quietly.
     * 24 bytes, 8-byte aligned where a frame would start: {@code "GGAP"} (read as a frame length it is never
     * sane) · CRC32C of bytes 8..23 · length of the gap in bytes (marker included, up to the next frame) ·
     * low 32 bits of the generation · 0. The rest of the gap is zero-filled.
     */
    static final int GAP_MAGIC = 0x47474150;
    static final int GAP_HEADER = 24;

    final Path path;
    final long base;
    FileChannel ch;
    MappedByteBuffer map;
    /** Frame offsets inside the file, by rowid - base; 0 for a row lost in a gap (damaged, set aside). */
    int[] offsets = new int[256];
    int count;
    /** Where the next frame goes. */
    long end = HEADER;
    /**
     * Bytes [0, allocated) of the file have real blocks (written by this open: header, frames, zeros of
     * {@link FileOps#allocate}); never more than what is known, so stores below it cannot fault. Raised under
     * {@link #allocLock} by the owner or by the flusher allocating ahead ({@link Topic#allocateAhead}); read
     * without it.
     */
    volatile long allocated;
    /** Taken by whoever writes zeros at {@link #allocated}: the owner, or the flusher allocating ahead. */
    final Object allocLock = new Object();
    /** A live upgrade took the segment's state: this revision's flusher allocates nothing more (under the lock). */
    boolean allocationHandedOver;
    /** Set when the file could not be opened or read; its rows are unknown until a later load reads it. */
    String unreadable;
    /**
     * The frames from this file offset on are still in {@link #stage} (the owner's write-behind buffer, {@link
     * Topic#flushStage}), not in the file: reads of them come from there. {@link Long#MAX_VALUE} when nothing of
     * this segment is staged (every segment but the current one, and every one when the topic writes through).
     */
    long stageFrom = Long.MAX_VALUE;
    ByteBuffer stage;

    Segment(Path path, long base) {
        this.path = path;
        this.base = base;
    }

    static int align8(int n) {
        return (n + 7) & ~7;
    }

    long lastRowid() {
        return base + count - 1;
    }

    boolean has(long rowid) {
        return unreadable == null && rowid >= base && rowid < base + count && offsets[(int) (rowid - base)] != 0;
    }

    int offset(long rowid) {
        return offsets[(int) (rowid - base)];
    }

    void add(int off) {
        if (count == offsets.length) offsets = Arrays.copyOf(offsets, count + (count >> 1) + 16);
        offsets[count++] = off;
    }

    /** The flag as stored in the frame (the file or the stage); {@link Topic#flag} also sees the ones not written yet. */
    int flag(int off) {
        return off >= stageFrom ? stage.getShort((int) (off - stageFrom) + OFF_FLAG) & 0xFFFF
                : map.getShort(off + OFF_FLAG) & 0xFFFF;
    }

    /** Stores the flag through the mapping: recovery, and a topic that writes through ({@link Topic#setFlag}). */
    void setFlag(int off, int flag) {
        map.putShort(off + OFF_FLAG, (short) flag);
    }

    long t(int off) {
        return off >= stageFrom ? stage.getLong((int) (off - stageFrom) + OFF_T) : map.getLong(off + OFF_T);
    }

    long tm(int off) {
        return off >= stageFrom ? stage.getLong((int) (off - stageFrom) + OFF_TM) : map.getLong(off + OFF_TM);
    }

    int sysFlag(int off) {
        return off >= stageFrom ? stage.getShort((int) (off - stageFrom) + OFF_SYSFLAG) & 0xFFFF
                : map.getShort(off + OFF_SYSFLAG) & 0xFFFF;
    }

    int frameLen(int off) {
        return off >= stageFrom ? stage.getInt((int) (off - stageFrom) + OFF_LEN) : map.getInt(off + OFF_LEN);
    }

    /** Copies {@code len} bytes of the frame at {@code off} into {@code dst}. */
    void get(int off, byte[] dst, int len) {
        if (off >= stageFrom) stage.get((int) (off - stageFrom), dst, 0, len);
        else map.get(off, dst, 0, len);
    }

    static String fileName(long base) {
        return String.format("%020d.seg", base);
    }

    /** The base rowid of a segment file name, or -1 when the name is not a segment's. */
    static long baseOf(Path p) {
        String n = p.getFileName().toString();
        if (n.length() != 24 || !n.endsWith(".seg")) return -1;
        try {
            return Long.parseLong(n.substring(0, 20));
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
