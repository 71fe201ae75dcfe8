package io.gatehouse.core;

import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.Recorder;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GObjDispatchTest {
    private final List<String> errors = new CopyOnWriteArrayList<>();
    private final Consumer<LogCapture.Rec> sink = r -> {
        if (r.level == LogCapture.Level.ERROR) errors.add(r.msg + " " + r.fields);
    };
    private LogCapture capture;
    private YunoRuntime rt;

    @BeforeEach
    void setUp() {
        capture = new LogCapture(sink);
        rt = YunoRuntime.builder().name("t").gclass(TestGClasses.NODE)
                .config("{\"services\": [{\"name\": \"svc\", \"gclass\": \"C_NODE\"}]}").build().start();
    }

    @AfterEach
    void tearDown() {
        rt.close();
        if (capture != null) capture.close();
    }

    @Test
    void shouldSetTheNextStateBeforeTheActionRuns() {
        int r = rt.call(() -> rt.service("svc").send("EV_GO", null, null));
        assertEquals(0, r);
        TestGClasses.Node n = rt.call(() -> (TestGClasses.Node) rt.service("svc").behavior());
        assertEquals("ST_B", n.seenState);
        assertEquals("ST_B", rt.call(() -> rt.service("svc").state()));
    }

    @Test
    void shouldAnswerMinusOneAndLogWhenTheEventIsNotDefined() {
        ByteBuf b = Unpooled.copiedBuffer("x", StandardCharsets.UTF_8);
        int r = rt.call(() -> rt.service("svc").send("EV_BACK", Kw.withGbuffer(b), null));
        assertEquals(-1, r);
        assertEquals(0, b.refCnt(), "the kw of an undefined event is released");
        assertTrue(errors.stream().anyMatch(e -> e.startsWith("Event NOT DEFINED in state")), errors.toString());
    }

    @Test
    void shouldReleaseTheKwOfAnIgnoredEvent() {
        ByteBuf b = Unpooled.copiedBuffer("x", StandardCharsets.UTF_8);
        assertEquals(0, (int) rt.call(() -> rt.service("svc").send("EV_TX_READY", Kw.withGbuffer(b), null)));
        assertEquals(0, b.refCnt());
    }

    @Test
    void shouldGiveEverySubscriberTheWholePayload() {
        Recorder a = Recorder.create(rt, "a");
        Recorder c = Recorder.create(rt, "c");
        rt.run(() -> {
            GObj svc = rt.service("svc");
            svc.subscribe(null, a.gobj());
            svc.subscribe("EV_ON_MESSAGE", c.gobj());
            ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer("payload", StandardCharsets.UTF_8));
            kw.put("k", 1);
            svc.send("EV_SEND_MESSAGE", kw, null);
        });
        assertEquals("payload", a.await("EV_ON_MESSAGE", 2000).payloadText());
        Recorder.Event ec = c.await("EV_ON_MESSAGE", 2000);
        assertEquals("payload", ec.payloadText());
        assertEquals(1, ec.kw.get("k").asInt());
    }

    @Test
    void shouldRunCommandsWithTypedParametersAndHelp() {
        ObjectNode r = rt.command("command-yuno service=svc command=hello times=3");
        assertEquals(0, r.get("result").asInt(), r.toString());
        assertEquals(3, r.get("data").get("times").asInt());
        assertEquals("world", r.get("data").get("who").asText());
        ObjectNode bad = rt.command("command-yuno service=svc command=hello times=many");
        assertEquals(-1, bad.get("result").asInt());
        assertTrue(bad.get("comment").asText().contains("times"), bad.toString());
        ObjectNode help = rt.command("help service=svc");
        assertTrue(help.get("data").get(0).asText().startsWith("hello"), help.toString());
        assertEquals(-1, rt.command("command-yuno service=nope command=hello").get("result").asInt());
    }

    @Test
    void shouldCheckTypesAndWritabilityOnWriteAttr() {
        assertEquals(0, rt.command("write-attr service=svc attr=label value=abc").get("result").asInt());
        assertEquals("abc", rt.command("read-attrs service=svc").get("data").get("label").asText());
        ObjectNode notWritable = rt.command("write-attr service=svc attr=flag value=true");
        assertEquals(-1, notWritable.get("result").asInt());
        assertTrue(notWritable.get("comment").asText().contains("not writable"));
        ObjectNode unknown = rt.command("write-attr service=svc attr=nope value=1");
        assertTrue(unknown.get("comment").asText().contains("unknown"), unknown.toString());
        ObjectNode badType = rt.command("write-attr service=svc attr=limit value=lots");
        assertTrue(badType.get("comment").asText().contains("limit"), badType.toString());
    }

    @Test
    void shouldAnswerDefaultStatsInTheEnvelopeAndResetThem() {
        rt.run(() -> rt.service("svc").send("EV_SEND_MESSAGE", null, null));
        ObjectNode st = rt.command("stats-yuno service=svc");
        assertEquals(0, st.get("result").asInt());
        assertEquals(1, st.get("data").get("count").asInt());
        rt.command("stats-yuno service=svc stats=__reset__");
        assertEquals(0, rt.command("stats-yuno service=svc").get("data").get("count").asInt());
    }

    @Test
    void shouldFireTimersOnTheCoreThread() throws Exception {
        Recorder rec = Recorder.create(rt, "timer");
        rt.run(() -> rec.gobj().setTimeout(20, "EV_TIMEOUT", null));
        assertTrue(rec.awaitCount("EV_TIMEOUT", 1, 2000));
        rt.run(() -> rec.gobj().setTimeout(50, "EV_TIMEOUT", null).cancel());
        Thread.sleep(120);
        assertEquals(1, rec.count("EV_TIMEOUT"), "a cancelled timer does not fire");
    }

    @Test
    void shouldKeepPeriodicTimersAliveWhenAnActionFaults() {
        rt.run(() -> rt.service("svc").setPeriodic(10, "EV_FAULT"));
        long deadline = System.currentTimeMillis() + 5000;
        while (rt.call(() -> ((TestGClasses.Node) rt.service("svc").behavior()).faults) < 3
                && System.currentTimeMillis() < deadline) {
            Thread.onSpinWait();
        }
        assertTrue(rt.call(() -> ((TestGClasses.Node) rt.service("svc").behavior()).faults) >= 3,
                "the timer fired again after the fault");
        assertTrue(errors.stream().anyMatch(e -> e.startsWith("Action failed")), errors.toString());
    }
}
