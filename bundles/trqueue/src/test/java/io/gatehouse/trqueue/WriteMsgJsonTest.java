// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.*;

/** writeMsgJson copies the stored bytes: they must be exactly what serialising msgJson writes. */
class WriteMsgJsonTest {
    @TempDir
    Path dir;

    final TrQueueFactoryImpl factory = new TrQueueFactoryImpl();

    @AfterEach
    void tearDown() {
        factory.close();
    }

    @Test
    void shouldWriteTheBytesOfMsgJsonSerialisedWhenCopyingTheStoredRecord() throws Exception {
        TrQueue q = factory.open(dir, "db", "T", "tm", 0, 1000, TrQueueOptions.defaults());
        List<String> messages = List.of(
                "{}",
                "{\"id\":\"a-1\",\"tm\":17,\"pad\":\"xxxx\"}",
                "{\"n\":{\"deep\":[1,2.5,-3e10,true,null,\"s\"]},\"u\":\"\\u00e9t\\u00e9 \\\"q\\\" \\\\ \\n\"}",
                "{\"big\":123456789012345678901234567890,\"neg\":-0.0,\"f\":1.0E-7}",
                "{\"inner\":{\"__md_trq__\":{\"x\":1}}}",
                "{\"s\":\"a \\\"__md_trq__\\\" in a string\"}");
        for (String m : messages) {
            QueueMessage qm = q.append(0, Kw.parse(m), 0);
            assertNotNull(qm, m);
            ByteBuf fast = Unpooled.buffer();
            ByteBuf slow = Unpooled.buffer();
            try {
                assertTrue(q.writeMsgJson(qm, fast));
                ObjectNode json = q.msgJson(qm);
                Kw.writeJson(json, slow);
                assertEquals(slow.toString(StandardCharsets.UTF_8), fast.toString(StandardCharsets.UTF_8), m);
            } finally {
                fast.release();
                slow.release();
            }
        }
    }

    @Test
    void shouldWriteEachMessagesOwnTimeWhenRunsOfThemShareOne() throws Exception {
        TrQueue q = factory.open(dir, "db", "T", "", 0, 1000, TrQueueOptions.defaults());
        long[] times = {1_767_225_600L, 1_767_225_600L, 1_767_225_601L, 1_767_225_601L, 7, 1_767_225_601L, 1, 1, -5,
                Long.MAX_VALUE, 1_767_225_602_123L};
        QueueMessage[] stored = new QueueMessage[times.length];
        for (int i = 0; i < times.length; i++) stored[i] = q.append(times[i], Kw.parse("{\"i\":" + i + "}"), 0);
        for (int round = 0; round < 2; round++) {   // read back in order, then again from the first
            for (int i = 0; i < times.length; i++) {
                ByteBuf out = Unpooled.buffer();
                try {
                    assertTrue(q.writeMsgJson(stored[i], out));
                    ObjectNode m = Kw.parse(out.toString(StandardCharsets.UTF_8));
                    assertEquals(times[i], m.path(TrQueue.MD_TRQ).path(TrQueue.MSG_T).asLong(), "message " + i);
                    assertEquals(i, m.path("i").asInt());
                } finally {
                    out.release();
                }
            }
        }
    }

    @Test
    void shouldHandTheRecordAsStoredWhenItIsTheMessageWithoutItsMetadata() throws Exception {
        TrQueue q = factory.open(dir, "db", "T", "tm", 0, 1000, TrQueueOptions.defaults());
        List<String> handed = List.of("{}", "{\"id\":\"a-1\",\"tm\":17}",
                "{\"u\":\"\\u00e9t\\u00e9 \\\"q\\\"\",\"n\":[1,{\"x\":null}]}");
        for (String m : handed) {
            QueueMessage qm = q.append(0, Kw.parse(m), 0);
            byte[] record = q.recordBytes(qm);
            assertNotNull(record, m);
            // the record plus the numbers of the handle is what writeMsgJson writes
            ObjectNode rebuilt = Kw.parse(new String(record, StandardCharsets.UTF_8));
            rebuilt.putObject(TrQueue.MD_TRQ).put(TrQueue.MSG_ROWID, qm.rowid()).put(TrQueue.MSG_T, qm.t())
                    .put(TrQueue.MSG_GEN, qm.generation());
            ByteBuf written = Unpooled.buffer();
            try {
                assertTrue(q.writeMsgJson(qm, written));
                assertEquals(written.toString(StandardCharsets.UTF_8), Kw.toJson(rebuilt), m);
            } finally {
                written.release();
            }
            assertNotSame(record, q.recordBytes(qm), "a new array per call: the caller owns it");
        }
        QueueMessage holdsTheKey = q.append(0, Kw.parse("{\"inner\":{\"__md_trq__\":{\"x\":1}}}"), 0);
        assertNull(q.recordBytes(holdsTheKey), "a record holding the key goes through writeMsgJson");
        assertNull(q.recordBytes(new QueueMessageImpl(null, 0, 1, 0, 0)), "another queue's message");
    }

    @Test
    void shouldWriteNothingWhenTheMessageIsNotTheQueues() throws Exception {
        TrQueue q = factory.open(dir, "db", "T", "tm", 0, 1000, TrQueueOptions.defaults());
        QueueMessage qm = q.append(0, Kw.parse("{\"a\":1}"), 0);
        q.unload(qm, 0);
        QueueMessage other = new QueueMessageImpl(null, 0, 1, 0, 0);
        ByteBuf out = Unpooled.buffer();
        try {
            assertFalse(q.writeMsgJson(other, out));
            assertEquals(0, out.readableBytes());
        } finally {
            out.release();
        }
    }

    @Test
    void shouldWriteEachMessageWhateverTheSizeOfTheOneReadBefore() throws Exception {
        TrQueue q = factory.open(dir, "db", "T", "tm", 0, 1000, TrQueueOptions.defaults());
        // sizes around the read scratch (1 KiB at first, kept up to 64 KiB): it grows, is passed by a larger frame
        // that gets an array of its own, and a small frame after that reads its own bytes, not the large one's
        int[] sizes = {10, 2_000, 40, 100_000, 30, 70_000, 5_000, 1};
        List<QueueMessage> appended = new java.util.ArrayList<>();
        List<String> texts = new java.util.ArrayList<>();
        for (int n : sizes) {
            String m = "{\"id\":\"s-" + n + "\",\"pad\":\"" + "x".repeat(n) + "\"}";
            appended.add(q.append(0, Kw.parse(m), 0));
            texts.add(m);
        }
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < sizes.length; i++) {
                QueueMessage qm = appended.get(i);
                ByteBuf out = Unpooled.buffer();
                try {
                    assertTrue(q.writeMsgJson(qm, out));
                    ObjectNode got = Kw.parse(out.toString(StandardCharsets.UTF_8));
                    assertEquals(qm.rowid(), got.remove(TrQueue.MD_TRQ).path(TrQueue.MSG_ROWID).asLong());
                    assertEquals(Kw.parse(texts.get(i)), got, "size " + sizes[i]);
                } finally {
                    out.release();
                }
            }
        }
    }

    @Test
    void shouldWriteNothingForARecordWhoseBytesChangedOnDiskAndGoOnWithTheNext() throws Exception {
        TrQueue q = factory.open(dir, "db", "T", "tm", 0, 1000, TrQueueOptions.defaults());
        QueueMessage bad = q.append(0, Kw.parse("{\"id\":\"crc-1\",\"pad\":\"abcdef\"}"), 0);
        QueueMessage good = q.append(0, Kw.parse("{\"id\":\"crc-2\"}"), 0);
        Path seg;
        try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(dir)) {
            seg = files.filter(f -> f.toString().endsWith(".seg")).findFirst().orElseThrow();
        }
        byte[] onDisk = java.nio.file.Files.readAllBytes(seg);
        int at = new String(onDisk, StandardCharsets.ISO_8859_1).indexOf("abcdef");
        assertTrue(at > 0, "the record is in the segment file");
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(seg,
                java.nio.file.StandardOpenOption.WRITE)) {
            ch.write(java.nio.ByteBuffer.wrap("X".getBytes(StandardCharsets.US_ASCII)), at + 5);
        }
        ByteBuf out = Unpooled.buffer();
        try {
            assertFalse(q.writeMsgJson(bad, out), "its checksum no longer checks");
            assertEquals(0, out.readableBytes(), "nothing of it is written");
            assertTrue(q.writeMsgJson(good, out));
            assertEquals("crc-2", Kw.parse(out.toString(StandardCharsets.UTF_8)).path("id").asText());
        } finally {
            out.release();
        }
    }

    @Test
    void shouldFindTheMetadataKeyOnlyInsideTheRangeSearched() {
        java.util.Random random = new java.util.Random(23);
        byte[] key = ("\"" + TrQueue.MD_TRQ + "\"").getBytes(StandardCharsets.US_ASCII);
        for (int round = 0; round < 5_000; round++) {
            byte[] a = new byte[key.length + random.nextInt(60)];
            java.util.Arrays.fill(a, (byte) 'x');
            int at = random.nextInt(a.length - key.length + 1);
            System.arraycopy(key, 0, a, at, key.length);
            int from = random.nextInt(a.length + 1);
            int to = from + random.nextInt(a.length - from + 1);
            int expected = at >= from && at + key.length <= to ? at : -1;
            assertEquals(expected, RecordJson.indexOfMdKey(a, from, to), "key at " + at + " in [" + from + ", " + to + ")");
        }
    }

    @Test
    void shouldFindTheMetadataKeyWhereANaiveSearchFindsIt() {
        java.util.Random random = new java.util.Random(17);
        byte[] key = ("\"" + TrQueue.MD_TRQ + "\"").getBytes(StandardCharsets.US_ASCII);
        byte[] alphabet = "\"_mdtrq_{}:,x".getBytes(StandardCharsets.US_ASCII);
        for (int round = 0; round < 20_000; round++) {
            byte[] a = new byte[random.nextInt(60)];
            for (int i = 0; i < a.length; i++) a[i] = alphabet[random.nextInt(alphabet.length)];
            if (a.length >= key.length && random.nextInt(3) == 0) {
                System.arraycopy(key, 0, a, random.nextInt(a.length - key.length + 1), key.length);
            }
            assertEquals(naiveIndexOf(a, key), RecordJson.indexOfMdKey(a), new String(a, StandardCharsets.US_ASCII));
        }
        assertEquals(-1, RecordJson.indexOfMdKey(new byte[0]));
        assertEquals(0, RecordJson.indexOfMdKey(key));
    }

    private static int naiveIndexOf(byte[] a, byte[] key) {
        outer:
        for (int i = 0; i <= a.length - key.length; i++) {
            for (int j = 0; j < key.length; j++) {
                if (a[i + j] != key[j]) continue outer;
            }
            return i;
        }
        return -1;
    }
}
