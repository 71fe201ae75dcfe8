package io.gatehouse.itests.karaf;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;
import static org.ops4j.pax.exam.CoreOptions.options;
import static org.ops4j.pax.exam.CoreOptions.systemProperty;
import static org.ops4j.pax.exam.karaf.options.KarafDistributionOption.configureConsole;
import static org.ops4j.pax.exam.karaf.options.KarafDistributionOption.editConfigurationFilePut;
import static org.ops4j.pax.exam.karaf.options.KarafDistributionOption.karafDistributionConfiguration;
import static org.ops4j.pax.exam.karaf.options.KarafDistributionOption.logLevel;
import static org.ops4j.pax.exam.karaf.options.KarafDistributionOption.replaceConfigurationFile;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import javax.inject.Inject;

import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.Configuration;
import org.ops4j.pax.exam.Option;
import org.ops4j.pax.exam.junit.PaxExam;
import org.ops4j.pax.exam.karaf.options.LogLevelOption.LogLevel;
import org.ops4j.pax.exam.spi.reactors.ExamReactorStrategy;
import org.ops4j.pax.exam.spi.reactors.PerClass;
import org.osgi.framework.Bundle;
import org.osgi.framework.BundleContext;

/**
 * The Karaf distribution (runtime/karaf) as shipped, with the demo gateway's ports moved to free ones: its boot
 * features bring every Gatehouse bundle up, the demo flows (a producer speaking the queue protocol into the input
 * port, both sinks in the same container), and {@code bundle:update} of the qiogate bundle in the middle of the flow
 * loses nothing.
 */
@RunWith(PaxExam.class)
@ExamReactorStrategy(PerClass.class)
public class KarafDemoIT {
    static final int COUNT = 20_000;

    @Inject
    private BundleContext ctx;

    @Configuration
    public Option[] config() throws IOException {
        int[] p = freePorts(6); // control, input, sink0, sink1, ssh, http
        Path dir = Files.createDirectories(Path.of(System.getProperty("gatehouse.itests.dir", "target/itests")));
        String text = Files.readString(Path.of(System.getProperty("gatehouse.demo.config")));
        text = setVar(text, "__input_port__", p[1]);
        text = setVar(text, "__sink0_port__", p[2]);
        text = setVar(text, "__sink1_port__", p[3]);
        text = setVar(text, "__http_port__", p[5]);
        File demo = dir.resolve("gatehouse-karaf-demo.json").toFile();
        Files.writeString(demo.toPath(), text);
        String localRepo = System.getProperty("org.ops4j.pax.url.mvn.localRepository");
        return options(
            karafDistributionConfiguration().frameworkUrl("file:" + System.getProperty("gatehouse.karaf.dist"))
                .karafVersion(System.getProperty("gatehouse.karaf.version")).name("gatehouse-karaf")
                .unpackDirectory(new File("target/exam")).useDeployFolder(false),
            configureConsole().ignoreLocalConsole(),
            logLevel(LogLevel.WARN),
            org.ops4j.pax.exam.CoreOptions.systemTimeout(60_000),
            editConfigurationFilePut("etc/org.ops4j.pax.url.mvn.cfg", "org.ops4j.pax.url.mvn.localRepository", localRepo),
            editConfigurationFilePut("etc/org.ops4j.pax.url.mvn.cfg", "org.ops4j.pax.url.mvn.repositories", ""),
            editConfigurationFilePut("etc/org.apache.karaf.shell.cfg", "sshPort", String.valueOf(p[4])),
            editConfigurationFilePut("etc/custom.properties", "gatehouse.control.port", String.valueOf(p[0])),
            editConfigurationFilePut("etc/custom.properties", "gatehouse.metrics.port", "0"),
            replaceConfigurationFile("etc/gatehouse.json", demo),
            systemProperty("gatehouse.itests.karaf.ports").value(p[0] + "," + p[1]));
    }

    private static String setVar(String text, String name, int value) {
        Matcher m = Pattern.compile("(\"" + Pattern.quote(name) + "\"\\s*:\\s*)\"\\d+\"").matcher(text);
        if (!m.find()) throw new IllegalStateException("the demo config has no variable " + name);
        return m.replaceFirst("$1\"" + value + "\"");
    }

    private static int[] freePorts(int n) throws IOException {
        List<ServerSocket> open = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) open.add(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()));
            return open.stream().mapToInt(ServerSocket::getLocalPort).toArray();
        } finally {
            for (ServerSocket s : open) s.close();
        }
    }

    private static int port(int i) {
        return Integer.parseInt(System.getProperty("gatehouse.itests.karaf.ports").split(",")[i]);
    }

    @Test
    public void shouldRunTheDemoAndLoseNothingWhenQiogateIsUpdatedUnderLoad() throws Exception {
        for (String b : List.of("api", "core", "tcp", "tcp4h", "channel", "iogate", "trqueue", "qiogate", "mqiogate",
                "relay", "sink", "portal", "http")) {
            Bundle bundle = bundle("io.gatehouse." + b);
            assertNotNull("bundle io.gatehouse." + b + " installed by the boot features", bundle);
            await("io.gatehouse." + b + " ACTIVE", 30_000, () -> bundle.getState() == Bundle.ACTIVE);
        }
        // Karaf may still be installing its boot features (holding the framework's global lock); an update that
        // waits for that lock is interrupted by Felix's deadlock breaker ("Unable to acquire global lock").
        await("Karaf's boot features installed", 60_000,
            () -> ctx.getServiceReference("org.apache.karaf.features.BootFinished") != null);
        await("the demo yuno running", 30_000, () -> {
            String s = command("list-services");
            return s != null && s.contains("\"sink1\"") && s.contains("\"__input_side__\"") && !s.contains("waiting");
        });

        Producer producer = new Producer(port(1), COUNT, 1000);
        Thread t = new Thread(producer, "karaf-it-producer");
        t.start();
        await("a quarter of the flow acked", 60_000, () -> producer.acked() >= COUNT / 4);
        Bundle qiogate = bundle("io.gatehouse.qiogate");
        long ackedAtUpdate = producer.acked();
        long t0 = System.nanoTime();
        qiogate.update(); // bundle:update: from its location, the distribution's system/ repository
        await("qiogate ACTIVE again", 30_000, () -> qiogate.getState() == Bundle.ACTIVE);
        await("the output side rebuilt", 30_000, () -> !String.valueOf(command("list-services")).contains("waiting"));
        long rebuiltMs = (System.nanoTime() - t0) / 1_000_000;
        t.join(120_000);
        assertTrue("the producer finished: " + producer.summary(), !t.isAlive() && producer.acked() == COUNT);
        assertTrue("the update happened under load (" + ackedAtUpdate + " acked)", ackedAtUpdate < COUNT);

        long[] distinct = new long[1];
        String[] checks = new String[2];
        await("every id at a sink", 60_000, () -> {
            checks[0] = command("command-yuno service=sink0 command=check-ids from=0 to=" + (COUNT - 1));
            checks[1] = command("command-yuno service=sink1 command=check-ids from=0 to=" + (COUNT - 1));
            if (checks[0] == null || checks[1] == null) return false;
            distinct[0] = num(checks[0], "distinct_ids") + num(checks[1], "distinct_ids");
            return distinct[0] >= COUNT;
        });
        long duplicates = num(checks[0], "duplicates") + num(checks[1], "duplicates");
        System.out.printf("KarafDemoIT: %d messages, qiogate updated at %d acked, output side back in %d ms; "
            + "lost %d, duplicates %d; producer: %s%n", COUNT, ackedAtUpdate, rebuiltMs, COUNT - distinct[0],
            duplicates, producer.summary());
        assertEquals("lost", COUNT, distinct[0]);
        assertEquals("each id at exactly one sink", COUNT, num(checks[0], "missing") + num(checks[1], "missing"));
    }

    private Bundle bundle(String symbolicName) {
        return Arrays.stream(ctx.getBundles()).filter(b -> symbolicName.equals(b.getSymbolicName())).findFirst()
            .orElse(null);
    }

    private static long num(String json, String key) {
        Matcher m = Pattern.compile("\"" + key + "\"\\s*:\\s*(-?\\d+)").matcher(json);
        if (!m.find()) throw new AssertionError("no " + key + " in " + json);
        return Long.parseLong(m.group(1));
    }

    /** A command on the demo yuno's control endpoint (one TCP4H frame each way), or null when it does not answer. */
    private static String command(String line) {
        try (Socket s = new Socket("127.0.0.1", port(0))) {
            s.setSoTimeout(10_000);
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            byte[] b = ("{\"command\": \"" + line + "\"}").getBytes(StandardCharsets.UTF_8);
            out.writeInt(b.length + 4);
            out.write(b);
            out.flush();
            DataInputStream in = new DataInputStream(s.getInputStream());
            byte[] a = new byte[in.readInt() - 4];
            in.readFully(a);
            return new String(a, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return null;
        }
    }

    private static void await(String what, long timeoutMs, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) fail("timed out after " + timeoutMs + " ms waiting for " + what);
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted waiting for " + what);
            }
        }
    }

    /**
     * A producer speaking the queue protocol (as {@code gatehouse send}, which is not inside Karaf): messages
     * {@code {"id": "msg-N", "__md_trq__": {"__msg_rowid__": N+1, ...}}}, at most {@code window} unacked; on a lost
     * connection, or no ack for a second with the window full or everything sent, it reconnects and sends every
     * unacked message again.
     */
    static final class Producer implements Runnable {
        private final int port;
        private final int count;
        private final int window;
        private final BitSet acked = new BitSet();
        private int ackedCount;
        private long lastAck;
        private long sent;
        private int connections;

        Producer(int port, int count, int window) {
            this.port = port;
            this.count = count;
            this.window = window;
        }

        synchronized long acked() {
            return ackedCount;
        }

        synchronized String summary() {
            return String.format("sent %d (%d resent), acked %d of %d, %d connections", sent, sent - count, ackedCount,
                count, connections);
        }

        @Override
        public void run() {
            long deadline = System.currentTimeMillis() + 110_000;
            while (System.currentTimeMillis() < deadline && acked() < count) {
                try (Socket s = new Socket("127.0.0.1", port)) {
                    s.setTcpNoDelay(true);
                    synchronized (this) {
                        connections++;
                        lastAck = System.currentTimeMillis();
                    }
                    DataInputStream in = new DataInputStream(s.getInputStream());
                    boolean[] dead = new boolean[1];
                    Thread reader = new Thread(() -> readAcks(in, dead), "karaf-it-acks");
                    reader.setDaemon(true);
                    reader.start();
                    DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream(), 65536));
                    int next = 0;
                    while (acked() < count && System.currentTimeMillis() < deadline) {
                        synchronized (this) {
                            if (dead[0]) break; // connection lost: reconnect and resend what is not acked
                            next = acked.nextClearBit(next);
                            if (next >= count || next - acked.nextClearBit(0) >= window) {
                                // window full or all sent: wait for acks; none for a second: reconnect, resend
                                if (System.currentTimeMillis() - lastAck > 1000) break;
                                out.flush();
                                wait(20);
                                continue;
                            }
                        }
                        byte[] b = ("{\"id\":\"msg-" + next + "\",\"tm\":" + System.currentTimeMillis()
                            + ",\"__md_trq__\":{\"__msg_rowid__\":" + (next + 1) + ",\"__msg_t__\":1}}")
                            .getBytes(StandardCharsets.UTF_8);
                        out.writeInt(b.length + 4);
                        out.write(b);
                        synchronized (this) {
                            sent++;
                        }
                        next++;
                    }
                } catch (IOException | InterruptedException e) {
                    try {
                        Thread.sleep(200);
                    } catch (InterruptedException ie) {
                        return;
                    }
                }
            }
        }

        private void readAcks(DataInputStream in, boolean[] dead) {
            Pattern rowid = Pattern.compile("\"__msg_rowid__\"\\s*:\\s*(\\d+)");
            try {
                while (true) {
                    byte[] b = new byte[in.readInt() - 4];
                    in.readFully(b);
                    Matcher m = rowid.matcher(new String(b, StandardCharsets.UTF_8));
                    if (!m.find()) continue;
                    int n = Integer.parseInt(m.group(1)) - 1;
                    synchronized (this) {
                        if (n >= 0 && n < count && !acked.get(n)) {
                            acked.set(n);
                            ackedCount++;
                        }
                        lastAck = System.currentTimeMillis();
                        notifyAll();
                    }
                }
            } catch (IOException e) {
                synchronized (this) {
                    dead[0] = true;
                    notifyAll();
                }
            }
        }
    }
}
