package io.gatehouse.core;

import io.gatehouse.api.GObj;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@link YunoRuntime#reconfigure}: only what changed in a new config is touched (Config Admin {@code @Modified}). */
class ReconfigureTest {
    @TempDir
    Path data;
    private YunoRuntime rt;

    private static final String A = "{\"name\": \"a\", \"gclass\": \"C_NODE\", \"kw\": {\"label\": \"one\"}}";
    private static final String B = "{\"name\": \"b\", \"gclass\": \"C_NODE\", \"priority\": 2,"
            + " \"children\": [{\"name\": \"b1\", \"gclass\": \"C_NODE\", \"kw\": {\"label\": \"(^^__v__^^)\"}}]}";

    @BeforeEach
    void clearJournal() {
        TestGClasses.JOURNAL.clear();
    }

    @AfterEach
    void tearDown() {
        if (rt != null) rt.close();
    }

    private static String config(String vars, String... services) {
        return "{\"__json_config_variables__\": {" + vars + "}, \"services\": [" + String.join(",", services) + "]}";
    }

    private void start(String config) {
        rt = YunoRuntime.builder().name("t").dataDir(data).gclass(TestGClasses.NODE).config(config).build().start();
        TestGClasses.JOURNAL.clear();
    }

    private Map<String, String> reconfigure(String config) {
        return rt.reconfigure(YunoRuntime.parseConfig(config));
    }

    private List<String> journal() {
        return rt.call(() -> List.copyOf(TestGClasses.JOURNAL));
    }

    @Test
    void shouldLeaveAnUnchangedConfigAlone() {
        start(config("\"__v__\": \"x\"", A, B));
        GObj a = rt.service("a");
        Map<String, String> out = reconfigure(config("\"__v__\": \"x\"", A, B));
        assertEquals(Map.of("a", "unchanged", "b", "unchanged"), out);
        assertSame(a, rt.service("a"));
        assertEquals(List.of(), journal());
    }

    @Test
    void shouldWriteAChangedWritableAttributeWithoutRebuilding() {
        start(config("", A, B));
        GObj a = rt.service("a");
        GObj b = rt.service("b");
        Map<String, String> out = reconfigure(config("", A.replace("\"one\"", "\"two\""), B));
        assertEquals("written", out.get("a"));
        assertEquals("unchanged", out.get("b"));
        assertSame(a, rt.service("a"), "same gobj");
        assertSame(b, rt.service("b"));
        assertEquals("\"two\"", rt.call(() -> rt.service("a").readAttr("label").toString()));
        assertEquals(List.of("writing a label"), journal());
        assertTrue(rt.call(() -> rt.service("a").isRunning()));
    }

    @Test
    void shouldApplyTheOtherChangesWhenTheGclassRefusesOneValue() {
        start(config("", A, B));
        Map<String, String> out = reconfigure(config("",
                A.replace("\"one\"", "\"two\"").replace("{\"label\"", "{\"limit\": -1, \"label\""), B));
        assertEquals("written", out.get("a"));
        assertEquals("\"two\"", rt.call(() -> rt.service("a").readAttr("label").toString()));
        assertEquals(10, rt.call(() -> rt.service("a").readAttr("limit").asInt()), "the refused value is not kept");
        assertTrue(rt.call(() -> rt.service("a").isRunning()));
    }

    @Test
    void shouldRebuildOnlyTheServiceWhoseTreeChanged() {
        start(config("\"__v__\": \"x\"", A, B));
        GObj a = rt.service("a");
        GObj b = rt.service("b");
        // A variable used in b's child changes: b is rebuilt (the change is below the service), a is not touched.
        Map<String, String> out = reconfigure(config("\"__v__\": \"y\"", A, B));
        assertEquals(Map.of("a", "unchanged", "b", "rebuilt"), out);
        assertSame(a, rt.service("a"));
        GObj b2 = rt.service("b");
        assertNotSame(b, b2);
        assertEquals("\"y\"", rt.call(() -> b2.child("b1").readAttr("label").toString()));
        assertTrue(rt.call(b2::isRunning));
        List<String> j = journal();
        assertTrue(j.contains("destroy b") && j.contains("create b") && j.contains("start b"), j.toString());
        assertTrue(j.stream().noneMatch(e -> e.endsWith(" a")), j.toString());
    }

    @Test
    void shouldRebuildWhenANonWritableAttributeChanges() {
        start(config("", A));
        GObj a = rt.service("a");
        Map<String, String> out = reconfigure(config("", A.replace("{\"label\": \"one\"}", "{\"label\": \"one\", \"flag\": true}")));
        assertEquals("rebuilt", out.get("a"));
        assertNotSame(a, rt.service("a"));
        assertEquals("true", rt.call(() -> rt.service("a").readAttr("flag").toString()));
    }

    @Test
    void shouldDestroyRemovedServicesAndBuildAddedOnes() {
        start(config("", A));
        GObj a = rt.service("a");
        Map<String, String> out = reconfigure(config("\"__v__\": \"z\"", B));
        assertEquals(Map.of("a", "removed", "b", "added"), out);
        assertNull(rt.service("a"));
        assertNotNull(rt.service("b"));
        assertTrue(rt.call(() -> rt.service("b").isRunning()));
        assertTrue(rt.call(a::isDestroyed));
    }

    @Test
    void shouldChangeNothingWhenTheNewConfigIsBad() {
        start(config("", A, B));
        GObj a = rt.service("a");
        assertThrows(ConfigException.class, () -> reconfigure(config("", A.replace("\"one\"", "\"two\""),
                "{\"name\": \"c\", \"gclass\": \"C_NODE\", \"kw\": {\"no_such_attr\": 1}}")));
        assertThrows(ConfigException.class, () -> reconfigure(config("", A, A)));
        assertSame(a, rt.service("a"));
        assertEquals("\"one\"", rt.call(() -> rt.service("a").readAttr("label").toString()));
        assertNotNull(rt.service("b"));
    }

    @Test
    void shouldLetAServiceWithAnUnknownGclassWait() {
        start(config("", A));
        Map<String, String> out = reconfigure(config("", A, "{\"name\": \"q\", \"gclass\": \"C_LATER\"}"));
        assertEquals("waiting", out.get("q"));
        assertEquals(Map.of("q", java.util.Set.of("C_LATER")), rt.waiting());
    }
}
