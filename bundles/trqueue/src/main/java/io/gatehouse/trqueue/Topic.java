package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Glog;
import io.gatehouse.api.Kw;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.zip.CRC32C;

/**
 * One incarnation of a queue topic on disk: its descriptor, variables and segment files. It recovers the files
 * when opened, appends frames, and reads or flips the flags of rows. Used by one owner thread, except
 * {@link #forceAll()} which the flusher thread calls under the queue's flush lock.
 */
final class Topic {
    static final String DESC = "topic_desc.json";
    static final String VARS = "topic_var.json";
    static final String COLS = "topic_cols.json";
    static final String FORMAT = "gatehouse-trq/1";

    final FileOps ops;
    final Path dir;
    final Path keysDir;
    final Path rowidDir;
    final String name;
    final ObjectNode desc;
    final long generation;
    final int genLow;
    final String tkey;
    final int systemFlag;
    final int segmentSize;
    final int maxMessageSize;
    ObjectNode vars;

    final List<Segment> segments = new ArrayList<>();
    volatile Segment current;
    final ConcurrentLinkedQueue<Segment> unforced = new ConcurrentLinkedQueue<>();
    volatile boolean dirDirty;
    volatile long lastRowid;
    /** Rows were set aside by this open's recovery: every load of this incarnation says it missed messages. */
    boolean lostRows;
    /** Rows with the pending flag on disk, over the readable segments. */
    long pendingOnDisk;

    private final ByteBuffer frame;
    private final CRC32C crc = new CRC32C();

    private Topic(FileOps ops, Path dir, String name, ObjectNode desc, int segmentSize, int maxMessageSize) {
        this.ops = ops;
        this.dir = dir;
        this.keysDir = dir.resolve("keys");
        this.rowidDir = keysDir.resolve("__rowid__");
        this.name = name;
        this.desc = desc;
        this.generation = desc.path("generation").asLong();
        this.genLow = (int) generation;
        this.tkey = desc.path("tkey").asText("");
        this.systemFlag = desc.path("system_flag").asInt(2);
        this.segmentSize = segmentSize;
        this.maxMessageSize = maxMessageSize;
        this.frame = ByteBuffer.allocateDirect(Segment.align8(Segment.REC_HEADER + maxMessageSize));
    }

    // ------------------------------------------------------------------ creation

    static ObjectNode newDesc(String name, String tkey, int systemFlag, long generation) {
        ObjectNode d = Kw.create();
        d.put("topic_name", name);
        d.put("pkey", "__rowid__");
        d.put("tkey", tkey == null ? "" : tkey);
        d.put("system_flag", systemFlag);
        d.put("filename_mask", "queue");
        d.put("xpermission", 1528);
        d.put("rpermission", 432);
        d.put("generation", generation);
        d.put("format", FORMAT);
        return d;
    }

    /** Writes a new, empty topic directory. The descriptor is written last but one, atomically. */
    static void create(FileOps ops, Path dir, ObjectNode desc, ObjectNode vars) throws IOException {
        try {
            ops.createDirectory(dir);
        } catch (FileAlreadyExistsException e) {
            // a directory left by a crash during a previous creation: its files are rewritten below
        }
        ops.writeAtomic(dir.resolve(COLS), "{}".getBytes(StandardCharsets.UTF_8));
        ops.writeAtomic(dir.resolve(VARS), pretty(vars));
        Path keys = dir.resolve("keys");
        if (!ops.isDirectory(keys)) ops.createDirectory(keys);
        ops.writeAtomic(dir.resolve(DESC), pretty(desc));
        ops.fsyncDir(dir);
        ops.fsyncDir(dir.getParent());
        Glog.info(null, "Creating topic", "topic", desc.path("topic_name").asText(), "path", dir.toString());
    }

    static byte[] pretty(JsonNode n) {
        try {
            return Kw.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsBytes(n);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    // ------------------------------------------------------------------ opening and recovery

    static Topic open(FileOps ops, Path dir, String name, int segmentSize, int maxMessageSize)
            throws TopicException {
        ObjectNode desc;
        try {
            JsonNode n = Kw.MAPPER.readTree(ops.readAll(dir.resolve(DESC)));
            if (!(n instanceof ObjectNode) || !n.path("generation").canConvertToLong()) {
                throw new IOException("not a gatehouse topic descriptor");
            }
            desc = (ObjectNode) n;
        } catch (IOException | RuntimeException e) {
            throw new TopicException("Cannot open topic: topic_desc.json does not load", e);
        }
        Topic tp = new Topic(ops, dir, name, desc, segmentSize, maxMessageSize);
        try {
            ops.list(tp.keysDir);
        } catch (IOException e) {
            throw new TopicException("Cannot open topic: its keys cannot be listed", e);
        }
        tp.loadVars();
        List<Path> files = new ArrayList<>();
        if (ops.isDirectory(tp.rowidDir)) {
            try {
                for (Path p : ops.list(tp.rowidDir)) {
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
                if (tp.openSegment(s, nextBase)) tp.segments.add(s);
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
        return tp;
    }

    private void loadVars() {
        Path vp = dir.resolve(VARS);
        try {
            JsonNode n = Kw.MAPPER.readTree(ops.readAll(vp));
            if (!(n instanceof ObjectNode)) throw new IOException("not a JSON object");
            vars = (ObjectNode) n;
            return;
        } catch (java.nio.file.NoSuchFileException e) {
            Glog.info(null, "Re-Creating topic_var.json", "topic", name, "path", vp.toString());
        } catch (IOException | RuntimeException e) {
            Glog.error(null, "Cannot load topic_var.json, its variables are ignored", "topic", name,
                    "cause", String.valueOf(e.getMessage()));
        }
        vars = Kw.create();
        try {
            saveVars();
        } catch (IOException e) {
            Glog.error(null, "Cannot write topic_var.json", "topic", name, "cause", String.valueOf(e.getMessage()));
        }
    }

    void saveVars() throws IOException {
        ops.writeAtomic(dir.resolve(VARS), pretty(vars));
    }

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
                if ((w.b.getShort(rel + Segment.OFF_FLAG) & TrQueueImpl.PENDING) != 0) pendingOnDisk++;
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
                writeHeader(s);
                Glog.warn(null, "Queue segment header repaired", "topic", name, "segment", s.path.toString());
            }
            s.end = pos;
            s.allocated = pos; // what lies after the last frame may be a hole: allocated again before use
            long mapSize = last ? Math.max(segmentSize, s.ch.size()) : s.ch.size();
            s.map = s.ch.map(FileChannel.MapMode.READ_WRITE, 0, mapSize);
            return true;
        } catch (IOException e) {
            closeQuietly(s);
            if (last) throw new TopicException("Cannot open topic: its last segment cannot be read", e);
            s.unreadable = e.getClass().getSimpleName() + ": " + e.getMessage();
            s.count = 0;
            Glog.error(null, "Queue segment cannot be read", "topic", name, "segment", s.path.toString(),
                    "cause", s.unreadable);
            return true;
        }
    }

    /** Tries again the segments that could not be read; answers true when every segment is readable now. */
    boolean retryUnreadable() {
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
            if (marker) java.util.Arrays.fill(fill.array(), 0, Segment.GAP_HEADER, (byte) 0);
        }
        ops.force(s.path, s.ch);
        w.start = -1; // the window may hold the old bytes
        lostRows = true;
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

    private void writeHeader(Segment s) throws IOException {
        ByteBuffer hb = ByteBuffer.allocate(Segment.HEADER);
        hb.putInt(0, Segment.MAGIC).putInt(4, Segment.VERSION).putLong(8, generation).putLong(16, s.base);
        crc.reset();
        crc.update(hb.array(), 0, 60);
        hb.putInt(60, (int) crc.getValue());
        long p = 0;
        while (hb.hasRemaining()) p += ops.write(s.path, s.ch, hb, p);
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
        lostRows = true;
        Glog.error(null, "Queue segment corrupt, set aside", "topic", name, "segment", s.path.toString(),
                "set_aside", aside.toString(), "rows_kept", s.count, "lost_from", s.base + s.count,
                "lost_to", nextBase - 1);
    }

    private void setAsideWhole(Segment s, String why) throws IOException {
        Path aside = s.path.resolveSibling(s.path.getFileName() + ".corrupt-" + System.currentTimeMillis());
        s.ch.close();
        ops.move(s.path, aside);
        ops.fsyncDir(rowidDir);
        lostRows = true;
        Glog.error(null, "Queue segment corrupt, set aside", "topic", name, "segment", s.path.toString(),
                "set_aside", aside.toString(), "cause", why);
    }

    // ------------------------------------------------------------------ append

    /** Writes one frame; answers its rowid. Nothing changes in memory when it throws. */
    long append(long t, long tm, int flag, byte[] payload, int plen) throws IOException {
        int frameLen = Segment.REC_HEADER + plen;
        int padded = Segment.align8(frameLen);
        Segment s = current;
        long rowid = lastRowid + 1;
        if (s == null || s.end + padded > s.map.capacity()) s = roll(rowid);
        ByteBuffer f = frame;
        f.clear();
        f.putInt(frameLen).putInt(0).putLong(rowid).putLong(t).putLong(tm)
                .putShort((short) flag).putShort((short) (systemFlag & 0x0FFF)).putInt(genLow);
        f.put(payload, 0, plen);
        while (f.position() < padded) f.put((byte) 0);
        crc.reset();
        f.position(Segment.OFF_ROWID).limit(Segment.OFF_FLAG);
        crc.update(f);
        f.limit(frameLen).position(Segment.OFF_SYSFLAG);
        crc.update(f);
        f.putInt(Segment.OFF_CRC, (int) crc.getValue());
        long pos = s.end;
        if (pos + padded > s.allocated) allocate(s, pos + padded);
        ops.reserve(s.path, pos, padded);
        f.limit(padded);
        try {
            s.map.put((int) pos, f, 0, padded);
        } catch (InternalError e) {
            // a page of the mapping could not be backed by the device although it was allocated (a copy-on-write
            // file system, an I/O error): nothing was promised yet. The JVM may also raise this error later, at
            // its next transition (compiled code): allocate() is what keeps the store from faulting at all.
            throw new IOException("Cannot store the record in its segment: " + e.getMessage(), e);
        }
        s.add((int) pos);
        s.end = pos + padded;
        if ((flag & TrQueueImpl.PENDING) != 0) pendingOnDisk++;
        lastRowid = rowid;
        return rowid;
    }

    /** File space is allocated this far ahead of the frame being stored (in chunks of {@link #ALLOC_CHUNK}). */
    static final int ALLOC_AHEAD = 2 << 20;
    static final int ALLOC_CHUNK = 1 << 20;

    /**
     * Allocates the segment's file space with real writes of zeros up to at least {@code need}, and up to
     * {@link #ALLOC_AHEAD} beyond it (never past the mapping), so that stores through the mapping never need a
     * new block. Throws when {@code need} cannot be reached (no space: "No space left on device"); space past
     * {@code need} that cannot be had now is simply tried again by a later append.
     */
    private void allocate(Segment s, long need) throws IOException {
        long target = Math.min(s.map.capacity(), (need + ALLOC_AHEAD) & -(long) ALLOC_AHEAD);
        while (s.allocated < target) {
            int n = (int) Math.min(ALLOC_CHUNK, target - s.allocated);
            try {
                ops.allocate(s.path, s.ch, s.allocated, n);
            } catch (IOException e) {
                if (s.allocated >= need) return;
                throw e;
            }
            s.allocated += n;
        }
    }

    private Segment roll(long base) throws IOException {
        if (!ops.isDirectory(rowidDir)) ops.createDirectories(rowidDir);
        // headroom: a segment is not started on a nearly full file system (its space is then allocated ahead
        // of the frames by allocate(), so another writer taking the space later is an IOException, not a fault)
        long free = ops.usableSpace(keysDir);
        if (free < 2L * segmentSize) {
            throw new IOException("No space left on device for a new segment: " + free + " bytes usable");
        }
        Segment s = new Segment(rowidDir.resolve(Segment.fileName(base)), base);
        s.ch = ops.open(s.path, EnumSet.of(StandardOpenOption.CREATE, StandardOpenOption.READ,
                StandardOpenOption.WRITE));
        try {
            ops.truncate(s.path, s.ch, 0);
            writeHeader(s);
            s.allocated = Segment.HEADER;
            s.map = s.ch.map(FileChannel.MapMode.READ_WRITE, 0, segmentSize);
        } catch (IOException e) {
            closeQuietly(s);
            try {
                ops.delete(s.path);
            } catch (IOException ignored) {
                // the file holds no row; a later open finds an empty segment and accepts it
            }
            throw e;
        }
        Segment old = current;
        segments.add(s);
        dirDirty = true;
        if (old != null) unforced.add(old);
        current = s;
        return s;
    }

    // ------------------------------------------------------------------ rows

    Segment locate(long rowid) {
        Segment c = current;
        if (c != null && c.has(rowid)) return c;
        int lo = 0, hi = segments.size() - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            Segment s = segments.get(mid);
            if (rowid < s.base) hi = mid - 1;
            else if (mid + 1 < segments.size() && rowid >= segments.get(mid + 1).base) lo = mid + 1;
            else return s.has(rowid) ? s : null;
        }
        return null;
    }

    /** The payload bytes of a row after checking its checksum; null when they do not check. */
    byte[] payload(Segment s, long rowid) {
        int off = s.offset(rowid);
        int len = s.frameLen(off);
        if (len < Segment.REC_HEADER || off + (long) len > s.map.capacity()) return null;
        byte[] fr = new byte[len];
        s.map.get(off, fr, 0, len);
        crc.reset();
        crc.update(fr, Segment.OFF_ROWID, Segment.OFF_FLAG - Segment.OFF_ROWID);
        crc.update(fr, Segment.OFF_SYSFLAG, len - Segment.OFF_SYSFLAG);
        if ((int) crc.getValue() != ByteBuffer.wrap(fr).getInt(Segment.OFF_CRC)) return null;
        return java.util.Arrays.copyOfRange(fr, Segment.REC_HEADER, len);
    }

    // ------------------------------------------------------------------ durability

    /** Forces every written byte (records, flags, new files' directory entries) to the device. */
    void forceAll() throws IOException {
        Segment s;
        while ((s = unforced.peek()) != null) {
            ops.force(s.path, s.ch);
            unforced.poll();
        }
        if (dirDirty) {
            dirDirty = false;
            try {
                ops.fsyncDir(rowidDir);
                ops.fsyncDir(keysDir);
            } catch (IOException e) {
                dirDirty = true;
                throw e;
            }
        }
        Segment c = current;
        if (c != null && c.ch != null) ops.force(c.path, c.ch);
    }

    void close() {
        for (Segment s : segments) closeQuietly(s);
    }

    private static void closeQuietly(Segment s) {
        if (s.ch != null) {
            try {
                s.ch.close();
            } catch (IOException ignored) {
                // closing a read/write channel after a failed open: nothing to keep
            }
        }
    }
}
