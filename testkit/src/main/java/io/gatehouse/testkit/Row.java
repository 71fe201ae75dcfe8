// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import java.lang.annotation.ElementType;
import java.lang.annotation.Repeatable;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Names the FSM row (state, event) a test method checks, so {@link RowCoverage} can tell which rows of a gclass no
 * test checks. A test of several rows carries several.
 *
 * <pre>{@code @Test @Row(state = "ST_WAIT_PAYLOAD", event = "EV_TIMEOUT")
 * void shouldCloseWhenThePayloadTimesOut() { ... }}</pre>
 */
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
@Repeatable(Row.List.class)
public @interface Row {
    String state();

    String event();

    /** The container of repeated {@link Row}s. */
    @Retention(RetentionPolicy.RUNTIME)
    @Target(ElementType.METHOD)
    @interface List {
        Row[] value();
    }
}
