package io.gatehouse.systests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.testkit.kafka.KafkaBroker;
import io.gatehouse.testkit.kafka.KafkaRecord;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * What the Kafka system tests share: a broker from testkit-kafka (a child JVM on 127.0.0.1), Kafka edges made from
 * the shipped sample config (runtime/felix conf/kafka-edge.json) run as gateway processes, and the reading of the
 * topic back: which message ids arrived, how many records came more than once, and why.
 */
final class KafkaEdges {
    static final String TOPIC = "gate_events";

    private KafkaEdges() {}

    /** A broker in {@code work}/broker, killed at the end by its own handle. */
    static KafkaBroker broker(Path work) throws IOException, InterruptedException {
        return KafkaBroker.builder(work.resolve("broker")).startTimeout(java.time.Duration.ofSeconds(180)).start();
    }

    /** The sample edge config with this edge's name, ports and Kafka. */
    static ObjectNode edgeConfig(String name, int inputPort, String bootstrapServers) {
        try {
            ObjectNode cfg = (ObjectNode) Reliability.JSON.readTree(Files.readString(Path.of(System.getProperty(
                    "gatehouse.kafka.edge.config", "../runtime/felix/src/main/dist/conf/kafka-edge.json"))));
            ((ObjectNode) cfg.get("yuno")).put("yuno_name", name);
            ObjectNode v = (ObjectNode) cfg.get("__json_config_variables__");
            Map.of("__host__", "127.0.0.1", "__input_port__", "" + inputPort, "__kafka_servers__", bootstrapServers,
                    "__kafka_topic__", TOPIC).forEach(v::put);
            return cfg;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** One edge: a gateway process on its own ports and data directory. */
    static final class Edge implements AutoCloseable {
        final String name;
        final int input;
        final int control;
        final GatewayProcess process;
        final Path log;

        Edge(String name, Path work, String bootstrapServers) throws IOException {
            this.name = name;
            int[] p = Gateways.freePorts(2);
            this.input = p[0];
            this.control = p[1];
            Path dir = Files.createDirectories(work.resolve(name));
            Path config = dir.resolve("edge.json");
            Files.writeString(config, edgeConfig(name, input, bootstrapServers).toPrettyString());
            this.log = dir.resolve("gateway.log");
            this.process = new GatewayProcess(config, dir.resolve("data"), log, control);
        }

        void start() throws IOException, InterruptedException {
            process.start();
            process.awaitListening(input, 120_000);
        }

        void kill9() throws InterruptedException {
            process.kill9();
        }

        int stop() throws InterruptedException {
            return process.stop();
        }

        /** The queue's stats with C_KAFKA's merged in, or null when the edge does not answer. */
        JsonNode stats() {
            try {
                return Reliability.command(control, "stats-yuno service=__output_side__").get("data");
            } catch (IOException | RuntimeException e) {
                return null;
            }
        }

        long stat(String key) {
            JsonNode s = stats();
            return s == null || !s.has(key) ? -1 : s.get(key).asLong();
        }

        /** Waits until the edge's queue is empty (everything acked by Kafka); false at the timeout. */
        boolean awaitDrained(long timeoutMs) {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (System.currentTimeMillis() < deadline) {
                if (stat("msgs_in_queue") == 0) return true;
                Reliability.sleep(200);
            }
            return false;
        }

        @Override
        public void close() throws InterruptedException {
            process.close();
        }
    }

    /**
     * The topic as a consumer sees it. A record is an edge duplicate when its {@code gh-msg-id} came before (the
     * edge produced the same queued record again after a crash: a consumer drops it by that header); what is left
     * after that dedup and still names a message id twice was queued twice, which only a producer's resend does.
     */
    static final class TopicCheck {
        final BitSet ids = new BitSet();
        final long records;
        long edgeDuplicates;
        long rawDuplicates;
        /** Message ids found under two or more distinct gh-msg-ids. */
        final BitSet queuedTwice = new BitSet();
        long badRecords;

        TopicCheck(List<KafkaRecord> all) {
            records = all.size();
            Set<String> ghIds = new HashSet<>();
            BitSet afterDedup = new BitSet();
            for (KafkaRecord r : all) {
                long id = idOf(r.value());
                if (id < 0 || id >= Integer.MAX_VALUE) {
                    badRecords++;
                    continue;
                }
                if (ids.get((int) id)) rawDuplicates++;
                ids.set((int) id);
                String gh = r.header("gh-msg-id");
                if (gh == null || !ghIds.add(gh)) {
                    edgeDuplicates++;
                    continue;
                }
                if (afterDedup.get((int) id)) queuedTwice.set((int) id);
                afterDedup.set((int) id);
            }
        }

        /** Acked ids missing from the topic. */
        long lost(BitSet acked) {
            BitSet missing = (BitSet) acked.clone();
            missing.andNot(ids);
            return missing.cardinality();
        }

        /** Ids queued twice that no producer sent twice: duplicates the edges made and gh-msg-id cannot remove. */
        long unexplained(BitSet resentByProducers) {
            BitSet b = (BitSet) queuedTwice.clone();
            b.andNot(resentByProducers);
            return b.cardinality();
        }

        String summary() {
            return String.format(Locale.ROOT, "%d records for %d ids: %d raw duplicates, %d dropped by gh-msg-id, "
                            + "%d ids queued twice by producer resends%s", records, ids.cardinality(), rawDuplicates,
                    edgeDuplicates, queuedTwice.cardinality(), badRecords == 0 ? "" : ", " + badRecords + " unreadable");
        }

        /** The N of {@code "id":"msg-N"} in a record's value, -1 if none. */
        static long idOf(byte[] value) {
            byte[] key = "\"id\":\"msg-".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
            outer:
            for (int i = 0; value != null && i <= value.length - key.length; i++) {
                for (int j = 0; j < key.length; j++) {
                    if (value[i + j] != key[j]) continue outer;
                }
                long v = 0;
                int k = i + key.length;
                if (k >= value.length || value[k] < '0' || value[k] > '9') return -1;
                while (k < value.length && value[k] >= '0' && value[k] <= '9') v = v * 10 + (value[k++] - '0');
                return v;
            }
            return -1;
        }
    }
}
