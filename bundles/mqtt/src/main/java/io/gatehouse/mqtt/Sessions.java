// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Base64;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The MQTT sessions of one yuno: which client id is connected where (for takeover), and, per session, the QoS 2
 * packet ids the gateway has taken and not yet seen released (PUBREL). Those ids are what stops a resent QoS 2
 * PUBLISH from being queued twice, across reconnects and across a restart of the gateway.
 *
 * <p>Bounded: at most {@code maxSessions} sessions (expired ones go first, then the one disconnected longest
 * ago) and, per session, as many ids as the gclass lets a client have in flight (it checks before adding).
 *
 * <p>Persisted in {@code <data>/mqtt/sessions.log}, an append-only log of one line per change, written to the
 * page cache as the change happens (so it survives a kill -9 of the process; an A or D line waits for the next
 * line, see {@link #held}) and compacted to the live state
 * (temp file, fsync, rename) when it grows past four times that state. Only persistent sessions (clean session 0,
 * or a session expiry interval above 0) are logged. Lines ({@code C} = the client id in URL-safe base64):
 * <pre>
 *   S C expiry_s   a persistent session (expiry interval in seconds; -1 = never)
 *   E C epoch_ms   the session's client disconnected at that time (its expiry counts from there)
 *   I C id P       QoS 2 id about to be handed to the queues, which stood at positions P (the queue factory's
 *                  {@code positions}): if no A, D or R follows, a kill came while the message went up, and
 *                  whether the queue took it is read in the queues after the restart
 *   A C id         QoS 2 id taken: handed to the queue, durability not confirmed yet
 *   D C id         QoS 2 id durable: PUBREC sent
 *   R C id         QoS 2 id released (PUBREL) or refused, or its I not followed by the queue taking it
 *   X C            session removed
 * </pre>
 * One store per data directory (one yuno per data directory, as for persistent attributes), shared by every
 * C_PROT_MQTT gobj of the yuno, used on its core thread only; the reference count closes it with the last gobj.
 *
 * <p>A live upgrade of the bundle hands the store over whole ({@link #handOver}, {@link #adopt}): the new
 * revision's class cannot take this object, so it gets the sessions as JSON (their owners' gobjs by reference) and
 * opens the log again where this store stopped writing.
 */
final class Sessions {

    /** A QoS 2 id handed to the queue whose durability this process has not seen. */
    static final byte RECEIVED = 1;
    /** A QoS 2 id whose message is durable and whose PUBREC was sent. */
    static final byte DURABLE = 2;

    /** One client id's session. Plain fields: what a live handover would carry. */
    static final class Session {
        /** Names the session in a live upgrade's state (unique within the store, and kept across upgrades). */
        final long uid;
        final String clientId;
        final String key;
        boolean persistent;
        /** Seconds the session outlives its connection; -1 = never expires. */
        long expiryS;
        /** When its client disconnected (epoch ms); -1 while connected. */
        long disconnectedAt = -1;
        /** The gobj serving it now, or null. */
        GObj owner;
        /** The connection epoch of {@link #owner} when it took the session. */
        long ownerEpoch;
        final Map<Integer, Byte> qos2 = new HashMap<>();
        /**
         * RECEIVED ids taken by a connection that closed and whose ack may still come (the gobj awaits it, see
         * ProtMqtt "after the close"). A RECEIVED id not here is an orphan: its ack cannot come any more.
         */
        final java.util.Set<Integer> unconfirmed = new java.util.HashSet<>();
        /** Ids of {@link #unconfirmed} resent on the session's connection: answered when their ack comes. */
        final java.util.Set<Integer> waiting = new java.util.HashSet<>();
        /**
         * QoS 2 ids being handed to the queues, with the queues' positions just before: one while its message goes
         * up, and after a restart the ones a kill cut there (their I line has nothing after it). Bounded as
         * {@link #qos2} is: an id leaves when the queue took it, it was refused, or its resend was resolved.
         */
        final Map<Integer, String> intents = new HashMap<>();
        /** Taken out of the store: changes to it are not logged any more. */
        boolean removed;

        Session(long uid, String clientId) {
            this.uid = uid;
            this.clientId = clientId;
            this.key = Base64.getUrlEncoder().withoutPadding().encodeToString(clientId.getBytes(StandardCharsets.UTF_8));
        }

        boolean expired(long nowMs) {
            return owner == null && expiryS >= 0 && disconnectedAt >= 0 && nowMs - disconnectedAt >= expiryS * 1000;
        }
    }

    private static final Map<Object, Sessions> OPEN = new HashMap<>();

    private final Object id;
    private final Path file;
    private int refs;
    /** Access order: the eldest is the one used longest ago. */
    private final LinkedHashMap<String, Session> sessions = new LinkedHashMap<>(16, 0.75f, true);
    private FileChannel log;
    private long logLines;
    private String lastError;
    private Consumer<String> warn = w -> { };
    /**
     * Lines not written yet: an A or D line waits here for the next line that must reach the file at once (an I
     * before its message goes up, an R before its PUBCOMP, or any other), and goes with it in one write. Losing it
     * to a kill loses nothing: the id's I line is in the file, and its resend looks in the queue. A direct buffer, so
     * that a write copies nothing more.
     */
    private final ByteBuffer held = ByteBuffer.allocateDirect(HELD_MAX);
    private static final int HELD_MAX = 64 << 10;
    private long nextUid = 1;
    /** Once handed over to another revision: the state it was given (every later {@link #handOver} answers it). */
    private ObjectNode handedOver;
    /** Sessions already in {@link #handedOver}, by uid. */
    private java.util.Set<Long> inHandover;
    /** The state this store was made from in a live upgrade, and its sessions by uid (to resolve the gobjs' ones). */
    private ObjectNode adoptedFrom;
    private Map<Long, Session> adoptedByUid = Map.of();

    private Sessions(Object id, Path file) {
        this.id = id;
        this.file = file;
    }

    /**
     * The store of {@code dataDir} (null: memory only, keyed by {@code owner}), opened and loaded by its first
     * user. {@code warn} hears what could not be read or written.
     */
    static Sessions acquire(Path dataDir, Object owner, long nowMs, Consumer<String> warn) {
        synchronized (OPEN) {
            Object id = dataDir == null ? owner : dataDir.toAbsolutePath().normalize();
            Sessions s = OPEN.get(id);
            if (s == null) {
                s = new Sessions(id, dataDir == null ? null : dataDir.resolve("mqtt").resolve("sessions.log"));
                s.warn = warn;
                s.load(nowMs, warn);
                OPEN.put(id, s);
            }
            s.refs++;
            return s;
        }
    }

    /** Gives the store back; the last user closes it (the log is fsynced then). */
    void release() {
        synchronized (OPEN) {
            if (--refs > 0) return;
            if (OPEN.get(id) == this) OPEN.remove(id);
        }
        if (log != null) {
            try {
                writeHeld();
                log.force(false);
                log.close();
            } catch (IOException ignored) {
                // closing: nothing more to do with it
            }
            log = null;
        }
    }

    /** The session of a client id, or null (an expired one is removed and answers null). */
    Session get(String clientId, long nowMs) {
        Session s = sessions.get(clientId);
        if (s != null && s.expired(nowMs)) {
            remove(s);
            return null;
        }
        return s;
    }

    /**
     * A new session for {@code clientId}, making room within {@code maxSessions} first: expired sessions go,
     * then the session disconnected longest ago. Answers null when every session is connected (the store is full).
     */
    Session create(String clientId, boolean persistent, long expiryS, long maxSessions, long nowMs) {
        if (maxSessions > 0 && sessions.size() >= maxSessions) {
            sweep(nowMs);
            Iterator<Session> it = sessions.values().iterator();
            while (sessions.size() >= maxSessions && it.hasNext()) {
                Session old = it.next();
                if (old.owner != null || !old.unconfirmed.isEmpty()) continue;
                it.remove();
                logX(old);
                old.removed = true;
            }
            if (sessions.size() >= maxSessions) return null;
        }
        Session s = new Session(nextUid++, clientId);
        s.persistent = persistent;
        s.expiryS = expiryS;
        sessions.put(clientId, s);
        if (persistent) append('S', s.key, expiryS);
        return s;
    }

    /** Changes whether a session outlives its connection (v5 DISCONNECT may change the expiry). */
    void setExpiry(Session s, boolean persistent, long expiryS) {
        boolean was = s.persistent;
        boolean changed = s.expiryS != expiryS;
        // the state first: a compaction that one of the lines below sets off writes it
        s.persistent = persistent;
        s.expiryS = expiryS;
        if (was && !persistent) {
            append('X', s.key, Long.MIN_VALUE);
        } else if (persistent && (!was || changed)) {
            append('S', s.key, expiryS);
            for (Map.Entry<Integer, Byte> e : s.qos2.entrySet()) {
                if (!was) append(e.getValue() == DURABLE ? 'D' : 'A', s.key, e.getKey());
            }
        }
    }

    /** The session's client went away: a persistent session stays (and starts expiring), another one goes. */
    void disconnected(Session s, long nowMs) {
        s.owner = null;
        if (!s.persistent || s.expiryS == 0) {
            remove(s);
            return;
        }
        s.disconnectedAt = nowMs;
        append('E', s.key, nowMs);
    }

    void remove(Session s) {
        if (sessions.get(s.clientId) == s) sessions.remove(s.clientId);
        if (s.persistent && !s.removed) logX(s);
        s.removed = true;
    }

    /** Its line waits for the next one that is written at once (see {@link #held}). */
    void putQos2(Session s, int packetId, byte state) {
        Byte old = s.qos2.put(packetId, state);
        boolean intended = s.intents.remove(packetId) != null;
        if (s.persistent && !s.removed && (old == null || old != state || intended)) {
            append(state == DURABLE ? 'D' : 'A', s.key, packetId, null, false);
        }
    }

    void releaseQos2(Session s, int packetId) {
        s.waiting.remove(packetId);
        boolean intended = s.intents.remove(packetId) != null;
        if ((s.qos2.remove(packetId) != null || intended) && s.persistent && !s.removed) append('R', s.key, packetId);
    }

    /**
     * Notes, before a QoS 2 message goes up, where the queues stand ({@code positions}, the queue factory's): a
     * kill before {@link #putQos2} or {@link #releaseQos2} leaves the note, and the id's resend after the restart
     * looks in the rows after those positions. Nothing for a session that is not logged, or without positions.
     */
    void intend(Session s, int packetId, String positions) {
        if (!s.persistent || s.removed || !oneWord(positions)) return;
        s.intents.put(packetId, positions);
        append('I', s.key, packetId, positions, true);
    }

    /** Printable ASCII without a space: what a log line's last field can hold. */
    private static boolean oneWord(String text) {
        if (text == null || text.isEmpty()) return false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c <= ' ' || c >= 127) return false;
        }
        return true;
    }

    /** The note of {@link #intend} is no longer needed (the message did not reach the queue): dropped. */
    void dropIntent(Session s, int packetId) {
        if (s.intents.remove(packetId) != null && s.persistent && !s.removed) append('R', s.key, packetId);
    }

    int size() {
        return sessions.size();
    }

    /** Sum of the QoS 2 ids held by every session. */
    long qos2Ids() {
        long n = 0;
        for (Session s : sessions.values()) n += s.qos2.size();
        return n;
    }

    /** The last I/O error, or null. */
    String lastError() {
        return lastError;
    }

    // --- Live upgrade ---

    /**
     * The whole store for another revision of the gclass, taken by the first gobj that exports and answered again to
     * every other one (they all get the same node, all exports come before any import): every session in the
     * store's order of use, its QoS 2 ids with their state, the ids still unconfirmed and the ones a resend waits
     * for, its owner gobj by reference; the log's line count and the next uid. From then on this store is no longer
     * the yuno's: it leaves the registry and closes its log (what it wrote is in the page cache; the new revision's
     * store appends to the same file), and whatever still calls it changes memory only.
     */
    ObjectNode handOver() {
        if (handedOver != null) return handedOver;
        ObjectNode st = Kw.create();
        st.put("log_lines", logLines);
        st.put("next_uid", nextUid);
        if (lastError != null) st.put("last_error", lastError);
        st.putArray("sessions");
        handedOver = st;
        inHandover = new java.util.HashSet<>();
        for (Session s : sessions.values()) exportSession(s, true);
        synchronized (OPEN) {
            if (OPEN.get(id) == this) OPEN.remove(id);
        }
        try {
            writeHeld();   // the next revision's store appends after them
        } catch (IOException e) {
            lastError = String.valueOf(e);
        }
        closeQuietly();
        return st;
    }

    /**
     * Names {@code s} in the handed-over state, adding it when it is not there yet: a session taken out of the store
     * (a clean start of its client id) that a closed connection's in-flight acks still refer to. Answers its uid.
     */
    long exportSession(Session s) {
        handOver();
        exportSession(s, false);
        return s.uid;
    }

    private void exportSession(Session s, boolean inStore) {
        if (!inHandover.add(s.uid)) return;
        ObjectNode o = ((ArrayNode) handedOver.get("sessions")).addObject();
        o.put("uid", s.uid).put("client_id", s.clientId).put("in_store", inStore).put("persistent", s.persistent)
                .put("expiry_s", s.expiryS).put("disconnected_at", s.disconnectedAt).put("owner_epoch", s.ownerEpoch)
                .put("removed", s.removed);
        if (s.owner != null) Kw.putRef(o, "owner", s.owner);
        ArrayNode q = o.putArray("qos2");
        for (Map.Entry<Integer, Byte> e : s.qos2.entrySet()) q.addArray().add(e.getKey()).add(e.getValue());
        ArrayNode u = o.putArray("unconfirmed");
        s.unconfirmed.forEach(u::add);
        ArrayNode w = o.putArray("waiting");
        s.waiting.forEach(w::add);
        ArrayNode in = o.putArray("intents");
        for (Map.Entry<Integer, String> e : s.intents.entrySet()) in.addArray().add(e.getKey()).add(e.getValue());
    }

    /**
     * The store of {@code dataDir} (null: memory only, keyed by {@code owner}) made from the state another revision
     * handed over ({@link #handOver}): the first gobj to import makes it and opens the log again, every other one
     * gets the same store. A store of this data directory that came from somewhere else is refused.
     *
     * @throws IllegalArgumentException when the state is not a session store's
     */
    static Sessions adopt(Path dataDir, Object owner, ObjectNode state, Consumer<String> warn) {
        if (state == null || !state.path("sessions").isArray() || !state.path("next_uid").canConvertToLong()) {
            throw new IllegalArgumentException("not an MQTT session store's state: " + state);
        }
        synchronized (OPEN) {
            Object id = dataDir == null ? owner : dataDir.toAbsolutePath().normalize();
            Sessions s = OPEN.get(id);
            if (s != null) {
                if (s.adoptedFrom != state) {
                    throw new IllegalArgumentException("another MQTT session store is open on " + id);
                }
                s.refs++;
                return s;
            }
            s = new Sessions(id, dataDir == null ? null : dataDir.resolve("mqtt").resolve("sessions.log"));
            s.warn = warn;
            s.take(state);
            OPEN.put(id, s);
            s.refs++;
            return s;
        }
    }

    private void take(ObjectNode state) {
        adoptedFrom = state;
        nextUid = state.path("next_uid").asLong();
        logLines = state.path("log_lines").asLong();
        lastError = state.hasNonNull("last_error") ? state.get("last_error").asText() : null;
        Map<Long, Session> byUid = new HashMap<>();
        for (JsonNode o : state.get("sessions")) {
            Session s = new Session(o.path("uid").asLong(), o.path("client_id").asText());
            s.persistent = o.path("persistent").asBoolean();
            s.expiryS = o.path("expiry_s").asLong();
            s.disconnectedAt = o.path("disconnected_at").asLong(-1);
            s.ownerEpoch = o.path("owner_epoch").asLong();
            s.removed = o.path("removed").asBoolean();
            s.owner = Kw.ref(o, "owner", GObj.class);
            for (JsonNode e : o.path("qos2")) s.qos2.put(e.get(0).asInt(), (byte) e.get(1).asInt());
            for (JsonNode e : o.path("unconfirmed")) s.unconfirmed.add(e.asInt());
            for (JsonNode e : o.path("waiting")) s.waiting.add(e.asInt());
            // a state of a revision before the intents has none
            for (JsonNode e : o.path("intents")) s.intents.put(e.get(0).asInt(), e.get(1).asText());
            byUid.put(s.uid, s);
            if (o.path("in_store").asBoolean()) sessions.put(s.clientId, s);
        }
        adoptedByUid = byUid;
        if (file == null) return;
        try {
            log = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            lastError = String.valueOf(e);
            warn.accept("MQTT sessions log cannot be opened again after the upgrade, sessions are kept in memory"
                    + " only from now on: " + e);
        }
    }

    /** A session of the state this store was adopted from, by its uid (null: none, or not adopted). */
    Session byUid(long uid) {
        return adoptedByUid.get(uid);
    }

    private void sweep(long nowMs) {
        for (Iterator<Session> it = sessions.values().iterator(); it.hasNext(); ) {
            Session s = it.next();
            if (s.expired(nowMs) && s.unconfirmed.isEmpty()) {
                it.remove();
                logX(s);
                s.removed = true;
            }
        }
    }

    private void logX(Session s) {
        if (s.persistent) append('X', s.key, Long.MIN_VALUE);
    }

    // --- The log ---

    private void load(long nowMs, Consumer<String> warn) {
        if (file == null) return;
        try {
            Files.createDirectories(file.getParent());
            if (Files.exists(file)) {
                int bad = 0;
                List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
                Map<String, Session> byKey = new HashMap<>();
                for (String l : lines) {
                    if (!replay(l, byKey)) bad++;
                }
                for (Session s : byKey.values()) {
                    if (!s.expired(nowMs)) sessions.put(s.clientId, s);
                }
                if (bad > 0) warn.accept("MQTT sessions log: " + bad + " unreadable line(s) skipped (a torn last line after a crash)");
            }
            compact();
        } catch (IOException | RuntimeException e) {
            lastError = String.valueOf(e);
            warn.accept("MQTT sessions log cannot be read or written, sessions are kept in memory only: " + e);
            closeQuietly();
        }
    }

    private boolean replay(String l, Map<String, Session> byKey) {
        if (l.isEmpty()) return true;
        String[] f = l.split(" ");
        if (f.length < 2 || f[0].length() != 1) return false;
        String key = f[1];
        Session s = byKey.get(key);
        try {
            switch (f[0].charAt(0)) {
                case 'S':
                    if (s == null) {
                        s = new Session(nextUid++, new String(Base64.getUrlDecoder().decode(key), StandardCharsets.UTF_8));
                        byKey.put(key, s);
                    }
                    s.persistent = true;
                    s.expiryS = Long.parseLong(f[2]);
                    return true;
                case 'E':
                    if (s != null) s.disconnectedAt = Long.parseLong(f[2]);
                    return s != null;
                case 'I':
                    if (s == null || f.length < 4) return false;
                    s.intents.put(Integer.parseInt(f[2]), f[3]);
                    return true;
                case 'A':
                case 'D':
                    if (s == null) return false;
                    // After a restart no ack can come for an id taken before it: see ProtMqtt on orphans.
                    int taken = Integer.parseInt(f[2]);
                    s.qos2.put(taken, f[0].charAt(0) == 'D' ? DURABLE : RECEIVED);
                    s.intents.remove(taken);
                    return true;
                case 'R':
                    if (s != null) {
                        int released = Integer.parseInt(f[2]);
                        s.qos2.remove(released);
                        s.intents.remove(released);
                    }
                    return s != null;
                case 'X':
                    byKey.remove(key);
                    return true;
                default:
                    return false;
            }
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** Rewrites the log as the live state: temp file, fsync, atomic rename. */
    private void compact() throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        held.clear();   // what they say is in the state written below
        closeQuietly();
        StringBuilder sb = new StringBuilder();
        long n = 0;
        for (Session s : sessions.values()) {
            if (!s.persistent) continue;
            sb.append("S ").append(s.key).append(' ').append(s.expiryS).append('\n');
            n++;
            if (s.disconnectedAt >= 0) {
                sb.append("E ").append(s.key).append(' ').append(s.disconnectedAt).append('\n');
                n++;
            }
            for (Map.Entry<Integer, Byte> e : s.qos2.entrySet()) {
                sb.append(e.getValue() == DURABLE ? "D " : "A ").append(s.key).append(' ').append(e.getKey()).append('\n');
                n++;
            }
            for (Map.Entry<Integer, String> e : s.intents.entrySet()) {
                sb.append("I ").append(s.key).append(' ').append(e.getKey()).append(' ').append(e.getValue()).append('\n');
                n++;
            }
        }
        try (FileChannel t = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer b = ByteBuffer.wrap(sb.toString().getBytes(StandardCharsets.UTF_8));
            while (b.hasRemaining()) t.write(b);
            t.force(true);
        }
        try {
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
        }
        log = FileChannel.open(file, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
        logLines = n;
    }

    private void append(char op, String key, long value) {
        append(op, key, value, null, true);
    }

    /**
     * One line: {@code op key [value [text]]}; {@code text} is ASCII without whitespace (positions). {@code now}:
     * written before this returns, with the lines held before it; else held ({@link #held}).
     */
    private void append(char op, String key, long value, String text, boolean now) {
        if (log == null) return;
        int need = key.length() + 32 + (text == null ? 0 : text.length() + 1);
        try {
            if (held.remaining() < need) writeHeld();
        } catch (IOException e) {
            failed(e);
            return;
        }
        ByteBuffer line = need <= held.remaining() ? held : ByteBuffer.allocate(need);
        line.put((byte) op).put((byte) ' ');
        for (int i = 0; i < key.length(); i++) line.put((byte) key.charAt(i));
        if (value != Long.MIN_VALUE) {
            line.put((byte) ' ');
            String v = Long.toString(value);
            for (int i = 0; i < v.length(); i++) line.put((byte) v.charAt(i));
        }
        if (text != null) {
            line.put((byte) ' ');
            for (int i = 0; i < text.length(); i++) line.put((byte) text.charAt(i));
        }
        line.put((byte) '\n');
        try {
            if (line != held) {
                line.flip();
                while (line.hasRemaining()) log.write(line);
            } else if (now || held.position() > HELD_MAX / 2) {
                writeHeld();
            }
            logLines++;
            // Every 4096 lines: compact once the log is four times what it would be rewritten (a session is at
            // most two lines, S and E, plus one per id). Counted then, not kept up per line.
            if ((logLines & 4095) == 0 && logLines > 4 * Math.max(4096, 2L * sessions.size() + qos2Ids())) compact();
        } catch (IOException e) {
            failed(e);
        }
    }

    /** The held lines to the file (the page cache). */
    private void writeHeld() throws IOException {
        if (log == null || held.position() == 0) return;
        held.flip();
        try {
            while (held.hasRemaining()) log.write(held);
        } finally {
            held.clear();
        }
    }

    private void failed(IOException e) {
        lastError = String.valueOf(e);
        closeQuietly();
        warn.accept("MQTT sessions log cannot be written, sessions are kept in memory only from now on: " + e);
    }

    private void closeQuietly() {
        if (log == null) return;
        try {
            log.close();
        } catch (IOException ignored) {
            // already failing: memory only from now on
        }
        log = null;
    }
}
