// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import io.gatehouse.api.Glog;
import io.gatehouse.api.LogSink;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/** Collects Glog records while a test runs. */
final class LogCapture implements LogSink, AutoCloseable {
    static final class Rec {
        final Level level;
        final String msg;
        final Map<String, Object> fields;

        Rec(Level level, String msg, Map<String, Object> fields) {
            this.level = level;
            this.msg = msg;
            this.fields = fields;
        }

        @Override
        public String toString() {
            return level + " " + msg + " " + fields;
        }
    }

    final List<Rec> recs = new ArrayList<>();

    LogCapture() {
        Glog.addSink(this);
    }

    @Override
    public synchronized void log(Level level, String gobj, String msg, Map<String, Object> fields) {
        if (level != Level.DEBUG) recs.add(new Rec(level, msg, fields));
    }

    synchronized long count(String msg) {
        return recs.stream().filter(r -> r.msg.equals(msg)).count();
    }

    synchronized List<String> msgs() {
        return recs.stream().map(r -> r.level + " " + r.msg).collect(Collectors.toList());
    }

    synchronized void clear() {
        recs.clear();
    }

    @Override
    public void close() {
        Glog.removeSink(this);
    }
}
