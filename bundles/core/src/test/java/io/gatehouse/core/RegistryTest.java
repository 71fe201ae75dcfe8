package io.gatehouse.core;

import io.gatehouse.testkit.Recorder;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.Registry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Addressing, delivery and dispatch rules of the registry (seeds/003), with in-memory links between yunos. */
class RegistryTest {
    private static final String CFG = "{\"services\": [{\"name\": \"svc\", \"gclass\": \"C_NODE\"}]}";
    private final List<YunoRuntime> runtimes = new ArrayList<>();

    @AfterEach
    void tearDown() {
        runtimes.forEach(YunoRuntime::close);
    }

    private YunoRuntime hub(String name) {
        YunoRuntime rt = YunoRuntime.builder().name(name).gclass(TestGClasses.NODE).config(CFG).build().start();
        runtimes.add(rt);
        return rt;
    }

    private static Registry reg(YunoRuntime rt) {
        return rt.yuno().lookup(Registry.class);
    }

    /** A one-way in-memory link that hands each message to the peer's registry on the peer's core thread. */
    static final class Wire implements Registry.Link {
        final YunoRuntime peer;
        final String name;
        Wire back;
        volatile boolean open = true;

        Wire(YunoRuntime peer, String name) {
            this.peer = peer;
            this.name = name;
        }

        @Override public String describe() { return name; }
        @Override public boolean isOpen() { return open; }

        @Override
        public boolean send(ObjectNode msg) {
            if (!open) return false;
            ObjectNode copy = msg.deepCopy();
            peer.yuno().execute(() -> reg(peer).deliverFrom(back, copy));
            return true;
        }
    }

    /** Links a to b (both sides learn the other's name); answers a's side of the link. */
    private static Wire link(YunoRuntime a, YunoRuntime b) {
        Wire ab = new Wire(b, a.yuno().name() + "->" + b.yuno().name());
        Wire ba = new Wire(a, b.yuno().name() + "->" + a.yuno().name());
        ab.back = ba;
        ba.back = ab;
        a.run(() -> reg(a).addLink(b.yuno().name(), ab));
        b.run(() -> reg(b).addLink(a.yuno().name(), ba));
        return ab;
    }

    private static ObjectNode cmd(String hub, String service, String command, String fromService, long id) {
        ObjectNode m = Kw.create();
        ObjectNode to = m.putObject("to");
        if (hub != null) to.put("hub", hub);
        to.put("service", service);
        m.putObject("from").put("service", fromService);
        m.put("type", "cmd");
        m.put("command", command);
        m.put("id", id);
        return m;
    }

    private static ObjectNode replyOf(Recorder rec) {
        Recorder.Event e = rec.await("EV_ON_MESSAGE", 5000);
        assertNotNull(e, "no reply reached the recorder");
        assertEquals("reply", e.kw.path("type").asText(), e.toString());
        return e.kw;
    }

    @Test
    void shouldRunTheCommandOfALocalServiceAndAnswerToFrom() {
        YunoRuntime a = hub("A");
        Recorder rec = Recorder.create(a, "rec");
        a.run(() -> reg(a).deliver(cmd(null, "svc", "hello times=3 who=me", "rec", 7)));
        ObjectNode r = replyOf(rec);
        assertEquals(7, r.path("id").asInt());
        assertEquals(0, r.path("reply").path("result").asInt(), r.toString());
        assertEquals(3, r.path("reply").path("data").path("times").asInt());
        assertEquals("A", r.path("from").path("hub").asText());
        assertEquals("svc", r.path("from").path("service").asText());
    }

    @Test
    void shouldRunYunoCommandsOnTheYunoService() {
        YunoRuntime a = hub("A");
        Recorder rec = Recorder.create(a, "rec");
        a.run(() -> reg(a).deliver(cmd("A", Registry.YUNO, "stats-yuno service=svc", "rec", 1)));
        ObjectNode r = replyOf(rec);
        assertEquals(0, r.path("reply").path("result").asInt(), r.toString());
        assertTrue(r.path("reply").path("data").has("count"), r.toString());
    }

    @Test
    void shouldAnswerAnUnknownServiceOrCommandOrBadParameterWithAnError() {
        YunoRuntime a = hub("A");
        Recorder rec = Recorder.create(a, "rec");
        a.run(() -> reg(a).deliver(cmd(null, "nope", "help", "rec", 1)));
        ObjectNode r = replyOf(rec);
        assertEquals(-1, r.path("reply").path("result").asInt());
        assertTrue(r.path("reply").path("comment").asText().contains("'nope' not found"), r.toString());
        a.run(() -> reg(a).deliver(cmd(null, "svc", "no-such-command", "rec", 2)));
        assertTrue(replyOf(rec).path("reply").path("comment").asText().contains("not available"));
        a.run(() -> reg(a).deliver(cmd(null, "svc", "hello times=abc", "rec", 3)));
        assertEquals(-1, replyOf(rec).path("reply").path("result").asInt());
        a.run(() -> reg(a).deliver(cmd(null, "svc", "hello 'unterminated", "rec", 4)));
        assertEquals(-1, replyOf(rec).path("reply").path("result").asInt());
    }

    @Test
    void shouldDropUndeliverableMessagesAndBounceOnlyWhenAsked() {
        YunoRuntime a = hub("A");
        Recorder rec = Recorder.create(a, "rec");
        ObjectNode m = Kw.create();
        m.putObject("to").put("service", "nope");
        m.putObject("from").put("service", "rec");
        m.put("type", "data");
        assertEquals(-1, (int) a.call(() -> reg(a).deliver(m)));
        ObjectNode b = m.deepCopy();
        b.put("bounce", true);
        b.put("id", 9);
        assertEquals(-1, (int) a.call(() -> reg(a).deliver(b)));
        ObjectNode r = replyOf(rec);
        assertEquals(9, r.path("id").asInt());
        assertEquals(-1, r.path("reply").path("result").asInt());
        assertEquals(1, rec.count("EV_ON_MESSAGE"), "the unasked drop is not bounced");
    }

    @Test
    void shouldDispatchByTypeThenToTheGenericInput() {
        YunoRuntime a = hub("A");
        Recorder rec = Recorder.create(a, "rec");
        a.run(() -> a.yuno().service("svc").subscribe(null, rec.gobj()));
        ObjectNode go = Kw.create();
        go.put("to", "svc");
        go.put("type", "go");
        assertEquals(0, (int) a.call(() -> reg(a).deliver(go)));
        assertEquals("ST_B", a.call(() -> a.yuno().service("svc").state()));
        // ST_B has no EV_DATA, no EV_ON_MESSAGE, no EV_SEND_MESSAGE: not deliverable there.
        ObjectNode data = Kw.create();
        data.put("to", "A/svc");
        data.put("type", "data");
        data.putObject("kw").put("x", 1);
        assertEquals(-1, (int) a.call(() -> reg(a).deliver(data)));
        ObjectNode back = Kw.create();
        back.put("to", "svc");
        back.put("type", "back");
        a.run(() -> reg(a).deliver(back));
        assertEquals(0, (int) a.call(() -> reg(a).deliver(data.deepCopy())));
        Recorder.Event e = rec.await("EV_ON_MESSAGE", 5000);
        assertNotNull(e);
        assertEquals(1, e.kw.path("x").asInt(), "EV_SEND_MESSAGE (generic input) got the message's kw: " + e);
    }

    @Test
    void shouldKeepTargetedAndPlainNamesApartAndResolveAliases() {
        YunoRuntime a = hub("A");
        a.run(() -> {
            Registry r = reg(a);
            GObj svc = a.yuno().service("svc");
            r.register("cell", "t1", svc);
            assertNull(r.lookup("cell", null), "a targeted name is not a plain name");
            assertSame(svc, r.lookup("cell", "t1"));
            r.register("cell", null, a.yuno().root());
            assertSame(a.yuno().root(), r.lookup("cell", null));
            assertSame(svc, r.lookup("cell", "t1"));
            r.alias("S", "svc");
            assertSame(svc, r.lookup("S", null));
            r.unalias("S");
            assertNull(r.lookup("S", null));
            r.unregister("cell", "t1", svc);
            assertNull(r.lookup("cell", "t1"));
        });
    }

    @Test
    void shouldRouteAcrossThreeHubsWithDefaultAndLearnTheWayBack() {
        YunoRuntime a = hub("A");
        YunoRuntime b = hub("B");
        YunoRuntime c = hub("C");
        Wire ab = link(a, b);
        a.run(() -> reg(a).aliasLink(Registry.DEFAULT, ab));
        link(b, c);
        Recorder rec = Recorder.create(a, "rec");
        // A does not know C: DEFAULT (B) does; C answers to A through the route it learnt from B's link.
        a.run(() -> reg(a).deliver(cmd("C", "svc", "hello times=5", "rec", 1)));
        ObjectNode r = replyOf(rec);
        assertEquals(5, r.path("reply").path("data").path("times").asInt(), r.toString());
        assertEquals("C", r.path("from").path("hub").asText());
        // No hub: not found locally, so DEFAULT; B has it as "svc" too.
        a.run(() -> reg(a).deliver(cmd(null, "only-on-b", "help", "rec", 2)));
        assertTrue(replyOf(rec).path("reply").path("comment").asText().contains("not found in hub 'B'"));
        // An unknown service on the remote hub, and an unknown hub.
        a.run(() -> reg(a).deliver(cmd("C", "nope", "help", "rec", 3)));
        assertTrue(replyOf(rec).path("reply").path("comment").asText().contains("not found in hub 'C'"));
        a.run(() -> reg(a).deliver(cmd("Z", "svc", "help", "rec", 4)));
        assertTrue(replyOf(rec).path("reply").path("comment").asText().contains("'Z' not reachable from hub 'B'"));
        ObjectNode view = a.call(() -> reg(a).view());
        assertTrue(view.path("links").has("B"), view.toString());
        assertTrue(c.call(() -> reg(c).view()).path("routes").has("A"), "C learnt the way back to A");
    }

    @Test
    void shouldDropAMessageThatLoopsBetweenDefaults() {
        YunoRuntime a = hub("A");
        YunoRuntime b = hub("B");
        YunoRuntime c = hub("C");
        Wire ab = link(a, b);
        Wire bc = link(b, c);
        Wire ca = link(c, a);
        a.run(() -> reg(a).aliasLink(Registry.DEFAULT, ab));
        b.run(() -> reg(b).aliasLink(Registry.DEFAULT, bc));
        c.run(() -> reg(c).aliasLink(Registry.DEFAULT, ca));
        Recorder rec = Recorder.create(a, "rec");
        a.run(() -> reg(a).deliver(cmd("Z", "svc", "help", "rec", 1)));
        ObjectNode r = replyOf(rec);
        assertTrue(r.path("reply").path("comment").asText().contains("too many hops"), r.toString());
    }

    @Test
    void shouldAnswerAtOnceWhenTheLinkIsDown() {
        YunoRuntime a = hub("A");
        YunoRuntime b = hub("B");
        Wire ab = link(a, b);
        Recorder rec = Recorder.create(a, "rec");
        ab.open = false;
        a.run(() -> reg(a).deliver(cmd("B", "svc", "help", "rec", 1)));
        assertTrue(replyOf(rec).path("reply").path("comment").asText().contains("not reachable"));
        ab.open = true;
        a.run(() -> reg(a).deliver(cmd("B", "svc", "help", "rec", 2)));
        assertEquals(0, replyOf(rec).path("reply").path("result").asInt());
        a.run(() -> reg(a).removeLink(ab));
        a.run(() -> reg(a).deliver(cmd("B", "svc", "help", "rec", 3)));
        assertTrue(replyOf(rec).path("reply").path("comment").asText().contains("not reachable"));
    }

    @Test
    void shouldAnswerABlockingHubCallThroughTheLinks() {
        YunoRuntime a = hub("A");
        YunoRuntime b = hub("B");
        link(a, b);
        ObjectNode r = HubCall.command(a, "B", "stats-yuno service=svc", 5000);
        assertEquals(0, r.path("result").asInt(), r.toString());
        assertTrue(r.path("data").has("count"));
        assertTrue(HubCall.command(a, "Z", "help", 5000).path("comment").asText().contains("'Z' not reachable"));
        assertEquals(0, HubCall.command(a, "", "help", 5000).path("result").asInt(), "empty hub = this one");
        assertTrue(a.call(() -> reg(a).view()).path("links").size() == 1, "the short-lived hubs are unlinked");
    }
}
