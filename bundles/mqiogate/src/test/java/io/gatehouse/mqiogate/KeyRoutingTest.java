// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.junit.jupiter.api.Test;

import java.math.BigInteger;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The key functions alone: the mappings a deployment's keys depend on. */
class KeyRoutingTest {
    private static final JsonNodeFactory F = JsonNodeFactory.instance;

    @Test
    void shouldMapLastDigitsAsDecimalOrHexadecimalModuloTheChildren() {
        assertEquals(0, KeyRouting.lastdigits("dev-0042", 1, 2));
        assertEquals(1, KeyRouting.lastdigits("dev-0043", 1, 2));
        assertEquals(3, KeyRouting.lastdigits("a1b2c3", 1, 4));
        assertEquals(1, KeyRouting.lastdigits("1234", 1, 3));
        assertEquals(2, KeyRouting.lastdigits("12ab", 1, 3), "0xb = 11, 11 mod 3 = 2");
        assertEquals(1, KeyRouting.lastdigits("07", 2, 3));
        assertEquals(0xc3 % 7, KeyRouting.lastdigits("a1b2c3", 2, 7), "c3 is read as hexadecimal");
        assertEquals(0, KeyRouting.lastdigits("zz", 2, 3), "no hex digit: 0");
        assertEquals(1, KeyRouting.lastdigits("x1g", 2, 3), "hex prefix of 1g is 1");
        assertEquals(2, KeyRouting.lastdigits("42", 10, 5), "fewer characters than digits: all of them");
        assertEquals(0, KeyRouting.lastdigits("a-5", 2, 3), "negative: first child");
        assertEquals(new BigInteger("123456789012345678901234567890").mod(BigInteger.valueOf(7)).intValue(),
                KeyRouting.lastdigits("123456789012345678901234567890", 40, 7), "long keys do not overflow");
    }

    @Test
    void shouldNameWhyAKeyCannotBeUsedByLastdigits() {
        assertEquals("path NOT FOUND", KeyRouting.lastdigitsFault(null));
        assertEquals("path NOT FOUND", KeyRouting.lastdigitsFault(F.nullNode()));
        assertEquals("path MUST BE a json str", KeyRouting.lastdigitsFault(F.numberNode(5)));
        assertEquals("key value WITHOUT LENGTH", KeyRouting.lastdigitsFault(F.textNode("")));
        assertNull(KeyRouting.lastdigitsFault(F.textNode("dev-1")));
    }

    @Test
    void shouldTakeAStringOrAnIntegralNumberAsTheConsistentKey() {
        assertEquals("dev-1", KeyRouting.consistentKey(F.textNode("dev-1")));
        assertEquals("12345", KeyRouting.consistentKey(F.numberNode(12345)));
        assertNull(KeyRouting.consistentKey(F.textNode("")));
        assertNull(KeyRouting.consistentKey(F.numberNode(1.5)));
        assertNull(KeyRouting.consistentKey(null));
    }

    @Test
    void shouldSpreadConsistentKeysEvenlyAndMoveAboutOneNthWhenAChildIsAdded() {
        List<String> four = List.of("n0", "n1", "n2", "n3");
        List<String> five = List.of("n0", "n1", "n2", "n3", "n4");
        int keys = 20000;
        int[] count = new int[4];
        int moved = 0;
        for (int k = 0; k < keys; k++) {
            String key = "dev-" + k;
            int a = KeyRouting.rendezvous(key, four);
            count[a]++;
            int b = KeyRouting.rendezvous(key, five);
            if (b != a) {
                moved++;
                assertEquals(4, b, "a key moves only to the new child");
            }
        }
        for (int c : count) assertTrue(c > keys / 4 * 0.9 && c < keys / 4 * 1.1, "balanced: " + c);
        double f = moved / (double) keys;
        assertTrue(f > 0.17 && f < 0.23, "about 1/5 moved: " + f);
        // the mapping depends on the children's names, not their order
        List<String> reordered = List.of("n3", "n1", "n0", "n2");
        for (int k = 0; k < 1000; k++) {
            String key = "dev-" + k;
            assertEquals(four.get(KeyRouting.rendezvous(key, four)), reordered.get(KeyRouting.rendezvous(key, reordered)));
        }
    }

    @Test
    void shouldKeepTheDocumentedConsistentMapping() {
        // The vectors of docs/GATES.md: a change of the hash would move every key of every deployment.
        List<String> names = List.of("output-0", "output-1", "output-2");
        StringBuilder sb = new StringBuilder();
        for (String key : List.of("dev-0042", "dev-0043", "sensor-17", "a1b2c3")) {
            sb.append(key).append("->").append(names.get(KeyRouting.rendezvous(key, names))).append(' ');
        }
        assertEquals("dev-0042->output-0 dev-0043->output-1 sensor-17->output-0 a1b2c3->output-2", sb.toString().trim());
    }
}
