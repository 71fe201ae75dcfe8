package io.gatehouse.systests;

import com.fasterxml.jackson.databind.JsonNode;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.kafka.KafkaOutGClass;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The shipped sample, conf/kafka-edge.json, builds as it is and behaves as an edge with its Kafka out of reach:
 * producers are acked once their messages are on disk, the messages wait in the queue, and stats say why. No broker.
 */
class KafkaEdgeConfigTest {
    @TempDir
    Path data;

    @Test
    @Timeout(120)
    void shouldAckProducersAndKeepTheirMessagesQueuedWhileKafkaIsUnreachable() throws Exception {
        int[] ports = Gateways.freePorts(2);
        String nowhere = "127.0.0.1:" + ports[1];
        List<GClassSpec<?>> gclasses;
        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl()) {
            gclasses = new ArrayList<>(Gateways.allGclasses(queues));
            gclasses.add(new KafkaOutGClass().spec());
            try (YunoRuntime rt = YunoRuntime.builder().name("edge-t").dataDir(data).gclasses(gclasses)
                    .config(KafkaEdges.edgeConfig("edge-t", ports[0], nowhere)).build().start()) {
                Gateways.Sent sent = Gateways.send("--port", "" + ports[0], "--count", "500", "--window", "500",
                        "--timeout", "60", "--quiet");
                assertEquals(0, sent.exit, sent.output);
                long deadline = System.currentTimeMillis() + 60_000;
                JsonNode s = null;
                while (System.currentTimeMillis() < deadline) {
                    s = rt.command("stats-yuno service=__output_side__").get("data");
                    if (s.get("kafka_status").asText().contains("no broker of " + nowhere)) break;
                    Thread.sleep(200);
                }
                assertTrue(s.get("kafka_status").asText().contains("no broker of " + nowhere), s.toString());
                assertFalse(s.get("connected").asBoolean());
                assertEquals(500, s.get("msgs_in_queue").asLong(), "acked upstream, kept on disk: " + s);
                assertEquals(0, s.get("pending_acks").asLong(), "nothing handed to a link that is not open");
                assertEquals(10_000, rt.call(() -> rt.yuno().service("__output_side__")
                        .readAttr("max_pending_acks").asLong()), "the queue's window is C_KAFKA's max_in_flight");
            }
        }
    }
}
