// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.testkit.LogCapture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.*;

/**
 * TopicRecovery on topic files written through {@link Topic} alone: what an open yields (segments, last rowid,
 * lost rows, pending rows) for whole files and for each repair, and that a repair is said by one open only.
 */
@Timeout(30)
class TopicRecoveryTest {
    static final int SEGMENT_SIZE = 4096;
    static final int MAX_MESSAGE = 1024;
    /** 60 bytes: with the 40-byte record header a frame takes 104 bytes, 38 frames to a segment. */
    static final byte[] PAYLOAD = ("{\"p\":\"" + "x".repeat(52) + "\"}").getBytes(StandardCharsets.UTF_8);
    static final int FRAME = 104;
    static final int PER_SEGMENT = (SEGMENT_SIZE - Segment.HEADER) / FRAME;

    @TempDir
    Path dir;

    final FaultyOps ops = new FaultyOps();
    final LogCapture log = new LogCapture();
    final List<Topic> opened = new ArrayList<>();

    @AfterEach
    void tearDown() {
        ops.heal();
        for (Topic tp : opened) tp.close();
        log.close();
    }

    Path topicDir() {
        return dir.resolve("T");
    }

    Path segment(long base) {
        return topicDir().resolve("keys/__rowid__").resolve(Segment.fileName(base));
    }

    Topic open() throws TopicException {
        Topic tp = TopicRecovery.open(ops, topicDir(), "T", SEGMENT_SIZE, MAX_MESSAGE);
        opened.add(tp);
        return tp;
    }

    /** A new topic of that generation holding n rows; every third one is not pending. Closed again. */
    void write(long generation, int n) throws Exception {
        Topic.create(ops, topicDir(), Topic.newDesc("T", "", 2, generation), Kw.create());
        Topic tp = open();
        for (int i = 1; i <= n; i++) {
            assertEquals(i, tp.append(100 + i, 0, i % 3 == 0 ? 0 : TrQueue.MSG_PENDING, PAYLOAD, PAYLOAD.length));
        }
        tp.close();
        opened.clear();
    }

    static long pendingOf(long from, long to) {
        long n = 0;
        for (long r = from; r <= to; r++) if (r % 3 != 0) n++;
        return n;
    }

    static long frameAt(long rowid, long base) {
        return Segment.HEADER + (rowid - base) * FRAME;
    }

    List<String> filesLike(String part) throws Exception {
        try (Stream<Path> s = Files.list(topicDir().resolve("keys/__rowid__"))) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.contains(part)).collect(Collectors.toList());
        }
    }

    @Test
    void shouldYieldNothingWhenTheTopicHasNoSegment() throws Exception {
        Topic.create(ops, topicDir(), Topic.newDesc("T", "", 2, 7), Kw.create());
        Topic tp = open();
        assertEquals(List.of(), tp.segments);
        assertNull(tp.current);
        assertEquals(0, tp.lastRowid);
        assertEquals(0, tp.pendingOnDisk);
        assertFalse(tp.lostRows);
    }

    @Test
    void shouldYieldEverySegmentAndCountPendingRowsWhenTheFilesAreWhole() throws Exception {
        write(7, 100);
        log.clear();
        Topic tp = open();
        assertEquals(3, tp.segments.size());
        assertEquals(List.of(1L, 1L + PER_SEGMENT, 1L + 2 * PER_SEGMENT),
                tp.segments.stream().map(s -> s.base).collect(Collectors.toList()));
        assertSame(tp.segments.get(2), tp.current);
        assertEquals(100, tp.lastRowid);
        assertEquals(pendingOf(1, 100), tp.pendingOnDisk);
        assertFalse(tp.lostRows);
        assertEquals(List.of(), log.messages(LogCapture.Level.INFO), "whole files need no repair");
        assertEquals(101, tp.append(1, 0, TrQueue.MSG_PENDING, PAYLOAD, PAYLOAD.length));
    }

    @Test
    void shouldRefuseTheOpenWhenTheDescriptorDoesNotLoad() throws Exception {
        write(7, 3);
        Files.writeString(topicDir().resolve(Topic.DESC), "{\"topic_name\":\"T\"}");
        TopicException e = assertThrows(TopicException.class, this::open);
        assertEquals("Cannot open topic: topic_desc.json does not load", e.getMessage());
    }

    @Test
    void shouldCutATornTailAndKeepTheRowsBeforeIt() throws Exception {
        write(7, 5);
        int end = (int) frameAt(6, 1);
        byte[] garbage = {0x7f, 1, 2, 3, 4, 5, 6, 7, 8, 9};
        try (FileChannel ch = FileChannel.open(segment(1), StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(garbage), end);
        }
        log.clear();
        Topic tp = open();
        assertEquals(List.of("WARN Queue tail truncated to its last valid record"), log.messages(LogCapture.Level.INFO));
        assertEquals(5, tp.lastRowid);
        assertFalse(tp.lostRows, "a torn tail held no complete row");
        // cut at the last frame, then mapped at full size again: the tail reads back as zeros
        byte[] after = Files.readAllBytes(segment(1));
        assertArrayEquals(new byte[garbage.length], Arrays.copyOfRange(after, end, end + garbage.length));
        List<String> aside = filesLike(".tail-");
        assertEquals(1, aside.size());
        assertArrayEquals(garbage, Files.readAllBytes(segment(1).resolveSibling(aside.get(0))));
        tp.close();
        log.clear();
        assertEquals(5, open().lastRowid);
        assertEquals(List.of(), log.messages(LogCapture.Level.INFO), "the next open finds the cut file");
    }

    @Test
    void shouldSetAsideASegmentOfAnotherGenerationWhenOpened() throws Exception {
        write(7, 3);
        byte[] foreign = Files.readAllBytes(segment(1));
        ops.deleteTree(topicDir());
        write(8, 0);
        Files.createDirectories(segment(1).getParent());
        Files.write(segment(1), foreign);
        log.clear();
        Topic tp = open();
        assertEquals(List.of("ERROR Queue segment corrupt, set aside"), log.messages(LogCapture.Level.INFO));
        assertEquals(List.of(), tp.segments);
        assertEquals(0, tp.lastRowid);
        assertTrue(tp.lostRows);
        assertFalse(Files.exists(segment(1)));
        assertEquals(1, filesLike(".corrupt-").size());
    }

    @Test
    void shouldSalvageTheValidPrefixWhenASegmentBreaksBeforeItsEnd() throws Exception {
        write(7, 50);
        byte[] b = Files.readAllBytes(segment(1));
        b[(int) frameAt(10, 1) + 45] ^= 0x55;
        Files.write(segment(1), b);
        log.clear();
        Topic tp = open();
        assertEquals(List.of("ERROR Queue segment corrupt, set aside"), log.messages(LogCapture.Level.INFO));
        assertTrue(tp.lostRows);
        Segment first = tp.segments.get(0);
        assertEquals(9, first.count, "rows 1-9 kept");
        assertEquals(50, tp.lastRowid);
        assertEquals(pendingOf(1, 9) + pendingOf(1 + PER_SEGMENT, 50), tp.pendingOnDisk);
        assertEquals(1, filesLike(".corrupt-").size());
        tp.close();
        log.clear();
        Topic again = open();
        assertEquals(List.of(), log.messages(LogCapture.Level.INFO), "the salvaged segment says how many rows it kept");
        assertFalse(again.lostRows);
        assertEquals(9, again.segments.get(0).count);
    }

    @Test
    void shouldRepairTheHeaderWhenItsChecksumIsDamaged() throws Exception {
        write(7, 5);
        byte[] b = Files.readAllBytes(segment(1));
        b[60] ^= 0x01;
        Files.write(segment(1), b);
        log.clear();
        Topic tp = open();
        assertEquals(List.of("WARN Queue segment header repaired"), log.messages(LogCapture.Level.INFO));
        assertEquals(5, tp.lastRowid);
        assertFalse(tp.lostRows);
        tp.close();
        log.clear();
        open();
        assertEquals(List.of(), log.messages(LogCapture.Level.INFO));
    }

    @Test
    void shouldKeepAnUnreadableSegmentAndReadItAtRetryWhenItIsNotTheLast() throws Exception {
        write(7, 50);
        Path first = segment(1);
        ops.fail((op, p) -> op.equals("open") && p.equals(first), "Input/output error");
        log.clear();
        Topic tp = open();
        assertEquals(List.of("ERROR Queue segment cannot be read"), log.messages(LogCapture.Level.INFO));
        assertEquals(2, tp.segments.size());
        assertNotNull(tp.segments.get(0).unreadable);
        assertEquals(50, tp.lastRowid);
        assertEquals(pendingOf(1 + PER_SEGMENT, 50), tp.pendingOnDisk, "the unreadable rows are not counted");
        assertFalse(TopicRecovery.retryUnreadable(tp), "still unreadable");
        ops.heal();
        assertTrue(TopicRecovery.retryUnreadable(tp));
        assertNull(tp.segments.get(0).unreadable);
        assertEquals(PER_SEGMENT, tp.segments.get(0).count);
        assertEquals(pendingOf(1, 50), tp.pendingOnDisk);
        assertFalse(tp.lostRows);
    }

    @Test
    void shouldFailTheOpenWhenTheLastSegmentCannotBeRead() throws Exception {
        write(7, 50);
        Path last = segment(1 + PER_SEGMENT);
        ops.fail((op, p) -> op.equals("open") && p.equals(last), "Input/output error");
        TopicException e = assertThrows(TopicException.class, this::open);
        assertEquals("Cannot open topic: its last segment cannot be read", e.getMessage());
    }

    @Test
    void shouldChangeTheFingerprintWhenWhatTheOpenReadsChanges() throws Exception {
        write(7, 1);
        String fp = TopicRecovery.fingerprint(ops, topicDir());
        assertEquals(fp, TopicRecovery.fingerprint(ops, topicDir()));
        byte[] desc = Files.readAllBytes(topicDir().resolve(Topic.DESC));
        Files.writeString(topicDir().resolve(Topic.DESC), "{");
        assertNotEquals(fp, TopicRecovery.fingerprint(ops, topicDir()));
        Files.write(topicDir().resolve(Topic.DESC), desc);
        assertEquals(fp, TopicRecovery.fingerprint(ops, topicDir()));
        ops.fail((op, p) -> op.equals("list"), "Permission denied");
        assertNotEquals(fp, TopicRecovery.fingerprint(ops, topicDir()));
    }
}
