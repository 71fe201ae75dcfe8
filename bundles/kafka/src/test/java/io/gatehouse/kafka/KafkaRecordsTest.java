// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.kafka;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** What C_KAFKA makes of a queued message: the record value, its key and the queue's md, without a broker. */
class KafkaRecordsTest {
    static ByteBuf buf(String s) {
        return Unpooled.copiedBuffer(s, StandardCharsets.UTF_8);
    }

    static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    @Test
    void shouldCutTheMdOutOfTheStoredBytesAndReadTheKeyWhenTheQueueAppendedItLast() throws Exception {
        ByteBuf b = buf("{\"id\":\"dev-0042\",\"v\":{\"a\":[1,2]},\"__md_trq__\":{\"__msg_rowid__\":17,"
                + "\"__msg_t__\":1764428000,\"__msg_gen__\":2}}");
        KafkaRecords.Outgoing o = KafkaRecords.fromQueue(b, new String[] {"id"});
        assertEquals("{\"id\":\"dev-0042\",\"v\":{\"a\":[1,2]}}", text(o.value));
        assertEquals("dev-0042", text(o.key));
        assertEquals(17, o.md().get("__msg_rowid__").asLong());
        assertEquals(2, o.md().get("__msg_gen__").asLong());
        assertEquals(0, b.readerIndex(), "the buffer is read, not consumed");
        b.release();
    }

    /** A queue's handle, as C_QIOGATE hands one with the record's bytes. */
    static io.gatehouse.api.queue.QueueMessage handle(long rowid, long t, long gen) {
        return new io.gatehouse.api.queue.QueueMessage() {
            @Override public long rowid() { return rowid; }
            @Override public long generation() { return gen; }
            @Override public long t() { return t; }
            @Override public long tm() { return 0; }
            @Override public int userFlag() { return 0; }
            @Override public long softMark() { return 0; }
        };
    }

    @Test
    void shouldMakeOfARecordAndItsHandleWhatItMakesOfTheJsonWithTheMd() throws Exception {
        String[] records = {"{}", "{\"id\":\"dev-0042\",\"v\":{\"a\":[1,2]}}", "{\"v\":1,\"id\":77}",
                "{\"s\":\"\\\"__md_trq__\\\":{\",\"id\":\"q\"}"};
        for (String r : records) {
            String json = (r.length() > 2 ? r.substring(0, r.length() - 1) + "," : "{")
                    + "\"__md_trq__\":{\"__msg_rowid__\":17,\"__msg_t__\":1764428000,\"__msg_gen__\":2}}";
            KafkaRecords.Outgoing fromJson = KafkaRecords.fromQueue(buf(json), new String[] {"id"});
            byte[] bytes = r.getBytes(StandardCharsets.UTF_8);
            ByteBuf exact = Unpooled.wrappedBuffer(bytes);
            KafkaRecords.Outgoing fromRecord = KafkaRecords.fromRecord(exact, handle(17, 1764428000, 2),
                    new String[] {"id"});
            assertEquals(text(fromJson.value), text(fromRecord.value), r);
            assertEquals(text(fromJson.key), text(fromRecord.key), r);
            assertEquals(fromJson.md(), fromRecord.md(), r);
            org.junit.jupiter.api.Assertions.assertSame(bytes, fromRecord.value, "the queue's array, not a copy");
            // a buffer that is not exactly its array is copied
            ByteBuf sliced = Unpooled.copiedBuffer("xx" + r, StandardCharsets.UTF_8).skipBytes(2);
            assertEquals(r, text(KafkaRecords.fromRecord(sliced, handle(17, 1764428000, 2), null).value));
            sliced.release();
        }
        assertThrows(java.io.IOException.class,
                () -> KafkaRecords.fromRecord(buf("[1]"), handle(1, 1, 1), new String[] {"id"}));
    }

    @Test
    void shouldFindTheStoresMdAfterBracesAndLookAlikesInTheMessage() throws Exception {
        String store = "{\"__msg_rowid__\":9,\"__msg_t__\":1,\"__msg_gen__\":1}";
        String[] bodies = {"{\"id\":\"a{\",\"s\":\"\\\"__md_trq__\\\":{\",\"o\":{\"__md_trq__\":{\"__msg_rowid__\":1}}",
            "{\"__md_trq__\":{\"x\":{}},\"id\":\"b\"", "{\"id\":\"c\",\"n\":[{},{}]"};
        for (String body : bodies) {
            String msg = body + ",\"__md_trq__\":" + store + "}";
            KafkaRecords.Outgoing o = KafkaRecords.fromQueue(buf(msg), new String[] {"id"});
            assertEquals(body + "}", text(o.value), msg);
            assertEquals(9, o.md().get("__msg_rowid__").asLong(), msg);
        }
    }

    @Test
    void shouldGiveAnEmptyObjectWhenTheMessageHeldOnlyTheMd() throws Exception {
        KafkaRecords.Outgoing o = KafkaRecords.fromQueue(buf("{\"__md_trq__\":{\"__msg_rowid__\":1}}"), new String[] {"id"});
        assertEquals("{}", text(o.value));
        assertNull(o.key, "no key in the message: a keyless record");
        assertEquals(1, o.md().get("__msg_rowid__").asLong());
    }

    @Test
    void shouldTakeTheGeneralPathWhenTheMdIsNotTheLastKey() throws Exception {
        KafkaRecords.Outgoing o = KafkaRecords.fromQueue(
                buf("{\"__md_trq__\":{\"__msg_rowid__\":5},\"id\":7,\"x\":\"__md_trq__\"}"), new String[] {"id"});
        assertEquals("{\"id\":7,\"x\":\"__md_trq__\"}", text(o.value));
        assertEquals("7", text(o.key), "a number key is its decimal text, as C_MQIOGATE reads it");
        assertEquals(5, o.md().get("__msg_rowid__").asLong());
    }

    @Test
    void shouldFollowANestedKeyPathAndSkipWhatIsAroundIt() throws Exception {
        String[] path = {"dev", "id"};
        assertEquals("a1", text(KafkaRecords.keyOf(
                "{\"x\":{\"id\":\"no\"},\"dev\":{\"y\":[{\"id\":\"no\"}],\"id\":\"a1\"}}".getBytes(StandardCharsets.UTF_8), path)));
        assertNull(KafkaRecords.keyOf("{\"dev\":\"flat\"}".getBytes(StandardCharsets.UTF_8), path));
        assertNull(KafkaRecords.keyOf("{\"dev\":{\"id\":null}}".getBytes(StandardCharsets.UTF_8), path));
        assertNull(KafkaRecords.keyOf("{\"dev\":{\"id\":{\"deeper\":1}}}".getBytes(StandardCharsets.UTF_8), path));
    }

    @Test
    void shouldRefuseAPayloadThatIsNotAJsonObject() {
        assertThrows(java.io.IOException.class, () -> KafkaRecords.fromQueue(buf("not json"), new String[] {"id"}));
        assertThrows(java.io.IOException.class, () -> KafkaRecords.fromQueue(buf("[1,2]"), new String[] {"id"}));
    }

    @Test
    void shouldLeaveMetadataAndReferencesOutOfARelayedDict() throws Exception {
        ObjectNode kw = Kw.parse("{\"id\":\"d1\",\"n\":1,\"__temp__\":{\"channel\":\"in-1\"}}");
        Kw.putRef(kw, "gate", new Object());
        KafkaRecords.Outgoing o = KafkaRecords.fromDict(kw, new String[] {"id"});
        assertEquals("{\"id\":\"d1\",\"n\":1}", text(o.value));
        assertEquals("d1", text(o.key));
        assertNull(o.md());
    }

    @Test
    void shouldPassScalarKafkaPropertiesAndRefuseNestedOnes() throws Exception {
        Map<String, Object> p = KafkaOut.properties(Kw.parse(
                "{\"security.protocol\":\"SSL\",\"buffer.memory\":1048576,\"enable.metrics.push\":false}"));
        assertEquals(Map.of("security.protocol", "SSL", "buffer.memory", "1048576", "enable.metrics.push", "false"), p,
                "as text: Kafka parses each to its property's type");
        assertThrows(IllegalArgumentException.class, () -> KafkaOut.properties(Kw.parse("{\"ssl\":{\"x\":1}}")));
    }

    /** The same keys in the same order, each the same number. */
    static void assertSameNumbers(ObjectNode want, ObjectNode got) {
        assertEquals(java.util.List.copyOf(want.properties()).stream().map(Map.Entry::getKey).toList(),
                java.util.List.copyOf(got.properties()).stream().map(Map.Entry::getKey).toList(), got.toString());
        want.properties().forEach(e -> assertEquals(e.getValue().asLong(), got.get(e.getKey()).asLong(), e.getKey()));
    }

    static ObjectNode storeMd(String md) {
        byte[] b = ("{\"x\":1," + "\"__md_trq__\":" + md + "}").getBytes(StandardCharsets.UTF_8);
        int from = b.length - 1 - md.length();
        return KafkaRecords.storeMd(b, from, b.length - 1);
    }

    @Test
    void shouldReadTheStoresOwnMdByteByByteAsJacksonWouldAndLeaveAnyOtherShapeToJackson() throws Exception {
        for (String md : new String[] {"{\"__msg_rowid__\":17,\"__msg_t__\":1764428000,\"__msg_gen__\":2}",
                "{\"__msg_rowid__\":1,\"__msg_t__\":-5,\"__msg_gen__\":0}",
                "{\"__msg_rowid__\":999999999999999999,\"__msg_t__\":0,\"__msg_gen__\":-1}"}) {
            assertSameNumbers(Kw.parse(md), storeMd(md));
            assertSameNumbers(Kw.parse(md), KafkaRecords.fromQueue(buf("{\"a\":1,\"__md_trq__\":" + md + "}"), null).md());
        }
        for (String md : new String[] {"{\"__msg_t__\":1,\"__msg_rowid__\":17,\"__msg_gen__\":2}",
                "{\"__msg_rowid__\":17,\"__msg_t__\":1}", "{\"__msg_rowid__\":17, \"__msg_t__\":1,\"__msg_gen__\":2}",
                "{\"__msg_rowid__\":017,\"__msg_t__\":1,\"__msg_gen__\":2}",
                "{\"__msg_rowid__\":-17,\"__msg_t__\":1,\"__msg_gen__\":2}",
                "{\"__msg_rowid__\":17,\"__msg_t__\":1.5,\"__msg_gen__\":2}",
                "{\"__msg_rowid__\":1234567890123456789,\"__msg_t__\":1,\"__msg_gen__\":2}",
                "{\"__msg_rowid__\":17,\"__msg_t__\":1,\"__msg_gen__\":2,\"x\":0}"}) {
            assertNull(storeMd(md), md);
            // and the general path reads it as Jackson does, or refuses it as Jackson does (a leading zero)
            String msg = "{\"a\":1,\"__md_trq__\":" + md + "}";
            ObjectNode tree;
            try {
                tree = Kw.parse(md);
            } catch (java.io.IOException notJson) {
                assertThrows(java.io.IOException.class, () -> KafkaRecords.fromQueue(buf(msg), null), md);
                continue;
            }
            assertEquals(tree.toString(), KafkaRecords.fromQueue(buf(msg), null).md().toString(), md);
        }
    }

    @Test
    void shouldWriteTheDigitsOfTheMsgIdAsLongToStringDoes() {
        for (long v : new long[] {0, 1, 9, 10, 99, 100, 4711, 1764600000123L, Long.MAX_VALUE, -1, -10, -4711,
                Long.MIN_VALUE + 1, Long.MIN_VALUE}) {
            int n = KafkaOut.digits(v);
            byte[] b = new byte[n + 2];
            b[0] = 'x';
            b[n + 1] = 'y';
            KafkaOut.putDigits(b, 1, n, v);
            assertEquals("x" + v + "y", new String(b, java.nio.charset.StandardCharsets.US_ASCII));
        }
    }
}
