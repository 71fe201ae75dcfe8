// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.api.queue.TrQueueOptions;
import io.gatehouse.testkit.RecordFields;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * {@link TrQueue#appendJson}: a record appended as its bytes (the compact JSON Jackson writes for the dict) is the
 * record {@link TrQueue#append} stores for the dict, read back, sent and timed alike; the default method (a trqueue
 * built before it) gives the same.
 */
class AppendJsonTest {
    @TempDir
    Path dir;

    final TrQueueFactoryImpl factory = new TrQueueFactoryImpl();

    @AfterEach
    void tearDown() {
        factory.close();
    }

    /** The queue as a trqueue built before appendJson answers: every call but the default method goes to it. */
    private static TrQueue older(TrQueue q) {
        InvocationHandler h = (proxy, m, args) -> m.isDefault() && m.getName().equals("appendJson")
                ? InvocationHandler.invokeDefault(proxy, m, args) : m.invoke(q, args);
        return (TrQueue) Proxy.newProxyInstance(TrQueue.class.getClassLoader(), new Class<?>[] {TrQueue.class}, h);
    }

    private static String wire(TrQueue q, QueueMessage m) {
        ByteBuf b = Unpooled.buffer();
        try {
            if (!q.writeMsgJson(m, b)) return null;
            // each queue has its own generation (its topic's creation time)
            return b.toString(StandardCharsets.UTF_8).replace("\"__msg_gen__\":" + q.generation(), "\"__msg_gen__\":G");
        } finally {
            b.release();
        }
    }

    /**
     * Appends {@code kw} both ways into four queues (the bytes alone, and with their member index as C_RELAY gives
     * it) and compares what each stores and gives back.
     */
    private void same(TrQueue dicts, TrQueue bytes, TrQueue viaDefault, TrQueue indexed, ObjectNode kw) throws Exception {
        byte[] json = Kw.MAPPER.writeValueAsBytes(kw);
        byte[] framed = new byte[json.length + 7];
        System.arraycopy(json, 0, framed, 3, json.length);
        QueueMessage a = dicts.append(100, kw, 0);
        QueueMessage b = bytes.appendJson(100, framed, 3, json.length, 0);
        QueueMessage c = viaDefault.appendJson(100, framed, 3, json.length, 0);
        QueueMessage d = indexed.appendJson(100, framed, 3, json.length, 0, RecordFields.of(json));
        assertNotNull(a, kw::toString);
        assertNotNull(b, kw::toString);
        assertNotNull(c, kw::toString);
        assertNotNull(d, kw::toString);
        for (QueueMessage m : new QueueMessage[] {b, c, d}) {
            assertEquals(a.rowid(), m.rowid());
            assertEquals(a.t(), m.t());
            assertEquals(a.tm(), m.tm(), kw::toString);
            assertEquals(a.userFlag(), m.userFlag());
        }
        String expected = wire(dicts, a);
        assertEquals(expected, wire(bytes, b), kw::toString);
        assertEquals(expected, wire(viaDefault, c), kw::toString);
        assertEquals(expected, wire(indexed, d), kw::toString);
        ObjectNode ja = dicts.msgJson(a);
        ObjectNode jb = bytes.msgJson(b);
        ((ObjectNode) ja.get(TrQueue.MD_TRQ)).remove(TrQueue.MSG_GEN);
        ((ObjectNode) jb.get(TrQueue.MD_TRQ)).remove(TrQueue.MSG_GEN);
        assertEquals(ja, jb);
        ObjectNode ma = dicts.msgMetadata(a);
        ObjectNode mb = bytes.msgMetadata(b);
        assertEquals(ma.get("size"), mb.get("size"), kw::toString);
        assertEquals(ma.get("tm"), mb.get("tm"));
    }

    @Test
    void shouldStoreTheBytesAsTheRecordOfTheDict() throws Exception {
        for (String tkey : new String[] {"", "tm"}) {
            TrQueue dicts = factory.open(dir, "db" + tkey, "dicts", tkey, 0, 1_000_000, TrQueueOptions.defaults());
            TrQueue bytes = factory.open(dir, "db" + tkey, "bytes", tkey, 0, 1_000_000, TrQueueOptions.defaults());
            TrQueue viaDefault = older(factory.open(dir, "db" + tkey, "default", tkey, 0, 1_000_000,
                    TrQueueOptions.defaults()));
            TrQueue indexed = factory.open(dir, "db" + tkey, "indexed", tkey, 0, 1_000_000, TrQueueOptions.defaults());
            for (String m : new String[] {"{}", "{\"id\":\"a-1\",\"tm\":17}", "{\"tm\":\"2026-12-02T06:00:00Z\",\"x\":[1]}",
                    "{\"s\":\"a \\\"__md_trq__\\\" in a string\"}", "{\"inner\":{\"__md_trq__\":{\"x\":1}}}",
                    "{\"tm\":1.5}", "{\"tm\":-12345678901234567890123}", "{\"tm\":9223372036854775807}",
                    "{\"tm\":\"2026-12-02\"}", "{\"tm\":\"2026-12-02T06:00:00+01:00\",\"a\":1}", "{\"tm\":\"2026\\n\"}",
                    "{\"x\":{\"tm\":5},\"y\":[{\"tm\":6}]}", "{\"tm\":null}", "{\"tm\":[1]}", "{\"tm\":{\"tm\":1}}",
                    "{\"a\":\"\\\"tm\\\":7\",\"tm\":8}", "{\"tm\":true}", "{\"tm\":\"\"}",
                    "{\"tm\":0}", "{\"tm\":-5}", "{\"tm\":123456789012345678}", "{\"tm\":-12345678901234567}",
                    "{\"tm\":-123456789012345678}", "{\"tm\":1234567890123456789}"}) {
                same(dicts, bytes, viaDefault, indexed, Kw.parse(m));
            }
            Random rnd = new Random(5);
            for (int i = 0; i < 500; i++) {
                ObjectNode kw = (ObjectNode) RecordJsonEncodeTest.random(rnd, 0, true);
                if (rnd.nextBoolean()) kw.put("tm", rnd.nextInt(1_000_000));
                same(dicts, bytes, viaDefault, indexed, kw);
            }
            assertEquals(dicts.size(), bytes.size());
            assertEquals(dicts.size(), viaDefault.size());
            assertEquals(dicts.size(), indexed.size());
        }
    }

    @Test
    void shouldReadTheTimeKeyFromTheIndexAndWalkWhenTheIndexDoesNotFit() throws Exception {
        TrQueue q = factory.open(dir, "db", "T", "tm", 0, 1000, TrQueueOptions.defaults());
        byte[] json = "{\"a\":\"x\",\"tm\":17,\"b\":[1]}".getBytes(StandardCharsets.UTF_8);
        int[] fields = RecordFields.of(json);
        assertEquals(17, q.appendJson(0, json, 0, json.length, 0, fields).tm());
        // the index is what is read: one that leaves the member out hides it (the caller vouches for the index)
        assertEquals(0, q.appendJson(0, json, 0, json.length, 0, java.util.Arrays.copyOf(fields, 1)).tm());
        // an index that does not fit the bytes (outside them, not on a key, not compact) is not used: the walk reads
        for (int[] bad : new int[][] {{}, {0}, {1, 999}, {2, 9, 17}, {1, 10, 17}, {-1, 9, 17}, {1, 17, 9}, {9, 1}}) {
            assertEquals(17, q.appendJson(0, json, 0, json.length, 0, bad).tm(), java.util.Arrays.toString(bad));
        }
    }

    @Test
    void shouldRefuseBytesThatAreNoObjectAndRecordsTooLarge() throws Exception {
        TrQueue q = factory.open(dir, "db", "T", "", 0, 1000, TrQueueOptions.defaults().withMaxMessageSize(64));
        TrQueue d = older(q);
        for (String bad : new String[] {"", "[1]", "\"s\"", "{", "1"}) {
            byte[] b = bad.getBytes(StandardCharsets.UTF_8);
            assertNull(q.appendJson(0, b, 0, b.length, 0), bad);
            assertNull(d.appendJson(0, b, 0, b.length, 0), bad);
        }
        byte[] ok = "{\"a\":1}".getBytes(StandardCharsets.UTF_8);
        assertNull(q.appendJson(0, ok, 1, ok.length, 0), "a slice outside the array");
        byte[] big = ("{\"pad\":\"" + "x".repeat(80) + "\"}").getBytes(StandardCharsets.UTF_8);
        assertNull(q.appendJson(0, big, 0, big.length, 0));
        assertNull(d.appendJson(0, big, 0, big.length, 0));
        assertEquals(0, q.size());
        assertNotNull(q.appendJson(0, ok, 0, ok.length, 0));
        assertEquals(1, q.size());
    }
}
