package io.gatehouse.core;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GObj;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ConfigBuilderTest {
    @TempDir
    Path data;
    private YunoRuntime rt;

    @BeforeEach
    void clearJournal() {
        TestGClasses.JOURNAL.clear();
    }

    @AfterEach
    void tearDown() {
        if (rt != null) rt.close();
    }

    private YunoRuntime build(String config) {
        rt = YunoRuntime.builder().name("t").dataDir(data).gclass(TestGClasses.NODE, TestGClasses.MANUAL)
                .config(config).build();
        return rt;
    }

    @Test
    void shouldExpandTemplatesWithRangeAndVariablesWithoutAutoBottom() {
        build("{\"services\": [{\"name\": \"gate\", \"gclass\": \"C_NODE\","
                + " \"__json_config_variables__\": {\"__input_port__\": \"7778\"},"
                + " \"[^^children^^]\": {\"__range__\": [1, 3], \"__vars__\": {},"
                + "   \"__content__\": {\"name\": \"(^^__input_port__^^)-(^^__range__^^)\", \"gclass\": \"C_NODE\","
                + "      \"kw\": {\"label\": \"(^^foo^^)\"}}}}]}");
        List<String> names = rt.call(() -> rt.service("gate").children().stream().map(GObj::name).collect(Collectors.toList()));
        assertEquals(List.of("7778-1", "7778-2", "7778-3"), names);
        assertNull(rt.call(() -> rt.service("gate").bottom()), "no auto-bottom with a template");
        assertEquals("(^^foo^^)", rt.call(() -> rt.service("gate").child("7778-2").readAttr("label").asText()),
                "an unknown variable stays as written");
    }

    @Test
    void shouldWireTheOnlyChildAsBottomAndSubscribeTheParent() {
        build("{\"services\": [{\"name\": \"top\", \"gclass\": \"C_NODE\", \"children\": ["
                + "{\"name\": \"mid\", \"gclass\": \"C_NODE\", \"children\": [{\"name\": \"low\", \"gclass\": \"C_NODE\"}]}]}]}");
        rt.run(() -> {
            GObj top = rt.service("top");
            GObj mid = top.child("mid");
            assertSame(mid, top.bottom());
            assertSame(mid.child("low"), mid.bottom());
            assertSame(mid.child("low"), top.lastBottom());
            assertTrue(mid.subscribers().contains(top));
        });
    }

    @Test
    void shouldApplyGlobalsByGclassAndByServiceName() {
        build("{\"global\": {\"C_NODE.label\": \"from-gclass\", \"Second.limit\": 99, \"second.kw\": {\"flag\": true}},"
                + " \"services\": [{\"name\": \"first\", \"gclass\": \"C_NODE\"},"
                + " {\"name\": \"second\", \"gclass\": \"C_NODE\", \"kw\": {\"label\": \"own\"}}]}");
        rt.run(() -> {
            assertEquals("from-gclass", rt.service("first").readAttr("label").asText());
            assertEquals(99, rt.service("second").readAttr("limit").asInt());
            assertTrue(rt.service("second").readAttr("flag").asBoolean());
            assertEquals("from-gclass", rt.service("second").readAttr("label").asText(), "global wins, as in Yuneta");
        });
    }

    @Test
    void shouldStartByPriorityAndSkipManualStartSubtrees() {
        build("{\"services\": ["
                + "{\"name\": \"late\", \"gclass\": \"C_NODE\", \"priority\": 7},"
                + "{\"name\": \"early\", \"gclass\": \"C_NODE\", \"priority\": 1, \"children\": ["
                + "   {\"name\": \"manual\", \"gclass\": \"C_MANUAL\", \"children\": [{\"name\": \"under\", \"gclass\": \"C_NODE\"}]},"
                + "   {\"name\": \"off\", \"gclass\": \"C_NODE\", \"disabled\": true}]},"
                + "{\"name\": \"nine\", \"gclass\": \"C_NODE\", \"priority\": 9},"
                + "{\"name\": \"kept\", \"gclass\": \"C_NODE\", \"autostart\": false}]}");
        TestGClasses.JOURNAL.clear();
        rt.start();
        List<String> starts = TestGClasses.JOURNAL.stream().filter(s -> s.startsWith("start")).collect(Collectors.toList());
        assertEquals(List.of("start early", "start late", "start nine"), starts);
        rt.run(() -> {
            assertFalse(rt.service("early").child("manual").isRunning());
            assertFalse(rt.service("early").child("manual").child("under").isRunning());
            assertFalse(rt.service("early").child("off").isRunning());
            assertFalse(rt.service("kept").isRunning());
        });
    }

    @Test
    void shouldNameLineAndColumnOfAJsonSyntaxError() {
        ConfigException e = assertThrows(ConfigException.class, () -> build("{\n  \"services\": [\n    {\"name\": }\n]}"));
        assertTrue(e.getMessage().contains("line 3"), e.getMessage());
        assertTrue(e.getMessage().contains("column"), e.getMessage());
    }

    @Test
    void shouldNameAnUnknownGclassAndItsPath() {
        ConfigException e = assertThrows(ConfigException.class, () -> build(
                "{\"services\": [{\"name\": \"top\", \"gclass\": \"C_NODE\", \"children\": [{\"name\": \"x\", \"gclass\": \"C_NOPE\"}]}]}"));
        assertTrue(e.getMessage().contains("C_NOPE"), e.getMessage());
        assertTrue(e.getMessage().contains("top"), e.getMessage());
    }

    @Test
    void shouldRejectUnknownAttributesWrongTypesAndDuplicates() {
        ConfigException unknown = assertThrows(ConfigException.class, () -> build(
                "{\"services\": [{\"name\": \"s\", \"gclass\": \"C_NODE\", \"kw\": {\"limt\": 3}}]}"));
        assertTrue(unknown.getMessage().contains("'limt'"), unknown.getMessage());
        ConfigException type = assertThrows(ConfigException.class, () -> build(
                "{\"services\": [{\"name\": \"s\", \"gclass\": \"C_NODE\", \"kw\": {\"limit\": \"lots\"}}]}"));
        assertTrue(type.getMessage().contains("limit"), type.getMessage());
        ConfigException dup = assertThrows(ConfigException.class, () -> build(
                "{\"services\": [{\"name\": \"s\", \"gclass\": \"C_NODE\"}, {\"name\": \"s\", \"gclass\": \"C_NODE\"}]}"));
        assertTrue(dup.getMessage().contains("duplicate"), dup.getMessage());
    }

    @Test
    void shouldTakeIoThreadsFromTheYunoSectionUnlessTheBuilderSetsIt() {
        build("{\"yuno\": {\"io_threads\": 2}, \"services\": []}");
        assertEquals(2, rt.ioThreads());
        io.netty.channel.EventLoopGroup io = rt.yuno().ioGroup();
        io.netty.channel.EventLoop a = io.next();
        io.netty.channel.EventLoop b = io.next();
        assertNotSame(a, b, "two worker loops, used in turn");
        assertSame(a, io.next());
        assertNotSame(rt.yuno().eventLoop(), a);
        assertNotSame(rt.yuno().eventLoop(), b);
        rt.close();

        build("{\"services\": []}");
        assertEquals(0, rt.ioThreads());
        assertSame(rt.yuno().eventLoop(), rt.yuno().ioGroup(), "io_threads 0: sockets go on the core loop");
        rt.close();

        rt = YunoRuntime.builder().name("t").dataDir(data).ioThreads(0).config("{\"yuno\": {\"io_threads\": 3}}").build();
        assertEquals(0, rt.ioThreads(), "the builder's setting wins");
        assertSame(rt.yuno().eventLoop(), rt.yuno().ioGroup());
    }

    @Test
    void shouldRejectAnIoThreadsThatIsNotACount() {
        for (String bad : new String[] {"-1", "65", "\"two\"", "1.5", "true"}) {
            ConfigException e = assertThrows(ConfigException.class,
                    () -> build("{\"yuno\": {\"io_threads\": " + bad + "}, \"services\": []}"), bad);
            assertTrue(e.getMessage().contains("io_threads"), e.getMessage());
        }
        rt = YunoRuntime.builder().name("t").dataDir(data).config("{\"yuno\": {\"io_threads\": \"2\"}}").build();
        assertEquals(2, rt.ioThreads(), "a count in a string is read as a count");
    }

    @Test
    void shouldAcceptYunetaKeysItDoesNotUse() {
        build("{\"services\": [{\"name\": \"s\", \"gclass\": \"C_NODE\", \"kw\": {\"legacy_key\": 1, \"user_data\": 0}}]}");
        assertTrue(rt.call(() -> rt.service("s") != null));
    }

    @Test
    void shouldLeaveNothingHalfBuiltOnError() {
        assertThrows(ConfigException.class, () -> build("{\"services\": ["
                + "{\"name\": \"good\", \"gclass\": \"C_NODE\"}, {\"name\": \"bad\", \"gclass\": \"C_NODE\", \"kw\": {\"nope\": 1}}]}"));
        assertTrue(TestGClasses.JOURNAL.contains("create good"));
        assertTrue(TestGClasses.JOURNAL.contains("destroy good"), TestGClasses.JOURNAL.toString());
        rt = null;
    }

    @Test
    void shouldRestorePersistentAttributesOnTheNextStart() {
        build("{\"services\": [{\"name\": \"s\", \"gclass\": \"C_NODE\"}]}").start();
        assertEquals(0, rt.command("write-attr service=s attr=limit value=77").get("result").asInt());
        rt.close();
        build("{\"services\": [{\"name\": \"s\", \"gclass\": \"C_NODE\"}]}");
        assertEquals(77, rt.call(() -> rt.service("s").readAttr("limit").asInt()));
    }

    @Test
    void shouldKeepAndPersistThePreviousValueWhenTheGclassRefusesAWrite() {
        build("{\"services\": [{\"name\": \"s\", \"gclass\": \"C_NODE\"}]}").start();
        assertEquals(0, rt.command("write-attr service=s attr=limit value=77").get("result").asInt());
        ObjectNode refused = rt.command("write-attr service=s attr=limit value=-5");
        assertEquals(-1, refused.get("result").asInt());
        assertTrue(refused.get("comment").asText().contains("limit must be >= 0"), refused.toString());
        assertEquals(77, rt.call(() -> rt.service("s").readAttr("limit").asInt()));
        rt.close();
        build("{\"services\": [{\"name\": \"s\", \"gclass\": \"C_NODE\"}]}");
        assertEquals(77, rt.call(() -> rt.service("s").readAttr("limit").asInt()), "the refused value was not persisted");
    }

    @Test
    void shouldSuspendServicesWhenTheirGclassGoesAndRebuildThemWhenItReturnsWithoutState() {
        build("{\"services\": [{\"name\": \"a\", \"gclass\": \"C_NODE\", \"children\": [{\"name\": \"m\", \"gclass\": \"C_MANUAL\"}]},"
                + "{\"name\": \"b\", \"gclass\": \"C_NODE\"}]}").start();
        GObj before = rt.service("a");
        assertEquals(List.of("C_MANUAL"), rt.gclassesGone(List.of("C_MANUAL")));
        assertTrue(rt.call(() -> !before.isDestroyed()), "kept, suspended, waiting for the new revision");
        assertEquals(java.util.Set.of("C_MANUAL"), rt.suspendedGclasses());
        ObjectNode report = rt.gclassArrived(TestGClasses.MANUAL);
        assertEquals("a", report.get("rebuilt").get(0).get("service").asText(),
                "C_MANUAL hands no state over: its service is rebuilt " + report);
        GObj after = rt.service("a");
        assertTrue(rt.call(after::isRunning));
        assertTrue(after != before);
        assertTrue(rt.call(() -> rt.service("b").isRunning()), "other services are untouched");
    }
}
