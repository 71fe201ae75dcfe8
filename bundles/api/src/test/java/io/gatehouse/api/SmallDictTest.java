// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SmallDictTest {
    @Test
    void shouldBehaveAsALinkedHashMapThroughRandomOperationsAcrossItsSpill() {
        Random r = new Random(17);
        for (int round = 0; round < 300; round++) {
            SmallDict d = new SmallDict();
            LinkedHashMap<String, JsonNode> m = new LinkedHashMap<>();
            int keys = 2 + r.nextInt(SmallDict.SPILL_AT * 2);   // some rounds spill, some do not
            for (int op = 0; op < 400; op++) {
                int which = r.nextInt(keys);
                // keys of lengths 2 to 41: the dict's miss test goes by length
                String k = r.nextInt(20) == 0 ? null : "k" + which + "_".repeat(which % 5 + (which > 20 ? 31 : 0));
                if (k != null && r.nextBoolean()) k = new String(k);   // equal, not the same String
                JsonNode v = r.nextInt(25) == 0 ? null : IntNode.valueOf(r.nextInt(1000));
                switch (r.nextInt(9)) {
                    case 0: case 1: case 2:
                        assertEquals(m.put(k, v), d.put(k, v));
                        break;
                    case 3:
                        assertEquals(m.remove(k), d.remove(k));
                        break;
                    case 4:
                        assertEquals(m.get(k), d.get(k));
                        assertEquals(m.containsKey(k), d.containsKey(k));
                        break;
                    case 5: {   // remove every third entry through both iterators
                        Iterator<Map.Entry<String, JsonNode>> a = m.entrySet().iterator();
                        Iterator<Map.Entry<String, JsonNode>> b = d.entrySet().iterator();
                        int i = 0;
                        while (a.hasNext()) {
                            assertEquals(a.next(), b.next());
                            if (i++ % 3 == 0) {
                                a.remove();
                                b.remove();
                            }
                        }
                        assertEquals(false, b.hasNext());
                        break;
                    }
                    case 6: {   // set values through the entries
                        Iterator<Map.Entry<String, JsonNode>> a = m.entrySet().iterator();
                        Iterator<Map.Entry<String, JsonNode>> b = d.entrySet().iterator();
                        while (a.hasNext()) {
                            IntNode nv = IntNode.valueOf(r.nextInt(1000));
                            assertEquals(a.next().setValue(nv), b.next().setValue(nv));
                        }
                        break;
                    }
                    case 7:
                        if (r.nextInt(10) == 0) {
                            m.clear();
                            d.clear();
                        }
                        break;
                    default:
                        assertEquals(m.putIfAbsent(k, v), d.putIfAbsent(k, v));
                        break;
                }
                assertEquals(m.size(), d.size());
                assertEquals(new ArrayList<>(m.entrySet()), new ArrayList<>(d.entrySet()), "order, round " + round);
                assertEquals(new ArrayList<>(m.keySet()), new ArrayList<>(d.keySet()));
            }
            assertEquals(m, d);
            assertEquals(d, m);
            assertEquals(m.hashCode(), d.hashCode());
        }
    }

    @Test
    void shouldMakeAGbufferKwWriteAndCompareAsAnyDict() throws Exception {
        ObjectNode g = Kw.withGbuffer(Unpooled.buffer(4));
        ObjectNode plain = Kw.create();
        for (ObjectNode kw : List.of(g, plain)) {
            kw.put("a", 1).put("b", "two").putObject("__temp__").put("channel", "c");
            kw.put("a", 3);   // replaced where it is
            kw.remove("b");
            kw.put("b", true);
            for (int i = 0; i < 40; i++) kw.put("x" + i, i);   // past the spill
            kw.remove("x7");
        }
        assertEquals(Kw.toJson(plain), Kw.toJson(g));
        assertEquals(plain, g);
        assertEquals(g, plain);
        assertEquals(plain.hashCode(), g.hashCode());
        g.put("x8", -1);
        assertNotEquals(plain, g);
        assertTrue(Kw.toJson(g).startsWith("{\"a\":3,\"__temp__\":{\"channel\":\"c\"},\"b\":true,\"x0\":0,"),
                Kw.toJson(g));
        Kw.release(g);
    }
}
