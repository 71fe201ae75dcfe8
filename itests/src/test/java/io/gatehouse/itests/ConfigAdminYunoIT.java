package io.gatehouse.itests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;
import static org.ops4j.pax.exam.CoreOptions.frameworkProperty;
import static org.ops4j.pax.exam.CoreOptions.options;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.Dictionary;
import java.util.Hashtable;

import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.Configuration;
import org.ops4j.pax.exam.Option;
import org.ops4j.pax.exam.junit.PaxExam;
import org.ops4j.pax.exam.spi.reactors.ExamReactorStrategy;
import org.ops4j.pax.exam.spi.reactors.PerClass;
import org.osgi.service.cm.ConfigurationAdmin;
import org.osgi.util.tracker.ServiceTracker;

/**
 * A yuno configured through Config Admin (factory PID {@code io.gatehouse.yuno}) beside the framework-property yuno:
 * created from a factory configuration, a writable attribute changed in place (same gobjs, the open connection
 * keeps working), a changed subtree rebuilt alone (the gate moves to another port, the sink keeps its counters),
 * and the yuno stopped when the configuration is deleted.
 */
@RunWith(PaxExam.class)
@ExamReactorStrategy(PerClass.class)
public class ConfigAdminYunoIT extends ITSupport {
    private static final String PORTS = "gatehouse.itests.configadmin.ports";

    @Configuration
    public Option[] config() {
        int[] p = freePorts(4); // framework yuno control, configured yuno control, gate port 1, gate port 2
        System.setProperty(PORTS, p[0] + "," + p[1] + "," + p[2] + "," + p[3]);
        return options(base(), gatehouseBundles("api", "core", "tcp", "tcp4h", "channel", "iogate", "sink"),
            yunoConfig("empty-yuno.json"),
            frameworkProperty("gatehouse.control.port").value(String.valueOf(p[0])),
            frameworkProperty("gatehouse.metrics.port").value("0"));
    }

    private static int port(int i) {
        return Integer.parseInt(System.getProperty(PORTS).split(",")[i]);
    }

    private static String tree(int gatePort, boolean echo) {
        return "{\"yuno\": {\"yuno_role\": \"itest\"},\n"
            + " \"__json_config_variables__\": {\"__port__\": \"" + gatePort + "\"},\n"
            + " \"services\": [\n"
            + "  {\"name\": \"gate\", \"gclass\": \"C_IOGATE\",\n"
            + "   \"children\": [{\"name\": \"listen\", \"gclass\": \"C_TCP_S\", \"kw\": {\"url\": \"tcp://127.0.0.1:(^^__port__^^)\"}}],\n"
            + "   \"[^^children^^]\": {\"__range__\": 2, \"__vars__\": {}, \"__content__\": {\"name\": \"in-(^^__range__^^)\","
            + " \"gclass\": \"C_CHANNEL\", \"children\": [{\"name\": \"in-(^^__range__^^)\", \"gclass\": \"C_PROT_TCP4H\"}]}}},\n"
            + "  {\"name\": \"sink\", \"gclass\": \"C_SINK\", \"kw\": {\"input\": \"gate\", \"echo\": " + echo + "}}\n"
            + " ]}";
    }

    private static Dictionary<String, Object> props(String tree) {
        Hashtable<String, Object> p = new Hashtable<>();
        p.put("config", tree);
        p.put("control.port", String.valueOf(port(1)));
        return p;
    }

    private static String cmd(int controlPort, String line) {
        String[] answer = new String[1];
        await("an answer to '" + line + "'", 15_000, () -> (answer[0] = ControlLink.tryCommand(controlPort, line)) != null);
        return answer[0];
    }

    private static void send(DataOutputStream out, String json) throws IOException {
        byte[] b = json.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length + 4);
        out.write(b);
        out.flush();
    }

    private static String receive(DataInputStream in) throws IOException {
        int n = in.readInt();
        byte[] b = new byte[n - 4];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    private static Socket connect(int port) {
        Socket[] s = new Socket[1];
        await("a connection to " + port, 15_000, () -> {
            try {
                s[0] = new Socket("127.0.0.1", port);
                return true;
            } catch (IOException e) {
                return false;
            }
        });
        return s[0];
    }

    @Test
    public void shouldRunReconfigureAndStopAYunoFromAFactoryConfiguration() throws Exception {
        ServiceTracker<ConfigurationAdmin, ConfigurationAdmin> t = new ServiceTracker<>(ctx, ConfigurationAdmin.class, null);
        t.open();
        ConfigurationAdmin cm = t.waitForService(10_000);
        assertNotNull("Config Admin", cm);
        await("the framework-property yuno", 15_000, () -> ControlLink.tryCommand(port(0), "list-services") != null);

        long rxBefore;
        org.osgi.service.cm.Configuration c = cm.getFactoryConfiguration("io.gatehouse.yuno", "ca", "?");
        c.update(props(tree(port(2), false)));
        await("the configured yuno's services", 15_000, () -> {
            String s = ControlLink.tryCommand(port(1), "list-services");
            return s != null && s.contains("\"sink\"") && s.contains("\"gate\"") && !s.contains("waiting");
        });
        assertTrue("its hub name is the configuration's name", cmd(port(1), "view-registry").contains("\"ca\""));
        assertTrue("the framework-property yuno is still there",
            cmd(port(0), "list-services").contains("\"result\":0"));

        try (Socket s = connect(port(2))) {
            s.setSoTimeout(10_000);
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            DataInputStream in = new DataInputStream(s.getInputStream());
            await("the sink listening to the gate", 10_000, () -> {
                try {
                    send(out, "{\"id\": \"msg-1\"}");
                } catch (IOException e) {
                    throw new AssertionError(e);
                }
                return cmd(port(1), "stats-yuno service=sink").matches("(?s).*\"rxMsgs\"\\s*:\\s*[1-9].*");
            });

            // A writable attribute: written in place (onWriting), nothing rebuilt, the connection stays up and echoes.
            c.update(props(tree(port(2), true)));
            await("echo written", 10_000, () -> cmd(port(1), "read-attrs service=sink").contains("\"echo\":true"));
            send(out, "{\"id\": \"msg-2\"}");
            assertTrue("echoed on the same connection", receive(in).contains("msg-2"));

            // The gate's subtree changes (another port): the gate alone is rebuilt; the sink keeps its counters.
            rxBefore = rx(cmd(port(1), "stats-yuno service=sink"));
            c.update(props(tree(port(3), true)));
            try {
                while (true) receive(in); // the old connection is closed by the rebuild
            } catch (EOFException | SocketException closed) {
                // expected
            }
        }
        try (Socket s2 = connect(port(3))) {
            s2.setSoTimeout(10_000);
            DataOutputStream out = new DataOutputStream(s2.getOutputStream());
            DataInputStream in = new DataInputStream(s2.getInputStream());
            String echoed = null;
            for (int i = 0; i < 50 && echoed == null; i++) {
                send(out, "{\"id\": \"msg-3\"}");
                try {
                    s2.setSoTimeout(200);
                    echoed = receive(in);
                } catch (java.net.SocketTimeoutException notYet) {
                    // the sink rejoins the rebuilt gate within its check period
                }
            }
            assertNotNull("the rebuilt gate on the new port reaches the sink", echoed);
        }
        String stats = cmd(port(1), "stats-yuno service=sink");
        assertTrue("the sink was not rebuilt: its counter kept going from " + rxBefore + " (" + stats + ")",
            rx(stats) > rxBefore);

        // Deleting the configuration stops the yuno: its control endpoint and its gate are gone.
        c.delete();
        await("the configured yuno stopped", 15_000, () -> ControlLink.tryCommand(port(1), "list-services") == null);
        await("the gate's port closed", 10_000, () -> {
            try (Socket s = new Socket("127.0.0.1", port(3))) {
                return false;
            } catch (IOException e) {
                return true;
            }
        });
        assertEquals("the framework-property yuno keeps running", true,
            cmd(port(0), "list-services").contains("\"result\":0"));
        t.close();
    }

    private static long rx(String stats) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"rxMsgs\"\\s*:\\s*(\\d+)").matcher(stats);
        assertTrue(stats, m.find());
        return Long.parseLong(m.group(1));
    }
}
