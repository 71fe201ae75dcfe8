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
        assertEquals(17, o.md.get("__msg_rowid__").asLong());
        assertEquals(2, o.md.get("__msg_gen__").asLong());
        assertEquals(0, b.readerIndex(), "the buffer is read, not consumed");
        b.release();
    }

    @Test
    void shouldGiveAnEmptyObjectWhenTheMessageHeldOnlyTheMd() throws Exception {
        KafkaRecords.Outgoing o = KafkaRecords.fromQueue(buf("{\"__md_trq__\":{\"__msg_rowid__\":1}}"), new String[] {"id"});
        assertEquals("{}", text(o.value));
        assertNull(o.key, "no key in the message: a keyless record");
        assertEquals(1, o.md.get("__msg_rowid__").asLong());
    }

    @Test
    void shouldTakeTheGeneralPathWhenTheMdIsNotTheLastKey() throws Exception {
        KafkaRecords.Outgoing o = KafkaRecords.fromQueue(
                buf("{\"__md_trq__\":{\"__msg_rowid__\":5},\"id\":7,\"x\":\"__md_trq__\"}"), new String[] {"id"});
        assertEquals("{\"id\":7,\"x\":\"__md_trq__\"}", text(o.value));
        assertEquals("7", text(o.key), "a number key is its decimal text, as C_MQIOGATE reads it");
        assertEquals(5, o.md.get("__msg_rowid__").asLong());
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
        assertNull(o.md);
    }

    @Test
    void shouldPassScalarKafkaPropertiesAndRefuseNestedOnes() throws Exception {
        Map<String, Object> p = KafkaOut.properties(Kw.parse(
                "{\"security.protocol\":\"SSL\",\"buffer.memory\":1048576,\"enable.metrics.push\":false}"));
        assertEquals(Map.of("security.protocol", "SSL", "buffer.memory", "1048576", "enable.metrics.push", "false"), p,
                "as text: Kafka parses each to its property's type");
        assertThrows(IllegalArgumentException.class, () -> KafkaOut.properties(Kw.parse("{\"ssl\":{\"x\":1}}")));
    }
}
