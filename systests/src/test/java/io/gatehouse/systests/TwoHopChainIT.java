package io.gatehouse.systests;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * At-least-once across hops: producer → gateway A → gateway B → sink, where each gateway is input C_IOGATE →
 * relay → C_QIOGATE → next hop. A acks the producer once its queue has the message; B acks A once B's queue
 * has it. Gateway B is killed with SIGKILL in the middle of the flow and restarted on its data: nothing lost.
 */
class TwoHopChainIT {
    private static final int COUNT = 40_000;

    static String hopConfig(String name, int inputPort, int nextPort) {
        return "{\"yuno\": {\"yuno_role\": \"hop\", \"yuno_name\": \"" + name + "\"},"
                + " \"services\": ["
                + "  {\"name\": \"__output_side__\", \"gclass\": \"C_QIOGATE\", \"priority\": 3,"
                + "   \"kw\": {\"topic_name\": \"hop_events\", \"tkey\": \"tm\", \"timeout_ack\": 5}, \"children\": ["
                + "    {\"name\": \"next\", \"gclass\": \"C_IOGATE\", \"children\": ["
                + "      {\"name\": \"next\", \"gclass\": \"C_CHANNEL\", \"children\": ["
                + "        {\"name\": \"next\", \"gclass\": \"C_PROT_TCP4H\", \"children\": ["
                + "          {\"name\": \"next\", \"gclass\": \"C_TCP\", \"kw\": {\"url\": \"tcp://127.0.0.1:" + nextPort + "\","
                + "           \"timeout_between_connections\": 300}}]}]}]}]},"
                + "  {\"name\": \"relay\", \"gclass\": \"C_RELAY\", \"priority\": 4,"
                + "   \"kw\": {\"input\": \"__input_side__\", \"output\": \"__output_side__\"}},"
                + inputGate("__input_side__", inputPort, 5) + "]}";
    }

    static String inputGate(String name, int port, int priority) {
        return "{\"name\": \"" + name + "\", \"gclass\": \"C_IOGATE\", \"priority\": " + priority + ", \"children\": ["
                + "  {\"name\": \"listen\", \"gclass\": \"C_TCP_S\", \"kw\": {\"url\": \"tcp://127.0.0.1:" + port + "\"}}],"
                + " \"[^^children^^]\": {\"__range__\": 4, \"__vars__\": {}, \"__content__\": {"
                + "   \"name\": \"in-(^^__range__^^)\", \"gclass\": \"C_CHANNEL\", \"children\": ["
                + "     {\"name\": \"in-(^^__range__^^)\", \"gclass\": \"C_PROT_TCP4H\"}]}}}";
    }

    @Test
    @Timeout(400)
    void shouldLoseNothingWhenTheMiddleGatewayIsKilledAndRestarted() throws Exception {
        Path work = Files.createTempDirectory(Files.createDirectories(Path.of("target/systests")), "chain-");
        int[] p = Gateways.freePorts(5);
        int inA = p[0], inB = p[1], sinkPort = p[2], ctlA = p[3], ctlB = p[4];
        Path cfgA = work.resolve("a.json");
        Path cfgB = work.resolve("b.json");
        Files.writeString(cfgA, hopConfig("A", inA, inB));
        Files.writeString(cfgB, hopConfig("B", inB, sinkPort));
        ObjectNode sinkCfg = YunoRuntime.parseConfig("{\"services\": [" + inputGate("__sink_side__", sinkPort, 0)
                + ", {\"name\": \"sink\", \"gclass\": \"C_SINK\", \"kw\": {\"input\": \"__sink_side__\"}}]}");
        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl();
             YunoRuntime sink = YunoRuntime.builder().name("sink").dataDir(work.resolve("sink-data"))
                     .gclasses(Gateways.allGclasses(queues)).config(sinkCfg).build().start();
             GatewayProcess a = new GatewayProcess(cfgA, work.resolve("a-data"), work.resolve("a.log"), ctlA);
             GatewayProcess b = new GatewayProcess(cfgB, work.resolve("b-data"), work.resolve("b.log"), ctlB)) {
            b.start();
            a.start();
            b.awaitListening(inB, 60_000);
            a.awaitListening(inA, 60_000);
            CompletableFuture<Gateways.Sent> flow = CompletableFuture.supplyAsync(() -> Gateways.send(
                    "--port", "" + inA, "--count", "" + COUNT, "--window", "2000", "--timeout", "240", "--quiet"));
            awaitAtLeast(sink, COUNT / 10, 120_000);
            b.kill9();
            Thread.sleep(1000);
            b.start();
            Gateways.Sent sent = flow.get(300, TimeUnit.SECONDS);
            assertEquals(0, sent.exit, sent.output);
            awaitAtLeast(sink, COUNT, 240_000);
            ObjectNode check = sink.command("command-yuno service=sink command=check-ids from=0 to=" + (COUNT - 1));
            long lost = check.get("data").get("missing").asLong();
            long dups = check.get("data").get("duplicates").asLong();
            System.out.printf("two-hop chain, middle killed: sent %d, delivered %d, lost %d, duplicated %d%n",
                    COUNT, check.get("data").get("distinct_ids").asLong(), lost, dups);
            assertEquals(0, lost, "lost messages");
        }
    }

    private static void awaitAtLeast(YunoRuntime sink, long n, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        long got = 0;
        while (System.currentTimeMillis() < deadline) {
            got = sink.command("stats-yuno service=sink").get("data").get("distinct_ids").asLong();
            if (got >= n) return;
            Thread.sleep(100);
        }
        assertEquals(n, got, "delivered before the deadline");
    }
}
