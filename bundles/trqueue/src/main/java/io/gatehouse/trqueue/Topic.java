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
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import java.util.zip.CRC32C;

/**
 * One incarnation of a queue topic on disk: its descriptor, variables and segment files. It appends frames, rolls
 * segments, and reads or flips the flags of rows; {@link TopicRecovery#open} opens it and recovers its files. Used
 * by one owner thread, except {@link #forceAll()} which a flusher thread calls under the group commit's lock, and the
 * zeros ahead, written by a flusher thread under the segment's {@code allocLock}.
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
    /**
     * The rows up to this one are in the file (the page cache): what a commit may force and promise. It trails
     * {@link #lastRowid} by the rows still in the stage.
     */
    volatile long writtenRowid;
    /** Flag stores wait in {@link #pendingFlags}: the flusher asks the owner to write them. */
    volatile boolean flagsPending;
    /** Rows were set aside by this open's recovery: every load of this incarnation says it missed messages. */
    boolean lostRows;
    /** Rows with the pending flag on disk, over the readable segments. */
    long pendingOnDisk;

    /** Where a frame is built: grown to the largest frame appended so far (a topic is opened in a live upgrade's pause). */
    private ByteBuffer frame = ByteBuffer.allocateDirect(FRAME_START);
    static final int FRAME_START = 4096;
    private final CRC32C crc = new CRC32C();

    /**
     * The owner's write-behind buffer for the current segment ({@link #startStaging}), null while the topic writes
     * through the mapping. Frames go into it and reach the file with one positional write per turn of the owner's
     * loop ({@link #flushStage}): a store through the mapping took a page fault at every new page and at every page
     * the group commit had written back since, which cost the core loop more than the copy.
     */
    private ByteBuffer stage;
    private final PendingFlags pendingFlags = new PendingFlags();
    /** Scratch for a run of frames whose flags are written together. */
    private ByteBuffer flagRun;
    /** The empty stage buffers of the revision this topic was taken from, for {@link #startStaging}. */
    private ByteBuffer handedStage;
    private ByteBuffer handedFlagRun;
    static final int STAGE_SIZE = 256 << 10;
    static final int FLAG_RUN_SIZE = 64 << 10;
    /** Frames further apart than this are written as separate runs: the bytes between are written back as read. */
    static final int FLAG_RUN_GAP = 4096;

    /** An empty shell: {@link TopicRecovery} fills in the segments and counts from the files before it is used. */
    Topic(FileOps ops, Path dir, String name, ObjectNode desc, int segmentSize, int maxMessageSize) {
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
    }

    // --- Creation ---

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

    void saveVars() throws IOException {
        ops.writeAtomic(dir.resolve(VARS), pretty(vars));
    }

    static byte[] pretty(JsonNode n) {
        try {
            return Kw.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsBytes(n);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    // --- Append ---

    /** Writes one frame; answers its rowid. Nothing changes in memory when it throws. */
    long append(long t, long tm, int flag, byte[] payload, int plen) throws IOException {
        return append(t, tm, flag, payload, 0, plen);
    }

    /** {@link #append(long, long, int, byte[], int)} of {@code payload[off, off + plen)}. */
    long append(long t, long tm, int flag, byte[] payload, int off, int plen) throws IOException {
        int frameLen = Segment.REC_HEADER + plen;
        int padded = Segment.align8(frameLen);
        Segment s = current;
        long rowid = lastRowid + 1;
        if (s == null || s.end + padded > s.map.capacity()) s = roll(rowid);
        if (frame.capacity() < padded) frame = ByteBuffer.allocateDirect(Math.max(padded, 2 * frame.capacity()));
        ByteBuffer f = frame;
        f.clear();
        f.putInt(frameLen).putInt(0).putLong(rowid).putLong(t).putLong(tm)
                .putShort((short) flag).putShort((short) (systemFlag & 0x0FFF)).putInt(genLow);
        f.put(payload, off, plen);
        while (f.position() < padded) f.put((byte) 0);
        crc.reset();
        f.position(Segment.OFF_ROWID).limit(Segment.OFF_FLAG);
        crc.update(f);
        f.limit(frameLen).position(Segment.OFF_SYSFLAG);
        crc.update(f);
        f.putInt(Segment.OFF_CRC, (int) crc.getValue());
        long pos = s.end;
        long need = pos + padded;
        long allocated = s.allocated;
        if (need > allocated) allocateNow(s, need);
        else if (allocated - need < ALLOC_AHEAD && allocator != null) askAllocateAhead(s, need);
        ops.reserve(s.path, pos, padded);
        f.limit(padded).position(0);
        ByteBuffer st = stage;
        if (st != null && padded <= st.capacity()) {
            if (st.remaining() < padded) flushStage();
            st.put(f);
        } else {
            // writing through: the mapping (a topic not staging, or a frame larger than the stage, which goes
            // after what is staged so that the file stays in order)
            if (st != null) flushStage();
            try {
                s.map.put((int) pos, f, 0, padded);
            } catch (InternalError e) {
                // a page of the mapping could not be backed by the device although it was allocated (a
                // copy-on-write file system, an I/O error): nothing was promised yet. The JVM may also raise this
                // error later, at its next transition (compiled code): allocate() is what keeps the store from
                // faulting at all.
                throw new IOException("Cannot store the record in its segment: " + e.getMessage(), e);
            }
            if (st != null) s.stageFrom = pos + padded;
        }
        s.add((int) pos);
        s.end = pos + padded;
        if ((flag & TrQueue.MSG_PENDING) != 0) pendingOnDisk++;
        lastRowid = rowid;
        if (st == null || s.stageFrom == s.end) writtenRowid = rowid;
        return rowid;
    }

    // --- Write-behind ---

    /**
     * From now on frames and flag stores wait for {@link #flushStage} on the owner's thread. The buffers are those
     * the previous revision handed over ({@link #adopt}) when there are: allocating them zeroes 320 KiB, which a live
     * upgrade would pay in its pause.
     */
    void startStaging() {
        if (stage != null) return;
        stage = handedStage != null ? handedStage.clear() : ByteBuffer.allocateDirect(STAGE_SIZE);
        flagRun = handedFlagRun != null ? handedFlagRun.clear() : ByteBuffer.allocateDirect(FLAG_RUN_SIZE);
        handedStage = null;
        handedFlagRun = null;
        Segment c = current;
        if (c != null) {
            c.stage = stage;
            c.stageFrom = c.end;
        }
    }

    boolean staging() {
        return stage != null;
    }

    /** Rows or flag stores wait for {@link #flushStage}: any thread. */
    boolean unwritten() {
        return writtenRowid != lastRowid || flagsPending;
    }

    /** The row's flag: the one waiting to be written, else the stored one. */
    int flag(Segment s, long rowid, int off) {
        return pendingFlags.flag(rowid, s.flag(off));
    }

    /**
     * Sets the row's flag. Answers true when it went to the file now (through the mapping, a topic not staging):
     * otherwise it is written by the next {@link #flushStage}, which says so.
     */
    boolean setFlag(Segment s, long rowid, int off, int flag) throws IOException {
        if (stage == null) {
            s.setFlag(off, flag);
            return true;
        }
        if (off >= s.stageFrom) {
            // still staged: written with its frame
            stage.putShort((int) (off - s.stageFrom) + Segment.OFF_FLAG, (short) flag);
            return false;
        }
        if (pendingFlags.isFull()) flushStage();
        if (pendingFlags.isFull()) throw new IOException("flag stores cannot be written");
        pendingFlags.put(rowid, s, off, flag);
        flagsPending = true;
        return false;
    }

    /**
     * Writes what waits: the staged frames with one positional write, then the flag stores, one write per run of
     * nearby frames (the bytes between written back as read, through the mapping). Owner thread. Answers whether
     * flags were written (a commit forces them). On an error what was not written stays waiting, and the next call
     * tries again.
     */
    boolean flushStage() throws IOException {
        if (stage == null) return false;
        Segment s = current;
        if (s != null && s.stage == stage && stage.position() > 0) {
            stage.flip();
            long at = s.stageFrom;
            try {
                while (stage.hasRemaining()) at += ops.write(s.path, s.ch, stage, at);
            } finally {
                stage.compact();
                s.stageFrom = at;
            }
        }
        writtenRowid = lastRowid;
        return !pendingFlags.isEmpty() && writeFlags();
    }

    private boolean writeFlags() throws IOException {
        int[] sorted = pendingFlags.sortedSlots();
        int i = 0;
        try {
            while (i < sorted.length) {
                Segment s = pendingFlags.segment(sorted[i]);
                long start = pendingFlags.offset(sorted[i]) + (long) Segment.OFF_FLAG;
                int j = i + 1;
                while (j < sorted.length && pendingFlags.segment(sorted[j]) == s) {
                    long next = pendingFlags.offset(sorted[j]) + (long) Segment.OFF_FLAG;
                    long prev = pendingFlags.offset(sorted[j - 1]) + (long) Segment.OFF_FLAG;
                    if (next - prev > FLAG_RUN_GAP || next + 2 - start > FLAG_RUN_SIZE) break;
                    j++;
                }
                int len = (int) (pendingFlags.offset(sorted[j - 1]) + Segment.OFF_FLAG + 2 - start);
                ByteBuffer run = flagRun;
                run.clear();
                if (s.unreadable == null && s.ch != null && s.ch.isOpen()) {
                    run.put(0, s.map, (int) start, len);
                    for (int k = i; k < j; k++) {
                        int at = (int) (pendingFlags.offset(sorted[k]) + Segment.OFF_FLAG - start);
                        run.putShort(at, (short) pendingFlags.flagAt(sorted[k]));
                    }
                    run.limit(len);
                    long p = start;
                    while (run.hasRemaining()) p += ops.write(s.path, s.ch, run, p);
                }
                i = j;
            }
        } catch (InternalError e) {
            throw new IOException("Cannot read the frames of the flags to write: " + e.getMessage(), e);
        } finally {
            if (i == sorted.length) {
                pendingFlags.clear();
                flagsPending = false;
            } else {
                pendingFlags.keepFrom(sorted, i);
            }
        }
        return i > 0;
    }

    /** File space is allocated this far ahead of the frame being stored (in chunks of {@link #ALLOC_CHUNK}). */
    static final int ALLOC_AHEAD = 2 << 20;
    /**
     * One write of zeros. A write holds the file's inode lock throughout, and the owner's write of its stage waits
     * for it, spinning on a CPU: at 1 MiB (about 2 ms of zeros) that wait was a quarter of the HTTP ingest's core
     * loop, at 64 KiB a tenth (docs/BENCHMARKS.md, "zeros in 64 KiB writes").
     */
    static final int ALLOC_CHUNK = 64 << 10;

    /**
     * Allocates the segment's file space with real writes of zeros up to at least {@code need}, and up to
     * {@link #ALLOC_AHEAD} beyond it (never past the mapping), so that stores through the mapping never need a
     * new block. Throws when {@code need} cannot be reached (no space: "No space left on device"); space past
     * {@code need} that cannot be had now is simply tried again by a later append.
     */
    private void allocateNow(Segment s, long need) throws IOException {
        synchronized (s.allocLock) {
            allocateLocked(s, need, aheadOf(s, need));
        }
    }

    /** Zeros from the allocated end up to {@code target}; fails only when {@code need} is not reached. Under the lock. */
    private void allocateLocked(Segment s, long need, long target) throws IOException {
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

    /** {@link #ALLOC_AHEAD} past {@code need}, at a multiple of it, never past the mapping. */
    private static long aheadOf(Segment s, long need) {
        return Math.min(s.map.capacity(), (need + ALLOC_AHEAD) & -(long) ALLOC_AHEAD);
    }

    /**
     * Where the owner's allocation goes when it is given one ({@link #allocateAheadWith}): the queue's flusher. Writing
     * the zeros gives the file new pages and blocks, which cost the core loop 12 % of its time under sustained
     * forwarding (about 1.8 ns a byte here, against 0.1 for the frame's own write over them); on the flusher the
     * owner's appends find the space already there. Null: the owner allocates when it runs out, as before. Set and
     * read on the owner thread.
     */
    private Predicate<Runnable> allocator;
    /** An allocation ahead is on the flusher's way: no second one is asked until it ends. */
    private final AtomicBoolean allocationAsked = new AtomicBoolean();

    /** From now on the space ahead of the frames is allocated by {@code runner}'s thread (false: it cannot now). */
    void allocateAheadWith(Predicate<Runnable> runner) {
        allocator = runner;
    }

    /**
     * Asks the allocator for space up to {@link #ALLOC_AHEAD} beyond {@code need}'s own lead, once at a time. Owner
     * thread. What the allocator cannot do (its thread gone, no space) the owner does, or fails on, when a frame
     * reaches the end of the allocated space ({@link #allocateNow}).
     */
    private void askAllocateAhead(Segment s, long need) {
        long target = aheadOf(s, need + ALLOC_AHEAD);
        if (target <= s.allocated || !allocationAsked.compareAndSet(false, true)) return;
        Predicate<Runnable> run = allocator;
        if (run == null || !run.test(() -> allocateAhead(s, target))) allocationAsked.set(false);
    }

    /**
     * Writes zeros from the segment's allocated end to {@code target}, on the allocator's thread. The owner stores
     * only below {@link Segment#allocated}, which moves past a chunk once its zeros are written, and allocates itself
     * under the same lock: nobody writes a frame where zeros may still land. A failure leaves the rest to the owner.
     */
    private void allocateAhead(Segment s, long target) {
        try {
            synchronized (s.allocLock) {
                if (!s.allocationHandedOver && s.ch.isOpen()) allocateLocked(s, target, target);
            }
        } catch (IOException | RuntimeException e) {
            // a full disk, a segment closed meanwhile: the owner allocates what a frame needs, and says why it cannot
        } finally {
            allocationAsked.set(false);
        }
    }

    private Segment roll(long base) throws IOException {
        // the old segment's staged frames go to its file before it stops being the current one
        if (stage != null) flushStage();
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
        if (old != null) {
            old.stage = null;
            old.stageFrom = Long.MAX_VALUE;
            unforced.add(old);
        }
        if (stage != null) {
            s.stage = stage;
            s.stageFrom = s.end;
        }
        current = s;
        return s;
    }

    /** Writes a fresh header at the start of a segment: a new one, or one whose header an open repairs. */
    void writeHeader(Segment s) throws IOException {
        ByteBuffer hb = ByteBuffer.allocate(Segment.HEADER);
        hb.putInt(0, Segment.MAGIC).putInt(4, Segment.VERSION).putLong(8, generation).putLong(16, s.base);
        crc.reset();
        crc.update(hb.array(), 0, 60);
        hb.putInt(60, (int) crc.getValue());
        long p = 0;
        while (hb.hasRemaining()) p += ops.write(s.path, s.ch, hb, p);
    }

    // --- Rows ---

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
        int len = readFrame(s, rowid);
        return len < 0 ? null : java.util.Arrays.copyOfRange(lastRead, Segment.REC_HEADER, len);
    }

    /**
     * Reads a row's frame into {@link #lastRead} and checks its checksum: the frame's length (its payload is
     * {@code lastRead()[REC_HEADER, length)}), or -1 when it does not check. Owner thread, like the checksum; the
     * bytes stay until the next read. A message sent reads its frame here and copies the payload once, into the
     * buffer that goes down: a frame array and a payload array per message were a ninth of what the durable
     * path's core loop allocated.
     */
    int readFrame(Segment s, long rowid) {
        int off = s.offset(rowid);
        int len = s.frameLen(off);
        if (len < Segment.REC_HEADER || off + (long) len > s.map.capacity()) return -1;
        byte[] fr = readScratch;
        if (fr.length < len) {
            // kept up to the size most records have; a larger frame gets an array of its own this once
            fr = new byte[len];
            if (len <= READ_SCRATCH_KEEP) readScratch = fr;
        }
        s.get(off, fr, len);
        crc.reset();
        crc.update(fr, Segment.OFF_ROWID, Segment.OFF_FLAG - Segment.OFF_ROWID);
        crc.update(fr, Segment.OFF_SYSFLAG, len - Segment.OFF_SYSFLAG);
        int stored = (fr[Segment.OFF_CRC] & 0xff) << 24 | (fr[Segment.OFF_CRC + 1] & 0xff) << 16
                | (fr[Segment.OFF_CRC + 2] & 0xff) << 8 | (fr[Segment.OFF_CRC + 3] & 0xff);
        lastRead = fr;
        return (int) crc.getValue() == stored ? len : -1;
    }

    /** The array {@link #readFrame} read into last. */
    byte[] lastRead() {
        return lastRead;
    }

    private byte[] readScratch = new byte[1024];
    /** The array of the last frame read: {@link #readScratch}, or one frame larger than it keeps, until the next. */
    private byte[] lastRead = readScratch;
    static final int READ_SCRATCH_KEEP = 64 << 10;

    // --- Durability ---

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

    // --- Live upgrade: the open topic as JDK values, for another trqueue revision ---

    /**
     * The open topic's files and counts, to be taken over without reading them again ({@link #adopt}): the
     * descriptor and variables, and per segment its path, base, channel, mapping, offsets, count, end, allocated
     * space and unreadable cause; which segments are not forced yet; the directory entries not forced; the last
     * rowid, rows lost by recovery and rows pending on disk. The offsets arrays are shared, not copied: the taker
     * owns them once the old queue is detached, and nothing uses the old queue in between.
     */
    void export(Map<String, Object> out) {
        out.put("desc", desc);
        out.put("vars", vars);
        List<Map<String, Object>> segs = new ArrayList<>(segments.size());
        List<Integer> notForced = new ArrayList<>();
        for (int i = 0; i < segments.size(); i++) {
            Segment s = segments.get(i);
            Map<String, Object> m = new HashMap<>();
            m.put("path", s.path);
            m.put("base", s.base);
            m.put("channel", s.ch);
            m.put("map", s.map);
            m.put("offsets", s.offsets);
            m.put("count", s.count);
            m.put("end", s.end);
            synchronized (s.allocLock) {
                // the flusher's allocation ahead stops here: the taker's owner allocates from this point on
                s.allocationHandedOver = true;
                m.put("allocated", s.allocated);
            }
            m.put("unreadable", s.unreadable);
            segs.add(m);
            if (unforced.contains(s)) notForced.add(i);
        }
        out.put("segments", segs);
        out.put("unforced", notForced);
        if (stage != null && stage.position() == 0) {
            // written and empty (the owner wrote it before the export): the next revision reuses it
            out.put("stage_buffer", stage);
            out.put("flag_run_buffer", flagRun);
        }
        out.put("dir_dirty", dirDirty);
        out.put("last_rowid", lastRowid);
        out.put("lost_rows", lostRows);
        out.put("pending_on_disk", pendingOnDisk);
    }

    /**
     * The topic {@link #export} gave, over the same open files: nothing is read from disk. The last segment is the
     * current one, as after an open.
     *
     * @throws IllegalArgumentException (or ClassCastException) when {@code in} is not such a state
     */
    @SuppressWarnings("unchecked")
    static Topic adopt(FileOps ops, Path dir, String name, int segmentSize, int maxMessageSize, Map<String, Object> in) {
        ObjectNode desc = (ObjectNode) Objects.requireNonNull(in.get("desc"), "desc");
        Topic tp = new Topic(ops, dir, name, desc, segmentSize, maxMessageSize);
        tp.vars = (ObjectNode) Objects.requireNonNull(in.get("vars"), "vars");
        for (Map<String, Object> m : (List<Map<String, Object>>) in.get("segments")) {
            Segment s = new Segment((Path) m.get("path"), (Long) m.get("base"));
            s.ch = (FileChannel) m.get("channel");
            s.map = (java.nio.MappedByteBuffer) m.get("map");
            s.offsets = (int[]) m.get("offsets");
            s.count = (Integer) m.get("count");
            s.end = (Long) m.get("end");
            s.allocated = (Long) m.get("allocated");
            s.unreadable = (String) m.get("unreadable");
            if (s.unreadable == null && (s.ch == null || s.map == null || s.count > s.offsets.length)) {
                throw new IllegalArgumentException("a readable segment without its channel, mapping or offsets");
            }
            tp.segments.add(s);
        }
        for (Integer i : (List<Integer>) in.get("unforced")) tp.unforced.add(tp.segments.get(i));
        tp.dirDirty = (Boolean) in.get("dir_dirty");
        tp.current = tp.segments.isEmpty() ? null : tp.segments.get(tp.segments.size() - 1);
        if (tp.current != null && tp.current.unreadable != null) {
            throw new IllegalArgumentException("its last segment is unreadable");
        }
        tp.lastRowid = (Long) in.get("last_rowid");
        tp.writtenRowid = tp.lastRowid;
        if (in.get("stage_buffer") instanceof ByteBuffer && in.get("flag_run_buffer") instanceof ByteBuffer) {
            ByteBuffer st = (ByteBuffer) in.get("stage_buffer");
            ByteBuffer fr = (ByteBuffer) in.get("flag_run_buffer");
            if (st.isDirect() && st.capacity() == STAGE_SIZE && fr.isDirect() && fr.capacity() == FLAG_RUN_SIZE) {
                tp.handedStage = st;
                tp.handedFlagRun = fr;
            }
        }
        tp.lostRows = (Boolean) in.get("lost_rows");
        tp.pendingOnDisk = (Long) in.get("pending_on_disk");
        return tp;
    }

    static void closeQuietly(Segment s) {
        if (s.ch != null) {
            try {
                s.ch.close();
            } catch (IOException ignored) {
                // closing a read/write channel after a failed open: nothing to keep
            }
        }
    }
}
