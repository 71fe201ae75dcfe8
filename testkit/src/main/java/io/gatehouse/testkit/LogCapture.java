// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import org.slf4j.ILoggerFactory;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Captures the structured log records of every gobj ({@code Glog}) until closed, so a test can assert what was
 * said, how often and with which fields: {@code try (LogCapture logs = new LogCapture()) {...}}. Thread-safe.
 *
 * <p>The records come through SLF4J: Glog passes each one beside its line, and the testkit's binding
 * ({@link TestLog}) hands it to the open captures; while one is open, DEBUG records are made too. A test class path
 * must therefore not hold another SLF4J binding (slf4j-simple): the constructor fails if SLF4J is bound elsewhere.
 */
public final class LogCapture implements AutoCloseable {

    /** The level of a record. */
    public enum Level { ERROR, WARN, INFO, DEBUG }

    /** One captured record. */
    public static final class Rec {
        public final Level level;
        public final String gobj;
        public final String msg;
        public final Map<String, Object> fields;
        /** When it was captured, on the JVM's monotonic clock (ms). */
        public final long atMs;

        Rec(Level level, String gobj, String msg, Map<String, Object> fields) {
            this.level = level;
            this.gobj = gobj;
            this.msg = msg;
            this.fields = fields;
            this.atMs = System.nanoTime() / 1_000_000L;
        }

        @Override
        public String toString() {
            return level + " " + gobj + " " + msg + " " + fields;
        }
    }

    private final List<Rec> recs = new ArrayList<>();
    private final Consumer<Rec> listener;

    public LogCapture() {
        this(null);
    }

    /** A capture that also hands each record to {@code listener} as it comes (on the thread that logged it). */
    public LogCapture(Consumer<Rec> listener) {
        ILoggerFactory bound = LoggerFactory.getILoggerFactory();
        if (!(bound instanceof TestLog.Factory)) {
            throw new IllegalStateException("SLF4J is bound to " + bound.getClass().getName()
                    + ", not to the testkit's binding: take slf4j-simple (or any other binding) off the test class path");
        }
        this.listener = listener;
        TestLog.open(this);
    }

    /** True for what Glog passes beside its line: {@code level, gobj, msg} strings and a {@code fields} map. */
    static boolean isGlogRecord(Map<?, ?> r) {
        return r.get("level") instanceof String && r.get("gobj") instanceof String && r.get("msg") instanceof String
                && r.get("fields") instanceof Map;
    }

    @SuppressWarnings("unchecked")
    synchronized void take(Map<?, ?> r) {
        Level level;
        try {
            level = Level.valueOf((String) r.get("level"));
        } catch (IllegalArgumentException e) {
            return;
        }
        Rec rec = new Rec(level, (String) r.get("gobj"), (String) r.get("msg"), (Map<String, Object>) r.get("fields"));
        recs.add(rec);
        if (listener != null) listener.accept(rec);
        notifyAll();
    }

    public synchronized List<Rec> all() {
        return new ArrayList<>(recs);
    }

    /** The records whose message text is {@code msg}, in the order they were said. */
    public synchronized List<Rec> with(String msg) {
        List<Rec> out = new ArrayList<>();
        for (Rec r : recs) {
            if (r.msg.equals(msg)) out.add(r);
        }
        return out;
    }

    public int count(String msg) {
        return with(msg).size();
    }

    /** How many records of {@code level} were said. */
    public synchronized int count(Level level) {
        int n = 0;
        for (Rec r : recs) {
            if (r.level == level) n++;
        }
        return n;
    }

    /** {@code "LEVEL msg"} of each record at {@code least} or more severe, in order: for asserting a whole story. */
    public synchronized List<String> messages(Level least) {
        List<String> out = new ArrayList<>();
        for (Rec r : recs) {
            if (r.level.compareTo(least) <= 0) out.add(r.level + " " + r.msg);
        }
        return out;
    }

    /** Forgets what was captured so far (the capture stays open). */
    public synchronized void clear() {
        recs.clear();
    }

    /** Waits until {@code msg} was said at least {@code n} times; false when it was not within {@code timeoutMs}. */
    public synchronized boolean await(String msg, int n, long timeoutMs) {
        long end = System.nanoTime() + timeoutMs * 1_000_000L;
        while (with(msg).size() < n) {
            long leftMs = (end - System.nanoTime()) / 1_000_000L;
            if (leftMs <= 0) return false;
            try {
                wait(leftMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }

    @Override
    public synchronized String toString() {
        StringBuilder sb = new StringBuilder();
        for (Rec r : recs) sb.append(r).append('\n');
        return sb.toString();
    }

    @Override
    public void close() {
        TestLog.close(this);
    }
}
