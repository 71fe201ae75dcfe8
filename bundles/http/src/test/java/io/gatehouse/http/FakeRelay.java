// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.http;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * What C_RELAY does for the HTTP gobj, as the test decides (gclass C_FAKE_RELAY): takes each message, and acks it
 * at once (as a plain output does, inside the publish), holds its ack until {@link #ackHeld} (a queue's fsync),
 * nacks it, or refuses it with -1. The ack is the relay's: the message's {@code __md_trq__} with {@code result}
 * added, as compact JSON in a gbuffer, sent back down to the gobj it came from.
 */
final class FakeRelay implements GObjBehavior {
    static final String GCLASS = "C_FAKE_RELAY";

    enum Mode { ACK, HOLD, NACK, FAIL }

    static final GClassSpec<FakeRelay> SPEC = GClassSpec.builder(GCLASS, FakeRelay.class)
            .description("A relay stand-in: acks, holds, nacks or refuses what it gets")
            .fsm(Fsm.<FakeRelay>builder().state(St.ST_IDLE)
                    .on(Ev.EV_ON_MESSAGE, FakeRelay::acMessage)
                    .on(Ev.EV_ON_OPEN, FakeRelay::acOpen)
                    .on(Ev.EV_ON_CLOSE, FakeRelay::acClose)
                    .build())
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(FakeRelay::new)
            .build();

    /**
     * The same stand-in declaring that it takes batches ({@link Kw#BATCH}), as C_RELAY does since api 2.4: it keeps
     * each object of a batch, and answers the batch once with its md ({@link #answerApart} false), or each object
     * with the batch's md plus its index, as the relay does for an output that cannot keep the batch whole.
     */
    static final GClassSpec<FakeRelay> BATCH_SPEC = GClassSpec.builder("C_FAKE_BATCH_RELAY", FakeRelay.class)
            .description("A relay stand-in that takes batches")
            .fsm(SPEC.fsm())
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .takesBatches()
            .factory(FakeRelay::new)
            .build();

    private final GObj gobj;
    Mode mode = Mode.ACK;
    /** Messages as stored (without their {@code __md_trq__}). */
    final List<ObjectNode> messages = new ArrayList<>();
    /** The {@code __md_trq__} of every message, as it came. */
    final List<ObjectNode> mds = new ArrayList<>();
    private final List<ObjectNode> held = new ArrayList<>();
    private final List<GObj> heldFrom = new ArrayList<>();
    int opens;
    int closes;
    /** The events that came as a batch, and how many objects each held. */
    final List<Integer> batchSizes = new ArrayList<>();
    /** A batch is answered per object (with {@code msg}) instead of once. */
    boolean answerApart;

    private FakeRelay(GObj gobj) {
        this.gobj = gobj;
    }

    private int acMessage(String ev, ObjectNode kw, GObj src) {
        int[] ranges = Kw.ref(kw, Kw.BATCH, int[].class);
        if (ranges != null) return acBatch(kw, ranges, src);
        ByteBuf b = Kw.takeGbuffer(kw);
        ObjectNode msg;
        try {
            msg = Kw.parse(b);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            b.release();
        }
        ObjectNode md = (ObjectNode) msg.remove(Kw.MD_TRQ);
        messages.add(msg);
        mds.add(md.deepCopy());
        switch (mode) {
            case ACK:
                answer(src, md, 0);
                return 0;
            case NACK:
                answer(src, md, -1);
                return -1;
            case FAIL:
                return -1;
            default:
                held.add(md);
                heldFrom.add(src);
                return 0;
        }
    }

    private int acBatch(ObjectNode kw, int[] ranges, GObj src) {
        ByteBuf b = Kw.takeGbuffer(kw);
        ObjectNode md = (ObjectNode) kw.get(Kw.MD_TRQ);
        List<ObjectNode> mdsToAnswer = new ArrayList<>();
        try {
            for (int i = 0; i < ranges.length; i += 2) {
                messages.add(Kw.parse(b.slice(b.readerIndex() + ranges[i], ranges[i + 1] - ranges[i])));
                ObjectNode one = md.deepCopy();
                if (answerApart) one.put(Kw.BATCH_INDEX, i / 2);
                mds.add(one);
                if (answerApart || i == 0) mdsToAnswer.add(one);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            b.release();
        }
        batchSizes.add(ranges.length / 2);
        for (ObjectNode one : mdsToAnswer) {
            switch (mode) {
                case ACK: answer(src, one, 0); break;
                case NACK: answer(src, one, -1); return -1;
                case FAIL: return -1;
                default:
                    held.add(one);
                    heldFrom.add(src);
            }
        }
        return 0;
    }

    private int acOpen(String ev, ObjectNode kw, GObj src) {
        opens++;
        return 0;
    }

    private int acClose(String ev, ObjectNode kw, GObj src) {
        closes++;
        return 0;
    }

    /**
     * Acks (or nacks) what was held: all of it in arrival order, or only the ones at {@code order} (indexes into
     * what is held now, answered in that order; the others stay held).
     */
    void ackHeld(int result, int... order) {
        List<ObjectNode> mds = new ArrayList<>(held);
        List<GObj> from = new ArrayList<>(heldFrom);
        if (order.length == 0) {
            held.clear();
            heldFrom.clear();
            for (int i = 0; i < mds.size(); i++) answer(from.get(i), mds.get(i), result);
            return;
        }
        boolean[] taken = new boolean[mds.size()];
        for (int i : order) taken[i] = true;
        held.clear();
        heldFrom.clear();
        for (int k = 0; k < mds.size(); k++) {
            if (taken[k]) continue;
            held.add(mds.get(k));
            heldFrom.add(from.get(k));
        }
        for (int i : order) answer(from.get(i), mds.get(i), result);
    }

    int heldCount() {
        return held.size();
    }

    void answer(GObj to, ObjectNode md, int result) {
        ObjectNode ack = Kw.create();
        ack.set(Kw.MD_TRQ, md.deepCopy().put(Kw.RESULT, result));
        ByteBuf out = Unpooled.buffer();
        Kw.writeJson(ack, out);
        to.send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(out), gobj);
    }
}
