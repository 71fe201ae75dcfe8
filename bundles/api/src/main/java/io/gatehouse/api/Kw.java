// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.POJONode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufOutputStream;
import io.netty.util.ReferenceCountUtil;

import java.io.IOException;
import java.util.Iterator;
import java.util.Map;

/**
 * Helpers for kw, the JSON dict every event carries (a Jackson {@link ObjectNode}).
 *
 * <p>Paths are Yuneta paths: keys separated by a backquote, {@code "__md_trq__`__msg_rowid__"}.
 *
 * <p><b>gbuffer ownership.</b> A binary payload travels under key {@value #GBUFFER} as a Netty {@link ByteBuf}:
 * in a field of the kw made by {@link #withGbuffer}, or held in a {@link POJONode} under that key; read and
 * write it only through the methods here ({@code kw.get("gbuffer")} does not see the field). The kw owns it.
 * An action that receives a kw with a gbuffer either releases it ({@link #release}) or passes the kw (or the
 * buffer) on; the receiver then owns it. Reading the buffer advances its reader index, as Yuneta's
 * gbuffer_get does.
 *
 * <p>Other references (a gobj in {@code __temp__.channel_gobj}) travel the same way and are never serialised.
 * The keys below are the ones more than one bundle reads or writes: a gclass uses the constant, never the text.
 */
public final class Kw {
    private Kw() {}

    // --- Keys that cross bundles (each is documented here, once) ---

    /** The binary payload of a message: a {@link ByteBuf} the kw owns (see the ownership rule above). */
    public static final String GBUFFER = "gbuffer";

    /**
     * Routing data of a message, never stored nor sent on the wire: a C_IOGATE puts the channel a message came from
     * here ({@link #TEMP_CHANNEL}, {@link #TEMP_CHANNEL_GOBJ}), and a reply or ack sent down with the same
     * {@code __temp__} goes out on that channel.
     */
    public static final String TEMP = "__temp__";
    /** In {@link #TEMP}: the name of the channel a message came from (a C_IOGATE child). */
    public static final String TEMP_CHANNEL = "channel";
    /** In {@link #TEMP}: a reference to that channel's gobj (faster and exact when several share a name). */
    public static final String TEMP_CHANNEL_GOBJ = "channel_gobj";

    /** Per-message override of a C_IOGATE's {@code send_type} (0 one, 1 all, 2 round robin). */
    public static final String SEND_TYPE = "__send_type__";

    /**
     * The queue protocol's metadata (Yuneta's): {@code {"__msg_rowid__": N, "__msg_t__": T, ...}} on a message a
     * C_QIOGATE sends; the receiver acks with the same dict and {@value #RESULT} added inside it.
     */
    public static final String MD_TRQ = "__md_trq__";
    /** In an ack's {@link #MD_TRQ} (or at its top level): 0 accepted, negative refused (a nack, sent again later). */
    public static final String RESULT = "result";

    /** The inner event of EV_SEND_IEV / EV_ON_IEV_MESSAGE (an inter-event message), removed as it is delivered. */
    public static final String IEV_EVENT = "__iev_event__";

    /**
     * On a message sent to a gclass that {@link GClassSpec#confirmsDurability() confirms durability}: a dict the
     * sender wants back. Once the message is stored durably the receiver sends {@link Ev#EV_ON_DURABLE} to the
     * sender with this dict as kw. It may hold references (the sender's own routing); it is never stored.
     */
    public static final String DURABLE = "__durable__";

    /**
     * On a message sent to a gclass that {@link GClassSpec#answersDurableTokens() answers durable tokens}: instead
     * of a {@link #DURABLE} dict, a number the sender chose (a long, unique among its messages in flight). Once the
     * message is stored durably the receiver tells the sender with {@link Ev#EV_ON_DURABLE_TOKENS}, together with
     * every other token of that sender the same commit covers: one event per commit instead of one per message,
     * and the sender keeps what it needs in its own compact table. Never stored. A sender that is told the number
     * inside an {@link Ev#EV_ON_DURABLE} dict (a gate that turned it into a dict for an older child) reads it under
     * this same key.
     *
     * @since 2.2
     */
    public static final String DURABLE_TOKEN = "__durable_token__";
    /**
     * In {@link Ev#EV_ON_DURABLE_TOKENS}: a reference to the {@code long[]} of tokens (see {@link #COUNT}).
     *
     * @since 2.2
     */
    public static final String TOKENS = "tokens";
    /**
     * In {@link Ev#EV_ON_DURABLE_TOKENS}: how many of {@link #TOKENS}'s first entries are tokens.
     *
     * @since 2.2
     */
    public static final String COUNT = "count";

    /**
     * On a message sent to a gclass that {@link GClassSpec#takesJsonRecords() takes JSON records}: true when the
     * kw's {@link #GBUFFER} is the record to store, the compact JSON of an object exactly as Jackson writes its
     * dict (no whitespace; strings escaped as Jackson escapes them, no 4-byte UTF-8; integers only; no key twice),
     * with no {@code __x} metadata key at any depth (so no {@link #MD_TRQ}) and no reference. The rest of the kw
     * ({@link #DURABLE}) is as for a dict. A receiver that ignores the mark parses the gbuffer, and stores the same.
     *
     * @since 2.1
     */
    public static final String JSON_RECORD = "__json_record__";

    /**
     * On a {@link #JSON_RECORD} message, beside the record: a reference to an {@code int[]} indexing its top-level
     * members, one int each, in the record's order: where the member's key starts (its opening quote), counted from
     * the record's first byte (the gbuffer's reader index). A record is compact, so the value runs from after the
     * colon that ends the key to the comma before the next member's key, or to the closing brace for the last. Given by the
     * gclass that made the record while it walked the bytes (C_RELAY), so that a gclass reading one top-level field
     * (a routing key, a queue's time key) finds it by comparing names instead of walking the record again. The
     * sender vouches for it as for the record. A receiver that ignores it walks the bytes and finds the same. Put
     * and read with {@link #putRef} and {@link #ref} (a kw made by {@link #withGbuffer} holds it outside its dict).
     *
     * @since 2.7
     */
    public static final String RECORD_FIELDS = "__record_fields__";

    /**
     * On a queued message sent to a gclass that {@link GClassSpec#takesQueueRecords() takes queue records}: a
     * reference to the message's {@link io.gatehouse.api.queue.QueueMessage}, beside a {@link #GBUFFER} holding the
     * record as stored, without {@link #MD_TRQ}. Valid during the send only.
     *
     * @since 2.3
     */
    public static final String QUEUE_MESSAGE = "__queue_message__";

    /**
     * On an EV_ON_MESSAGE from a gclass that {@link GClassSpec#takesQueueRecords() takes queue records} to the
     * queue's gate above it: a reference to a {@code long[]} of fours, {@code rowid, t, generation, result}, each
     * the answer to one record as an ack naming those numbers would be, in one event instead of one ack each. Sent
     * only for records that came with a {@link #QUEUE_MESSAGE}, so the gate that sent them reads it.
     *
     * @since 2.3
     */
    public static final String QUEUE_ACKS = "__queue_acks__";

    /**
     * On an EV_ON_MESSAGE sent up to gclasses that {@link GClassSpec#takesBatches() take batches}: a reference to an
     * {@code int[]} of byte ranges, {@code start, end} pairs counted from the {@link #GBUFFER}'s reader index, each
     * one JSON object: one message per range, sent up in one event. The kw's {@link #MD_TRQ} (a dict) is the
     * batch's: the producer gets one ack echoing it ({@code result} 0 once every message is durable, a nack at the
     * first refusal), or, from a receiver that cannot keep the batch whole, one ack per message whose
     * {@code __md_trq__} is the batch's plus {@value #BATCH_INDEX}, the message's index (0-based). A producer takes
     * both forms.
     *
     * <p>On an EV_SEND_MESSAGE sent down to a gclass that {@link GClassSpec#takesSendBatches() takes send batches}
     * (since 2.5): the same ranges, each one message, to be sent in their order as if each had come alone; the
     * gbuffer has nothing but those messages, its readable bytes starting at the first range. On the EV_TX_DATA a
     * protocol makes of it: the ranges of the frames in the buffer, for the transport's counters.
     *
     * @since 2.4
     */
    public static final String BATCH = "__batch__";

    /**
     * On an EV_ON_MESSAGE sent up to gclasses that {@link GClassSpec#takesMessageBatches() take message batches}: a
     * reference to an {@code int[]} of byte ranges, {@code start, end} pairs counted from the {@link #GBUFFER}'s
     * reader index, each one message that came alone (a frame of its own on the wire, with its own
     * {@code __md_trq__} in its bytes), to be taken in their order as if each had come in an event of its own with
     * the kw's other keys. Unlike a {@link #BATCH}, nothing is answered for the batch: each message is answered
     * alone.
     *
     * @since 2.6
     */
    public static final String MESSAGES = "__messages__";

    /**
     * On a {@link #BATCH} sent up: a reference to an {@code int[][]} with one entry per range, the range's
     * {@link #RECORD_FIELDS} when its bytes are already the record a queue stores ({@link #JSON_RECORD}'s form, as
     * they stand), else null. Given by a producer whose own check of its input walked the bytes (C_PROT_HTTP_SR), so
     * that the receiver hands such a message on as a record without walking it again. The producer vouches for it as
     * for a record. A receiver that ignores it walks each range and finds the same.
     *
     * @since 2.7
     */
    public static final String BATCH_RECORDS = "__batch_records__";

    /** In the {@link #MD_TRQ} of one message of a {@link #BATCH} answered apart: its index in the batch. */
    public static final String BATCH_INDEX = "msg";

    /**
     * On the EV_RX_DATA (or message) that crossed a seeds/001 input threshold: true. Reading has stopped until the
     * consumer credits back with EV_RESUME_INPUT.
     */
    public static final String IS_BLOCKED = "is_blocked";
    /** In EV_RESUME_INPUT: how many messages ({@value #CREDIT_MSGS}) and bytes ({@value #CREDIT_BYTES}) the consumer processed; absent = all. */
    public static final String CREDIT_MSGS = "msgs";
    /** See {@link #CREDIT_MSGS}. */
    public static final String CREDIT_BYTES = "bytes";

    /** In EV_CONNECTED / EV_ON_OPEN / EV_ON_CLOSE: the url of a client link. */
    public static final String URL = "url";
    /** In EV_CONNECTED / EV_ON_OPEN / EV_ON_CLOSE: the peer's ip:port. */
    public static final String PEERNAME = "peername";
    /** In EV_CONNECTED / EV_ON_OPEN / EV_ON_CLOSE: the local ip:port. */
    public static final String SOCKNAME = "sockname";

    /** The shared mapper. Thread-safe. */
    public static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    public static ObjectNode create() {
        return F.objectNode();
    }

    /** A new kw that owns {@code buf}. */
    public static ObjectNode withGbuffer(ByteBuf buf) {
        return new GbufferKw(F, buf);
    }

    /** The kw's gbuffer, still owned by the kw; null if none. */
    public static ByteBuf gbuffer(ObjectNode kw) {
        if (kw == null) return null;
        if (kw instanceof GbufferKw) {
            ByteBuf b = ((GbufferKw) kw).gbuffer;
            if (b != null) return b;
        }
        JsonNode n = kw.get(GBUFFER);
        if (n instanceof POJONode && ((POJONode) n).getPojo() instanceof ByteBuf) {
            return (ByteBuf) ((POJONode) n).getPojo();
        }
        return null;
    }

    /** Removes the gbuffer from the kw and hands its ownership to the caller; null if none. */
    public static ByteBuf takeGbuffer(ObjectNode kw) {
        if (kw instanceof GbufferKw) {
            GbufferKw g = (GbufferKw) kw;
            ByteBuf b = g.gbuffer;
            if (b != null) {
                g.gbuffer = null;
                return b;
            }
        }
        ByteBuf b = gbuffer(kw);
        if (b != null) kw.remove(GBUFFER);
        return b;
    }

    /** Puts a buffer into the kw; the kw now owns it (a previous gbuffer is released). */
    public static ObjectNode setGbuffer(ObjectNode kw, ByteBuf buf) {
        ByteBuf old = takeGbuffer(kw);
        if (old != null && old != buf) ReferenceCountUtil.safeRelease(old);
        if (kw instanceof GbufferKw) {
            ((GbufferKw) kw).gbuffer = buf;
        } else {
            kw.set(GBUFFER, new POJONode(buf));
        }
        return kw;
    }

    /**
     * The messages a kw holds: the ranges of its {@link #BATCH} or of its {@link #MESSAGES}, else 1 (for the counters
     * of the gobjs it passes).
     */
    public static int messages(JsonNode kw) {
        int[] batch = ref(kw, BATCH, int[].class);
        if (batch == null) batch = ref(kw, MESSAGES, int[].class);
        return batch == null ? 1 : batch.length / 2;
    }

    /** Releases what the kw owns (its gbuffer). Safe on null and on a kw without buffer. */
    public static void release(ObjectNode kw) {
        ByteBuf b = takeGbuffer(kw);
        if (b != null && b.refCnt() > 0) ReferenceCountUtil.safeRelease(b);
    }

    /** Stores an object reference (not serialised). */
    public static void putRef(ObjectNode kw, String key, Object ref) {
        if (kw instanceof GbufferKw) {
            if (GBUFFER.equals(key) && ref instanceof ByteBuf) {
                kw.remove(GBUFFER);
                ((GbufferKw) kw).gbuffer = (ByteBuf) ref;
                return;
            }
            if (RECORD_FIELDS.equals(key) && ref instanceof int[]) {
                // no dict entry to remove first: ref reads the field before the dict
                ((GbufferKw) kw).recordFields = (int[]) ref;
                return;
            }
        }
        kw.set(key, new POJONode(ref));
    }

    /** Reads an object reference of the given type; null if absent or of another type. */
    public static <T> T ref(JsonNode kw, String path, Class<T> type) {
        if (kw instanceof GbufferKw) {
            GbufferKw g = (GbufferKw) kw;
            if (g.gbuffer != null && GBUFFER.equals(path)) return type.isInstance(g.gbuffer) ? type.cast(g.gbuffer) : null;
            if (g.recordFields != null && RECORD_FIELDS.equals(path)) {
                return type.isInstance(g.recordFields) ? type.cast(g.recordFields) : null;
            }
        }
        JsonNode n = get(kw, path);
        if (n instanceof POJONode && type.isInstance(((POJONode) n).getPojo())) {
            return type.cast(((POJONode) n).getPojo());
        }
        return null;
    }

    // --- Paths ---

    /**
     * Paths seen without a backquote, each in the slot of its hash. A path is nearly always a constant, and looking
     * for a backquote in it at every read was 1.7 % of the durable forwarding loop. A slot holds one path, and two
     * threads writing one slot at once lose no more than a hit. Bounded: 512 references.
     */
    private static final String[] PLAIN_PATHS = new String[512];

    private static boolean plainPath(String path) {
        int slot = path.hashCode() & (PLAIN_PATHS.length - 1);
        if (PLAIN_PATHS[slot] == path) return true;
        if (path.indexOf('`') >= 0) return false;
        PLAIN_PATHS[slot] = path;
        return true;
    }

    /** The node at a backquote path, or null. */
    public static JsonNode get(JsonNode kw, String path) {
        if (kw == null || path == null) return null;
        if (plainPath(path)) return kw.isObject() ? kw.get(path) : null;
        JsonNode cur = kw;
        int start = 0;
        while (true) {
            int i = path.indexOf('`', start);
            String key = i < 0 ? path.substring(start) : path.substring(start, i);
            if (!cur.isObject()) return null;
            cur = cur.get(key);
            if (cur == null) return null;
            if (i < 0) return cur;
            start = i + 1;
        }
    }

    public static String getString(JsonNode kw, String path, String def) {
        JsonNode n = get(kw, path);
        return n != null && n.isTextual() ? n.asText() : def;
    }

    public static long getLong(JsonNode kw, String path, long def) {
        JsonNode n = get(kw, path);
        if (n == null || n.isNull()) return def;
        if (n.isNumber()) return n.asLong();
        if (n.isBoolean()) return n.asBoolean() ? 1 : 0;
        if (n.isTextual()) {
            try {
                return Long.parseLong(n.asText().trim());
            } catch (NumberFormatException e) {
                return def;
            }
        }
        return def;
    }

    public static boolean getBool(JsonNode kw, String path, boolean def) {
        JsonNode n = get(kw, path);
        if (n == null || n.isNull()) return def;
        if (n.isBoolean()) return n.asBoolean();
        if (n.isNumber()) return n.asLong() != 0;
        if (n.isTextual()) {
            String s = n.asText().trim();
            if (s.equalsIgnoreCase("true") || s.equals("1")) return true;
            if (s.equalsIgnoreCase("false") || s.equals("0") || s.isEmpty()) return false;
        }
        return def;
    }

    public static ObjectNode getDict(JsonNode kw, String path) {
        JsonNode n = get(kw, path);
        return n instanceof ObjectNode ? (ObjectNode) n : null;
    }

    /** Sets the value at a backquote path, creating intermediate dicts. */
    public static void set(ObjectNode kw, String path, JsonNode value) {
        ObjectNode cur = kw;
        int start = 0;
        while (true) {
            int i = path.indexOf('`', start);
            if (i < 0) {
                cur.set(path.substring(start), value);
                return;
            }
            String key = path.substring(start, i);
            JsonNode next = cur.get(key);
            if (!(next instanceof ObjectNode)) {
                next = cur.putObject(key);
            }
            cur = (ObjectNode) next;
            start = i + 1;
        }
    }

    /** Removes the value at a backquote path; answers it or null. */
    public static JsonNode delete(ObjectNode kw, String path) {
        int i = path.lastIndexOf('`');
        if (i < 0) return kw.remove(path);
        JsonNode parent = get(kw, path.substring(0, i));
        return parent instanceof ObjectNode ? ((ObjectNode) parent).remove(path.substring(i + 1)) : null;
    }

    // --- Serialisation ---

    /**
     * A copy of the kw for another receiver: JSON is deep-copied, references (gbuffer, gobjs) are shared.
     * The caller decides who owns a shared gbuffer (retain it once per extra receiver).
     */
    public static ObjectNode copy(ObjectNode kw) {
        if (kw == null) return null;
        ObjectNode c = kw.deepCopy();
        if (kw instanceof GbufferKw) {
            GbufferKw g = (GbufferKw) kw;
            if (g.gbuffer != null) c.set(GBUFFER, new POJONode(g.gbuffer));
            if (g.recordFields != null) c.set(RECORD_FIELDS, new POJONode(g.recordFields));
        }
        return c;
    }

    /** True when the node holds a reference (a POJONode), which never goes on the wire. */
    public static boolean isRef(JsonNode n) {
        return n instanceof POJONode;
    }

    /** A deep copy without references and without keys that start with exactly two underscores, recursively. */
    public static ObjectNode withoutMetadata(ObjectNode kw) {
        ObjectNode out = F.objectNode();
        Iterator<Map.Entry<String, JsonNode>> it = kw.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            String k = e.getKey();
            JsonNode v = e.getValue();
            if (isRef(v) || isMetadataKey(k)) continue;
            out.set(k, v instanceof ObjectNode ? withoutMetadata((ObjectNode) v) : v.deepCopy());
        }
        return out;
    }

    /** Yuneta's metadata keys: {@code __x...} but not {@code ___x...}. */
    public static boolean isMetadataKey(String k) {
        return k.length() > 2 && k.charAt(0) == '_' && k.charAt(1) == '_' && k.charAt(2) != '_';
    }

    /** A deep copy without references (gbuffer, gobjs); JSON metadata keys are kept. */
    public static ObjectNode withoutRefs(ObjectNode kw) {
        ObjectNode out = F.objectNode();
        Iterator<Map.Entry<String, JsonNode>> it = kw.fields();
        while (it.hasNext()) {
            Map.Entry<String, JsonNode> e = it.next();
            JsonNode v = e.getValue();
            if (isRef(v)) continue;
            out.set(e.getKey(), v instanceof ObjectNode ? withoutRefs((ObjectNode) v) : v.deepCopy());
        }
        return out;
    }

    /** Compact JSON text; references are left out. */
    public static String toJson(JsonNode kw) {
        try {
            return MAPPER.writeValueAsString(kw instanceof ObjectNode ? withoutRefsIfAny((ObjectNode) kw) : kw);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Writes compact JSON of the kw into {@code out} (references left out). */
    public static void writeJson(JsonNode kw, ByteBuf out) {
        try (ByteBufOutputStream os = new ByteBufOutputStream(out);
             JsonGenerator g = MAPPER.getFactory().createGenerator((java.io.OutputStream) os)) {
            MAPPER.writeTree(g, kw instanceof ObjectNode ? withoutRefsIfAny((ObjectNode) kw) : kw);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Parses JSON text into a dict. */
    public static ObjectNode parse(String json) throws IOException {
        JsonNode n = MAPPER.readTree(json);
        if (!(n instanceof ObjectNode)) throw new IOException("not a JSON object");
        return (ObjectNode) n;
    }

    /** Parses the readable bytes of a buffer (the buffer is not consumed nor released). */
    public static ObjectNode parse(ByteBuf buf) throws IOException {
        JsonNode n;
        if (buf.hasArray()) {
            n = MAPPER.readTree(buf.array(), buf.arrayOffset() + buf.readerIndex(), buf.readableBytes());
        } else {
            byte[] b = new byte[buf.readableBytes()];
            buf.getBytes(buf.readerIndex(), b);
            n = MAPPER.readTree(b);
        }
        if (!(n instanceof ObjectNode)) throw new IOException("not a JSON object");
        return (ObjectNode) n;
    }

    private static ObjectNode withoutRefsIfAny(ObjectNode kw) {
        return hasRefs(kw) ? withoutRefs(kw) : kw;
    }

    private static boolean hasRefs(JsonNode n) {
        if (n instanceof POJONode) return true;
        if (n instanceof ObjectNode) {
            Iterator<JsonNode> it = n.elements();
            while (it.hasNext()) {
                if (hasRefs(it.next())) return true;
            }
        }
        return false;
    }
}
