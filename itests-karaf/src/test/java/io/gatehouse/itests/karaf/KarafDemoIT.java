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
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
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

import io.gatehouse.testkit.BundleJars;
import org.apache.karaf.shell.api.console.Session;
import org.apache.karaf.shell.api.console.SessionFactory;
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
 * features bring every Gatehouse bundle up and the demo flows (a producer speaking the queue protocol into the input
 * port, both sinks in the same container). In the middle of the flow, tcp and qiogate are upgraded live the two ways
 * a Karaf user does it: {@code bundle:update} (the same jar again, from its location: the gobjs go on running the
 * stopped revision while the framework replaces the bundle, none suspended) and {@code gate:update BSN URL} (a jar of a higher version, run beside the old
 * one and handed the gobjs). Nothing is lost or duplicated, no connection closes (the producer's, the sinks'), and no
 * service is rebuilt.
 */
@RunWith(PaxExam.class)
@ExamReactorStrategy(PerClass.class)
public class KarafDemoIT {
    static final int COUNT = 80_000;
    /** Messages per second: the flow lasts about 20 s, long enough for the four upgrades to happen under it. */
    static final int RATE = 4_000;
    /** The bundles upgraded, each by bundle:update then by gate:update. */
    static final List<String> UPGRADED = List.of("tcp", "qiogate");
    private static final String UPGRADE_JARS = "gatehouse.itests.karaf.upgrade.jars";

    @Inject
    private BundleContext ctx;

    @Inject
    private SessionFactory shell;

    @Configuration
    public Option[] config() throws IOException {
        int[] p = freePorts(7); // control, input, sink0, sink1, ssh, http, mqtt
        Path dir = Files.createDirectories(Path.of(System.getProperty("gatehouse.itests.dir", "target/itests")));
        String text = Files.readString(Path.of(System.getProperty("gatehouse.demo.config")));
        text = setVar(text, "__input_port__", p[1]);
        text = setVar(text, "__sink0_port__", p[2]);
        text = setVar(text, "__sink1_port__", p[3]);
        text = setVar(text, "__http_port__", p[5]);
        text = setVar(text, "__mqtt_port__", p[6]);
        File demo = dir.resolve("gatehouse-karaf-demo.json").toFile();
        Files.writeString(demo.toPath(), text);
        Path jars = Files.createDirectories(dir.resolve("upgrade-jars"));
        StringBuilder upgrades = new StringBuilder();
        for (String b : UPGRADED) {
            Path original = Path.of(System.getProperty("gatehouse.bundles.dir"), "io.gatehouse." + b + ".jar");
            Path bumped = BundleJars.bumped(original, jars, 1);
            upgrades.append(upgrades.length() == 0 ? "" : ",").append(bumped.toAbsolutePath());
        }
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
            systemProperty("gatehouse.itests.karaf.ports").value(p[0] + "," + p[1]),
            systemProperty(UPGRADE_JARS).value(upgrades.toString()));
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
    public void shouldUpgradeTcpAndQiogateLiveUnderLoadLosingNothingAndClosingNoConnection() throws Exception {
        for (String b : List.of("api", "core", "tcp", "tcp4h", "channel", "iogate", "trqueue", "qiogate", "mqiogate",
                "relay", "sink", "portal", "http", "mqtt")) {
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

        Producer producer = new Producer(port(1), COUNT, 1000, RATE);
        Thread t = new Thread(producer, "karaf-it-producer");
        t.start();
        await("a tenth of the flow acked", 60_000, () -> producer.acked() >= COUNT / 10);
        long[] listenersBefore = listenerConnections();
        List<String> said = new ArrayList<>();
        String[] jars = System.getProperty(UPGRADE_JARS).split(",");
        for (int i = 0; i < UPGRADED.size(); i++) {
            String bsn = "io.gatehouse." + UPGRADED.get(i);
            Bundle b = bundle(bsn);
            int before = upgradesReported();
            b.update();   // bundle:update: the same jar again, from its location (the distribution's system/)
            await(bsn + " ACTIVE again", 30_000, () -> b.getState() == Bundle.ACTIVE);
            await(bsn + "'s gobjs handed to the updated revision", 30_000, () -> upgradesReported() > before);
            String updated = lastUpgrade();
            said.add(bsn + " bundle:update at " + producer.acked() + " acked: " + updated);
            assertTrue(bsn + " bundle:update: the gobjs ran the stopped revision until the handover, none suspended: "
                + updated, updated.matches(".*\"gobjs_resumed\"\\s*:\\s*0\\D.*"));

            String answer = shell("gate:update " + bsn + " " + Path.of(jars[i]).toUri());
            assertTrue("gate:update answered ok: " + answer, num(answer, "result") >= 0);
            assertTrue("gate:update rebuilt nothing: " + answer, answer.replaceAll("\\s", "").contains("\"rebuilt\":[]"));
            said.add(bsn + " gate:update at " + producer.acked() + " acked: " + answer.replaceAll("\\s+", " "));
            assertTrue(bsn + " " + versionIn(jars[i]) + " serves",
                String.valueOf(command("list-bundles")).contains(versionIn(jars[i])));
        }
        long ackedAtLastUpgrade = producer.acked();
        long[] listenersAfter = listenerConnections();
        t.join(150_000);
        assertTrue("the producer finished: " + producer.summary(), !t.isAlive() && producer.acked() == COUNT);
        assertTrue("the upgrades happened under load (" + ackedAtLastUpgrade + " acked)", ackedAtLastUpgrade < COUNT);

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
        String upgrades = String.valueOf(command("list-upgrades"));
        System.out.printf("KarafDemoIT: %d messages at %d/s; %s; lost %d, duplicates %d; producer: %s; "
            + "connections accepted by the input and the sinks before %s, after %s%n", COUNT, RATE,
            String.join("; ", said), COUNT - distinct[0], duplicates, producer.summary(),
            Arrays.toString(listenersBefore), Arrays.toString(listenersAfter));
        assertEquals("lost", COUNT, distinct[0]);
        assertEquals("each id at exactly one sink", COUNT, num(checks[0], "missing") + num(checks[1], "missing"));
        assertEquals("duplicates at the sinks", 0, duplicates);
        assertEquals("connections the producer opened: " + producer.summary(), 1, producer.connections());
        assertEquals("the input's and the sinks' connections stayed open", Arrays.toString(listenersBefore),
            Arrays.toString(listenersAfter));
        assertTrue("no service rebuilt: " + upgrades, !upgrades.contains("\"service\""));
    }

    /** Connections accepted so far by the input's listener and by each sink's (one each while none closes). */
    private static long[] listenerConnections() {
        long[] n = new long[3];
        String[][] listeners = {{"__input_side__", "__input_side__-listen"}, {"__sink0_side__", "__sink0_side__-listen"},
            {"__sink1_side__", "__sink1_side__-listen"}};
        for (int i = 0; i < listeners.length; i++) {
            String a = command("read-attrs service=" + listeners[i][0] + " gobj=" + listeners[i][1]);
            n[i] = a == null ? -1 : num(a, "tconnxs");
        }
        return n;
    }

    /** How many upgrade reports list-upgrades holds (-1 when the gateway does not answer). */
    private static int upgradesReported() {
        String s = command("list-upgrades");
        return s == null ? -1 : countOf(s, "\"gobjs_migrated\"");
    }

    private static String lastUpgrade() {
        String s = String.valueOf(command("list-upgrades")).replaceAll("\\s+", " ");
        int i = s.lastIndexOf("{\"gclasses\"");
        return i < 0 ? s : s.substring(i);
    }

    private static int countOf(String s, String what) {
        int n = 0;
        for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1)) n++;
        return n;
    }

    /** A command in the Karaf shell, as a user types it; answers what it printed. */
    private String shell(String line) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8);
        try (Session session = shell.create(new ByteArrayInputStream(new byte[0]), ps, ps)) {
            Object r = session.execute(line);
            ps.flush();
            return out.toString(StandardCharsets.UTF_8) + (r == null ? "" : r);
        }
    }

    /** The Bundle-Version in a bumped jar's file name, as {@code BundleJars.bumped} writes it. */
    private static String versionIn(String jar) {
        Matcher m = Pattern.compile("-(\\d+\\.\\d+\\.\\d+)\\.jar$").matcher(jar);
        if (!m.find()) throw new IllegalArgumentException(jar);
        return m.group(1);
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
        private final int rate;

        Producer(int port, int count, int window, int rate) {
            this.port = port;
            this.count = count;
            this.window = window;
            this.rate = rate;
        }

        synchronized int connections() {
            return connections;
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
            long deadline = System.currentTimeMillis() + 140_000;
            long started = System.nanoTime();
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
                                // Window full or all sent: wait for acks. None for 15 s: reconnect, resend (longer
                                // than any upgrade's pause, so a resend here says the upgrade stalled the flow).
                                if (System.currentTimeMillis() - lastAck > 15_000) break;
                                out.flush();
                                wait(20);
                                continue;
                            }
                        }
                        long due = started + sent * 1_000_000_000L / rate;
                        if (System.nanoTime() < due) {
                            out.flush();
                            Thread.sleep(1);
                            continue;
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
