// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.InputGates;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * What the relay does for an MQTT gate, in a test (gclass C_ACKER): takes every message the gate publishes,
 * keeps it, and answers its {@code __md_trq__} on the connection it came from: at once (ACK), with a refusal
 * (NACK), or when the test says so (HOLD, then {@link #releaseHeld}).
 */
final class Acker implements GObjBehavior {
    static final String GCLASS = "C_ACKER";

    enum Policy { ACK, NACK, HOLD }

    static final GClassSpec<Acker> SPEC = GClassSpec.builder(GCLASS, Acker.class)
            .description("Acks what an input gate publishes, as the relay does (tests)")
            .fsm(Fsm.<Acker>builder().state(St.ST_IDLE)
                    .on(Ev.EV_ON_MESSAGE, Acker::acMessage)
                    .ignore(Ev.EV_ON_OPEN)
                    .ignore(Ev.EV_ON_CLOSE)
                    .build())
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(Acker::new)
            .build();

    private final GObj gobj;
    volatile Policy policy = Policy.ACK;
    private final List<ObjectNode> messages = new ArrayList<>();
    private final List<Object[]> held = new ArrayList<>();

    private Acker(GObj gobj) {
        this.gobj = gobj;
    }

    /** An acker subscribed to the gate service {@code gate}. */
    static Acker on(YunoRuntime rt, String gate) {
        if (rt.yuno().gclass(GCLASS) == null) rt.gclassArrived(SPEC);
        return rt.call(() -> {
            GObj g = rt.yuno().root().createVolatileChild("acker-" + gate, GCLASS, null);
            rt.yuno().service(gate).subscribe(null, g);
            return (Acker) g.behavior();
        });
    }

    private int acMessage(String ev, ObjectNode kw, GObj src) {
        ByteBuf b = Kw.takeGbuffer(kw);
        ObjectNode msg;
        try {
            msg = Kw.parse(b);
        } catch (IOException e) {
            throw new IllegalStateException("the gate sent up something that is not JSON", e);
        } finally {
            b.release();
        }
        JsonNode md = msg.remove(Kw.MD_TRQ);
        synchronized (messages) {
            messages.add(msg);
            messages.notifyAll();
        }
        if (md instanceof ObjectNode) {
            JsonNode temp = kw.get(Kw.TEMP);
            switch (policy) {
                case ACK: InputGates.reply(gobj, src, InputGates.ack((ObjectNode) md, 0), temp); break;
                case NACK: InputGates.reply(gobj, src, InputGates.ack((ObjectNode) md, -1), temp); break;
                default: held.add(new Object[] {md, temp, src});
            }
        }
        return 0;
    }

    /** Acks what was held (on the core thread). */
    void releaseHeld() {
        for (Object[] h : held) InputGates.reply(gobj, (GObj) h[2], InputGates.ack((ObjectNode) h[0], 0), (JsonNode) h[1]);
        held.clear();
    }

    int heldCount() {
        return held.size();
    }

    List<ObjectNode> messages() {
        synchronized (messages) {
            return new ArrayList<>(messages);
        }
    }

    boolean await(int n, long ms) throws InterruptedException {
        long end = System.currentTimeMillis() + ms;
        synchronized (messages) {
            while (messages.size() < n) {
                long left = end - System.currentTimeMillis();
                if (left <= 0) return false;
                messages.wait(left);
            }
            return true;
        }
    }
}
