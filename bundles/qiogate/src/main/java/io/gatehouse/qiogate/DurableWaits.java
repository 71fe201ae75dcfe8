// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.support.Glog;
import io.gatehouse.support.SparseSpell;

import java.util.Arrays;

/**
 * The senders waiting to hear that their message is durable, in append order. When the queue says a rowid is
 * durable, every sender waiting for that rowid or an older one is told, from the gate: a sender that gave a dict
 * ({@link Kw#DURABLE}) gets {@link Ev#EV_ON_DURABLE} with it, one per message; a sender that gave a token
 * ({@link Kw#DURABLE_TOKEN}) gets one {@link Ev#EV_ON_DURABLE_TOKENS} per drain with all of its tokens the drain
 * covers, in append order. A sender that went away in the meantime is skipped.
 *
 * <p>The waits are a ring of parallel arrays (no object per wait): a group commit covers thousands of them, read
 * in order, and what the core loop reads then is contiguous. The ring doubles when full and halves after
 * {@value #SHRINK_AFTER_DRAINS} drains in a row have left it under an eighth full ({@link SparseSpell}), so it
 * follows what is appended but not yet durable (the commit period's worth), not the traffic: a steady flow that
 * fills it and drains it at every commit keeps it, rather than halving and regrowing it at every commit.
 */
final class DurableWaits {
    static final int MIN_CAPACITY = 64;
    /** Drains in a row that leave the ring under an eighth full before it halves. */
    static final int SHRINK_AFTER_DRAINS = 16;

    private final GObj gate;
    private long[] generations = new long[MIN_CAPACITY];
    private long[] rowids = new long[MIN_CAPACITY];
    private long[] tokens = new long[MIN_CAPACITY];
    private GObj[] senders = new GObj[MIN_CAPACITY];
    /** The dict of a wait that has one; null for a token's (any long is a token: the dict says which it is). */
    private ObjectNode[] dicts = new ObjectNode[MIN_CAPACITY];
    private int head;
    private int size;
    private final SparseSpell sparse = new SparseSpell();

    /** One drain's tokens per sender (scratch, reused; a queue has a sender or two: a linear search). */
    private GObj[] batchSenders = new GObj[2];
    private long[][] batchTokens = new long[2][];
    private int[] batchCounts = new int[2];
    private int batches;
    /** One drain's tokens that will never be durable (another generation, a closed queue), told with a nack. */
    private long[] staleTokens = new long[0];
    private GObj[] staleSenders = new GObj[0];
    private int staleCount;

    DurableWaits(GObj gate) {
        this.gate = gate;
    }

    /** {@code sender} waits for the record {@code rowid} of {@code generation}, and gets {@code durable} back. */
    void add(long generation, long rowid, GObj sender, ObjectNode durable) {
        put(generation, rowid, sender, durable, 0);
    }

    /** {@code sender} waits for the record {@code rowid} of {@code generation}, and gets {@code token} back. */
    void addToken(long generation, long rowid, GObj sender, long token) {
        put(generation, rowid, sender, null, token);
    }

    private void put(long generation, long rowid, GObj sender, ObjectNode durable, long token) {
        if (size == rowids.length) resize(rowids.length * 2);
        int i = (head + size) & (rowids.length - 1);
        generations[i] = generation;
        rowids[i] = rowid;
        senders[i] = sender;
        dicts[i] = durable;
        tokens[i] = token;
        size++;
    }

    boolean isEmpty() {
        return size == 0;
    }

    int size() {
        return size;
    }

    /** The ring's length (for the tests of its bound). */
    int capacity() {
        return rowids.length;
    }

    /**
     * The queue of {@code generation} is durable up to {@code durableRowid}: tells every sender whose record is
     * covered, oldest first, in one pass (one group commit: one call, however many records it covers; a sender's
     * action that fails is its own, core says it, and the waits after it are told). Waits of an older generation
     * cannot be confirmed any more (the topic they were written to was backed up): dicts are dropped, tokens told
     * with a negative result (their sender nacks), and both said once with their count. Waits of a newer
     * generation (generations only grow) are not covered by this mark: they wait.
     */
    void drain(long generation, long durableRowid) {
        int stale = 0;
        int mask = rowids.length - 1;
        while (size > 0) {
            int i = head;
            long g = generations[i];
            if (g > generation || (g == generation && rowids[i] > durableRowid)) break;
            GObj sender = senders[i];
            ObjectNode dict = dicts[i];
            long token = tokens[i];
            senders[i] = null;
            dicts[i] = null;
            head = (head + 1) & mask;
            size--;
            if (g != generation) {
                stale++;
                if (dict == null) collect(sender, token, true);
            } else if (dict == null) {
                collect(sender, token, false);
            } else if (!sender.isDestroyed()) {
                sender.send(Ev.EV_ON_DURABLE, dict, gate);
            }
        }
        int staleTold = staleCount;
        tellBatches();
        if (stale > 0) {
            Glog.warn(gate, "Durability waits of another queue generation dropped: their senders are not told",
                    "count", stale, "generation", generation, "tokens_nacked", staleTold);
        }
        if (sparse.shrinkNow(size, rowids.length, MIN_CAPACITY, SHRINK_AFTER_DRAINS)) resize(rowids.length / 2);
    }

    private void collect(GObj sender, long token, boolean stale) {
        if (stale) {
            if (staleCount == staleTokens.length) {
                int n = Math.max(16, staleCount * 2);
                staleTokens = Arrays.copyOf(staleTokens, n);
                staleSenders = Arrays.copyOf(staleSenders, n);
            }
            staleTokens[staleCount] = token;
            staleSenders[staleCount++] = sender;
            return;
        }
        int b = 0;
        while (b < batches && batchSenders[b] != sender) b++;
        if (b == batches) {
            if (b == batchSenders.length) {
                batchSenders = Arrays.copyOf(batchSenders, b * 2);
                batchTokens = Arrays.copyOf(batchTokens, b * 2);
                batchCounts = Arrays.copyOf(batchCounts, b * 2);
            }
            batchSenders[b] = sender;
            batchTokens[b] = new long[Math.max(16, Math.min(size + 1, 1 << 16))];
            batchCounts[b] = 0;
            batches++;
        }
        long[] t = batchTokens[b];
        if (batchCounts[b] == t.length) batchTokens[b] = t = Arrays.copyOf(t, t.length * 2);
        t[batchCounts[b]++] = token;
    }

    /**
     * Each sender's tokens in one event; the arrays are the senders' (a new one per drain), so a sender may keep
     * them. Stale tokens first, each sender's with result -1.
     */
    private void tellBatches() {
        if (staleCount > 0) {
            for (int s = 0; s < staleCount; s++) {
                GObj sender = staleSenders[s];
                if (sender == null) continue;
                // this sender's stale tokens, in order, in one event
                long[] mine = new long[staleCount - s];
                int n = 0;
                for (int k = s; k < staleCount; k++) {
                    if (staleSenders[k] == sender) {
                        mine[n++] = staleTokens[k];
                        staleSenders[k] = null;
                    }
                }
                tell(sender, mine, n, -1);
            }
            staleCount = 0;
        }
        for (int b = 0; b < batches; b++) {
            tell(batchSenders[b], batchTokens[b], batchCounts[b], 0);
            batchSenders[b] = null;
            batchTokens[b] = null;
        }
        batches = 0;
    }

    private void tell(GObj sender, long[] t, int count, int result) {
        if (count == 0 || sender.isDestroyed()) return;
        ObjectNode kw = Kw.create();
        Kw.putRef(kw, Kw.TOKENS, t);
        kw.put(Kw.COUNT, count);
        kw.put(Kw.RESULT, result);
        sender.send(Ev.EV_ON_DURABLE_TOKENS, kw, gate);
    }

    private void resize(int capacity) {
        int mask = rowids.length - 1;
        long[] g = new long[capacity];
        long[] r = new long[capacity];
        long[] t = new long[capacity];
        GObj[] s = new GObj[capacity];
        ObjectNode[] d = new ObjectNode[capacity];
        for (int k = 0; k < size; k++) {
            int i = (head + k) & mask;
            g[k] = generations[i];
            r[k] = rowids[i];
            t[k] = tokens[i];
            s[k] = senders[i];
            d[k] = dicts[i];
        }
        generations = g;
        rowids = r;
        tokens = t;
        senders = s;
        dicts = d;
        head = 0;
    }

    /**
     * The waits, oldest first, for the next revision of the gate: generation and rowid, a reference to the sender,
     * and a reference to the dict it sent (which may hold references of its own, e.g. the relay's input gate) or
     * its token.
     */
    ArrayNode exportState() {
        ArrayNode out = JsonNodeFactory.instance.arrayNode();
        int mask = rowids.length - 1;
        for (int k = 0; k < size; k++) {
            int i = (head + k) & mask;
            ObjectNode o = out.addObject();
            o.put("generation", generations[i]);
            o.put("rowid", rowids[i]);
            Kw.putRef(o, "sender", senders[i]);
            if (dicts[i] != null) {
                Kw.putRef(o, "durable", dicts[i]);
            } else {
                o.put("token", tokens[i]);
            }
        }
        return out;
    }

    /**
     * Adds the waits {@link #exportState} gave, after those already here (none, for a behaviour just made).
     *
     * @throws IllegalArgumentException when {@code state} is not such a list
     */
    void importState(JsonNode state) {
        if (state == null || state.isNull()) return;
        if (!state.isArray()) throw new IllegalArgumentException("not a list of durability waits");
        for (JsonNode o : state) {
            GObj sender = Kw.ref(o, "sender", GObj.class);
            ObjectNode durable = Kw.ref(o, "durable", ObjectNode.class);
            JsonNode token = o.get("token");
            if (sender == null || (durable == null && (token == null || !token.isIntegralNumber()))) {
                throw new IllegalArgumentException("a durability wait without sender, dict or token");
            }
            if (durable != null) {
                add(o.path("generation").asLong(), o.path("rowid").asLong(), sender, durable);
            } else {
                addToken(o.path("generation").asLong(), o.path("rowid").asLong(), sender, token.asLong());
            }
        }
    }

    /** The highest rowid a list of {@link #exportState} waits for; 0 for none. */
    static long highestRowid(JsonNode state) {
        long h = 0;
        if (state != null) for (JsonNode o : state) h = Math.max(h, o.path("rowid").asLong());
        return h;
    }

    /**
     * The queue closed before these waits were known durable: senders of dicts are not told (their producers are
     * not acked and send again), senders of tokens get them back with a negative result, so that they nack their
     * producers at once and forget the tokens. Answers how many waits there were.
     */
    int abandon() {
        int mask = rowids.length - 1;
        for (int k = 0; k < size; k++) {
            int i = (head + k) & mask;
            if (dicts[i] == null) collect(senders[i], tokens[i], true);
        }
        int n = clear();
        tellBatches();
        return n;
    }

    /** Forgets every wait, telling nobody (they were handed to the next revision); answers how many there were. */
    int clear() {
        int n = size;
        Arrays.fill(senders, null);
        Arrays.fill(dicts, null);
        head = 0;
        size = 0;
        sparse.reset();
        if (rowids.length > MIN_CAPACITY) resize(MIN_CAPACITY);
        return n;
    }
}
