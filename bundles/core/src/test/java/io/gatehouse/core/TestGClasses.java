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
import io.gatehouse.api.Param;

import java.util.ArrayList;
import java.util.List;

/** Small gclasses for core tests: a two-state node that logs what happens to it. */
final class TestGClasses {
    private TestGClasses() {}

    static final List<String> JOURNAL = new ArrayList<>();

    static final Attr<Long> COUNT = Attr.counter("count", AttrFlag.RSTATS, "Events handled");
    static final Attr<String> LABEL = Attr.string("label", "", AttrFlag.WR, "A label");
    static final Attr<Long> LIMIT = Attr.integer("limit", 10, AttrFlag.PERSIST, "A persistent limit");
    static final Attr<Boolean> FLAG = Attr.bool("flag", false, AttrFlag.RD, "A flag");

    static final class Node implements GObjBehavior {
        final GObj gobj;
        String seenState;

        Node(GObj gobj) {
            this.gobj = gobj;
        }

        @Override public void onCreate() { JOURNAL.add("create " + gobj.name()); }
        @Override public int onStart() { JOURNAL.add("start " + gobj.name()); return 0; }
        @Override public int onStop() { JOURNAL.add("stop " + gobj.name()); return 0; }
        @Override public void onDestroy() { JOURNAL.add("destroy " + gobj.name()); }
        @Override public void onWriting(String attr) {
            JOURNAL.add("writing " + gobj.name() + " " + attr);
            if (attr.equals(LIMIT.name()) && gobj.read(LIMIT) < 0) throw new IllegalArgumentException("limit must be >= 0");
        }

        int acGo(String ev, ObjectNode kw, GObj src) {
            seenState = gobj.state();
            gobj.inc(COUNT);
            Kw.release(kw);
            return 0;
        }

        int faults;

        /** Fails the way a store into a mapped file fails when its disk is full. */
        int acFault(String ev, ObjectNode kw, GObj src) {
            faults++;
            throw new InternalError("a fault occurred in an unsafe memory access operation");
        }

        int acEcho(String ev, ObjectNode kw, GObj src) {
            gobj.inc(COUNT);
            return gobj.publish("EV_ON_MESSAGE", kw);
        }

        ObjectNode cmdHello(ObjectNode kw, GObj src) {
            ObjectNode d = Kw.create();
            d.put("times", kw.get("times").asLong());
            d.put("who", kw.path("who").asText());
            return Envelope.ok(d);
        }
    }

    static final GClassSpec<Node> NODE = GClassSpec.builder("C_NODE", Node.class)
            .description("test node")
            .attrs(COUNT, LABEL, LIMIT, FLAG)
            .fsm(Fsm.<Node>builder()
                    .state("ST_A")
                    .on("EV_GO", Node::acGo, "ST_B")
                    .on("EV_SEND_MESSAGE", Node::acEcho)
                    .on("EV_FAULT", Node::acFault)
                    .ignore("EV_TX_READY")
                    .state("ST_B")
                    .on("EV_BACK", Node::acGo, "ST_A")
                    .publishes("EV_ON_MESSAGE")
                    .build())
            .command("hello", "Say hello", Node::cmdHello,
                    Param.integer("times", "1", "How many"), Param.string("who", "world", "To whom"))
            .acceptUnusedYunetaKeys("legacy_key")
            .factory(Node::new)
            .build();

    /** A gclass that must not be started by tree walks (like C_TCP). */
    static final GClassSpec<Node> MANUAL = GClassSpec.builder("C_MANUAL", Node.class)
            .description("test node started by its owner only")
            .fsm(Fsm.<Node>builder().state("ST_A").on("EV_GO", Node::acGo).build())
            .manualStart()
            .factory(Node::new)
            .build();
}
