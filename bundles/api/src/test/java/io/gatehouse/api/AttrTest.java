package io.gatehouse.api;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AttrTest {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    @Test
    void shouldAcceptIntegersAndIntegerStrings() {
        Attr<Long> a = Attr.integer("timeout", 5000, AttrFlag.RD, "t");
        assertEquals(10L, a.fromJson(F.numberNode(10)));
        assertEquals(12L, a.fromJson(F.textNode("12")));
        assertEquals(5000L, a.fromJson(null));
    }

    @Test
    void shouldRejectAWrongTypeNamingTheAttribute() {
        Attr<Long> a = Attr.integer("timeout_ack", 60, AttrFlag.RD, "t");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> a.fromJson(F.textNode("soon")));
        assertTrue(e.getMessage().contains("timeout_ack"), e.getMessage());
        Attr<Boolean> b = Attr.bool("opened", false, AttrFlag.RD, "o");
        assertThrows(IllegalArgumentException.class, () -> b.fromJson(F.numberNode(7)));
        Attr<com.fasterxml.jackson.databind.JsonNode> d = Attr.json("crypto", AttrType.DICT, null, AttrFlag.RD, "c");
        assertThrows(IllegalArgumentException.class, () -> d.fromJson(F.arrayNode()));
    }

    @Test
    void shouldMarkPersistentAsWritable() {
        Attr<Long> a = Attr.integer("max_pending_acks", 10000, AttrFlag.PERSIST, "m");
        assertTrue(a.is(AttrFlag.WR));
        assertTrue(Attr.integer("x", 0, AttrFlag.PSTATS, "").is(AttrFlag.STATS));
    }
}
