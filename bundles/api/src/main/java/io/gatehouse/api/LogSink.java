// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import java.util.Map;

/** Receives every structured log record (tests capture with it; metrics count errors with it). */
@FunctionalInterface
public interface LogSink {
    enum Level { ERROR, WARN, INFO, DEBUG }

    void log(Level level, String gobj, String msg, Map<String, Object> fields);
}
