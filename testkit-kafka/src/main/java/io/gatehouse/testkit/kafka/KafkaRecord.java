package io.gatehouse.testkit.kafka;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * A record read back by {@link KafkaBroker#consumeAll}: only JDK types, so that code in another class loader (a
 * test probe inside an OSGi framework, with Kafka classes of its own) can use it.
 */
public record KafkaRecord(String topic, int partition, long offset, long timestamp, byte[] key, byte[] value,
                          List<RecordHeader> headers) {

    /** One header; a record may carry several with the same key. */
    public record RecordHeader(String key, byte[] value) {
        public String valueString() {
            return value == null ? null : new String(value, StandardCharsets.UTF_8);
        }
    }

    static KafkaRecord of(ConsumerRecord<byte[], byte[]> r) {
        List<RecordHeader> hs = new ArrayList<>();
        for (Header h : r.headers()) {
            hs.add(new RecordHeader(h.key(), h.value()));
        }
        return new KafkaRecord(r.topic(), r.partition(), r.offset(), r.timestamp(), r.key(), r.value(),
            List.copyOf(hs));
    }

    /** The value of the last header named {@code name} as UTF-8, or null. */
    public String header(String name) {
        String v = null;
        for (RecordHeader h : headers) {
            if (h.key().equals(name)) {
                v = h.valueString();
            }
        }
        return v;
    }

    public String keyString() {
        return key == null ? null : new String(key, StandardCharsets.UTF_8);
    }

    public String valueString() {
        return value == null ? null : new String(value, StandardCharsets.UTF_8);
    }
}
