package io.gatehouse.core;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.support.RateWindow;
import io.gatehouse.testkit.ManualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

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

    // --- A gclass that counts with a RateWindow, as C_CHANNEL and C_IOGATE do ---

    static final Attr<Long> DEPTH = Attr.integer("depth", 0, AttrFlag.STATS, "A gauge");
    static final Attr<Long> TX = Attr.counter(RateWindow.TX_MSGS, AttrFlag.RSTATS, "Sent");
    static final Attr<Long> RX = Attr.counter(RateWindow.RX_MSGS, AttrFlag.RSTATS, "Received");

    static final class Rated implements GObjBehavior {
        final GObj gobj;
        final RateWindow window;

        Rated(GObj gobj) {
            this.gobj = gobj;
            this.window = new RateWindow(gobj.yuno().clock(), () -> gobj.readLong(TX), () -> gobj.readLong(RX));
        }

        /** Like C_IOGATE: a stats read moves the window. */
        @Override
        public ObjectNode onStats(String filter, ObjectNode kw, GObj src) {
            return Envelope.ok(window.readStats(filter));
        }

        int acRx(String ev, ObjectNode kw, GObj src) {
            gobj.inc(RX);
            gobj.setLong(DEPTH, gobj.readLong(RX) % 7);
            Kw.release(kw);
            return 0;
        }
    }

    static final GClassSpec<Rated> RATED = GClassSpec.builder("C_RATED", Rated.class)
            .description("test gate with a read-driven rate window")
            .attrs(DEPTH, TX, RX)
            .fsm(Fsm.<Rated>builder().state("ST_IDLE").on("EV_RX", Rated::acRx).build())
            .factory(Rated::new)
            .build();

    @BeforeEach
    void setUp() {
        rt = YunoRuntime.builder().name("obs").gclass(TestGClasses.NODE, RATED)
                .config("{\"services\": [{\"name\": \"svc\", \"gclass\": \"C_NODE\", \"kw\": {\"label\": \"x\"}},"
                        + "{\"name\": \"gate\", \"gclass\": \"C_RATED\"}]}")
                .build().start();
        rt.run(() -> {
            GObj g = rt.yuno().service("svc");
            g.send("EV_SEND_MESSAGE", null, null);
            g.send("EV_SEND_MESSAGE", null, null);
            for (int i = 0; i < 3; i++) rt.yuno().service("gate").send("EV_RX", null, null);
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
    void shouldExportCountersAsCountersAndGaugesAsGaugesWithoutRates() throws IOException {
        try (MetricsServer ms = new MetricsServer(rt)) {
            int port = ms.start("127.0.0.1", 0);
            String r = http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
            assertTrue(r.startsWith("HTTP/1.1 200 OK\r\n"), r);
            assertTrue(r.contains("Content-Type: text/plain; version=0.0.4"), r);
            assertTrue(r.contains("# TYPE gatehouse_count_total counter\n"
                    + "gatehouse_count_total{yuno=\"obs\",service=\"svc\",gclass=\"C_NODE\"} 2\n"), r);
            assertTrue(r.contains("# TYPE gatehouse_rxMsgs_total counter\n"
                    + "gatehouse_rxMsgs_total{yuno=\"obs\",service=\"gate\",gclass=\"C_RATED\"} 3\n"), r);
            assertTrue(r.contains("# TYPE gatehouse_depth gauge\ngatehouse_depth{yuno=\"obs\",service=\"gate\",gclass=\"C_RATED\"} 3\n"), r);
            assertTrue(r.contains("gatehouse_connections{yuno=\"obs\",service=\"svc\",gclass=\"C_NODE\"} 0\n"), r);
            assertTrue(r.contains("gatehouse_up{yuno=\"obs\"} 1\n"), r);
            assertTrue(r.contains("# TYPE gatehouse_registry_delivered_total counter\n"), r);
            assertTrue(r.contains("gatehouse_registry_links{yuno=\"obs\"} 0\n"), r);
            assertTrue(r.contains("# TYPE gatehouse_core_cpu_seconds_total counter\n"), r);
            assertTrue(r.contains("# TYPE gatehouse_process_heap_used_bytes gauge\n"), r);
            assertFalse(r.contains("Msgsec"), "no rate is exported: " + r);
            assertFalse(r.contains("gatehouse_limit"), "a persistent, non-stats attribute is not a metric");
            int body = r.indexOf("\r\n\r\n") + 4;
            assertTrue(r.contains("Content-Length: " + r.substring(body).getBytes(StandardCharsets.UTF_8).length), r);
            assertTrue(http(port, "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n").startsWith("HTTP/1.1 405"));
            assertTrue(http(port, "DELETE /metrics HTTP/1.1\r\n\r\n").startsWith("HTTP/1.1 405"));
            assertTrue(http(port, "x".repeat(MetricsServer.MAX_REQUEST + 10)).startsWith("HTTP/1.1 431"));
        }
    }

    @Test
    void shouldLabelNestedGobjsByTheirPathBelowTheService() {
        YunoRuntime nested = YunoRuntime.builder().name("n").gclass(TestGClasses.NODE, RATED)
                .config("{\"services\": [{\"name\": \"top\", \"gclass\": \"C_NODE\", \"children\": ["
                        + "{\"name\": \"a\", \"gclass\": \"C_RATED\", \"children\": [{\"name\": \"leaf\", \"gclass\": \"C_NODE\"}]},"
                        + "{\"name\": \"b\", \"gclass\": \"C_RATED\"}]}]}")
                .build().start();
        try {
            String text = nested.call(() -> MetricsServer.format(new MetricsServer(nested).collect()));
            assertTrue(text.contains("gatehouse_rxMsgs_total{yuno=\"n\",service=\"top\",gobj=\"a\",gclass=\"C_RATED\"} 0\n"), text);
            assertTrue(text.contains("gatehouse_rxMsgs_total{yuno=\"n\",service=\"top\",gobj=\"b\",gclass=\"C_RATED\"} 0\n"), text);
            assertTrue(text.contains("gatehouse_count_total{yuno=\"n\",service=\"top\",gobj=\"a`leaf\",gclass=\"C_NODE\"} 0\n"), text);
            java.util.List<String> paths = new java.util.ArrayList<>();
            nested.run(() -> ServiceMetrics.of(nested.service("top")).forEach(s -> paths.add(s.path())));
            assertTrue(paths.containsAll(java.util.List.of("count", "a.rxMsgs", "a.leaf.count", "b.depth", "connections")), paths.toString());
        } finally {
            nested.close();
        }
    }

    @Test
    @Timeout(60)
    void shouldLeaveTheReadDrivenRateExactWhenScrapedEvery100msWhileAPersonReadsEvery1500ms() throws Exception {
        ManualClock clock = new ManualClock();
        try (YunoRuntime y = YunoRuntime.builder().name("rates").clock(clock).gclass(RATED)
                .config("{\"services\": [{\"name\": \"gate\", \"gclass\": \"C_RATED\"}]}").build().start();
             MetricsServer ms = new MetricsServer(y)) {
            int port = ms.start("127.0.0.1", 0);
            y.command("stats-yuno service=gate");   // the person's first read opens the window
            for (int step = 1; step <= 60; step++) {
                y.run(() -> {
                    for (int i = 0; i < 15; i++) y.yuno().service("gate").send("EV_RX", null, null);
                });
                assertTrue(http(port, "GET /metrics HTTP/1.1\r\n\r\n").contains("gatehouse_rxMsgs_total"));
                assertTrue(http(port, "GET /api/view HTTP/1.1\r\n\r\n").startsWith("HTTP/1.1 200"));
                clock.advance(100);                 // the sampler ticks every 10 steps, inside these advances
                if (step % 15 == 0) {
                    ObjectNode st = (ObjectNode) y.command("stats-yuno service=gate").get("data");
                    assertEquals(150, st.get("rxMsgsec").asLong(), "15 messages every 100 ms, read every 1.5 s: " + st);
                    assertEquals(150, st.get("maxrxMsgsec").asLong(), st.toString());
                }
            }
            Double pageRate = y.call(() -> ms.sampler().latest().get(Sampler.rxId("gate")));
            assertEquals(150.0, pageRate, 0.001, "the page's own rate, from the counter over its own second");
        }
    }

    @Test
    void shouldRegisterOneMBeanPerServiceAndFollowARebuild() throws Exception {
        MBeanServer server = MBeanServerFactory.newMBeanServer();
        try (JmxExporter jmx = new JmxExporter(rt, server)) {
            jmx.refresh();
            ObjectName on = new ObjectName("io.gatehouse:type=Service,yuno=obs,name=svc");
            assertTrue(server.isRegistered(on));
            assertEquals(2L, server.getAttribute(on, "count"), "a counter is a Long");
            assertEquals(3L, server.getAttribute(new ObjectName("io.gatehouse:type=Service,yuno=obs,name=gate"), "rxMsgs"));
            assertEquals(3.0, server.getAttribute(new ObjectName("io.gatehouse:type=Service,yuno=obs,name=gate"), "depth"),
                    "a gauge is a Double");
            assertTrue(java.util.Arrays.stream(server.getMBeanInfo(on).getAttributes())
                    .anyMatch(a -> a.getName().equals("connections")));
            rt.gclassesGone(java.util.List.of("C_NODE"));
            rt.gclassArrived(TestGClasses.NODE);   // no state handover: the service is rebuilt
            jmx.refresh();
            assertTrue(server.isRegistered(on));
            assertEquals(0L, server.getAttribute(on, "count"), "the rebuilt service is read");
        }
    }
}
