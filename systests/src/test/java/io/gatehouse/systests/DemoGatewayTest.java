package io.gatehouse.systests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The runtime's default config, the demo gateway, in one process: producer → C_IOGATE (C_TCP_S) → relay →
 * C_MQIOGATE (lastdigits on id) → two C_QIOGATE → TCP4H → two sinks. Every message acked to the producer
 * (durably queued) reaches a sink; even last digits go to sink0, odd to sink1.
 */
class DemoGatewayTest {
    @TempDir
    Path data;

    @Test
    @Timeout(120)
    void shouldDeliverEveryAckedMessageToTheSinkItsIdSelects() throws Exception {
        int[] ports = Gateways.freePorts(3);
        ObjectNode cfg = Gateways.demoConfig(Map.of("__input_port__", "" + ports[0],
                "__sink0_port__", "" + ports[1], "__sink1_port__", "" + ports[2]));
        int count = 20_000;
        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl();
             YunoRuntime rt = YunoRuntime.builder().name("demo").dataDir(data)
                     .gclasses(Gateways.allGclasses(queues)).config(cfg).build().start()) {
            Gateways.Sent sent = Gateways.send("--port", "" + ports[0], "--count", "" + count, "--window", "2000",
                    "--timeout", "90", "--quiet");
            assertEquals(0, sent.exit, sent.output);
            long deadline = System.currentTimeMillis() + 30_000;
            long delivered = 0;
            while (System.currentTimeMillis() < deadline) {
                delivered = distinct(rt, "sink0") + distinct(rt, "sink1");
                if (delivered >= count) break;
                Thread.sleep(100);
            }
            assertEquals(count, delivered, "every acked message reached a sink");
            JsonNode even = rt.command("command-yuno service=sink0 command=check-ids from=0 to=" + (count - 1)).get("data");
            JsonNode odd = rt.command("command-yuno service=sink1 command=check-ids from=0 to=" + (count - 1)).get("data");
            assertEquals(count / 2, even.get("distinct_ids").asLong());
            assertEquals(count / 2, odd.get("distinct_ids").asLong());
            assertEquals(1, even.get("first_missing").asLong(), "sink0 has every even id: the first it lacks is 1");
            assertEquals(0, odd.get("first_missing").asLong(), "sink1 has every odd id");
            ObjectNode out = rt.command("stats-yuno service=__output_side__");
            assertEquals(0, out.get("result").asInt(), out.toString());
            awaitEmptyQueues(rt);
        }
    }

    private static long distinct(YunoRuntime rt, String sink) {
        return rt.command("stats-yuno service=" + sink).get("data").get("distinct_ids").asLong();
    }

    private static void awaitEmptyQueues(YunoRuntime rt) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 20_000;
        JsonNode data = null;
        while (System.currentTimeMillis() < deadline) {
            data = rt.command("stats-yuno service=__output_side__").get("data");
            if (data.get("output-0").get("msgs_in_queue").asLong() == 0
                    && data.get("output-1").get("msgs_in_queue").asLong() == 0) return;
            Thread.sleep(100);
        }
        assertTrue(false, "queues not drained: " + data);
    }
}
