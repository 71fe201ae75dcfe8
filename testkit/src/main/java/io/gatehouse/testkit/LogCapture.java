// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import io.gatehouse.api.Glog;
import io.gatehouse.api.LogSink;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Captures the structured log records of every gobj ({@link Glog}) until closed, so a test can assert what was
 * said, how often and with which fields: {@code try (LogCapture logs = new LogCapture()) {...}}. Thread-safe.
 */
public final class LogCapture implements LogSink, AutoCloseable {

    /** One captured record. */
    public static final class Rec {
        public final LogSink.Level level;
        public final String gobj;
        public final String msg;
        public final Map<String, Object> fields;
        /** When it was captured, on the JVM's monotonic clock (ms). */
        public final long atMs;

        Rec(LogSink.Level level, String gobj, String msg, Map<String, Object> fields) {
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

    public LogCapture() {
        Glog.addSink(this);
    }

    @Override
    public synchronized void log(Level level, String gobj, String msg, Map<String, Object> fields) {
        recs.add(new Rec(level, gobj, msg, fields));
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
    public void close() {
        Glog.removeSink(this);
    }
}
