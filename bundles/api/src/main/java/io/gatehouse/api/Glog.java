// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Yuneta-style structured logging: a fixed message text ({@code msg}, the part tests and operators match on)
 * plus key/value fields, tagged with the gobj. Records go to SLF4J (logger {@code gatehouse.<gclass>}) and to
 * every registered {@link LogSink}.
 *
 * <pre>{@code Glog.warn(gobj, "tcp4h head too long", "peername", peer, "len", n);}</pre>
 */
public final class Glog {
    private Glog() {}

    private static final List<LogSink> SINKS = new CopyOnWriteArrayList<>();

    public static void addSink(LogSink sink) { SINKS.add(sink); }

    public static void removeSink(LogSink sink) { SINKS.remove(sink); }

    public static void error(GObj g, String msg, Object... kv) { log(LogSink.Level.ERROR, g, msg, kv); }

    public static void warn(GObj g, String msg, Object... kv) { log(LogSink.Level.WARN, g, msg, kv); }

    public static void info(GObj g, String msg, Object... kv) { log(LogSink.Level.INFO, g, msg, kv); }

    public static void debug(GObj g, String msg, Object... kv) {
        Logger l = logger(g);
        if (!l.isDebugEnabled() && SINKS.isEmpty()) return;
        log(LogSink.Level.DEBUG, g, msg, kv);
    }

    public static void log(LogSink.Level level, GObj g, String msg, Object... kv) {
        Map<String, Object> fields = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            fields.put(String.valueOf(kv[i]), kv[i + 1]);
        }
        String who = g == null ? "" : g.shortName();
        for (LogSink s : SINKS) {
            try {
                s.log(level, who, msg, fields);
            } catch (RuntimeException ignored) {
                // a broken sink must not break the gclass that logs
            }
        }
        Logger l = logger(g);
        switch (level) {
            case ERROR: if (l.isErrorEnabled()) l.error(format(who, msg, fields)); break;
            case WARN: if (l.isWarnEnabled()) l.warn(format(who, msg, fields)); break;
            case INFO: if (l.isInfoEnabled()) l.info(format(who, msg, fields)); break;
            default: if (l.isDebugEnabled()) l.debug(format(who, msg, fields)); break;
        }
    }

    private static Logger logger(GObj g) {
        return LoggerFactory.getLogger(g == null ? "gatehouse" : "gatehouse." + g.gclassName());
    }

    private static String format(String who, String msg, Map<String, Object> fields) {
        StringBuilder sb = new StringBuilder(64);
        if (!who.isEmpty()) sb.append(who).append(": ");
        sb.append(msg);
        for (Map.Entry<String, Object> e : fields.entrySet()) {
            sb.append(", ").append(e.getKey()).append('=');
            Object v = e.getValue();
            String s = String.valueOf(v);
            if (v instanceof CharSequence && (s.indexOf(' ') >= 0 || s.isEmpty())) {
                sb.append('\'').append(s).append('\'');
            } else {
                sb.append(s);
            }
        }
        return sb.toString();
    }
}
