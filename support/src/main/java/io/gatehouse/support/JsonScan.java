// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.TextNode;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The byte walk of a JSON message with no tree, as strict as Jackson's default parser reads it: strings with their
 * escapes and UTF-8, numbers, literals, nesting up to {@value #MAX_DEPTH}. The scans that read a few fields of a
 * message from its bytes (C_RELAY's {@code MdTrq}, the {@code AckScan}s of C_QIOGATE and C_PROT_HTTP_SR, C_MQIOGATE's
 * {@code RecordKey}, trqueue's {@code RecordTm}) extend it and keep only their own part: the top-level object and
 * the fields they take.
 *
 * <p>{@link #load} copies the readable bytes of a buffer into {@link #a} (a scratch array kept between loads, up to
 * {@value #KEEP} bytes; larger ones are not kept), or reads a heap array in place when the bytes start it; that
 * array, whatever its size, is then referenced until the next load, so a scan's later reads of {@link #a} (a dict
 * built, an ack started) see the caller's bytes, which must not change before they are done. Each walk method takes
 * the index of a token's first byte in {@code a[0, n)} and answers the index after it, or -1 when the bytes are not
 * JSON the walk vouches for. No method allocates, but {@link #load} when a message is larger than the scratch.
 *
 * <p>Not thread safe: one per gclass instance, used on its core loop.
 */
public class JsonScan {
    /** Deeper nesting is not vouched for (Jackson's own limit is larger). */
    public static final int MAX_DEPTH = 64;
    /** Scratch arrays up to this size are kept between loads. */
    public static final int KEEP = 64 * 1024;
    /** Larger messages are not loaded (they go to Jackson, whose own limits then apply). */
    public static final int MAX_BYTES = 16 * 1024 * 1024;
    private static final int MAX_NUMBER = 100;
    /** Jackson's default limit of a field name's length (longer ones are left to it, and it refuses them). */
    private static final int MAX_NAME = 50_000;

    /** {@link #field}: the object has no field of that name. */
    public static final int ABSENT = -1;
    /** {@link #field}: the bytes are not an object the walk reads. */
    public static final int UNSURE = -2;

    /** Eight bytes of {@link #a} read as one little-endian long: the first byte is the lowest. */
    private static final VarHandle EIGHT_BYTES = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final long ONES = 0x0101010101010101L;
    private static final long HIGH_BITS = 0x8080808080808080L;
    private static final long QUOTES = ONES * '"';
    private static final long BACKSLASHES = ONES * '\\';
    /** Bytes below a space are control characters, which a string may not hold unescaped. */
    private static final long SPACES = ONES * ' ';
    /** A string this many bytes long so far is walked eight bytes at a time from there on. */
    private static final int LONG_STRING = 16;

    private static final byte[] TRUE = ascii("true");
    private static final byte[] FALSE = ascii("false");
    private static final byte[] NULL = ascii("null");

    private byte[] scratch;
    /** The bytes of the last {@link #load}, in {@code [0, n)}. */
    protected byte[] a;
    /** The length of the last {@link #load}. */
    protected int n;
    /**
     * After {@link #string} (and {@link #key}): the token is what Jackson writes for its text, so a copy of its bytes
     * is what it would write: escapes only {@code \" \\ \b \t \n \f \r} and {@code \\u00XX} (uppercase) for the
     * other control characters, and no 4-byte UTF-8 sequence (Jackson writes those its own way).
     */
    protected boolean jacksonForm;
    /**
     * After {@link #string} (and {@link #key}): the token has no escape and only ASCII, so its bytes are its text
     * and what Jackson writes for it.
     */
    protected boolean asciiPlain;
    /** The last name {@link #field(String)} looked for, and its bytes. */
    private String fieldName;
    private byte[] fieldBytes;

    /** A scan whose first scratch array has {@code scratchSize} bytes. */
    public JsonScan(int scratchSize) {
        scratch = new byte[scratchSize];
        a = scratch;
    }

    /**
     * Loads the readable bytes of {@code buf} (not consumed) into {@link #a}; false, with nothing loaded but
     * {@link #n}, when there are more than {@value #MAX_BYTES}. A heap buffer whose bytes start its array is read
     * in place (the walk only reads); any other is copied.
     */
    public final boolean load(ByteBuf buf) {
        if (buf.hasArray()) return load(buf.array(), buf.arrayOffset() + buf.readerIndex(), buf.readableBytes());
        if (!reserve(buf.readableBytes())) return false;
        buf.getBytes(buf.readerIndex(), a, 0, n);
        return true;
    }

    /** {@link #load(ByteBuf)} of {@code bytes[off, off + len)}: read in place when {@code off} is 0. */
    public final boolean load(byte[] bytes, int off, int len) {
        if (off == 0 && len <= MAX_BYTES) {
            a = bytes;
            n = len;
            return true;
        }
        if (!reserve(len)) return false;
        System.arraycopy(bytes, off, a, 0, len);
        return true;
    }

    /** Points {@link #a} at an array of at least {@code len} bytes (the scratch when it fits) and sets {@link #n}. */
    private boolean reserve(int len) {
        n = len;
        if (n > MAX_BYTES) return false;
        if (n <= scratch.length) {
            a = scratch;
        } else if (n <= KEEP) {
            scratch = new byte[Math.min(KEEP, Integer.highestOneBit(n - 1) << 1)];
            a = scratch;
        } else {
            a = new byte[n];
        }
        return true;
    }

    /** {@link #field(byte[])} of {@code name} as Jackson writes it; the last name's bytes are kept. */
    public final int field(String name) {
        return field(quotedField(name));
    }

    /** {@link #quoted} of {@code name}, kept for the next look-up of the same name. */
    private byte[] quotedField(String name) {
        if (!name.equals(fieldName)) {
            fieldBytes = quoted(name);
            fieldName = name;
        }
        return fieldBytes;
    }

    /**
     * The index of the value of the top-level field whose name, as Jackson writes it, is {@code quotedName}
     * ({@link #quoted}), in the object loaded; {@link #ABSENT} when the object has no such field; {@link #UNSURE}
     * when the bytes are not an object this walk reads (the caller asks Jackson). The first field of that name is
     * taken: for the compact JSON Jackson writes for a dict (a record) there is only one.
     */
    public final int field(byte[] quotedName) {
        int i = ws(0);
        if (i >= n || a[i] != '{') return UNSURE;
        i = first(i, '}');
        if (i <= 0) return ABSENT;   // {}
        while (true) {
            int ks = i;
            i = key(i);
            if (i < 0) return UNSURE;
            boolean hit = equalsAt(ks, i, quotedName);
            i = colon(i);
            if (i < 0) return UNSURE;
            if (hit) return i;
            i = value(i, 1);
            if (i < 0) return UNSURE;
            i = next(i, '}');
            if (i <= 0) return i == 0 ? UNSURE : ABSENT;   // 0: broken; else the object ended without the field
        }
    }

    /**
     * The value of the top-level field {@code name} of the loaded object: its first index, with the index after it in
     * {@link #valueEnd} (-1 when the walk does not take the value); {@link #ABSENT} or {@link #UNSURE} as for
     * {@link #field(String)}. {@code fields}, the record's member index ({@code Kw.RECORD_FIELDS}) or null, finds the
     * field with no walk; an index that does not fit the bytes is not used.
     */
    public final int fieldValue(String name, int[] fields) {
        int i = fields == null ? UNSURE : indexedField(quotedField(name), fields);
        if (i == UNSURE) {   // no index, or one that does not fit: the walk
            i = field(name);
            valueEnd = i >= 0 ? value(i, 1) : -1;
        }
        return i;
    }

    /** After {@link #fieldValue}: the index after the value found. */
    protected int valueEnd;

    /**
     * {@link #field(byte[])} looked up in a record's member index (where each key starts, counted from the record's
     * first byte, which {@link #load} puts at index 0): the names are compared, the values not read. In a compact
     * record the value runs from after the key's colon to the comma before the next key, or to the closing brace; it
     * ends at {@link #valueEnd}. {@link #UNSURE} when the index does not fit the bytes loaded.
     */
    private int indexedField(byte[] quotedName, int[] fields) {
        int len = quotedName.length;
        int last = fields.length - 1;
        if (last < 0 ? n != 2 : fields[0] != 1) return UNSURE;   // the first key follows the opening brace
        for (int k = 0; k <= last; k++) {
            int ks = fields[k];
            int next = k < last ? fields[k + 1] : n;   // the next key, or one past the closing brace
            if (ks < 1 || ks >= next || next > n || a[ks] != '"' || a[next - 1] != (k < last ? ',' : '}')) {
                return UNSURE;
            }
            // a name's bytes end with its closing quote: a key that starts with them is that name
            if (ks + len + 1 < next - 1 && a[ks + len] == ':' && equalsAt(ks, ks + len, quotedName)) {
                valueEnd = next - 1;
                return ks + len + 1;
            }
        }
        return ABSENT;
    }

    /**
     * The node of the value in [from, to) as Jackson reads it: a string without escapes decoded here, anything
     * else by Jackson; null when Jackson refuses it.
     */
    public final JsonNode node(int from, int to) {
        if (a[from] == '"' && !escaped(from, to)) {
            return TextNode.valueOf(new String(a, from + 1, to - from - 2, StandardCharsets.UTF_8));
        }
        try {
            return Kw.MAPPER.readTree(a, from, to - from);
        } catch (IOException e) {
            return null;
        }
    }

    /** A field name as Jackson writes it, quotes and escapes included: what {@link #field} looks for. */
    public static byte[] quoted(String name) {
        try {
            return Kw.MAPPER.writeValueAsBytes(name);
        } catch (IOException e) {
            throw new IllegalStateException("a String is always written", e);
        }
    }

    /**
     * Any value at {@code i}, nested {@code depth} deep (its containers count one more); -1 when {@code i} is -1,
     * so it takes what {@link #colon} answers.
     */
    public final int value(int i, int depth) {
        if (i < 0 || i >= n) return -1;
        byte c = a[i];
        switch (c) {
            case '"': return string(i);
            case '{': return object(i, depth + 1);
            case '[': return array(i, depth + 1);
            case 't': return literal(i, TRUE);
            case 'f': return literal(i, FALSE);
            case 'n': return literal(i, NULL);
            default: return c == '-' || (c >= '0' && c <= '9') ? number(i) : -1;
        }
    }

    /** An object at {@code i} that is {@code depth} deep. */
    public final int object(int i, int depth) {
        if (depth > MAX_DEPTH) return -1;
        i = first(i, '}');
        if (i <= 0) return ~i;
        while (true) {
            i = key(i);
            if (i < 0) return -1;
            i = value(colon(i), depth);
            if (i < 0) return -1;
            i = next(i, '}');
            if (i <= 0) return ~i;
        }
    }

    /** An array at {@code i} that is {@code depth} deep. */
    public final int array(int i, int depth) {
        if (depth > MAX_DEPTH) return -1;
        i = first(i, ']');
        if (i <= 0) return ~i;
        while (true) {
            i = value(i, depth);
            if (i < 0) return -1;
            i = next(i, ']');
            if (i <= 0) return ~i;
        }
    }

    /**
     * After a member of a container that ends with {@code close}: the index of the next member (after the comma
     * and whitespace, a positive number), or {@code ~end} (not positive) when the container ends there, {@code end}
     * being the index after it, or {@code ~(-1)} (0) when neither follows. Callers loop while it is positive and
     * answer {@code ~next} otherwise: the end, or -1.
     */
    public final int next(int i, char close) {
        i = ws(i);
        if (i >= n) return 0;
        if (a[i] == ',') return ws(i + 1);
        return a[i] == close ? ~(i + 1) : 0;
    }

    /**
     * After the opening bracket at {@code i} of a container that ends with {@code close}: the index of its first
     * member (a positive number), or {@code ~end} when it is empty, {@code end} being the index after it. Callers
     * answer {@code ~first} when it is not positive.
     */
    public final int first(int i, char close) {
        i = ws(i + 1);
        return i < n && a[i] == close ? ~(i + 1) : i;
    }

    /** After a field name that ends before {@code i}: the index of its value (after the colon), or -1. */
    public final int colon(int i) {
        i = ws(i);
        if (i >= n || a[i] != ':') return -1;
        return ws(i + 1);
    }

    /** A field name at {@code i}: a string, not longer than Jackson takes. */
    public final int key(int i) {
        if (i >= n || a[i] != '"') return -1;
        int end = string(i);
        return end - i > MAX_NAME ? -1 : end;
    }

    /**
     * A string token: escapes as JSON has them, no control character, valid UTF-8. Also says, in
     * {@link #jacksonForm}, whether the token is what Jackson writes for its text.
     */
    public final int string(int i) {
        boolean plain = true;
        boolean ascii = true;
        int k = i + 1;
        // Names and short values end within a few bytes, where a byte at a time is cheapest; past LONG_STRING bytes
        // (a log line, a payload) the walk reads eight at a time to each byte it must look at. The one bound check
        // per byte is the loop's own.
        int bytewiseTo = Math.min(n, k + LONG_STRING);
        while (true) {
            if (k >= bytewiseTo) {
                if (k >= n) return -1;
                k = plainRun(k);
                if (k >= n) return -1;
                // the byte found, then eight at a time again; with fewer than eight left, a byte at a time
                bytewiseTo = k + 8 <= n ? k + 1 : n;
            }
            int c = a[k];
            if (c == '"') {
                jacksonForm = plain;
                asciiPlain = ascii;
                return k + 1;
            }
            if (c == '\\') {
                ascii = false;
                if (++k >= n) return -1;
                int e = a[k];
                if (e == 'u') {
                    if (k + 4 >= n) return -1;
                    for (int h = 1; h <= 4; h++) {
                        if (!isHex(a[k + h])) return -1;
                    }
                    if (plain) plain = writtenAsUnicodeEscape(k + 1);
                    k += 5;
                } else if (e == '"' || e == '\\' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                    k++;
                } else if (e == '/') {
                    plain = false;
                    k++;
                } else {
                    return -1;
                }
            } else if (c >= 0x20) {
                k++;
            } else if (c >= 0) {
                return -1;   // a control character
            } else {
                ascii = false;
                if ((c & 0xff) >= 0xf0) plain = false;
                k = utf8(k);
                if (k < 0) return -1;
            }
        }
    }

    /**
     * From {@code k} (with eight bytes or more left), the index of the first byte the string walk must look at,
     * eight bytes at a time over printable ASCII but quote and backslash; where fewer than eight are left, the index
     * the byte-at-a-time walk goes on from ({@link #n} when none is left).
     */
    private int plainRun(int k) {
        while (k + 8 <= n) {
            long look = needLook((long) EIGHT_BYTES.get(a, k));
            if (look != 0) return k + (Long.numberOfTrailingZeros(look) >>> 3);
            k += 8;
        }
        return k;
    }

    /**
     * The high bit of each of the eight bytes of {@code x} that the string walk must look at: a quote, a backslash,
     * a control character, or a byte of a multi-byte UTF-8 sequence. Only the lowest bit set is sure to be such a
     * byte (a borrow of the subtractions can mark bytes above it), which is all the walk takes from it.
     */
    private static long needLook(long x) {
        long quote = x ^ QUOTES;
        long backslash = x ^ BACKSLASHES;
        return ((quote - ONES) & ~quote | (backslash - ONES) & ~backslash | (x - SPACES) & ~x | x) & HIGH_BITS;
    }

    /**
     * The four hex digits of a {@code \\u} escape at {@code h}: whether Jackson writes that character so (a control
     * character, uppercase hex, not one it writes as {@code \b \t \n \f \r}).
     */
    private boolean writtenAsUnicodeEscape(int h) {
        if (a[h] != '0' || a[h + 1] != '0') return false;
        byte hi = a[h + 2];
        byte lo = a[h + 3];
        if (hi != '0' && hi != '1') return false;
        if (!((lo >= '0' && lo <= '9') || (lo >= 'A' && lo <= 'F'))) return false;
        int v = (hi - '0') * 16 + (lo <= '9' ? lo - '0' : lo - 'A' + 10);
        return !(v == 8 || v == 9 || v == 10 || v == 12 || v == 13);
    }

    /** A multi-byte UTF-8 sequence at {@code k} (well formed: no overlong form, no surrogate, at most U+10FFFF). */
    private int utf8(int k) {
        int b0 = a[k] & 0xff;
        int len;
        int min2;
        int max2;
        if (b0 >= 0xc2 && b0 <= 0xdf) {
            len = 2; min2 = 0x80; max2 = 0xbf;
        } else if (b0 >= 0xe0 && b0 <= 0xef) {
            len = 3;
            min2 = b0 == 0xe0 ? 0xa0 : 0x80;
            max2 = b0 == 0xed ? 0x9f : 0xbf;
        } else if (b0 >= 0xf0 && b0 <= 0xf4) {
            len = 4;
            min2 = b0 == 0xf0 ? 0x90 : 0x80;
            max2 = b0 == 0xf4 ? 0x8f : 0xbf;
        } else {
            return -1;
        }
        if (k + len > n) return -1;
        int b1 = a[k + 1] & 0xff;
        if (b1 < min2 || b1 > max2) return -1;
        for (int j = 2; j < len; j++) {
            if ((a[k + j] & 0xc0) != 0x80) return -1;
        }
        return k + len;
    }

    /** A number as JSON has it: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? of at most 100 bytes. */
    public final int number(int i) {
        int k = i;
        if (a[k] == '-') k++;
        if (k >= n) return -1;
        if (a[k] == '0') {
            k++;
        } else if (isDigit(a[k])) {
            while (k < n && isDigit(a[k])) k++;
        } else {
            return -1;
        }
        if (k < n && a[k] == '.') {
            k++;
            if (k >= n || !isDigit(a[k])) return -1;
            while (k < n && isDigit(a[k])) k++;
        }
        if (k < n && (a[k] == 'e' || a[k] == 'E')) {
            k++;
            if (k < n && (a[k] == '+' || a[k] == '-')) k++;
            if (k >= n || !isDigit(a[k])) return -1;
            while (k < n && isDigit(a[k])) k++;
        }
        return k - i > MAX_NUMBER ? -1 : k;
    }

    private int literal(int i, byte[] word) {
        if (i + word.length > n) return -1;
        for (int j = 1; j < word.length; j++) {
            if (a[i + j] != word[j]) return -1;
        }
        return i + word.length;
    }

    /** The index of the first byte at or after {@code i} that is not JSON whitespace ({@link #n} at the end). */
    public final int ws(int i) {
        while (i < n && isWs(a[i])) i++;
        return i;
    }

    /** Whether the string token in [from, to) has an escape. */
    public final boolean escaped(int from, int to) {
        int k = from + 1;
        int end = to - 1;
        for (; k + 8 <= end; k += 8) {
            long backslash = (long) EIGHT_BYTES.get(a, k) ^ BACKSLASHES;
            if (((backslash - ONES) & ~backslash & HIGH_BITS) != 0) return true;   // a zero byte: a backslash
        }
        for (; k < end; k++) {
            if (a[k] == '\\') return true;
        }
        return false;
    }

    /** Whether the bytes in [from, to) are {@code word}. */
    public final boolean equalsAt(int from, int to, byte[] word) {
        return to - from == word.length && Arrays.equals(a, from, to, word, 0, word.length);
    }

    public static boolean isWs(byte c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
    }

    public static boolean isDigit(byte c) {
        return c >= '0' && c <= '9';
    }

    public static boolean isHex(byte c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    }

    /** The ASCII bytes of {@code s} (a key to match with {@link #equalsAt}, quotes included). */
    public static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
