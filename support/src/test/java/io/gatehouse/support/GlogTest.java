// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import io.gatehouse.api.GObj;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** What a production SLF4J binding prints (slf4j-simple here, as in the runtimes), and the record beside it. */
class GlogTest {

    @Test
    void shouldPrintTheSameLineAsBeforeAndNothingOfTheRecord() {
        List<String> lines = printed(() -> {
            Glog.warn(gobj("C_PROT_TCP4H", "C_PROT_TCP4H^in-1"), "tcp4h head too long",
                    "peername", "127.0.0.1:5000", "len", 70000, "why", "too long", "empty", "");
            Glog.error(null, "queue message without metadata");
            Glog.info(gobj("C_TCP", "C_TCP^c"), "kw {} stays as written", "kw", "{}", "cause",
                    new IllegalStateException("x"));
        });
        assertEquals(List.of(
                "WARN gatehouse.C_PROT_TCP4H - C_PROT_TCP4H^in-1: tcp4h head too long, peername=127.0.0.1:5000,"
                        + " len=70000, why='too long', empty=''",
                "ERROR gatehouse - queue message without metadata",
                "INFO gatehouse.C_TCP - C_TCP^c: kw {} stays as written, kw={},"
                        + " cause=java.lang.IllegalStateException: x"),
                lines, "no placeholder filled, no stack trace");
    }

    @Test
    void shouldNotFormatWhatTheLoggerDoesNotWant() {
        Object expensive = new Object() {
            @Override
            public String toString() {
                throw new AssertionError("formatted although DEBUG is off");
            }
        };
        assertEquals(List.of(), printed(() -> Glog.debug(gobj("C_TCP", "C_TCP^c"), "Connected", "v", expensive)));
    }

    @Test
    void shouldHandTheRecordAsJdkTypes() {
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("peername", "127.0.0.1:5000");
        fields.put("len", 7);
        Map<String, Object> r = Glog.record("WARN", "C_TCP^c", "Disconnected", fields);
        assertEquals("{level=WARN, gobj=C_TCP^c, msg=Disconnected, fields={peername=127.0.0.1:5000, len=7}}",
                r.toString());
        assertThrows(UnsupportedOperationException.class, () -> r.put("x", 1));
        @SuppressWarnings("unchecked")
        Map<String, Object> f = (Map<String, Object>) r.get("fields");
        assertThrows(UnsupportedOperationException.class, () -> f.put("x", 1));
        assertFalse(r.values().stream().anyMatch(v -> v instanceof Throwable));
    }

    /** The lines slf4j-simple writes on System.err while {@code r} runs, without their thread name. */
    private static List<String> printed(Runnable r) {
        PrintStream original = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setErr(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            r.run();
        } finally {
            System.setErr(original);
        }
        String all = out.toString(StandardCharsets.UTF_8);
        return all.isEmpty() ? List.of() : all.lines().map(l -> l.replaceFirst("^\\[[^]]*] ", "")).toList();
    }

    private static GObj gobj(String gclass, String shortName) {
        return (GObj) Proxy.newProxyInstance(GObj.class.getClassLoader(), new Class<?>[] {GObj.class},
                (p, m, a) -> {
                    switch (m.getName()) {
                        case "gclassName": return gclass;
                        case "shortName": return shortName;
                        case "toString": return shortName;
                        default: throw new UnsupportedOperationException(m.getName());
                    }
                });
    }
}
