// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The spec builder enforces the template: descriptions everywhere, one slot per attribute. */
class GClassSpecTest {

    static final class B implements GObjBehavior {
    }

    private static Fsm<B> fsm() {
        return Fsm.<B>builder().state(St.ST_IDLE).build();
    }

    private static GClassSpec.Builder<B> base(String name) {
        return GClassSpec.builder(name, B.class).description("a test gclass").fsm(fsm()).factory(g -> new B());
    }

    @Test
    void shouldGiveNumericAttributesTheFirstSlotsAndOthersTheRest() {
        Attr<Long> n = Attr.integer("n", 1, AttrFlag.RD, "a number");
        Attr<String> s = Attr.string("s", "x", AttrFlag.RD, "a string");
        Attr<Boolean> f = Attr.bool("f", true, AttrFlag.RD, "a flag");
        Attr<Long> c = Attr.counter("c", AttrFlag.RSTATS, "a counter");
        GClassSpec<B> spec = base("C_SLOTS").attrs(n, s, f, c).build();
        assertEquals(3, spec.numericSlots());
        assertEquals(1, spec.objectSlots());
        assertEquals(0, n.slot());
        assertEquals(1, f.slot());
        assertEquals(2, c.slot());
        assertEquals(3, s.slot());
        assertSame(s, spec.attrAt(3));
        assertTrue(spec.owns(c));
        assertFalse(spec.owns(Attr.integer("n", 1, AttrFlag.RD, "another n")));
    }

    @Test
    void shouldMakeCountersStatsThatStartAtZero() {
        Attr<Long> c = Attr.counter("rx", 0, "messages received");
        assertEquals(AttrType.COUNTER, c.type());
        assertTrue(c.is(AttrFlag.STATS));
        assertEquals(0L, c.defaultValue());
        assertTrue(c.isNumeric());
    }

    @Test
    void shouldRefuseAnAttributeThatWouldGetAnotherSlotInASecondGclass() {
        Attr<Long> shared = Attr.integer("shared", 0, AttrFlag.RD, "shared");
        Attr<Long> other = Attr.integer("other", 0, AttrFlag.RD, "other");
        base("C_FIRST").attrs(shared).build();
        base("C_SAME_PLACE").attrs(shared).build();   // same slot: one behaviour, two names
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> base("C_SECOND").attrs(other, shared).build());
        assertTrue(e.getMessage().contains("shared") && e.getMessage().contains("C_FIRST"), e.getMessage());
    }

    @Test
    void shouldRefuseATableWithoutDescriptions() {
        assertThrows(IllegalArgumentException.class,
                () -> GClassSpec.builder("C_X", B.class).fsm(fsm()).factory(g -> new B()).build());
        assertThrows(IllegalArgumentException.class,
                () -> base("C_X1").attrs(Attr.integer("quiet", 0, AttrFlag.RD, "")).build());
        assertThrows(IllegalArgumentException.class, () -> base("C_X2").traceLevel("traffic", " ").build());
        assertThrows(IllegalArgumentException.class,
                () -> base("C_X3").command("go", "", (self, kw, src) -> null).build());
        assertThrows(IllegalArgumentException.class,
                () -> base("C_X4").command("go", "goes", (self, kw, src) -> null, Param.integer("n", "1", "")).build());
    }

    @Test
    void shouldRefuseACommandOrTraceLevelDeclaredTwice() {
        assertThrows(IllegalArgumentException.class, () -> base("C_Y1")
                .command("go", "goes", (self, kw, src) -> null).command("go", "again", (self, kw, src) -> null));
        assertThrows(IllegalArgumentException.class, () -> base("C_Y2").traceLevel("t", "one").traceLevel("t", "two"));
    }

    @Test
    void shouldKeepAliasesAndTheCommandTableOrder() {
        GClassSpec<B> spec = base("C_CMDS")
                .command("view-a", "shows a", (self, kw, src) -> null).alias("va")
                .command("view-b", "shows b", (self, kw, src) -> null)
                .build();
        assertEquals("view-a", spec.commands().get(0).name());
        assertNotNull(spec.command("va"));
        assertEquals("view-b", spec.command("view-b").name());
    }

    @Test
    void shouldRefuseALinkAttributeOutsideTheTable() {
        Attr<Boolean> up = Attr.bool("connected", false, AttrFlag.STATS, "up");
        assertThrows(IllegalArgumentException.class, () -> base("C_LINK").linkUp(up).build());
        assertSame(up, base("C_LINK2").attrs(up).linkUp(up).build().linkUp());
    }

    @Test
    void shouldKeepTheTablesWhenTheFactoryIsReplaced() {
        Attr<Long> a = Attr.integer("a", 0, AttrFlag.RD, "an attribute");
        GClassSpec<B> spec = base("C_FACTORY").attrs(a).confirmsDurability().build();
        GClassSpec<B> bound = spec.withFactory(g -> new B());
        assertTrue(bound.owns(a));
        assertTrue(bound.confirmsDurability());
        assertEquals(spec.name(), bound.name());
    }
}
