// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.relay;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.support.SparseSpell;

import java.io.IOException;
import java.util.Arrays;

/**
 * The acks C_RELAY owes its producers for messages an output holds until they are durable, by the token each was
 * sent with ({@link Kw#DURABLE_TOKEN}): the ack's bytes up to its result, the message's {@code __temp__} (the
 * connection to answer on) and the input gate. The output tells the tokens back in rowid order, many per event.
 *
 * <p>Tokens are consecutive, and an entry lives in slot {@code token & mask}: a ring over the tokens in flight,
 * read in the order they were given, with no object per message and no hashing. Two outputs (the queues under one
 * routing gate) tell their tokens apart, so the ring may have holes; when the slot of a new token is still taken,
 * the ring doubles (up to {@link #MAX_CAPACITY}), and shrinks once it has stayed under an eighth full
 * ({@link #trim}). At the maximum the oldest entry is forgotten to make room ({@link #forgotten}): its producer gets
 * no ack and sends again (a duplicate, never a loss); only a token that is never told (an output gone without a
 * word) can stay that long.
 *
 * <p>The messages of a batch ({@link Kw#BATCH}) share one token and one entry, told once per message: the entry
 * counts them down and its ack is owed when the last is told, or at once at the first refusal (a nack; the entry then
 * stays, answered, until every message sent was told, so that those tells are not taken for strangers).
 */
final class PendingAcks {
    static final int MIN_CAPACITY = 1024;
    static final int MAX_CAPACITY = 1 << 20;
    /** Trims in a row that find the ring under an eighth full before it shrinks. */
    static final int SHRINK_AFTER_TRIMS = 16;

    private final int minCapacity;
    private final int maxCapacity;
    /** The entry's token; 0 marks a free slot (tokens start at 1). */
    private long[] tokens;
    private byte[][] acks;
    private JsonNode[] temps;
    private GObj[] gates;
    /** Tells still to come for the entry (its batch's messages not yet told); 1 for a lone message. */
    private int[] remaining;
    private int size;
    private long nextToken = 1;
    private long forgotten;
    /** The next token when a trim last found the entries too spread to halve: no new try until the ring wrapped. */
    private long trimRetryAt;
    private final SparseSpell sparse = new SparseSpell();

    /** What {@link #take} found: valid until the next call. */
    byte[] takenAck;
    JsonNode takenTemp;
    GObj takenGate;

    PendingAcks() {
        this(MIN_CAPACITY, MAX_CAPACITY);
    }

    /** A table between {@code minCapacity} and {@code maxCapacity} entries (powers of two; tests use small ones). */
    PendingAcks(int minCapacity, int maxCapacity) {
        if (Integer.bitCount(minCapacity) != 1 || Integer.bitCount(maxCapacity) != 1 || minCapacity > maxCapacity) {
            throw new IllegalArgumentException("capacities must be powers of two, min <= max");
        }
        this.minCapacity = minCapacity;
        this.maxCapacity = maxCapacity;
        tokens = new long[minCapacity];
        acks = new byte[minCapacity][];
        temps = new JsonNode[minCapacity];
        gates = new GObj[minCapacity];
        remaining = new int[minCapacity];
    }

    /** Keeps an ack owed, and answers the token the message goes with. */
    long add(byte[] ackStart, JsonNode temp, GObj gate) {
        return add(ackStart, temp, gate, 1);
    }

    /** Keeps the one ack owed for {@code messages} messages sent with the token answered (a batch's). */
    long add(byte[] ackStart, JsonNode temp, GObj gate, int messages) {
        if (messages < 1) throw new IllegalArgumentException("a pending ack is for one message or more");
        long token = nextToken++;
        put(token, ackStart, temp, gate, messages);
        return token;
    }

    private void put(long token, byte[] ackStart, JsonNode temp, GObj gate, int messages) {
        int slot = (int) token & (tokens.length - 1);
        while (tokens[slot] != 0) {
            if (tokens.length >= maxCapacity) {
                forgotten++;
                size--;
                break;
            }
            resize(tokens.length * 2);
            slot = (int) token & (tokens.length - 1);
        }
        tokens[slot] = token;
        acks[slot] = ackStart;
        temps[slot] = temp;
        gates[slot] = gate;
        remaining[slot] = messages;
        size++;
    }

    /**
     * Takes the entry of {@code token} into {@link #takenAck}, {@link #takenTemp} and {@link #takenGate}; false when
     * there is none (forgotten, told twice, or not one of this relay's).
     */
    boolean take(long token) {
        int slot = (int) token & (tokens.length - 1);
        if (token <= 0 || tokens[slot] != token) return false;
        takeAnswer(slot);
        free(slot);
        return true;
    }

    /** {@link #tell}: the token is not held here (forgotten, told too often, or not this relay's). */
    static final int UNKNOWN = 0;
    /** {@link #tell}: held, and nothing to answer yet (more of its batch to come, or answered already). */
    static final int WAITING = 1;
    /** {@link #tell}: the ack is owed now, in {@link #takenAck}, {@link #takenTemp} and {@link #takenGate}. */
    static final int ANSWER = 2;

    /**
     * One message of {@code token} was told by the output: {@link #ANSWER} when its ack is owed now (the last of
     * its batch, or the first refused), {@link #WAITING} or {@link #UNKNOWN} otherwise.
     */
    int tell(long token, boolean refused) {
        int slot = (int) token & (tokens.length - 1);
        if (token <= 0 || tokens[slot] != token) return UNKNOWN;
        int left = --remaining[slot];
        boolean answer = acks[slot] != null && (refused || left <= 0);
        if (answer) takeAnswer(slot);
        if (left <= 0) free(slot);
        return answer ? ANSWER : WAITING;
    }

    /**
     * The output refused a message of {@code token}'s batch, and {@code unsent} messages of it will not be sent:
     * true when the nack is owed now (in {@link #takenAck} ...), false when the entry was answered already or is
     * not here. The entry stays until the messages sent before were told.
     */
    boolean refuse(long token, int unsent) {
        int slot = (int) token & (tokens.length - 1);
        if (token <= 0 || tokens[slot] != token) return false;
        remaining[slot] -= unsent;
        boolean answer = acks[slot] != null;
        if (answer) takeAnswer(slot);
        if (remaining[slot] <= 0) free(slot);
        return answer;
    }

    private void takeAnswer(int slot) {
        takenAck = acks[slot];
        takenTemp = temps[slot];
        takenGate = gates[slot];
        acks[slot] = null;
        temps[slot] = null;
        gates[slot] = null;
    }

    private void free(int slot) {
        tokens[slot] = 0;
        acks[slot] = null;
        temps[slot] = null;
        gates[slot] = null;
        remaining[slot] = 0;
        size--;
    }

    /**
     * After a batch of takes: gives memory back once the ring has been under an eighth full at
     * {@value #SHRINK_AFTER_TRIMS} trims in a row ({@link SparseSpell}: the acks owed swing with every burst and
     * commit, and a ring halved at each dip was grown back at the next).
     */
    void trim() {
        if (!sparse.shrinkNow(size, tokens.length, minCapacity, SHRINK_AFTER_TRIMS) || nextToken < trimRetryAt) return;
        int capacity = tokens.length;
        while (capacity > minCapacity && size < capacity / 8 && fits(capacity / 2)) capacity /= 2;
        if (capacity != tokens.length) {
            resize(capacity);
        } else {
            // an old entry still holds a slot a smaller ring would need twice: try again once the ring has wrapped
            trimRetryAt = nextToken + tokens.length;
        }
    }

    /** Whether every entry has a slot of its own in a ring of {@code capacity}. */
    private boolean fits(int capacity) {
        boolean[] taken = new boolean[capacity];
        for (long t : tokens) {
            if (t == 0) continue;
            int slot = (int) t & (capacity - 1);
            if (taken[slot]) return false;
            taken[slot] = true;
        }
        return true;
    }

    /** Moves every entry to a ring of {@code capacity} (doubled again while two entries would share a slot). */
    private void resize(int capacity) {
        while (capacity < maxCapacity && !fits(capacity)) capacity *= 2;
        long[] oldTokens = tokens;
        byte[][] oldAcks = acks;
        JsonNode[] oldTemps = temps;
        GObj[] oldGates = gates;
        int[] oldRemaining = remaining;
        tokens = new long[capacity];
        acks = new byte[capacity][];
        temps = new JsonNode[capacity];
        gates = new GObj[capacity];
        remaining = new int[capacity];
        size = 0;
        // oldest first, so that at the maximum a collision forgets the older entry
        long[] order = oldTokens.clone();
        Arrays.sort(order);
        for (long t : order) {
            if (t == 0) continue;
            int from = (int) t & (oldTokens.length - 1);
            put(t, oldAcks[from], oldTemps[from], oldGates[from], oldRemaining[from]);
        }
    }

    int size() {
        return size;
    }

    int capacity() {
        return tokens.length;
    }

    /** Entries dropped to make room at the maximum capacity, since the relay started. */
    long forgotten() {
        return forgotten;
    }

    /**
     * For the next revision of the relay: the next token, and every entry (token, the ack's bytes, the temp node
     * and a reference to the gate; a batch's entry also its tells to come, and no ack once answered), oldest first. JSON and api types only: the next revision has its own class.
     */
    void exportState(ObjectNode s) {
        s.put("next_token", nextToken);
        s.put("forgotten", forgotten);
        ArrayNode list = s.putArray("pending_acks");
        long[] order = tokens.clone();
        Arrays.sort(order);
        for (long t : order) {
            if (t == 0) continue;
            int slot = (int) t & (tokens.length - 1);
            ObjectNode o = list.addObject();
            o.put("token", t);
            if (acks[slot] != null) o.put("ack", acks[slot]);
            else o.put("answered", true);
            if (remaining[slot] != 1) o.put("remaining", remaining[slot]);
            if (temps[slot] != null) o.set("temp", temps[slot]);
            if (gates[slot] != null) Kw.putRef(o, "gate", gates[slot]);
        }
    }

    /**
     * Takes what {@link #exportState} gave; a state without it (a revision before tokens) has no entry.
     *
     * @throws IllegalArgumentException when an entry has no token or no ack
     */
    void importState(JsonNode s) {
        nextToken = Math.max(nextToken, s.path("next_token").asLong(1));
        forgotten = s.path("forgotten").asLong(0);
        JsonNode list = s.get("pending_acks");
        if (list == null || list.isNull()) return;
        if (!list.isArray()) throw new IllegalArgumentException("pending_acks is not a list");
        for (JsonNode o : list) {
            long t = o.path("token").asLong(0);
            JsonNode ack = o.get("ack");
            boolean answered = o.path("answered").asBoolean(false);
            int messages = o.path("remaining").asInt(1);
            if (t <= 0 || messages < 1 || (!answered && (ack == null || !ack.isBinary()))) {
                throw new IllegalArgumentException("a pending ack without token, tells to come or bytes");
            }
            byte[] bytes = null;
            if (!answered) {
                try {
                    bytes = ack.binaryValue();
                } catch (IOException e) {
                    throw new IllegalArgumentException("a pending ack's bytes cannot be read", e);
                }
            }
            JsonNode temp = o.get("temp");
            put(t, bytes, answered || temp == null || temp.isNull() ? null : temp,
                    answered ? null : Kw.ref(o, "gate", GObj.class), messages);
            nextToken = Math.max(nextToken, t + 1);
        }
    }
}
