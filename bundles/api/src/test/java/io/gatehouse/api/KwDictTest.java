// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The kw dicts (Kw.create, Kw.withGbuffer) through every ObjectNode call a gclass makes, and the gbuffer rules. */
class KwDictTest {

    private static List<String> keys(ObjectNode n) {
        List<String> out = new ArrayList<>();
        n.fieldNames().forEachRemaining(out::add);
        return out;
    }

    @Test
    void shouldKeepInsertionOrderReplaceInPlaceAndRemove() throws Exception {
        ObjectNode kw = Kw.create();
        kw.put("b", 1).put("a", 2).put("c", 3);
        kw.put("a", 20);   // a replacement keeps its place
        assertEquals(List.of("b", "a", "c"), keys(kw));
        assertEquals("{\"b\":1,\"a\":20,\"c\":3}", Kw.toJson(kw));
        assertEquals(20, kw.remove("a").asInt());
        assertNull(kw.remove("a"));
        assertEquals(List.of("b", "c"), keys(kw));
        // keys built at run time are found too (equality after identity)
        assertEquals(3, kw.get(new String(new char[] {'c'})).asInt());
        assertTrue(kw.has("b"));
        assertFalse(kw.has("a"));
        assertEquals(2, kw.size());
        kw.removeAll();
        assertTrue(kw.isEmpty());
    }

    @Test
    void shouldEqualTheSameDictBackedByJacksonsOwnMapBothWays() throws Exception {
        ObjectNode ours = Kw.create();
        ours.put("x", 1).putObject("d").put("y", "z");
        ObjectNode theirs = Kw.parse("{\"x\":1,\"d\":{\"y\":\"z\"}}");
        assertEquals(theirs, ours);
        assertEquals(ours, theirs);
        assertEquals(theirs.hashCode(), ours.hashCode());
        assertEquals(theirs, ours.deepCopy());
    }

    @Test
    void shouldKeepOrderAndEveryKeyInALargeDict() throws Exception {
        ObjectNode kw = Kw.create();
        StringBuilder expected = new StringBuilder("{");
        for (int i = 0; i < 40; i++) {
            kw.put("k" + i, i);
            expected.append(i == 0 ? "" : ",").append("\"k").append(i).append("\":").append(i);
        }
        expected.append('}');
        assertEquals(40, kw.size());
        assertEquals(expected.toString(), Kw.toJson(kw));
        assertEquals(Kw.parse(expected.toString()), kw);
        for (int i = 0; i < 40; i += 2) kw.remove("k" + i);
        assertEquals(20, kw.size());
        assertEquals(39, kw.get("k39").asInt());
    }

    @Test
    void shouldRemoveThroughIteratorsAndWriteThroughEntries() throws Exception {
        ObjectNode kw = Kw.create();
        kw.put("a", 1).put("b", 2).put("c", 3).put("d", 4);
        kw.retain("a", "c");   // Jackson removes through keySet().retainAll
        assertEquals(List.of("a", "c"), keys(kw));
        kw.without(List.of("a"));
        assertEquals(List.of("c"), keys(kw));
        kw.put("e", 5);
        Iterator<Map.Entry<String, JsonNode>> it = kw.fields();
        Map.Entry<String, JsonNode> first = it.next();
        first.setValue(Kw.MAPPER.getNodeFactory().numberNode(30));
        assertEquals(30, kw.get("c").asInt());
        it.remove();
        assertThrows(IllegalStateException.class, it::remove);
        assertEquals(List.of("e"), keys(kw));
        Iterator<Map.Entry<String, JsonNode>> stale = kw.fields();
        kw.put("f", 6);
        assertThrows(java.util.ConcurrentModificationException.class, stale::next);
    }

    @Test
    void shouldCarryAGbufferAndReleaseIt() {
        ByteBuf b = Unpooled.buffer(8).writeLong(7);
        ObjectNode kw = Kw.withGbuffer(b);
        kw.set(Kw.TEMP, Kw.create().put("channel", "c1"));
        assertSame(b, Kw.gbuffer(kw));
        assertEquals("{\"__temp__\":{\"channel\":\"c1\"}}", Kw.toJson(kw));   // the reference is not written
        Kw.release(kw);
        assertEquals(0, b.refCnt());
        assertNull(Kw.gbuffer(kw));
        assertEquals(1, kw.size());
    }

    @Test
    void shouldShareTheGbufferOfACopyAndSwapItThroughTheKwMethodsOnly() {
        ByteBuf b = Unpooled.buffer(4).writeInt(1);
        ByteBuf other = Unpooled.buffer(4).writeInt(2);
        ObjectNode kw = Kw.withGbuffer(b);
        assertSame(b, Kw.ref(kw, Kw.GBUFFER, ByteBuf.class));
        ObjectNode copy = Kw.copy(kw);
        assertSame(b, Kw.gbuffer(copy), "a copy shares the reference; its owner decides who releases");
        assertNull(Kw.gbuffer(kw.deepCopy()), "a plain deep copy carries JSON only");
        Kw.putRef(kw, Kw.GBUFFER, other);
        assertSame(other, Kw.gbuffer(kw));
        Kw.setGbuffer(kw, b);   // releases the buffer it replaces
        assertEquals(0, other.refCnt());
        assertSame(b, Kw.takeGbuffer(kw));
        assertNull(Kw.takeGbuffer(kw));
        assertEquals("{}", Kw.toJson(kw));
        b.release();
    }
}
