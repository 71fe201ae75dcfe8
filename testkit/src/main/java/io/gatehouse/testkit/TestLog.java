// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import org.slf4j.ILoggerFactory;
import org.slf4j.Logger;
import org.slf4j.helpers.FormattingTuple;
import org.slf4j.helpers.MarkerIgnoringBase;
import org.slf4j.helpers.MessageFormatter;

import java.io.PrintStream;
import java.text.SimpleDateFormat;
import java.util.Date;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The SLF4J binding of test JVMs ({@code org.slf4j.impl.StaticLoggerBinder} in this jar names it). It prints as
 * slf4j-simple does, reading the same system properties ({@code org.slf4j.simpleLogger.defaultLogLevel}, default
 * {@code info}; {@code .log.<name>}; {@code .showDateTime}, {@code .dateTimeFormat}; {@code .showThreadName},
 * {@code .showLogName}, {@code .showShortLogName}, {@code .levelInBrackets}; {@code .logFile} {@code System.err}
 * (default) or {@code System.out}), on the stream of the moment, so {@link LeakWatch} still sees Netty's reports.
 *
 * <p>And it hands every record Glog passes beside its line (see {@code io.gatehouse.support.Glog}: a
 * {@code Map} of {@code level, gobj, msg, fields}, the last argument of the call) to each open {@link LogCapture}.
 * While one is open, Glog's loggers ({@code gatehouse} and {@code gatehouse.*}) answer that every level is enabled,
 * so DEBUG records are captured too; what is printed still follows the configured level.
 */
public final class TestLog {
    private TestLog() {}

    private static final String P = "org.slf4j.simpleLogger.";
    private static final int TRACE = 0;
    private static final int DEBUG = 10;
    private static final int INFO = 20;
    private static final int WARN = 30;
    private static final int ERROR = 40;
    private static final int OFF = 50;

    private static final long START_MS = System.currentTimeMillis();
    private static final Factory FACTORY = new Factory();
    private static final List<LogCapture> OPEN = new CopyOnWriteArrayList<>();

    private static final int DEFAULT_LEVEL = level(System.getProperty(P + "defaultLogLevel"), INFO);
    private static final boolean SHOW_DATE_TIME = flag("showDateTime", false);
    private static final String DATE_TIME_FORMAT = System.getProperty(P + "dateTimeFormat");
    private static final boolean SHOW_THREAD_NAME = flag("showThreadName", true);
    private static final boolean SHOW_LOG_NAME = flag("showLogName", true);
    private static final boolean SHOW_SHORT_LOG_NAME = flag("showShortLogName", false);
    private static final boolean LEVEL_IN_BRACKETS = flag("levelInBrackets", false);
    private static final boolean TO_STDOUT = "System.out".equals(System.getProperty(P + "logFile"));

    /** The logger factory SLF4J is bound to. */
    public static Factory factory() {
        return FACTORY;
    }

    static void open(LogCapture c) {
        OPEN.add(c);
    }

    static void close(LogCapture c) {
        OPEN.remove(c);
    }

    /** One logger per name, made on first use. */
    public static final class Factory implements ILoggerFactory {
        private final ConcurrentMap<String, Logger> loggers = new ConcurrentHashMap<>();

        private Factory() {}

        @Override
        public Logger getLogger(String name) {
            return loggers.computeIfAbsent(name, TestLogger::new);
        }
    }

    private static final class TestLogger extends MarkerIgnoringBase {
        private static final long serialVersionUID = 1L;

        private final int level;
        private final boolean glog;
        private final String shown;

        TestLogger(String name) {
            this.name = name;
            this.level = levelOf(name);
            this.glog = name.equals("gatehouse") || name.startsWith("gatehouse.");
            this.shown = SHOW_SHORT_LOG_NAME ? name.substring(name.lastIndexOf('.') + 1)
                    : SHOW_LOG_NAME ? name : null;
        }

        private boolean on(int l) {
            return l >= level || (glog && !OPEN.isEmpty());
        }

        private void log(int l, String format, Object[] args, Throwable t) {
            if (args != null && args.length > 0 && args[args.length - 1] instanceof Map) {
                Map<?, ?> record = (Map<?, ?>) args[args.length - 1];
                if (LogCapture.isGlogRecord(record)) {
                    for (LogCapture c : OPEN) c.take(record);
                }
            }
            if (l < level) return;
            if (args == null) {
                print(l, format, t);
            } else {
                FormattingTuple ft = MessageFormatter.arrayFormat(format, args);
                print(l, ft.getMessage(), ft.getThrowable());
            }
        }

        private void print(int l, String message, Throwable t) {
            StringBuilder sb = new StringBuilder(64);
            if (SHOW_DATE_TIME) {
                if (DATE_TIME_FORMAT != null) {
                    sb.append(new SimpleDateFormat(DATE_TIME_FORMAT, Locale.ROOT).format(new Date()));
                } else {
                    sb.append(System.currentTimeMillis() - START_MS);
                }
                sb.append(' ');
            }
            if (SHOW_THREAD_NAME) sb.append('[').append(Thread.currentThread().getName()).append("] ");
            if (LEVEL_IN_BRACKETS) sb.append('[');
            sb.append(l == ERROR ? "ERROR" : l == WARN ? "WARN" : l == INFO ? "INFO" : l == DEBUG ? "DEBUG" : "TRACE");
            if (LEVEL_IN_BRACKETS) sb.append(']');
            sb.append(' ');
            if (shown != null) sb.append(shown).append(" - ");
            sb.append(message);
            PrintStream out = TO_STDOUT ? System.out : System.err;
            synchronized (out) {
                out.println(sb);
                if (t != null) t.printStackTrace(out);
                out.flush();
            }
        }

        @Override public boolean isTraceEnabled() { return TRACE >= level; }
        @Override public void trace(String msg) { if (TRACE >= level) log(TRACE, msg, null, null); }
        @Override public void trace(String f, Object a) { if (TRACE >= level) log(TRACE, f, new Object[] {a}, null); }
        @Override public void trace(String f, Object a, Object b) { if (TRACE >= level) log(TRACE, f, new Object[] {a, b}, null); }
        @Override public void trace(String f, Object... args) { if (TRACE >= level) log(TRACE, f, args, null); }
        @Override public void trace(String msg, Throwable t) { if (TRACE >= level) log(TRACE, msg, null, t); }

        @Override public boolean isDebugEnabled() { return on(DEBUG); }
        @Override public void debug(String msg) { if (on(DEBUG)) log(DEBUG, msg, null, null); }
        @Override public void debug(String f, Object a) { if (on(DEBUG)) log(DEBUG, f, new Object[] {a}, null); }
        @Override public void debug(String f, Object a, Object b) { if (on(DEBUG)) log(DEBUG, f, new Object[] {a, b}, null); }
        @Override public void debug(String f, Object... args) { if (on(DEBUG)) log(DEBUG, f, args, null); }
        @Override public void debug(String msg, Throwable t) { if (on(DEBUG)) log(DEBUG, msg, null, t); }

        @Override public boolean isInfoEnabled() { return on(INFO); }
        @Override public void info(String msg) { if (on(INFO)) log(INFO, msg, null, null); }
        @Override public void info(String f, Object a) { if (on(INFO)) log(INFO, f, new Object[] {a}, null); }
        @Override public void info(String f, Object a, Object b) { if (on(INFO)) log(INFO, f, new Object[] {a, b}, null); }
        @Override public void info(String f, Object... args) { if (on(INFO)) log(INFO, f, args, null); }
        @Override public void info(String msg, Throwable t) { if (on(INFO)) log(INFO, msg, null, t); }

        @Override public boolean isWarnEnabled() { return on(WARN); }
        @Override public void warn(String msg) { if (on(WARN)) log(WARN, msg, null, null); }
        @Override public void warn(String f, Object a) { if (on(WARN)) log(WARN, f, new Object[] {a}, null); }
        @Override public void warn(String f, Object a, Object b) { if (on(WARN)) log(WARN, f, new Object[] {a, b}, null); }
        @Override public void warn(String f, Object... args) { if (on(WARN)) log(WARN, f, args, null); }
        @Override public void warn(String msg, Throwable t) { if (on(WARN)) log(WARN, msg, null, t); }

        @Override public boolean isErrorEnabled() { return on(ERROR); }
        @Override public void error(String msg) { if (on(ERROR)) log(ERROR, msg, null, null); }
        @Override public void error(String f, Object a) { if (on(ERROR)) log(ERROR, f, new Object[] {a}, null); }
        @Override public void error(String f, Object a, Object b) { if (on(ERROR)) log(ERROR, f, new Object[] {a, b}, null); }
        @Override public void error(String f, Object... args) { if (on(ERROR)) log(ERROR, f, args, null); }
        @Override public void error(String msg, Throwable t) { if (on(ERROR)) log(ERROR, msg, null, t); }
    }

    /** The level of {@code org.slf4j.simpleLogger.log.<name>}, of its nearest parent that has one, or the default. */
    private static int levelOf(String name) {
        for (String n = name; ; ) {
            String v = System.getProperty(P + "log." + n);
            if (v != null) return level(v, DEFAULT_LEVEL);
            int dot = n.lastIndexOf('.');
            if (dot < 0) return DEFAULT_LEVEL;
            n = n.substring(0, dot);
        }
    }

    private static int level(String v, int otherwise) {
        if (v == null) return otherwise;
        switch (v.trim().toLowerCase(Locale.ROOT)) {
            case "trace": return TRACE;
            case "debug": return DEBUG;
            case "info": return INFO;
            case "warn": return WARN;
            case "error": return ERROR;
            case "off": return OFF;
            default: return otherwise;
        }
    }

    private static boolean flag(String key, boolean otherwise) {
        String v = System.getProperty(P + key);
        return v == null ? otherwise : Boolean.parseBoolean(v.trim());
    }
}
