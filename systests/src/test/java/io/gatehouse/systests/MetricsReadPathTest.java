package io.gatehouse.systests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.core.MetricsServer;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 18's test of the read path: the demo gateway in one process on a manual clock, Prometheus scraping
 * {@code /metrics} every 100 ms (and the live page polling its view and the sampler ticking every second) while a
 * person takes {@code stats-yuno} every 1.5 s. Exactly 15 messages go in every 100 ms, so the person's input rate
 * must be exactly 150 msgs/s at every read; and for every gate and channel of the demo (every C_IOGATE service, and
 * the gates of every C_MQIOGATE's queues), the rate the person reads
 * must be exactly the messages between that person's own two reads over 1.5 s, which it is only when nobody else
 * moved the window (seeds/000).
 */
class MetricsReadPathTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int PER_STEP = 15;
    private static final long STEP_MS = 100;
    private static final int STEPS_PER_READ = 15;

    @TempDir
    Path data;

    @Test
    @Timeout(180)
    void shouldKeepAPersonsRatesExactWhileScrapedEvery100ms() throws Exception {
        int[] ports = Gateways.freePorts(3);
        ObjectNode cfg = Gateways.demoConfig(Map.of("__input_port__", "" + ports[0],
                "__sink0_port__", "" + ports[1], "__sink1_port__", "" + ports[2]));
        ManualClock clock = new ManualClock();
        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl();
             YunoRuntime rt = YunoRuntime.builder().name("demo").dataDir(data).clock(clock)
                     .gclasses(Gateways.allGclasses(queues)).config(cfg).build().start();
             MetricsServer http = new MetricsServer(rt)) {
            int port = http.start("127.0.0.1", 0);
            awaitLinks(rt);
            Map<String, long[]> previous = new HashMap<>();
            read(rt, previous);                                  // the person's first read opens every window
            try (Socket producer = new Socket("127.0.0.1", ports[0])) {
                producer.setSoTimeout(20_000);
                DataOutputStream out = new DataOutputStream(producer.getOutputStream());
                DataInputStream in = new DataInputStream(producer.getInputStream());
                long id = 0;
                int checkedReads = 0;
                for (int step = 1; step <= 6 * STEPS_PER_READ; step++) {
                    for (int i = 0; i < PER_STEP; i++, id++) frame(out, id);
                    out.flush();
                    for (int i = 0; i < PER_STEP; i++) readFrame(in);   // acked: durably queued, counted by the input gate
                    String metrics = get(port, "/metrics");
                    assertTrue(metrics.contains("gatehouse_rxMsgs_total{yuno=\"demo\",service=\"__input_side__\",gclass=\"C_IOGATE\"} "
                            + (id)), "the scrape sees the counter as it is: " + line(metrics, "gatehouse_rxMsgs_total{yuno=\"demo\",service=\"__input_side__\","));
                    assertTrue(get(port, "/api/view").contains("\"services\""));
                    clock.advance(STEP_MS);
                    if (step % STEPS_PER_READ == 0) {
                        Map<String, Long> rates = read(rt, previous);
                        assertEquals(150L, rates.get("__input_side__.rxMsgsec"),
                                "15 messages every 100 ms read every 1.5 s is 150 msgs/s: " + rates);
                        checkedReads++;
                    }
                }
                assertEquals(6, checkedReads);
            }
            JsonNode view = JSON.readTree(get(port, "/api/view"));
            for (JsonNode s : view.get("services")) {
                if (s.get("name").asText().equals("__input_side__")) {
                    assertEquals(150.0, s.get("rx").asDouble(), 0.001, "the page's own rate, over the sampler's second");
                }
            }
        }
    }

    /**
     * One person's read of every gate: checks each rate against that person's previous read (exact, by the integer
     * rule of RateWindow) and answers the rates by {@code gate.key}.
     */
    private static Map<String, Long> read(YunoRuntime rt, Map<String, long[]> previous) {
        Map<String, Long> rates = new HashMap<>();
        for (JsonNode svc : rt.command("list-services").get("data")) {
            String name = svc.get("service").asText();
            String gclass = svc.get("gclass").asText();
            if (gclass.equals("C_IOGATE")) {
                check(name, rt.command("stats-yuno service=" + name).get("data"), previous, rates);
            } else if (gclass.equals("C_MQIOGATE")) {
                JsonNode d = rt.command("stats-yuno service=" + name).get("data");
                for (Iterator<Map.Entry<String, JsonNode>> it = d.fields(); it.hasNext(); ) {
                    Map.Entry<String, JsonNode> q = it.next();
                    check(name + "/" + q.getKey(), q.getValue(), previous, rates);
                }
            }
        }
        assertTrue(rates.size() >= 8, "every gate and channel of the demo was read: " + rates.keySet());
        return rates;
    }

    private static void check(String gate, JsonNode d, Map<String, long[]> previous, Map<String, Long> rates) {
        compare(gate, d, previous, rates);
        JsonNode channels = d.path("channels");
        for (Iterator<Map.Entry<String, JsonNode>> it = channels.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> c = it.next();
            compare(gate + "/" + c.getKey(), c.getValue(), previous, rates);
        }
    }

    private static void compare(String key, JsonNode d, Map<String, long[]> previous, Map<String, Long> rates) {
        long rx = d.get("rxMsgs").asLong();
        long tx = d.get("txMsgs").asLong();
        long[] p = previous.put(key, new long[] {rx, tx});
        rates.put(key + ".rxMsgsec", d.get("rxMsgsec").asLong());
        rates.put(key + ".txMsgsec", d.get("txMsgsec").asLong());
        if (p == null) return;
        long window = STEP_MS * STEPS_PER_READ;
        assertEquals((rx - p[0]) * 1000 / window, d.get("rxMsgsec").asLong(), key + " rx over the person's own 1.5 s: " + d);
        assertEquals((tx - p[1]) * 1000 / window, d.get("txMsgsec").asLong(), key + " tx over the person's own 1.5 s: " + d);
    }

    /** Both queue channels are open before the first read (read as attributes: no stats, no window moved). */
    private static void awaitLinks(YunoRuntime rt) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 30_000;
        while (System.currentTimeMillis() < deadline) {
            boolean up = true;
            for (String q : new String[] {"output-0", "output-1"}) {
                JsonNode a = rt.command("read-attrs service=__output_side__ gobj=" + q + "`" + q + "`" + q).path("data");
                up &= a.path("opened").asBoolean(false);
            }
            if (up) return;
            Thread.sleep(50);
        }
        throw new AssertionError("queue links not up");
    }

    private static void frame(DataOutputStream out, long id) throws IOException {
        byte[] b = ("{\"id\":\"msg-" + id + "\",\"tm\":" + id + ",\"__md_trq__\":{\"__msg_rowid__\":" + (id + 1)
                + ",\"__msg_t__\":1}}").getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length + 4);
        out.write(b);
    }

    private static void readFrame(DataInputStream in) throws IOException {
        int len = in.readInt() - 4;
        in.readFully(new byte[len]);
    }

    private static String get(int port, String path) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            OutputStream o = s.getOutputStream();
            o.write(("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            o.flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            in.transferTo(b);
            String r = b.toString(StandardCharsets.UTF_8);
            assertTrue(r.startsWith("HTTP/1.1 200"), path + ": " + r);
            return r.substring(r.indexOf("\r\n\r\n") + 4);
        }
    }

    private static String line(String text, String prefix) {
        for (String l : text.split("\n")) if (l.startsWith(prefix)) return l;
        return "(none)";
    }
}
