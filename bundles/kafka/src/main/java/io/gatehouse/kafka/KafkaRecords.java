// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.kafka;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.QueueMessage;
import io.gatehouse.api.queue.TrQueue;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * What C_KAFKA makes of a message: the record's value (the message's JSON without the queue's {@code __md_trq__}),
 * its key (the text at a path of the message) and the md it acks with. Pure functions, tested alone; the gclass
 * keeps the tables, the actions and the producer.
 */
final class KafkaRecords {
    private KafkaRecords() {}

    /**
     * What goes to Kafka: the value, the key (null: none), and the queue's md when the message came from a queue:
     * the store's own md as its three numbers ({@link #store}, no JSON tree made for the common case), any other md
     * as its tree.
     */
    static final class Outgoing {
        final byte[] value;
        final byte[] key;
        /**
         * rowid, t, generation of the store's md, and a fourth number, 1, when the record came as a queue record
         * ({@link #cameAsRecord}); null when the md had another shape or there is none.
         */
        final long[] store;
        private ObjectNode md;

        Outgoing(byte[] value, byte[] key, ObjectNode md) {
            this.value = value;
            this.key = key;
            this.md = md;
            this.store = null;
        }

        Outgoing(byte[] value, byte[] key, long[] store) {
            this.value = value;
            this.key = key;
            this.store = store;
        }

        /** From a queue (an md to ack with), not a relay's dict. */
        boolean queued() {
            return store != null || md != null;
        }

        /** The md as a tree (made on demand from the store's numbers); null in direct mode. */
        ObjectNode md() {
            if (md == null && store != null) md = storeMdTree(store);
            return md;
        }
    }

    private static final byte[] MD_KEY = ("\"" + Kw.MD_TRQ + "\":").getBytes(StandardCharsets.US_ASCII);

    /**
     * A record as C_QIOGATE sends it. Its store writes the stored JSON with {@code ,"__md_trq__":{...}} appended
     * inside the closing brace: the value is those bytes without it (no parse and no second serialisation of the
     * message), the md is parsed from its own few bytes, and the key is read with a streaming parser that stops at
     * it. Anything else (a queue that serialises another way) takes the general path: parse, remove, write.
     */
    static Outgoing fromQueue(ByteBuf buf, String[] keyPath) throws IOException {
        byte[] b = new byte[buf.readableBytes()];
        buf.getBytes(buf.readerIndex(), b);
        int n = b.length;
        // The store's own md, {"__msg_rowid__":R,"__msg_t__":T,"__msg_gen__":G}, is the last object of the record
        // and holds no brace: found from the last '{' and read byte by byte (the search of the key's bytes from the
        // end was 3 % of the edge's core loop). When it is that md, its key is also the last occurrence of the key,
        // which is what the search answers; any other shape is searched for, and goes to Jackson below.
        long[] store = null;
        int brace = lastIndexOf(b, (byte) '{');
        int at = brace - MD_KEY.length;
        if (at <= 0 || !startsWith(b, at, MD_KEY) || (store = storeMdNumbers(b, brace, n - 1)) == null) {
            at = lastIndexOf(b, MD_KEY);
        }
        if (at > 0 && n >= 2 && b[n - 1] == '}' && (b[at - 1] == ',' || b[at - 1] == '{')) {
            int mdFrom = at + MD_KEY.length;
            if (store == null) store = storeMdNumbers(b, mdFrom, n - 1);
            JsonNode md = null;
            if (store == null) try (JsonParser p = Kw.MAPPER.getFactory().createParser(b, mdFrom, n - 1 - mdFrom)) {
                JsonNode tree = p.nextToken() == JsonToken.START_OBJECT ? Kw.MAPPER.readTree(p) : null;
                // exactly one object up to the closing brace: the key is the last of the message
                if (p.nextToken() == null) md = tree;
            } catch (IOException notLast) {
                // something follows the md: the general path below
            }
            if (store != null || md instanceof ObjectNode) {
                int keep = b[at - 1] == ',' ? at - 1 : at;
                byte[] value = new byte[keep + 1];
                System.arraycopy(b, 0, value, 0, keep);
                value[keep] = '}';
                byte[] key = keyOf(value, keyPath);
                return store != null ? new Outgoing(value, key, store) : new Outgoing(value, key, (ObjectNode) md);
            }
        }
        JsonNode tree = Kw.MAPPER.readTree(b);
        if (!(tree instanceof ObjectNode)) throw new IOException("not a JSON object");
        ObjectNode msg = (ObjectNode) tree;
        JsonNode md = msg.remove(Kw.MD_TRQ);
        return new Outgoing(Kw.MAPPER.writeValueAsBytes(msg), keyText(msg, keyPath),
                md instanceof ObjectNode ? (ObjectNode) md : null);
    }

    /**
     * A record as C_QIOGATE hands it to a gclass that takes queue records: the bytes as stored (the message without
     * {@code __md_trq__}) are the value as they are, and the queue message's numbers the md, so nothing is written
     * to be read back. The array is taken without a copy when the buffer is exactly it (the queue wraps a fresh
     * one).
     */
    static Outgoing fromRecord(ByteBuf buf, QueueMessage msg, String[] keyPath) throws IOException {
        byte[] value;
        int n = buf.readableBytes();
        if (buf.hasArray() && buf.arrayOffset() == 0 && buf.readerIndex() == 0 && buf.array().length == n) {
            value = buf.array();
        } else {
            value = new byte[n];
            buf.getBytes(buf.readerIndex(), value);
        }
        if (n < 2 || value[0] != '{' || value[n - 1] != '}') throw new IOException("not a JSON object");
        return new Outgoing(value, keyOf(value, keyPath), new long[] {msg.rowid(), msg.t(), msg.generation(), 1});
    }

    /**
     * Whether the store numbers {@code store} are of a record handed as a queue record ({@link #fromRecord}: a
     * fourth number, 1), which the gate may then be answered for in a {@code Kw.QUEUE_ACKS}.
     */
    static boolean cameAsRecord(long[] store) {
        return store.length > 3 && store[3] == 1;
    }

    /** A message as a relay sends it to a durable output: a dict; metadata keys and references stay out. */
    static Outgoing fromDict(ObjectNode kw, String[] keyPath) throws IOException {
        ObjectNode msg = Kw.withoutMetadata(kw);
        return new Outgoing(Kw.MAPPER.writeValueAsBytes(msg), keyText(msg, keyPath), (ObjectNode) null);
    }

    /** The key's text (a string as it is, a number or bool as its JSON text), null when absent or not a scalar. */
    static byte[] keyText(JsonNode msg, String[] keyPath) {
        if (keyPath == null) return null;
        JsonNode n = msg;
        for (String k : keyPath) {
            n = n == null || !n.isObject() ? null : n.get(k);
        }
        if (n == null || !n.isValueNode() || n.isNull()) return null;
        return n.asText().getBytes(StandardCharsets.UTF_8);
    }

    /** {@link #keyText} read from JSON bytes with a streaming parser, stopping at the key. */
    static byte[] keyOf(byte[] json, String[] keyPath) throws IOException {
        if (keyPath == null) return null;
        try (JsonParser p = Kw.MAPPER.getFactory().createParser(json)) {
            if (p.nextToken() != JsonToken.START_OBJECT) throw new IOException("not a JSON object");
            int level = 0;
            while (true) {
                JsonToken t = p.nextToken();
                if (t != JsonToken.FIELD_NAME) return null;   // the end of the object looked at: no such key
                String name = p.currentName();
                JsonToken v = p.nextToken();
                if (name.equals(keyPath[level])) {
                    if (level == keyPath.length - 1) {
                        return v.isScalarValue() && v != JsonToken.VALUE_NULL
                                ? p.getText().getBytes(StandardCharsets.UTF_8) : null;
                    }
                    if (v != JsonToken.START_OBJECT) return null;
                    level++;
                } else {
                    p.skipChildren();
                }
            }
        }
    }

    private static final byte[][] MD_FIELDS = {
        ("{\"" + TrQueue.MSG_ROWID + "\":").getBytes(StandardCharsets.US_ASCII),
        (",\"" + TrQueue.MSG_T + "\":").getBytes(StandardCharsets.US_ASCII),
        (",\"" + TrQueue.MSG_GEN + "\":").getBytes(StandardCharsets.US_ASCII)};
    private static final String[] MD_NAMES = {TrQueue.MSG_ROWID, TrQueue.MSG_T, TrQueue.MSG_GEN};

    /**
     * The md exactly as the store writes it, in {@code b[from, to)}: {@code {"__msg_rowid__":R,"__msg_t__":T,
     * "__msg_gen__":G}} with integers of at most 18 digits (a minus sign allowed but for the rowid), as the tree
     * Jackson would make of it; null for anything else (another order, spaces, more keys, ...), which the caller
     * parses.
     */
    static ObjectNode storeMd(byte[] b, int from, int to) {
        long[] v = storeMdNumbers(b, from, to);
        return v == null ? null : storeMdTree(v);
    }

    /** The tree of the store's md from its numbers (rowid, t, generation). */
    static ObjectNode storeMdTree(long[] v) {
        ObjectNode md = Kw.create();
        for (int f = 0; f < 3; f++) md.put(MD_NAMES[f], v[f]);
        return md;
    }

    /** {@link #storeMd} as its three numbers: rowid, t, generation; null for any other shape. */
    static long[] storeMdNumbers(byte[] b, int from, int to) {
        long[] v = new long[3];
        int i = from;
        for (int f = 0; f < 3; f++) {
            byte[] k = MD_FIELDS[f];
            if (to - i < k.length) return null;
            for (int j = 0; j < k.length; j++) {
                if (b[i + j] != k[j]) return null;
            }
            i += k.length;
            boolean neg = f > 0 && i < to && b[i] == '-';
            if (neg) i++;
            int d0 = i;
            long x = 0;
            while (i < to && b[i] >= '0' && b[i] <= '9') x = x * 10 + (b[i++] - '0');
            int digits = i - d0;
            // no leading zero (Jackson refuses one), 1..18 digits: a long as it is
            if (digits == 0 || digits > 18 || (digits > 1 && b[d0] == '0')) return null;
            v[f] = neg ? -x : x;
        }
        if (i != to - 1 || b[i] != '}') return null;
        return v;
    }

    private static int lastIndexOf(byte[] a, byte c) {
        for (int i = a.length - 1; i >= 0; i--) {
            if (a[i] == c) return i;
        }
        return -1;
    }

    private static boolean startsWith(byte[] a, int at, byte[] word) {
        if (at + word.length > a.length) return false;
        for (int j = 0; j < word.length; j++) {
            if (a[at + j] != word[j]) return false;
        }
        return true;
    }

    private static int lastIndexOf(byte[] a, byte[] key) {
        outer:
        for (int i = a.length - key.length; i >= 0; i--) {
            for (int j = 0; j < key.length; j++) {
                if (a[i + j] != key[j]) continue outer;
            }
            return i;
        }
        return -1;
    }
}
