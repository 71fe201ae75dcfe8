// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The walk alone (MdTrqTest and AckScanTest check the scans built on it against Jackson at length). */
class JsonScanTest {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private final JsonScan scan = new JsonScan(16);

    /** Whether the walk takes the whole text as one value, whitespace around it allowed. */
    private boolean whole(byte[] bytes) {
        ByteBuf buf = Unpooled.wrappedBuffer(bytes);
        try {
            assertTrue(scan.load(buf));
            assertEquals(0, buf.readerIndex(), "the buffer is not consumed");
            int end = scan.value(scan.ws(0), 0);
            return end > 0 && scan.ws(end) == bytes.length;
        } finally {
            buf.release();
        }
    }

    private boolean jackson(byte[] bytes) {
        try {
            return MAPPER.readTree(bytes) != null && !MAPPER.readTree(bytes).isMissingNode();
        } catch (Exception e) {
            return false;
        }
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void shouldTakeWhatJacksonTakesAndRefuseWhatItRefuses() {
        String[] good = {"{}", "[]", " {\"a\" : [1, -0.5e+3, true, false, null, \"x\\u00e9\\n\"]} ", "\"é€𝄞\"", "0",
                "{\"a\":{\"b\":{}}}", "-12", "1E9"};
        String[] bad = {"{", "[1,]", "{\"a\":}", "{\"a\" 1}", "01", "1.", "-", "tru", "nul", "\"\\x\"", "\"\\u12g4\"",
                "\"a\u0001\"", "{\"a\":1,}", "[1 2]", "\"open"};
        for (String s : good) {
            assertTrue(jackson(utf8(s)), s);
            assertTrue(whole(utf8(s)), s);
        }
        for (String s : bad) {
            assertFalse(jackson(utf8(s)), s);
            assertFalse(whole(utf8(s)), s);
        }
    }

    @Test
    void shouldRefuseIllFormedUtf8() {
        byte[][] bad = {
            {'"', (byte) 0xc0, (byte) 0xaf, '"'},                 // overlong
            {'"', (byte) 0xed, (byte) 0xa0, (byte) 0x80, '"'},    // a surrogate
            {'"', (byte) 0xf4, (byte) 0x90, (byte) 0x80, (byte) 0x80, '"'},   // above U+10FFFF
            {'"', (byte) 0xe2, (byte) 0x82, '"'},                 // cut short
            {'"', (byte) 0x80, '"'},                              // a lone continuation byte
        };
        for (byte[] b : bad) {
            assertFalse(whole(b), "refused (Jackson takes some of these: the scans then leave them to it)");
        }
    }

    @Test
    void shouldStopAtItsDepth() {
        String ok = "[".repeat(JsonScan.MAX_DEPTH) + "]".repeat(JsonScan.MAX_DEPTH);
        String deep = "[".repeat(JsonScan.MAX_DEPTH + 1) + "]".repeat(JsonScan.MAX_DEPTH + 1);
        assertTrue(whole(utf8(ok)));
        assertFalse(whole(utf8(deep)), "deeper than it vouches for");
    }

    @Test
    void shouldSayWhatFollowsAMember() {
        assertTrue(scan.load(Unpooled.wrappedBuffer(utf8("[1 , 2 ]"))));
        assertEquals(5, scan.next(2, ']'), "the next member, after the comma and whitespace");
        assertEquals(~8, scan.next(6, ']'), "the end: the index after the container");
        assertEquals(0, scan.next(6, '}'), "neither");
        assertEquals(0, scan.next(8, ']'), "nothing left");
    }

    @Test
    void shouldSayWhereAContainerStartsAndAValueFollowsItsName() {
        assertTrue(scan.load(Unpooled.wrappedBuffer(utf8("{ } [ 1] {\"k\" : 2} {\"k\" 2"))));
        assertEquals(~3, scan.first(0, '}'), "empty: the index after it");
        assertEquals(6, scan.first(4, ']'), "the first member");
        assertEquals(-1, scan.key(6), "not a field name");
        assertEquals(13, scan.key(10));
        assertEquals(16, scan.colon(13), "the value, after the colon and whitespace");
        assertEquals(-1, scan.colon(23), "no colon");
        assertEquals(-1, scan.value(-1, 0), "takes what colon answers");
    }

    @Test
    void shouldMatchKeysAndSeeEscapes() {
        byte[] key = JsonScan.ascii("\"ab\"");
        assertTrue(scan.load(Unpooled.wrappedBuffer(utf8("\"ab\" \"a\\u0062\""))));
        assertEquals(4, scan.key(0));
        assertTrue(scan.equalsAt(0, 4, key));
        assertFalse(scan.escaped(0, 4));
        assertEquals(14, scan.string(5));
        assertTrue(scan.escaped(5, 14));
        assertFalse(scan.equalsAt(5, 14, key), "spelt with escapes: not matched as bytes");
    }

    /** Loads {@code bytes} from a direct buffer, which the scan copies into its scratch. */
    private boolean copied(byte[] bytes) {
        ByteBuf buf = Unpooled.directBuffer(bytes.length).writeBytes(bytes);
        try {
            assertTrue(scan.load(buf));
            int end = scan.value(scan.ws(0), 0);
            return end > 0 && scan.ws(end) == bytes.length;
        } finally {
            buf.release();
        }
    }

    @Test
    void shouldKeepSmallScratchAndNotBeConfusedByALargeLoad() {
        byte[] big = new byte[JsonScan.KEEP + 10];
        big[0] = '"';
        java.util.Arrays.fill(big, 1, big.length - 1, (byte) 'x');
        big[big.length - 1] = '"';
        assertTrue(copied(big));
        assertTrue(copied(utf8("[1]")));
        assertArrayEquals(utf8("[1]"), java.util.Arrays.copyOf(scan.a, scan.n));
        byte[] mid = utf8("\"" + "y".repeat(100) + "\"");
        assertTrue(copied(mid));
        assertEquals(128, scan.a.length, "grown to the next power of two, and kept");
    }

    @Test
    void shouldReadAHeapArrayInPlaceAndCopyASlice() {
        byte[] bytes = utf8("[1,2]");
        assertTrue(scan.load(Unpooled.wrappedBuffer(bytes)));
        assertSame(bytes, scan.a, "a heap buffer starting its array is read in place");
        assertTrue(scan.load(bytes, 1, 3));
        assertArrayEquals(utf8("1,2"), java.util.Arrays.copyOf(scan.a, scan.n), "a slice is copied");
    }

    @Test
    void shouldNotLoadAHugeMessage() {
        ByteBuf huge = Unpooled.buffer(JsonScan.MAX_BYTES + 1).writerIndex(JsonScan.MAX_BYTES + 1);
        try {
            assertFalse(scan.load(huge));
        } finally {
            huge.release();
        }
    }

    /** The text of {@code b} when Jackson reads it as one string token and nothing after; null when it does not. */
    private static String jacksonString(byte[] b) {
        try {
            com.fasterxml.jackson.databind.JsonNode n = MAPPER.reader()
                    .with(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS).readTree(b);
            return n != null && n.isTextual() ? n.textValue() : null;
        } catch (java.io.IOException e) {
            return null;
        }
    }

    /** Whether the bytes are well-formed UTF-8 (Jackson lets some ill-formed sequences through; the walk does not). */
    private static boolean strictUtf8(byte[] b) {
        try {
            StandardCharsets.UTF_8.newDecoder().decode(java.nio.ByteBuffer.wrap(b));
            return true;
        } catch (java.nio.charset.CharacterCodingException e) {
            return false;
        }
    }

    @Test
    void shouldWalkRandomStringsAsJacksonReadsAndWritesThem() throws Exception {
        java.util.Random rnd = new java.util.Random(17);
        // every byte that needs a look, and plain ones, at every offset of the eight-byte reads, in strings short
        // (a byte at a time) and long (eight at a time past the first 16 bytes)
        byte[] alphabet = utf8("abcXYZ019 ~\"\\\"\\/nuU0A1fb\u0001\u001f\u007fé€𝄞");
        byte[] extra = {(byte) 0x80, (byte) 0xc0, (byte) 0xed, (byte) 0xf4, (byte) 0xff, 0};
        JsonScan walk = new JsonScan(16);
        int taken = 0;
        for (int round = 0; round < 100_000; round++) {
            int len = 1 + rnd.nextInt(rnd.nextBoolean() ? 12 : 60);
            byte[] b = new byte[len + 2];
            b[0] = '"';
            for (int k = 1; k <= len; k++) {
                int pick = rnd.nextInt(100);
                if (pick < 80) b[k] = (byte) ('a' + rnd.nextInt(26));
                else if (pick < 98) b[k] = alphabet[rnd.nextInt(alphabet.length)];
                else b[k] = extra[rnd.nextInt(extra.length)];
            }
            b[len + 1] = '"';
            walk.load(b, 0, b.length);
            boolean whole = walk.string(0) == b.length;
            String text = jacksonString(b);
            assertEquals(text != null && strictUtf8(b), whole, () -> "bytes " + java.util.Arrays.toString(b));
            if (whole) {
                taken++;
                boolean asJacksonWrites = java.util.Arrays.equals(MAPPER.writeValueAsBytes(text), b);
                // the walk vouches only for what Jackson writes as is; a 4-byte sequence it leaves to Jackson
                if (walk.jacksonForm) assertTrue(asJacksonWrites, () -> "form of " + java.util.Arrays.toString(b));
                if (text.codePoints().allMatch(c -> c < 0x10000)) {
                    assertEquals(asJacksonWrites, walk.jacksonForm, () -> "form of " + java.util.Arrays.toString(b));
                }
                // its bytes are its text, ASCII, written so by Jackson
                boolean ascii = text.chars().allMatch(c -> c < 0x80)
                        && java.util.Arrays.equals(text.getBytes(StandardCharsets.US_ASCII), 0, text.length(), b, 1, len + 1);
                assertEquals(ascii, walk.asciiPlain, () -> "ASCII and plain: " + java.util.Arrays.toString(b));
                if (walk.asciiPlain) assertTrue(asJacksonWrites, () -> "written as it is: " + java.util.Arrays.toString(b));
            }
            int from = rnd.nextInt(b.length);
            int to = from + rnd.nextInt(b.length - from + 1);
            boolean backslash = false;
            for (int k = from + 1; k < to - 1; k++) backslash |= b[k] == '\\';
            assertEquals(backslash, walk.escaped(from, to));
        }
        assertTrue(taken > 20_000, "enough of the strings were JSON to say something: " + taken);
    }

    @Test
    void shouldAgreeWithJacksonOnLongStringsWhoseSpecialByteIsAnywhere() {
        JsonScan walk = new JsonScan(16);
        String[] specials = {"\\\"", "\\\\", "\\n", "\\u00e9", "é", "€", "𝄞", "\u0001", "\\x", "\"", "\u007f"};
        for (String special : specials) {
            for (int at = 0; at < 24; at++) {
                String text = "\"" + "p".repeat(at) + special + "q".repeat(17) + "\"";
                byte[] b = utf8(text);
                walk.load(b, 0, b.length);
                assertEquals(jacksonString(b) != null, walk.string(0) == b.length, text);
            }
        }
    }
}
