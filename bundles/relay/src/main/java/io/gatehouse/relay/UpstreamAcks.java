// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.relay;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.support.ReusableHeapBuffer;
import io.netty.buffer.ByteBuf;

import java.util.Arrays;

/**
 * The acks one durable tell answers, gathered per connection and sent as one send batch ({@link Kw#BATCH}) each:
 * one event down the input gate, its channel and protocol, and one buffer into the socket, instead of one per ack.
 * Only for a connection whose gate, channel and protocol all declare that they take send batches (api 2.5); the
 * relay answers any other ack alone, as before. At most {@link #OPEN} connections are gathered at
 * once (a tell covers the producers of one commit; more of them flush the open ones and start again), and the
 * buffers are taken back once the levels below released them, so nothing here grows with the traffic.
 *
 * <p>Core loop only. Acks to one connection keep their order; the order between connections is the tell's order
 * per connection only, which no producer can see.
 */
final class UpstreamAcks {
    static final int OPEN = 8;

    /** What a flushed batch did: the acks and nacks sent, counted by the caller as it counts one sent alone. */
    interface Counter {
        void sent(int acks, int nacks);
    }

    private final GObj relay;
    private final Counter counter;
    private final Batch[] batches = new Batch[OPEN];
    private int open;

    UpstreamAcks(GObj relay, Counter counter) {
        this.relay = relay;
        this.counter = counter;
        for (int i = 0; i < OPEN; i++) batches[i] = new Batch();
    }

    /**
     * Gathers the ack {@code ack[Gbuffers.HEADROOM, end)} for the channel in {@code temp} behind {@code gate}: true
     * when it is gathered (and sent at {@link #flush}), false when that connection cannot take send batches (the
     * caller answers it alone).
     */
    boolean add(GObj gate, JsonNode temp, byte[] ack, int from, int end, boolean nack) {
        GObj channel = Kw.ref(temp, Kw.TEMP_CHANNEL_GOBJ, GObj.class);
        if (gate == null || channel == null) return false;
        Batch b = find(gate, channel);
        if (b == null) {
            if (!takesBatches(gate, channel)) return false;
            if (open == OPEN) flush();
            b = batches[open++];
            b.start(gate, channel, temp);
        }
        b.add(ack, from, end, nack);
        return true;
    }

    private Batch find(GObj gate, GObj channel) {
        for (int i = 0; i < open; i++) {
            Batch b = batches[i];
            if (b.channel == channel && b.gate == gate) return b;
        }
        return null;
    }

    private static boolean takesBatches(GObj gate, GObj channel) {
        if (gate.isDestroyed() || channel.isDestroyed() || !gate.gclass().takesSendBatches()
                || !channel.gclass().takesSendBatches()) {
            return false;
        }
        GObj protocol = channel.bottom();
        return protocol != null && protocol.gclass().takesSendBatches();
    }

    /** Sends every batch gathered, each as one EV_SEND_MESSAGE to its gate. */
    void flush() {
        for (int i = 0; i < open; i++) batches[i].send();
        open = 0;
    }

    /** Forgets the buffers (the relay goes away or hands over); whoever holds one releases it. */
    void clear() {
        flush();
        for (Batch b : batches) b.spare = null;
    }

    private final class Batch {
        GObj gate;
        GObj channel;
        JsonNode temp;
        ByteBuf buf;
        ReusableHeapBuffer spare;
        int[] ranges = new int[32];
        int count;
        int nacks;

        void start(GObj gate, GObj channel, JsonNode temp) {
            this.gate = gate;
            this.channel = channel;
            this.temp = temp;
            count = 0;
            nacks = 0;
            spare = ReusableHeapBuffer.reuse(spare, 2048);
            buf = spare;
        }

        void add(byte[] ack, int from, int end, boolean nack) {
            int at = buf.writerIndex() - buf.readerIndex();
            buf.writeBytes(ack, from, end - from);
            if (2 * count + 2 > ranges.length) ranges = Arrays.copyOf(ranges, ranges.length * 2);
            ranges[2 * count] = at;
            ranges[2 * count + 1] = at + end - from;
            count++;
            if (nack) nacks++;
        }

        void send() {
            ByteBuf b = buf;
            buf = null;
            GObj g = gate;
            GObj ch = channel;
            JsonNode t = temp;
            gate = null;
            channel = null;
            temp = null;
            if (b == null) return;
            // as for an ack alone (Relay.answerUpstream): a connection that went meanwhile gets nothing
            if (g.isDestroyed() || ch.isDestroyed() || !ch.acceptsEvent(Ev.EV_SEND_MESSAGE)) {
                b.release();
                return;
            }
            ObjectNode kw = Kw.withGbuffer(b);
            Kw.putRef(kw, Kw.BATCH, Arrays.copyOf(ranges, 2 * count));
            kw.set(Kw.TEMP, t);
            if (g.send(Ev.EV_SEND_MESSAGE, kw, relay) == 0) counter.sent(count - nacks, nacks);
        }
    }
}
