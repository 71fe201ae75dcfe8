// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.support.Glog;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Opening a {@link Topic}: reads its descriptor and variables and scans its segment files, repairing what a crash
 * or a damaged device left in them (a torn tail is cut, damaged records and broken segments are set aside). It
 * runs once per open, and again at load for the segments an open could not read; it yields the topic's segment
 * list, {@code lastRowid}, {@code lostRows} and {@code pendingOnDisk}. Every repair is logged once, by the open
 * that makes it: the next open finds the repaired files.
 */
final class TopicRecovery {
    private final Topic tp;
    private final FileOps ops;
    private final Path rowidDir;
    private final String name;
    private final long generation;
    private final int genLow;
    private final int segmentSize;
    private final int maxMessageSize;
    private final CRC32C crc = new CRC32C();

    private TopicRecovery(Topic tp) {
        this.tp = tp;
        this.ops = tp.ops;
        this.rowidDir = tp.rowidDir;
        this.name = tp.name;
        this.generation = tp.generation;
        this.genLow = tp.genLow;
        this.segmentSize = tp.segmentSize;
        this.maxMessageSize = tp.maxMessageSize;
    }

    // --- Opening ---

    /** Opens the topic in {@code dir}: its files are recovered before the topic is handed out. */
    static Topic open(FileOps ops, Path dir, String name, int segmentSize, int maxMessageSize)
            throws TopicException {
        ObjectNode desc;
        try {
            JsonNode n = Kw.MAPPER.readTree(ops.readAll(dir.resolve(Topic.DESC)));
            if (!(n instanceof ObjectNode) || !n.path("generation").canConvertToLong()) {
                throw new IOException("not a gatehouse topic descriptor");
            }
            desc = (ObjectNode) n;
        } catch (IOException | RuntimeException e) {
            throw new TopicException("Cannot open topic: topic_desc.json does not load", e);
        }
        Topic tp = new Topic(ops, dir, name, desc, segmentSize, maxMessageSize);
        new TopicRecovery(tp).recover();
        return tp;
    }

    /**
     * What an open of the topic in {@code dir} would find first (the descriptor's bytes, the listing of keys/),
     * read without logging: a queue without topic tries the open again only when this changed.
     */
    static String fingerprint(FileOps ops, Path dir) {
        StringBuilder sb = new StringBuilder();
        try {
            byte[] d = ops.readAll(dir.resolve(Topic.DESC));
            sb.append("desc:").append(d.length).append(':').append(Arrays.hashCode(d));
        } catch (IOException | RuntimeException e) {
            sb.append("desc-err:").append(e.getClass().getName()).append(':').append(e.getMessage());
        }
        try {
            ops.list(dir.resolve("keys"));
            sb.append("|keys");
        } catch (IOException | RuntimeException e) {
            sb.append("|keys-err:").append(e.getClass().getName());
        }
        return sb.toString();
    }

    private void recover() throws TopicException {
        try {
            ops.list(tp.keysDir);
        } catch (IOException e) {
            throw new TopicException("Cannot open topic: its keys cannot be listed", e);
        }
        loadVars();
        List<Path> files = new ArrayList<>();
        if (ops.isDirectory(rowidDir)) {
            try {
                for (Path p : ops.list(rowidDir)) {
                    if (Segment.baseOf(p) >= 1) files.add(p);
                }
            } catch (IOException e) {
                throw new TopicException("Cannot open topic: its keys cannot be listed", e);
            }
        }
        try {
            for (int i = 0; i < files.size(); i++) {
                Path p = files.get(i);
                long nextBase = i + 1 < files.size() ? Segment.baseOf(files.get(i + 1)) : -1;
                Segment s = new Segment(p, Segment.baseOf(p));
                if (openSegment(s, nextBase)) tp.segments.add(s);
            }
        } catch (TopicException e) {
            tp.close();
            throw e;
        }
        tp.current = tp.segments.isEmpty() ? null : tp.segments.get(tp.segments.size() - 1);
        long last = 0;
        for (Segment s : tp.segments) {
            if (s.unreadable == null && s.count > 0) last = Math.max(last, s.lastRowid());
        }
        if (tp.current != null) last = Math.max(last, tp.current.base - 1);
        tp.lastRowid = last;
        tp.writtenRowid = last;
    }

    private void loadVars() {
        Path vp = tp.dir.resolve(Topic.VARS);
        try {
            JsonNode n = Kw.MAPPER.readTree(ops.readAll(vp));
            if (!(n instanceof ObjectNode)) throw new IOException("not a JSON object");
            tp.vars = (ObjectNode) n;
            return;
        } catch (java.nio.file.NoSuchFileException e) {
            Glog.info(null, "Re-Creating topic_var.json", "topic", name, "path", vp.toString());
        } catch (IOException | RuntimeException e) {
            Glog.error(null, "Cannot load topic_var.json, its variables are ignored", "topic", name,
                    "cause", String.valueOf(e.getMessage()));
        }
        tp.vars = Kw.create();
        try {
            tp.saveVars();
        } catch (IOException e) {
            Glog.error(null, "Cannot write topic_var.json", "topic", name, "cause", String.valueOf(e.getMessage()));
        }
    }

    // --- Segments ---

    /**
     * Opens and validates one segment. Answers false when it was set aside whole. A segment that cannot be read is
     * kept as unreadable (its rows are unknown and every load says so) unless it is the last one: appends need its
     * end, so the open fails.
     */
    private boolean openSegment(Segment s, long nextBase) throws TopicException {
        boolean last = nextBase < 0;
        int maxFrame = Segment.align8(Segment.REC_HEADER + maxMessageSize);
        try {
            s.ch = ops.open(s.path, EnumSet.of(StandardOpenOption.READ, StandardOpenOption.WRITE));
            long size = s.ch.size();
            ByteBuffer hb = ByteBuffer.allocate(Segment.HEADER);
            boolean headerOk = false;
            if (size >= Segment.HEADER) {
                readFully(s, hb, 0);
                if (hb.getInt(0) == Segment.MAGIC && hb.getLong(8) != generation) {
                    setAsideWhole(s, "segment of another generation");
                    return false;
                }
                headerOk = validHeader(hb, s.base);
            }
            // frames: scan in big windows, one read per window, not one per record
            Window w = new Window(s, size, Math.max(1 << 20, maxFrame + Segment.REC_HEADER));
            long pos = Segment.HEADER;
            long expected = s.base;
            // rows from `expected` on may be missing from here: the start of a known gap, else pos
            long lostSince = pos;
            boolean restZero = false;
            while (pos + Segment.REC_HEADER <= size) {
                long maxRowid = maxRowidAt(pos, lostSince, expected, nextBase);
                long rowid = frameAt(w, pos, expected, maxRowid);
                if (rowid < 0) {
                    long gap = gapAt(w, pos);
                    if (gap > 0) { // a damaged region set aside by an earlier open
                        pos += gap;
                        continue;
                    }
                    if (!last) break;
                    long[] found = resync(w, pos, lostSince, expected);
                    if (found == null) { // a torn tail, or space not yet written
                        restZero = w.allZero;
                        break;
                    }
                    setAsideDamaged(s, w, pos, found[0], expected, found[1] - 1);
                    pos = found[0];
                    continue;
                }
                int rel = w.rel(pos);
                int len = w.b.getInt(rel);
                if ((w.b.getShort(rel + Segment.OFF_FLAG) & TrQueue.MSG_PENDING) != 0) tp.pendingOnDisk++;
                while (expected < rowid) { // the rows of a gap
                    s.add(0);
                    expected++;
                }
                s.add((int) pos);
                expected++;
                pos += Segment.align8(len);
                lostSince = pos;
                if (!last && expected == nextBase) break;
            }
            // the last frame's padding may be missing from a cut file: the next frame still goes after it
            long validEnd = Math.min(pos, Math.max(size, Segment.HEADER));
            // a segment salvaged before says how many rows it kept: the rowids after them are a known gap
            long sealed = headerOk ? hb.getLong(24) : 0;
            boolean complete = expected == nextBase || (sealed > 0 && expected == s.base + sealed - 1);
            if (!last && !complete) {
                salvage(s, validEnd, nextBase);
            } else if (last && validEnd < size && !restZero) {
                cutTail(s, validEnd, size);
            }
            if (!headerOk) {
                tp.writeHeader(s);
                Glog.warn(null, "Queue segment header repaired", "topic", name, "segment", s.path.toString());
            }
            s.end = pos;
            s.allocated = pos; // what lies after the last frame may be a hole: allocated again before use
            long mapSize = last ? Math.max(segmentSize, s.ch.size()) : s.ch.size();
            s.map = s.ch.map(FileChannel.MapMode.READ_WRITE, 0, mapSize);
            return true;
        } catch (IOException e) {
            Topic.closeQuietly(s);
            if (last) throw new TopicException("Cannot open topic: its last segment cannot be read", e);
            s.unreadable = e.getClass().getSimpleName() + ": " + e.getMessage();
            s.count = 0;
            Glog.error(null, "Queue segment cannot be read", "topic", name, "segment", s.path.toString(),
                    "cause", s.unreadable);
            return true;
        }
    }

    /**
     * Tries again, at load, the segments of {@code tp} that its open could not read; answers true when every
     * segment is readable now.
     */
    static boolean retryUnreadable(Topic tp) {
        return new TopicRecovery(tp).retryUnreadable();
    }

    private boolean retryUnreadable() {
        List<Segment> segments = tp.segments;
        boolean all = true;
        for (int i = 0; i < segments.size(); i++) {
            Segment s = segments.get(i);
            if (s.unreadable == null) continue;
            long nextBase = i + 1 < segments.size() ? segments.get(i + 1).base : -1;
            Segment fresh = new Segment(s.path, s.base);
            try {
                if (openSegment(fresh, nextBase)) {
                    segments.set(i, fresh);
                    if (fresh.unreadable != null) all = false;
                } else {
                    segments.remove(i--);
                }
            } catch (TopicException e) {
                all = false;
            }
        }
        return all;
    }

    /** A read window over a segment file being scanned. */
    private final class Window {
        final Segment s;
        final long size;
        final ByteBuffer b;
        final byte[] arr;
        long start = -1;
        int len;
        /** Set by {@link #resync}: every byte it went over was zero. */
        boolean allZero;

        Window(Segment s, long size, int capacity) {
            this.s = s;
            this.size = size;
            this.b = ByteBuffer.allocate((int) Math.min(capacity, Math.max(size, Segment.REC_HEADER)));
            this.arr = b.array();
        }

        /** Makes bytes [pos, pos + n) readable in the window; false when they go past the end of the file. */
        boolean ensure(long pos, int n) throws IOException {
            if (pos + n > size) return false;
            if (start < 0 || pos < start || pos + n > start + len) {
                start = pos;
                len = fill(s, b, pos, size);
            }
            return true;
        }

        int rel(long pos) {
            return (int) (pos - start);
        }
    }

    /** The highest rowid a frame at pos may carry: the next one, or more after a gap of that many bytes. */
    private static long maxRowidAt(long pos, long lostSince, long expected, long nextBase) {
        long max = expected + (pos - lostSince) / Segment.REC_HEADER;
        return nextBase < 0 ? max : Math.min(max, nextBase - 1);
    }

    /**
     * The rowid of a valid frame at pos (length sane and inside the file, generation, rowid in [min, max], CRC32C),
     * else -1. A valid frame is left readable in the window.
     */
    private long frameAt(Window w, long pos, long minRowid, long maxRowid) throws IOException {
        if (!w.ensure(pos, Segment.REC_HEADER)) return -1;
        int rel = w.rel(pos);
        int len = w.b.getInt(rel);
        if (len < Segment.REC_HEADER || len > Segment.align8(Segment.REC_HEADER + maxMessageSize)
                || pos + len > w.size) return -1;
        if (w.b.getInt(rel + Segment.OFF_GEN) != genLow) return -1;
        long rowid = w.b.getLong(rel + Segment.OFF_ROWID);
        if (rowid < minRowid || rowid > maxRowid) return -1;
        if (!w.ensure(pos, len)) return -1;
        rel = w.rel(pos);
        crc.reset();
        crc.update(w.arr, rel + Segment.OFF_ROWID, Segment.OFF_FLAG - Segment.OFF_ROWID);
        crc.update(w.arr, rel + Segment.OFF_SYSFLAG, len - Segment.OFF_SYSFLAG);
        return (int) crc.getValue() == w.b.getInt(rel + Segment.OFF_CRC) ? rowid : -1;
    }

    /** The length of a valid gap marker at pos, else -1. */
    private long gapAt(Window w, long pos) throws IOException {
        if (!w.ensure(pos, Segment.GAP_HEADER)) return -1;
        int rel = w.rel(pos);
        if (w.b.getInt(rel) != Segment.GAP_MAGIC || w.b.getInt(rel + 16) != genLow) return -1;
        long gap = w.b.getLong(rel + 8);
        if (gap < Segment.GAP_HEADER || (gap & 7) != 0 || pos + gap > w.size) return -1;
        crc.reset();
        crc.update(w.arr, rel + 8, Segment.GAP_HEADER - 8);
        return (int) crc.getValue() == w.b.getInt(rel + 4) ? gap : -1;
    }

    /**
     * After an invalid frame at pos, looks for the next valid one position by position (frames are 8-byte
     * aligned; a damaged length is never trusted to skip). Answers {offset, rowid}, or null when none follows;
     * then {@code w.allZero} tells whether every byte from pos to the end of the file is zero.
     */
    private long[] resync(Window w, long pos, long lostSince, long expected) throws IOException {
        boolean zero = true;
        for (long q = pos; q < w.size; q += 8) {
            int n = (int) Math.min(8, w.size - q);
            if (zero) {
                w.ensure(q, n);
                int rel = w.rel(q);
                if (n == 8) {
                    zero = w.b.getLong(rel) == 0;
                } else {
                    for (int i = 0; i < n; i++) if (w.arr[rel + i] != 0) zero = false;
                }
            }
            if (q > pos && q + Segment.REC_HEADER <= w.size) {
                long rowid = frameAt(w, q, expected, maxRowidAt(q, lostSince, expected, -1));
                if (rowid >= 0) return new long[] {q, rowid};
            }
        }
        w.allZero = zero;
        return null;
    }

    /**
     * A damaged region [from, to) followed by valid frames: its bytes are copied aside, it is replaced by a gap
     * marker (later opens skip it quietly) and forced, and the rows it held are lost.
     */
    private void setAsideDamaged(Segment s, Window w, long from, long to, long lostFrom, long lostTo)
            throws IOException {
        int n = (int) (to - from);
        ByteBuffer bad = ByteBuffer.allocate(n);
        readFully(s, bad, from);
        Path aside = s.path.resolveSibling(s.path.getFileName() + ".damaged-" + from + "-" + System.currentTimeMillis());
        ops.writeAtomic(aside, bad.array());
        ByteBuffer fill = ByteBuffer.allocate(Math.min(n, 1 << 16));
        for (long p = from; p < to; ) {
            boolean marker = p == from && n >= Segment.GAP_HEADER;
            if (marker) {
                fill.putInt(0, Segment.GAP_MAGIC).putInt(4, 0).putLong(8, n).putInt(16, genLow).putInt(20, 0);
                crc.reset();
                crc.update(fill.array(), 8, Segment.GAP_HEADER - 8);
                fill.putInt(4, (int) crc.getValue());
            }
            fill.clear();
            fill.limit((int) Math.min(fill.capacity(), to - p));
            while (fill.hasRemaining()) p += ops.write(s.path, s.ch, fill, p);
            if (marker) Arrays.fill(fill.array(), 0, Segment.GAP_HEADER, (byte) 0);
        }
        ops.force(s.path, s.ch);
        w.start = -1; // the window may hold the old bytes
        tp.lostRows = true;
        Glog.error(null, "Queue records damaged, set aside", "topic", name, "segment", s.path.toString(),
                "offset", from, "length", n, "set_aside", aside.toString(), "rows_lost", lostTo - lostFrom + 1,
                "lost_from", lostFrom, "lost_to", lostTo);
    }

    private int fill(Segment s, ByteBuffer b, long pos, long size) throws IOException {
        b.clear();
        int want = (int) Math.min(b.capacity(), size - pos);
        b.limit(want);
        readFully(s, b, pos);
        b.clear();
        return want;
    }

    private void readFully(Segment s, ByteBuffer b, long pos) throws IOException {
        long p = pos;
        while (b.hasRemaining()) {
            int n = ops.read(s.path, s.ch, b, p);
            if (n < 0) throw new IOException("unexpected end of file " + s.path);
            p += n;
        }
    }

    private boolean validHeader(ByteBuffer hb, long base) {
        if (hb.getInt(0) != Segment.MAGIC || hb.getInt(4) != Segment.VERSION) return false;
        if (hb.getLong(8) != generation || hb.getLong(16) != base) return false;
        crc.reset();
        crc.update(hb.array(), 0, 60);
        return (int) crc.getValue() == hb.getInt(60);
    }

    /** A torn or overwritten tail: the bytes after the last valid frame are set aside and cut. */
    private void cutTail(Segment s, long validEnd, long size) throws IOException {
        ByteBuffer b = ByteBuffer.allocate((int) Math.min(1 << 20, size - validEnd));
        long lastNonZero = -1;
        for (long p = validEnd; p < size; ) {
            b.clear();
            b.limit((int) Math.min(b.capacity(), size - p));
            readFully(s, b, p);
            for (int i = 0; i < b.limit(); i++) if (b.get(i) != 0) lastNonZero = p + i;
            p += b.limit();
        }
        if (lastNonZero < 0) return; // zeros are space not yet written
        int cut = (int) (lastNonZero + 1 - validEnd);
        ByteBuffer tail = ByteBuffer.allocate(cut);
        readFully(s, tail, validEnd);
        Path aside = s.path.resolveSibling(s.path.getFileName() + ".tail-" + System.currentTimeMillis());
        ops.writeAtomic(aside, tail.array());
        ops.truncate(s.path, s.ch, validEnd);
        ops.force(s.path, s.ch);
        Glog.warn(null, "Queue tail truncated to its last valid record", "topic", name,
                "segment", s.path.toString(), "valid_end", validEnd, "cut_bytes", cut, "set_aside", aside.toString());
    }

    /** A segment broken before its end: its valid prefix stays, the whole file is set aside. */
    private void salvage(Segment s, long validEnd, long nextBase) throws IOException {
        Path aside = s.path.resolveSibling(s.path.getFileName() + ".corrupt-" + System.currentTimeMillis());
        Path tmp = s.path.resolveSibling(s.path.getFileName() + ".salvage");
        ByteBuffer keep = ByteBuffer.allocate((int) validEnd);
        readFully(s, keep, 0);
        keep.putInt(0, Segment.MAGIC).putInt(4, Segment.VERSION).putLong(8, generation).putLong(16, s.base);
        keep.putLong(24, s.count + 1L);
        crc.reset();
        crc.update(keep.array(), 0, 60);
        keep.putInt(60, (int) crc.getValue());
        ops.writeAtomic(tmp, keep.array());
        s.ch.close();
        ops.move(s.path, aside);
        ops.move(tmp, s.path);
        ops.fsyncDir(rowidDir);
        s.ch = ops.open(s.path, EnumSet.of(StandardOpenOption.READ, StandardOpenOption.WRITE));
        tp.lostRows = true;
        Glog.error(null, "Queue segment corrupt, set aside", "topic", name, "segment", s.path.toString(),
                "set_aside", aside.toString(), "rows_kept", s.count, "lost_from", s.base + s.count,
                "lost_to", nextBase - 1);
    }

    private void setAsideWhole(Segment s, String why) throws IOException {
        Path aside = s.path.resolveSibling(s.path.getFileName() + ".corrupt-" + System.currentTimeMillis());
        s.ch.close();
        ops.move(s.path, aside);
        ops.fsyncDir(rowidDir);
        tp.lostRows = true;
        Glog.error(null, "Queue segment corrupt, set aside", "topic", name, "segment", s.path.toString(),
                "set_aside", aside.toString(), "cause", why);
    }
}
