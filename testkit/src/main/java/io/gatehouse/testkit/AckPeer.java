// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.api.queue.TrQueue;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The far side of a queue link (gclass C_ACK_PEER): subscribed to a server C_IOGATE, it records every message
 * and answers the ack (Yuneta's trq_answer: the message's __md_trq__ plus result) on the same channel through
 * __temp__. A policy decides the result per message, or no ack yet (null: the ack is held until
 * {@link #answerHeld}, as a queue holds it until its fsync).
 */
public final class AckPeer implements GObjBehavior {
    public static final String GCLASS = "C_ACK_PEER";

    public static final GClassSpec<AckPeer> SPEC = GClassSpec.builder(GCLASS, AckPeer.class)
            .description("acks what a server gate receives (tests)")
            .fsm(Fsm.<AckPeer>builder()
                    .state(St.ST_IDLE)
                    .on(Ev.EV_ON_MESSAGE, AckPeer::acOnMessage)
                    .ignore(Ev.EV_ON_OPEN)
                    .ignore(Ev.EV_ON_CLOSE)
                    .build())
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(AckPeer::new)
            .build();

    private final GObj gobj;
    private final List<ObjectNode> received = new ArrayList<>();
    /** Result to answer for a message (null = no ack yet). Default: ack everything with 0. */
    public volatile Function<ObjectNode, Integer> policy = m -> 0;
    /** The messages the policy answered null for, with the __temp__ and the gate their ack goes back through. */
    private final List<Object[]> held = new ArrayList<>();

    private AckPeer(GObj gobj) {
        this.gobj = gobj;
    }

    public GObj gobj() {
        return gobj;
    }

    private int acOnMessage(String ev, ObjectNode kw, GObj src) {
        ByteBuf b = Kw.takeGbuffer(kw);
        ObjectNode msg;
        try {
            msg = Kw.parse(b);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } finally {
            b.release();
        }
        synchronized (received) {
            received.add(msg);
            received.notifyAll();
        }
        Integer result = policy.apply(msg);
        JsonNode temp = kw.remove(Kw.TEMP);
        if (result == null) {
            synchronized (held) {
                held.add(new Object[] {msg, temp, src});
            }
            return 0;
        }
        return answer(msg, temp, src, result);
    }

    private int answer(ObjectNode msg, JsonNode temp, GObj gate, int result) {
        ObjectNode ack = TrQueue.answer(msg, result);
        ObjectNode out = Kw.withGbuffer(Unpooled.copiedBuffer(Kw.toJson(ack), StandardCharsets.UTF_8));
        if (temp != null) out.set(Kw.TEMP, temp);
        return gate.send(Ev.EV_SEND_MESSAGE, out, gobj);
    }

    /** Answers, in arrival order, every message whose ack was held ({@code policy} said null); on the core thread. */
    public void answerHeld(int result) {
        List<Object[]> now;
        synchronized (held) {
            now = new ArrayList<>(held);
            held.clear();
        }
        for (Object[] h : now) answer((ObjectNode) h[0], (JsonNode) h[1], (GObj) h[2], result);
    }

    /** How many acks are held (any thread). */
    public int heldCount() {
        synchronized (held) {
            return held.size();
        }
    }

    public List<ObjectNode> received() {
        synchronized (received) {
            return new ArrayList<>(received);
        }
    }

    public List<String> ids() {
        List<String> out = new ArrayList<>();
        for (ObjectNode m : received()) out.add(m.path("id").asText());
        return out;
    }

    public boolean awaitReceived(int n, long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        synchronized (received) {
            while (received.size() < n) {
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) return false;
                try {
                    received.wait(left);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return true;
        }
    }
}
