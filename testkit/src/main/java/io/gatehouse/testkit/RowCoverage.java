// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import io.gatehouse.api.Fsm;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Which rows of an FSM no test names with {@link Row}, and which {@link Row}s name no row (a renamed state or event).
 * A test class asserts both are empty, so a row added to a gclass without a test fails its build.
 */
public final class RowCoverage {
    private RowCoverage() {}

    /** Rows of {@code fsm}, as {@code "STATE EVENT"}, that no {@link Row} of {@code testClasses} names. */
    public static List<String> uncovered(Fsm<?> fsm, Class<?>... testClasses) {
        Set<String> named = named(testClasses);
        List<String> out = new ArrayList<>();
        for (String st : fsm.states()) {
            for (String ev : fsm.eventsOf(st)) {
                if (!named.contains(st + " " + ev)) out.add(st + " " + ev);
            }
        }
        return out;
    }

    /** {@link Row}s of {@code testClasses} that name no row of {@code fsm}. */
    public static List<String> unknown(Fsm<?> fsm, Class<?>... testClasses) {
        List<String> out = new ArrayList<>();
        for (String r : named(testClasses)) {
            String[] p = r.split(" ", 2);
            if (!fsm.hasState(p[0]) || !fsm.eventsOf(p[0]).contains(p[1])) out.add(r);
        }
        return out;
    }

    private static Set<String> named(Class<?>... testClasses) {
        Set<String> named = new LinkedHashSet<>();
        for (Class<?> c : testClasses) {
            for (Method m : c.getDeclaredMethods()) {
                for (Row r : m.getAnnotationsByType(Row.class)) named.add(r.state() + " " + r.event());
            }
        }
        return named;
    }
}
