// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import com.fasterxml.jackson.databind.JsonNode;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Which child a key goes to: pure functions of the key and the children, pinned by tests, since changing any of
 * them would move the keys of every deployment.
 *
 * <ul>
 *   <li>{@code lastdigits} (Yuneta's): the last {@code digits} characters of the key, read as decimal if they are
 *       all digits, else as hexadecimal (the longest valid prefix, C {@code strtol} style; nothing valid = 0),
 *       modulo the number of children; a negative number goes to the first child.</li>
 *   <li>{@code consistent} (Gatehouse's): rendezvous (highest random weight) hashing by child name,
 *       {@code score(child) = fmix64(FNV-1a-64(UTF-8(child name) + 0x00 + UTF-8(key)))} compared unsigned, the
 *       highest score wins (ties: the earlier child). Adding a child moves only the keys that now score highest on
 *       it (about 1/(N+1) of them); removing or reordering children moves only the removed child's keys.</li>
 * </ul>
 */
final class KeyRouting {
    private KeyRouting() {}

    /**
     * Why a key value cannot be used by {@code lastdigits} (Yuneta's log texts), or null when it can: a missing
     * path, a value that is not a string, an empty string.
     */
    static String lastdigitsFault(JsonNode v) {
        if (v == null || v.isNull() || v.isMissingNode()) return "path NOT FOUND";
        if (!v.isTextual()) return "path MUST BE a json str";
        if (v.asText().isEmpty()) return "key value WITHOUT LENGTH";
        return null;
    }

    /** The child index of a non-empty key value with {@code lastdigits}. */
    static int lastdigits(String value, int digits, int n) {
        String tail = value.substring(Math.max(0, value.length() - digits));
        if (tail.length() <= 18 && allDecimal(tail)) {
            return (int) (Long.parseLong(tail) % n);   // fits a long: the usual case, no BigInteger per message
        }
        BigInteger x = allDecimal(tail) ? new BigInteger(tail) : hexPrefix(tail);
        if (x.signum() < 0) return 0;
        return x.mod(BigInteger.valueOf(n)).intValue();
    }

    private static boolean allDecimal(String s) {
        if (s.isEmpty()) return false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') return false;
        }
        return true;
    }

    /** C strtol(s, NULL, 16): leading blanks, a sign, an optional 0x, then hex digits while valid; none = 0. */
    static BigInteger hexPrefix(String s) {
        int i = 0;
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        boolean neg = false;
        if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) {
            neg = s.charAt(i) == '-';
            i++;
        }
        if (i + 2 < s.length() && s.charAt(i) == '0' && (s.charAt(i + 1) == 'x' || s.charAt(i + 1) == 'X')
                && hex(s.charAt(i + 2)) >= 0) {
            i += 2;
        }
        int start = i;
        while (i < s.length() && hex(s.charAt(i)) >= 0) i++;
        if (i == start) return BigInteger.ZERO;
        BigInteger v = new BigInteger(s.substring(start, i), 16);
        return neg ? v.negate() : v;
    }

    private static int hex(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }

    /** The key of {@code consistent}: a non-empty string, or an integral number as its decimal text; else null. */
    static String consistentKey(JsonNode v) {
        if (v == null || !(v.isTextual() || v.isIntegralNumber())) return null;
        String s = v.asText();
        return s.isEmpty() ? null : s;
    }

    /** Rendezvous hashing: the index of the name with the highest score for the key (ties: the first). */
    static int rendezvous(String key, List<String> names) {
        byte[] k = key.getBytes(StandardCharsets.UTF_8);
        int best = 0;
        long bestScore = 0;
        for (int i = 0; i < names.size(); i++) {
            long s = score(names.get(i).getBytes(StandardCharsets.UTF_8), k);
            if (i == 0 || Long.compareUnsigned(s, bestScore) > 0) {
                best = i;
                bestScore = s;
            }
        }
        return best;
    }

    /** {@code fmix64(FNV-1a-64(name + 0x00 + key))}. */
    static long score(byte[] name, byte[] key) {
        long h = 0xcbf29ce484222325L;
        for (byte b : name) {
            h ^= (b & 0xff);
            h *= 0x100000001b3L;
        }
        h *= 0x100000001b3L; // the 0x00 separator byte (xor with 0 is a no-op)
        for (byte b : key) {
            h ^= (b & 0xff);
            h *= 0x100000001b3L;
        }
        return fmix64(h);
    }

    /** MurmurHash3's 64-bit finaliser: every input bit affects every output bit. */
    static long fmix64(long h) {
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return h;
    }
}
