// SPDX-License-Identifier: Apache-2.0
package org.slf4j.impl;

import io.gatehouse.testkit.TestLog;
import org.slf4j.ILoggerFactory;
import org.slf4j.spi.LoggerFactoryBinder;

/**
 * The SLF4J 1.7 binding of every test JVM that has the testkit on its class path: {@link TestLog} prints like
 * slf4j-simple and hands Glog's records to the open {@code LogCapture}s. So no test class path may also hold
 * slf4j-simple (SLF4J would pick one of the two).
 */
public final class StaticLoggerBinder implements LoggerFactoryBinder {
    private static final StaticLoggerBinder SINGLETON = new StaticLoggerBinder();

    /** The SLF4J API version this binding is compiled for (SLF4J reads it). */
    public static String REQUESTED_API_VERSION = "1.6.99";

    private StaticLoggerBinder() {}

    public static StaticLoggerBinder getSingleton() {
        return SINGLETON;
    }

    @Override
    public ILoggerFactory getLoggerFactory() {
        return TestLog.factory();
    }

    @Override
    public String getLoggerFactoryClassStr() {
        return TestLog.Factory.class.getName();
    }
}
