// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import io.gatehouse.api.GObj;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Yuneta-style structured logging: a fixed message text ({@code msg}, the part tests and operators match on)
 * plus key/value fields, tagged with the gobj, logged to SLF4J under the logger {@code gatehouse.<gclass>}
 * ({@code gatehouse} without a gobj).
 *
 * <pre>{@code Glog.warn(gobj, "tcp4h head too long", "peername", peer, "len", n);}</pre>
 *
 * prints {@code C_PROT_TCP4H^in-1: tcp4h head too long, peername=127.0.0.1:5000, len=70000} (a string value
 * holding a space, or empty, in single quotes).
 *
 * <p>There is no registry of sinks: the record also travels through SLF4J, so whoever binds SLF4J can have it.
 * Each call is {@code logger.warn("{}", text, record)}: backends print {@code text} and ignore the extra argument
 * (the pattern has one placeholder, and the record is no Throwable, so no stack trace either). {@code record} is an
 * unmodifiable {@code Map<String, Object>} of JDK types only, so a binding in any class loader can read it:
 * <ul>
 *   <li>{@code "level"}: {@code "ERROR"}, {@code "WARN"}, {@code "INFO"} or {@code "DEBUG"};</li>
 *   <li>{@code "gobj"}: the gobj's short name ({@code gclass^name}), {@code ""} without a gobj;</li>
 *   <li>{@code "msg"}: the fixed text;</li>
 *   <li>{@code "fields"}: a {@code Map<String, Object>} of the key/value pairs in the order given.</li>
 * </ul>
 * The testkit's SLF4J binding hands it to every open {@code LogCapture}, and says DEBUG is enabled while one is
 * open, so tests see every record; in production the line is all there is.
 *
 * <p>This class is in {@code io.gatehouse.support}: every bundle carries its own copy (see the package comment).
 */
public final class Glog {
    private Glog() {}

    private static final int ERROR = 0;
    private static final int WARN = 1;
    private static final int INFO = 2;
    private static final int DEBUG = 3;
    private static final String[] LEVELS = {"ERROR", "WARN", "INFO", "DEBUG"};

    public static void error(GObj g, String msg, Object... kv) { log(ERROR, g, msg, kv); }

    public static void warn(GObj g, String msg, Object... kv) { log(WARN, g, msg, kv); }

    public static void info(GObj g, String msg, Object... kv) { log(INFO, g, msg, kv); }

    public static void debug(GObj g, String msg, Object... kv) { log(DEBUG, g, msg, kv); }

    private static void log(int level, GObj g, String msg, Object[] kv) {
        Logger l = LoggerFactory.getLogger(g == null ? "gatehouse" : "gatehouse." + g.gclassName());
        if (!enabled(l, level)) return;
        Map<String, Object> fields = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            fields.put(String.valueOf(kv[i]), kv[i + 1]);
        }
        String who = g == null ? "" : g.shortName();
        String text = format(who, msg, fields);
        Map<String, Object> record = record(LEVELS[level], who, msg, fields);
        switch (level) {
            case ERROR: l.error("{}", text, record); break;
            case WARN: l.warn("{}", text, record); break;
            case INFO: l.info("{}", text, record); break;
            default: l.debug("{}", text, record); break;
        }
    }

    private static boolean enabled(Logger l, int level) {
        switch (level) {
            case ERROR: return l.isErrorEnabled();
            case WARN: return l.isWarnEnabled();
            case INFO: return l.isInfoEnabled();
            default: return l.isDebugEnabled();
        }
    }

    /** The record handed to SLF4J beside the text (see the class comment). */
    static Map<String, Object> record(String level, String who, String msg, Map<String, Object> fields) {
        Map<String, Object> r = new LinkedHashMap<>(8);
        r.put("level", level);
        r.put("gobj", who);
        r.put("msg", msg);
        r.put("fields", Collections.unmodifiableMap(fields));
        return Collections.unmodifiableMap(r);
    }

    /** The line: {@code who: msg, key=value, key='a value'}. */
    static String format(String who, String msg, Map<String, Object> fields) {
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
