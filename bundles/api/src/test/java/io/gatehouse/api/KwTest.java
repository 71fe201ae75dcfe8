package io.gatehouse.api;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KwTest {

    @Test
    void shouldReadAndWriteBackquotePaths() throws Exception {
        ObjectNode kw = Kw.parse("{\"__md_trq__\": {\"__msg_rowid__\": 7, \"t\": \"x\"}}");
        assertEquals(7, Kw.getLong(kw, "__md_trq__`__msg_rowid__", -1));
        assertEquals("x", Kw.getString(kw, "__md_trq__`t", null));
        assertEquals(-1, Kw.getLong(kw, "__md_trq__`missing", -1));
        assertNull(Kw.get(kw, "nope`deeper"));
        Kw.set(kw, "a`b`c", JsonNodeFactory.instance.numberNode(3));
        assertEquals(3, Kw.getLong(kw, "a`b`c", 0));
        assertEquals(3, Kw.delete(kw, "a`b`c").asInt());
        assertNull(Kw.get(kw, "a`b`c"));
    }

    /**
     * Paths read over and over (a plain one is remembered as plain): a remembered path still reads its own key,
     * a path with a backquote is still walked, and a value that is no dict has no key, however often asked.
     */
    @Test
    void shouldReadTheSamePathsAgainAsTheFirstTime() throws Exception {
        ObjectNode kw = Kw.parse("{\"a\": {\"b\": 1}, \"a`b\": 2, \"c\": 3}");
        String nested = new String("a`b".toCharArray());   // another instance: not a remembered one
        for (int round = 0; round < 3; round++) {
            assertEquals(1, Kw.getLong(kw, "a`b", -1));
            assertEquals(1, Kw.getLong(kw, nested, -1));
            assertEquals(3, Kw.getLong(kw, "c", -1));
            assertNull(Kw.get(kw, "missing"));
            assertNull(Kw.get(kw.get("c"), "c"));
            assertNull(Kw.get(JsonNodeFactory.instance.arrayNode().add(1), "c"));
            // many plain paths sharing few slots: each still reads its own key
            for (int k = 0; k < 2000; k++) {
                String key = "k" + k;
                assertNull(Kw.get(kw, key));
                kw.put(key, k);
                assertEquals(k, Kw.getLong(kw, key, -1));
                kw.remove(key);
            }
        }
    }

    @Test
    void shouldConvertLenientlyWhereYunetaDoes() throws Exception {
        ObjectNode kw = Kw.parse("{\"n\": \"42\", \"b\": 1, \"s\": \"true\", \"bad\": \"x\"}");
        assertEquals(42, Kw.getLong(kw, "n", 0));
        assertTrue(Kw.getBool(kw, "b", false));
        assertTrue(Kw.getBool(kw, "s", false));
        assertEquals(5, Kw.getLong(kw, "bad", 5));
    }

    @Test
    void shouldKeepBuffersOutOfJsonAndReleaseThem() {
        ByteBuf b = Unpooled.copiedBuffer("hello", StandardCharsets.UTF_8);
        ObjectNode kw = Kw.withGbuffer(b);
        kw.put("a", 1);
        assertSame(b, Kw.gbuffer(kw));
        assertEquals("{\"a\":1}", Kw.toJson(kw));
        Kw.release(kw);
        assertEquals(0, b.refCnt());
        assertNull(Kw.gbuffer(kw));
    }

    @Test
    void shouldKeepARecordsIndexOutOfTheDictOfABufferKwAndInItsCopies() {
        int[] fields = {1};
        ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer("{\"a\":1}", StandardCharsets.UTF_8));
        kw.put(Kw.JSON_RECORD, true);
        Kw.putRef(kw, Kw.RECORD_FIELDS, fields);
        assertSame(fields, Kw.ref(kw, Kw.RECORD_FIELDS, int[].class));
        assertNull(Kw.ref(kw, Kw.RECORD_FIELDS, String.class));
        assertEquals(1, kw.size(), "not a dict entry: " + kw);
        assertEquals("{\"__json_record__\":true}", Kw.toJson(kw));
        assertSame(fields, Kw.ref(Kw.copy(kw), Kw.RECORD_FIELDS, int[].class), "a copy keeps the hint");
        // any other kw holds it as a reference in its dict
        ObjectNode plain = Kw.create();
        Kw.putRef(plain, Kw.RECORD_FIELDS, fields);
        assertSame(fields, Kw.ref(plain, Kw.RECORD_FIELDS, int[].class));
        Kw.release(kw);
    }

    @Test
    void shouldRemoveMetadataKeysRecursivelyButKeepThreeUnderscores() throws Exception {
        ObjectNode kw = Kw.parse("{\"id\":\"1\",\"__x__\":1,\"_y\":2,\"___z\":3,\"d\":{\"__w__\":4}}");
        ObjectNode out = Kw.withoutMetadata(kw);
        assertEquals("{\"id\":\"1\",\"_y\":2,\"___z\":3,\"d\":{}}", Kw.toJson(out));
        assertTrue(kw.has("__x__"), "the caller's kw is not altered");
        assertFalse(Kw.isMetadataKey("___z"));
    }
}
