// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/** A record's bytes are Jackson's compact JSON, whichever of the two writers wrote them. */
class RecordJsonEncodeTest {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private final RecordJson json = new RecordJson();

    private void same(ObjectNode kw) throws Exception {
        byte[] jackson = Kw.MAPPER.writeValueAsBytes(Kw.withoutRefs(kw));
        int len = json.encode(kw);
        assertArrayEquals(jackson, Arrays.copyOf(json.bytes(), len), kw::toString);
    }

    @Test
    void writesWhatJacksonWrites() throws Exception {
        ObjectNode kw = F.objectNode();
        kw.put("id", "m1-5").put("n", 7).put("l", 1L << 40).put("neg", -3).put("t", true).put("f", false).putNull("z");
        kw.put("big", new BigInteger("123456789012345678901234567890"));
        kw.put("esc", "q\"b\\s/\b\t\n\f\r\u0000\u001f\u007f");
        kw.put("utf", "\u00e9t\u00e9 \u20ac \uD83D\uDE00 \u0800\uffff");
        kw.put("", "");
        kw.putArray("a").add(1).add("x").addNull().addArray();
        kw.putObject("o").putObject("p").put("q", 1);
        same(kw);
        // what Jackson writes itself: doubles, decimals, binary, lone surrogates, references (left out)
        same(F.objectNode().put("d", 1.5).put("x", 1));
        same(F.objectNode().put("d", new BigDecimal("1.50")));
        same(F.objectNode().put("b", new byte[] {1, 2, 3}));
        same(F.objectNode().put("s", "a\uD800b"));
        ObjectNode ref = F.objectNode().put("x", 1);
        Kw.putRef(ref, "gobj", new Object());
        same(ref);
    }

    @Test
    void writesRandomDictsAsJacksonDoes() throws Exception {
        Random rnd = new Random(17);
        for (int i = 0; i < 3000; i++) same((ObjectNode) random(rnd, 0, true));
    }

    static JsonNode random(Random rnd, int depth, boolean object) {
        if (object || (depth < 4 && rnd.nextInt(5) == 0)) {
            ObjectNode o = F.objectNode();
            for (int k = rnd.nextInt(5); k > 0; k--) o.set(text(rnd), random(rnd, depth + 1, false));
            return o;
        }
        if (depth < 4 && rnd.nextInt(6) == 0) {
            ArrayNode a = F.arrayNode();
            for (int k = rnd.nextInt(4); k > 0; k--) a.add(random(rnd, depth + 1, false));
            return a;
        }
        switch (rnd.nextInt(8)) {
            case 0: return F.numberNode(rnd.nextInt());
            case 1: return F.numberNode(rnd.nextLong());
            case 2: return F.numberNode(new BigInteger(100, rnd).negate());
            case 3: return F.numberNode(rnd.nextDouble() * 1e6);
            case 4: return F.booleanNode(rnd.nextBoolean());
            case 5: return F.nullNode();
            default: return F.textNode(text(rnd));
        }
    }

    static String text(Random rnd) {
        StringBuilder b = new StringBuilder();
        for (int k = rnd.nextInt(12); k > 0; k--) {
            switch (rnd.nextInt(6)) {
                case 0: b.append((char) rnd.nextInt(0x20)); break;
                case 1: b.append((char) (0x80 + rnd.nextInt(0x780))); break;
                case 2: b.append((char) (0x800 + rnd.nextInt(0xd000))); break;
                case 3: b.appendCodePoint(0x10000 + rnd.nextInt(0xfffff)); break;
                default: b.append((char) (0x20 + rnd.nextInt(0x60)));
            }
        }
        return b.toString();
    }
}
