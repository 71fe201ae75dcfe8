package io.gatehouse.core;

import io.gatehouse.api.GObj;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import javax.management.MBeanServer;
import javax.management.MBeanServerFactory;
import javax.management.ObjectName;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Prometheus endpoint and the service MBeans over a small yuno. */
class ObservabilityTest {
    private YunoRuntime rt;

    @BeforeEach
    void setUp() {
        rt = YunoRuntime.builder().name("obs").gclass(TestGClasses.NODE)
                .config("{\"services\": [{\"name\": \"svc\", \"gclass\": \"C_NODE\", \"kw\": {\"label\": \"x\"}}]}")
                .build().start();
        rt.run(() -> {
            GObj g = rt.yuno().service("svc");
            g.send("EV_SEND_MESSAGE", null, null);
            g.send("EV_SEND_MESSAGE", null, null);
        });
    }

    @AfterEach
    void tearDown() {
        rt.close();
    }

    static String http(int port, String request) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(5000);
            OutputStream o = s.getOutputStream();
            o.write(request.getBytes(StandardCharsets.ISO_8859_1));
            o.flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            in.transferTo(b);
            return b.toString(StandardCharsets.UTF_8);
        }
    }

    @Test
    void shouldServeServiceStatsAsPrometheusText() throws IOException {
        try (MetricsServer ms = new MetricsServer(rt)) {
            int port = ms.start("127.0.0.1", 0);
            String r = http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
            assertTrue(r.startsWith("HTTP/1.1 200 OK\r\n"), r);
            assertTrue(r.contains("Content-Type: text/plain; version=0.0.4"), r);
            assertTrue(r.contains("# TYPE gatehouse_count gauge\ngatehouse_count{yuno=\"obs\",service=\"svc\"} 2\n"), r);
            assertTrue(r.contains("gatehouse_connections{yuno=\"obs\",service=\"svc\"} 0\n"), r);
            assertTrue(r.contains("gatehouse_up{yuno=\"obs\"} 1\n"), r);
            assertTrue(r.contains("gatehouse_registry_links{yuno=\"obs\"} 0\n"), r);
            int body = r.indexOf("\r\n\r\n") + 4;
            assertTrue(r.contains("Content-Length: " + r.substring(body).getBytes(StandardCharsets.UTF_8).length), r);
            assertTrue(http(port, "GET / HTTP/1.1\r\n\r\n").startsWith("HTTP/1.1 404"));
            assertTrue(http(port, "POST /metrics HTTP/1.1\r\n\r\n").startsWith("HTTP/1.1 405"));
            assertTrue(http(port, "x".repeat(MetricsServer.MAX_REQUEST + 10)).startsWith("HTTP/1.1 431"));
        }
    }

    @Test
    void shouldLabelChannelsAndChildrenOfNestedStats() {
        java.util.List<String> lines = new java.util.ArrayList<>();
        com.fasterxml.jackson.databind.node.ObjectNode data = io.gatehouse.api.Kw.create();
        data.put("txMsgs", 3);
        data.putObject("channels").putObject("in-1").put("rxMsgs", 4);
        data.putObject("output-0").put("msgs_in_queue", 5);
        java.util.List<ServiceMetrics.Sample> out = new java.util.ArrayList<>();
        ServiceMetrics.flatten(data, new java.util.LinkedHashMap<>(), "", out);
        for (ServiceMetrics.Sample s : out) lines.add(s.stat + s.labels + "=" + s.path + "=" + (long) s.value);
        assertEquals(java.util.List.of("txMsgs{}=txMsgs=3", "rxMsgs{channel=in-1}=channels.in-1.rxMsgs=4",
                "msgs_in_queue{gobj=output-0}=output-0.msgs_in_queue=5"), lines);
    }

    @Test
    void shouldRegisterOneMBeanPerServiceAndFollowARebuild() throws Exception {
        MBeanServer server = MBeanServerFactory.newMBeanServer();
        try (JmxExporter jmx = new JmxExporter(rt, server)) {
            jmx.refresh();
            ObjectName on = new ObjectName("io.gatehouse:type=Service,yuno=obs,name=svc");
            assertTrue(server.isRegistered(on));
            assertEquals(2.0, server.getAttribute(on, "count"));
            assertTrue(java.util.Arrays.stream(server.getMBeanInfo(on).getAttributes())
                    .anyMatch(a -> a.getName().equals("connections")));
            rt.gclassesGone(java.util.List.of("C_NODE"));
            rt.gclassArrived(TestGClasses.NODE);   // no state handover: the service is rebuilt
            jmx.refresh();
            assertTrue(server.isRegistered(on));
            assertEquals(0.0, server.getAttribute(on, "count"), "the rebuilt service is read");
        }
    }
}
