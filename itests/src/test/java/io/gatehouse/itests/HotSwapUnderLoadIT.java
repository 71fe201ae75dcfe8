package io.gatehouse.itests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.ops4j.pax.exam.CoreOptions.frameworkProperty;
import static org.ops4j.pax.exam.CoreOptions.options;
import static org.ops4j.pax.exam.CoreOptions.systemPackages;

import java.io.ByteArrayOutputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.gatehouse.launcher.Sender;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.Configuration;
import org.ops4j.pax.exam.Option;
import org.ops4j.pax.exam.junit.PaxExam;
import org.ops4j.pax.exam.spi.reactors.ExamReactorStrategy;
import org.ops4j.pax.exam.spi.reactors.PerClass;
import org.osgi.framework.Bundle;

/**
 * Hot swap under load: the demo gateway (runtime/felix conf/gatehouse.json, ports replaced by free ones: input →
 * C_RELAY → C_MQIOGATE lastdigits → two C_QIOGATE → TCP4H → two C_SINK services in the same framework) takes
 * 100,000 messages with ids from a producer speaking the queue protocol ({@link Sender}: acks, window 2000,
 * resends what is not acked), and while they flow every gclass bundle is updated in turn from its freshly built
 * jar ({@code Bundle.update}): tcp, tcp4h, channel, iogate, qiogate, mqiogate, trqueue, relay. Swap i happens
 * once the sinks have received (i + 1) × 10,000 messages, after the previous swap's flow moved again.
 *
 * <p>Then every id 0..99,999 has reached a sink (exactly the sink its last digit selects): 0 lost. Duplicates
 * (at-least-once resends) and each swap's interruption (the longest time the sinks' receive counters stood
 * still between that swap and the next) are printed.
 */
@RunWith(PaxExam.class)
@ExamReactorStrategy(PerClass.class)
public class HotSwapUnderLoadIT extends ITSupport {
    // The class is loaded twice (driver and framework) in one JVM: values pass as system properties.
    private static final String PORTS = "gatehouse.itests.hotswapload.ports";
    static final int COUNT = Integer.getInteger("gatehouse.itests.hotswapload.count", 100_000);
    static final List<String> SWAPS = List.of("tcp", "tcp4h", "channel", "iogate", "qiogate", "mqiogate", "trqueue", "relay");
    private static final Pattern RX = Pattern.compile("\"rxMsgs\"\\s*:\\s*(\\d+)");
    private static final Pattern NUM = Pattern.compile("\"(missing|distinct_ids|duplicates)\"\\s*:\\s*(-?\\d+)");

    @Configuration
    public Option[] config() {
        int[] p = freePorts(4); // control, input, sink0, sink1
        System.setProperty(PORTS, p[0] + "," + p[1] + "," + p[2] + "," + p[3]);
        Path dir = newTestDir("hotswapload");
        Path config = demoConfig(dir, p[1], p[2], p[3]);
        return options(base(), allGatehouseBundles(),
            // The producer (io.gatehouse.launcher.Sender, on the failsafe class path) seen from the test probe.
            systemPackages("io.gatehouse.launcher"),
            frameworkProperty("gatehouse.config").value(config.toString()),
            frameworkProperty("gatehouse.data").value(dir.resolve("data").toString()),
            frameworkProperty("gatehouse.control.port").value(String.valueOf(p[0])),
            frameworkProperty("gatehouse.metrics.port").value("0"));
    }

    /** The distribution's demo config with its port variables replaced, written into {@code dir}. */
    static Path demoConfig(Path dir, int input, int sink0, int sink1) {
        try {
            String text = Files.readString(Path.of(System.getProperty("gatehouse.demo.config",
                "../runtime/felix/src/main/dist/conf/gatehouse.json")));
            text = setVar(text, "__input_port__", input);
            text = setVar(text, "__sink0_port__", sink0);
            text = setVar(text, "__sink1_port__", sink1);
            text = setVar(text, "__mqtt_port__", freePort());   // the demo's MQTT listener, unused here
            Path out = dir.resolve("gatehouse.json");
            Files.writeString(out, text);
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String setVar(String text, String name, int value) {
        Matcher m = Pattern.compile("(\"" + Pattern.quote(name) + "\"\\s*:\\s*)\"\\d+\"").matcher(text);
        if (!m.find()) throw new IllegalStateException("the demo config has no variable " + name);
        return m.replaceFirst("$1\"" + value + "\"");
    }

    private static int port(int i) {
        return Integer.parseInt(System.getProperty(PORTS).split(",")[i]);
    }

    private static String cmd(String line) {
        String[] answer = new String[1];
        await("an answer to '" + line + "'", 20_000, () -> (answer[0] = ControlLink.tryCommand(port(0), line)) != null);
        return answer[0];
    }

    private static long num(String json, Pattern p, String key) {
        Matcher m = p.matcher(json);
        while (m.find()) {
            if (p == RX || m.group(1).equals(key)) return Long.parseLong(m.group(p == RX ? 1 : 2));
        }
        throw new AssertionError("no " + key + " in " + json);
    }

    /** {messages received by both sinks (duplicates included), distinct ids}, or null when they did not answer. */
    private static long[] sinksRx() {
        String a = ControlLink.tryCommand(port(0), "stats-yuno service=sink0");
        String b = ControlLink.tryCommand(port(0), "stats-yuno service=sink1");
        if (a == null || b == null || !RX.matcher(a).find() || !RX.matcher(b).find()) return null;
        return new long[] {num(a, RX, "rxMsgs") + num(b, RX, "rxMsgs"),
            num(a, NUM, "distinct_ids") + num(b, NUM, "distinct_ids")};
    }

    @Test
    public void shouldLoseNoMessageWhileEveryGclassBundleIsUpdatedUnderLoad() throws Exception {
        await("the demo yuno with its sinks", 30_000, () -> {
            String s = ControlLink.tryCommand(port(0), "list-services");
            return s != null && s.contains("\"sink1\"") && !s.contains("waiting");
        });
        long t0 = System.nanoTime();

        // Sink receive counters, sampled every 10 ms: [ms since t0, rx].
        List<long[]> samples = new ArrayList<>();
        AtomicLong lastRx = new AtomicLong();
        AtomicLong lastDistinct = new AtomicLong();
        Thread sampler = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                long[] rx = sinksRx();
                if (rx != null) {
                    lastRx.set(rx[0]);
                    lastDistinct.set(rx[1]);
                    synchronized (samples) {
                        samples.add(new long[] {(System.nanoTime() - t0) / 1_000_000, rx[0]});
                    }
                }
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "hotswap-sampler");
        sampler.setDaemon(true);
        sampler.start();

        ByteArrayOutputStream senderOut = new ByteArrayOutputStream();
        AtomicInteger senderExit = new AtomicInteger(-1);
        Thread producer = new Thread(() -> {
            try (PrintStream out = new PrintStream(senderOut, true, StandardCharsets.UTF_8)) {
                senderExit.set(Sender.run(List.of("--port", String.valueOf(port(1)), "--count", String.valueOf(COUNT),
                    "--window", "2000", "--timeout", "150", "--resend-after", "1", "--quiet"), out, out));
            }
        }, "hotswap-producer");
        producer.start();

        List<long[]> swaps = new ArrayList<>(); // [update ms, active ms, rebuilt ms, moving ms, distinct ids at update]
        try {
            for (int i = 0; i < SWAPS.size(); i++) {
                long threshold = (long) (i + 1) * COUNT / 10;
                await("the sinks at " + threshold + " distinct ids before swapping " + SWAPS.get(i), 120_000,
                    () -> lastDistinct.get() >= threshold || !producer.isAlive());
                Bundle b = installedBundle(GROUP + "." + SWAPS.get(i));
                long rxAtUpdate = lastRx.get();
                long distinctAtUpdate = lastDistinct.get();
                long tUpdate = (System.nanoTime() - t0) / 1_000_000;
                try (InputStream jar = new FileInputStream(bundleFile(SWAPS.get(i)))) {
                    b.update(jar);
                }
                await(SWAPS.get(i) + " ACTIVE again", 30_000, () -> b.getState() == Bundle.ACTIVE);
                long tActive = (System.nanoTime() - t0) / 1_000_000;
                await("no service waiting after the " + SWAPS.get(i) + " update", 30_000,
                    () -> !cmd("list-services").contains("waiting"));
                long tRebuilt = (System.nanoTime() - t0) / 1_000_000;
                await("the flow moving after the " + SWAPS.get(i) + " update", 60_000,
                    () -> lastRx.get() > rxAtUpdate + 200 || !producer.isAlive());
                long tMoving = (System.nanoTime() - t0) / 1_000_000;
                swaps.add(new long[] {tUpdate, tActive, tRebuilt, tMoving, distinctAtUpdate});
            }
            producer.join(170_000);
        } finally {
            if (producer.isAlive()) producer.interrupt();
        }
        String senderSummary = senderOut.toString(StandardCharsets.UTF_8).trim();
        assertEquals("the producer got every message acked: " + senderSummary, 0, senderExit.get());

        // Acked = durably queued; wait until the queues have delivered everything to the sinks.
        String[] check = new String[2];
        await("every id at a sink", 90_000, () -> {
            check[0] = cmd("command-yuno service=sink0 command=check-ids from=0 to=" + (COUNT - 1));
            check[1] = cmd("command-yuno service=sink1 command=check-ids from=0 to=" + (COUNT - 1));
            return num(check[0], NUM, "distinct_ids") + num(check[1], NUM, "distinct_ids") >= COUNT;
        });
        long tEnd = (System.nanoTime() - t0) / 1_000_000;
        sampler.interrupt();
        sampler.join(2000);

        long missing0 = num(check[0], NUM, "missing");
        long missing1 = num(check[1], NUM, "missing");
        long distinct = num(check[0], NUM, "distinct_ids") + num(check[1], NUM, "distinct_ids");
        long duplicates = num(check[0], NUM, "duplicates") + num(check[1], NUM, "duplicates");
        // Each id is missing from exactly one sink (the one its last digit does not select): none lost, none at both.
        long lost = COUNT - distinct;

        StringBuilder report = new StringBuilder();
        report.append(String.format("HotSwapUnderLoadIT: %d messages, producer: %s%n", COUNT, senderSummary));
        report.append(String.format("  lost %d, distinct ids %d, duplicates %d (sink0 missing %d, sink1 missing %d), %.1f s%n",
            lost, distinct, duplicates, missing0, missing1, tEnd / 1000.0));
        report.append("  swap      at distinct  update->ACTIVE  ->rebuilt  ->flow moving  longest stall until next swap\n");
        for (int i = 0; i < swaps.size(); i++) {
            long[] s = swaps.get(i);
            long until = i + 1 < swaps.size() ? swaps.get(i + 1)[0] : tEnd;
            report.append(String.format("  %-9s %11d %12d ms %8d ms %11d ms %15d ms%n", SWAPS.get(i), s[4],
                s[1] - s[0], s[2] - s[0], s[3] - s[0], longestStall(samples, s[0], until)));
        }
        System.out.print(report);

        assertEquals("swaps done", SWAPS.size(), swaps.size());
        for (int i = 0; i < swaps.size(); i++) {
            assertTrue("swap of " + SWAPS.get(i) + " happened under load (" + swaps.get(i)[4] + " distinct ids at the sinks)",
                swaps.get(i)[4] < COUNT);
        }
        assertEquals("lost messages\n" + report, 0, lost);
        assertEquals("every id reached exactly one sink (the one its last digit selects)\n" + report,
            COUNT, missing0 + missing1);
    }

    /** The longest time in [from, to] (ms since t0) during which the sinks' receive counter did not grow. */
    private static long longestStall(List<long[]> samples, long from, long to) {
        long longest = 0;
        long since = from;
        long last = -1;
        synchronized (samples) {
            for (long[] s : samples) {
                if (s[0] < from) {
                    last = s[1];
                    continue;
                }
                if (s[0] > to) break;
                if (s[1] != last) {
                    longest = Math.max(longest, s[0] - since);
                    since = s[0];
                    last = s[1];
                }
            }
        }
        return longest;
    }
}
