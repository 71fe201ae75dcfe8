// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.Set;

/**
 * The dict of a {@link GbufferKw}: keys and values side by side in one array, in insertion order, found by a scan.
 * A kw made per message holds none to three keys ({@code __temp__}, a ref or two) on its way through a stack;
 * a {@link LinkedHashMap} cost it a map, a table and an entry per key, and the hashing, about 5 % of a durable
 * forward's core loop. Past {@link #SPILL_AT} keys it moves them into a {@link LinkedHashMap} and is that map from
 * then on, so a large dict is never scanned.
 *
 * <p>It behaves as the {@link LinkedHashMap} Jackson's {@code ObjectNode} uses: insertion order, a value replaced
 * where its key is, {@code null} keys and values allowed. Not thread-safe, as a kw is not.
 */
final class SmallDict extends AbstractMap<String, JsonNode> {
    static final int SPILL_AT = 16;

    /** key0, value0, key1, value1, ...; null until the first put. */
    private Object[] pairs;
    private int size;
    private LinkedHashMap<String, JsonNode> spill;
    private Set<Map.Entry<String, JsonNode>> entrySet;

    /** A bit per key length (mod 32) among the keys held: most misses (a level asking for a key a kw does not have) end here. */
    private int lengths;

    private static int lengthBit(Object key) {
        return key instanceof String ? 1 << (((String) key).length() & 31) : 0;
    }

    private int indexOf(Object key) {
        if (key instanceof String && (lengths & lengthBit(key)) == 0) return -1;
        Object[] p = pairs;
        int n = size << 1;
        for (int i = 0; i < n; i += 2) {
            if (p[i] == key) return i;   // keys are nearly always constants: the same String
        }
        if (key == null) return -1;
        for (int i = 0; i < n; i += 2) {
            if (key.equals(p[i])) return i;
        }
        return -1;
    }

    @Override
    public int size() {
        return spill != null ? spill.size() : size;
    }

    @Override
    public boolean isEmpty() {
        return size() == 0;
    }

    @Override
    public boolean containsKey(Object key) {
        return spill != null ? spill.containsKey(key) : indexOf(key) >= 0;
    }

    @Override
    public JsonNode get(Object key) {
        if (spill != null) return spill.get(key);
        int i = indexOf(key);
        return i < 0 ? null : (JsonNode) pairs[i + 1];
    }

    @Override
    public JsonNode put(String key, JsonNode value) {
        if (spill != null) return spill.put(key, value);
        int i = indexOf(key);
        if (i >= 0) {
            JsonNode old = (JsonNode) pairs[i + 1];
            pairs[i + 1] = value;
            return old;
        }
        if (size == SPILL_AT) {
            LinkedHashMap<String, JsonNode> m = new LinkedHashMap<>();
            for (int k = 0; k < size << 1; k += 2) m.put((String) pairs[k], (JsonNode) pairs[k + 1]);
            m.put(key, value);
            spill = m;
            pairs = null;
            size = 0;
            return null;
        }
        if (pairs == null) {
            pairs = new Object[4];   // two keys: most such kws hold one or two
        } else if (size << 1 == pairs.length) {
            pairs = Arrays.copyOf(pairs, pairs.length << 1);
        }
        pairs[size << 1] = key;
        pairs[(size << 1) + 1] = value;
        size++;
        lengths |= lengthBit(key);
        return null;
    }

    @Override
    public JsonNode remove(Object key) {
        if (spill != null) return spill.remove(key);
        int i = indexOf(key);
        if (i < 0) return null;
        JsonNode old = (JsonNode) pairs[i + 1];
        removeAt(i);
        return old;
    }

    private void removeAt(int i) {
        int n = size << 1;
        System.arraycopy(pairs, i + 2, pairs, i, n - i - 2);
        pairs[n - 2] = null;
        pairs[n - 1] = null;
        size--;
        int l = 0;
        for (int k = 0; k < n - 2; k += 2) l |= lengthBit(pairs[k]);
        lengths = l;
    }

    @Override
    public void clear() {
        if (spill != null) {
            spill.clear();
            return;
        }
        if (pairs != null) Arrays.fill(pairs, 0, size << 1, null);
        size = 0;
        lengths = 0;
    }

    @Override
    public Set<Map.Entry<String, JsonNode>> entrySet() {
        Set<Map.Entry<String, JsonNode>> s = entrySet;
        return s != null ? s : (entrySet = new Entries());
    }

    /** A view that follows the dict, before and after it spills. */
    private final class Entries extends AbstractSet<Map.Entry<String, JsonNode>> {
        @Override
        public int size() {
            return SmallDict.this.size();
        }

        @Override
        public void clear() {
            SmallDict.this.clear();
        }

        @Override
        public Iterator<Map.Entry<String, JsonNode>> iterator() {
            return spill != null ? spill.entrySet().iterator() : new Pairs();
        }
    }

    private final class Pairs implements Iterator<Map.Entry<String, JsonNode>> {
        /** The pair index of the next entry. */
        private int next;
        /** The pair index of the entry last given, -1 when none (or it was removed). */
        private int last = -1;

        @Override
        public boolean hasNext() {
            return spill == null && next < size << 1;
        }

        @Override
        public Map.Entry<String, JsonNode> next() {
            if (!hasNext()) throw new NoSuchElementException();
            last = next;
            next += 2;
            return new Pair(last);
        }

        @Override
        public void remove() {
            if (last < 0 || spill != null) throw new IllegalStateException();
            removeAt(last);
            next = last;
            last = -1;
        }
    }

    /** An entry that reads and writes the dict while its pair stays where it was (as a map's entry does). */
    private final class Pair implements Map.Entry<String, JsonNode> {
        private final String key;
        private JsonNode value;

        Pair(int at) {
            key = (String) pairs[at];
            value = (JsonNode) pairs[at + 1];
        }

        @Override
        public String getKey() {
            return key;
        }

        @Override
        public JsonNode getValue() {
            return value;
        }

        @Override
        public JsonNode setValue(JsonNode v) {
            JsonNode old = value;
            value = v;
            if (spill != null) {
                if (spill.containsKey(key)) spill.put(key, v);
            } else {
                int i = indexOf(key);
                if (i >= 0) pairs[i + 1] = v;   // an entry removed since is not put back, as a map's is not
            }
            return old;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Map.Entry && Objects.equals(key, ((Map.Entry<?, ?>) o).getKey())
                    && Objects.equals(value, ((Map.Entry<?, ?>) o).getValue());
        }

        @Override
        public int hashCode() {
            return Objects.hashCode(key) ^ Objects.hashCode(value);
        }

        @Override
        public String toString() {
            return key + "=" + value;
        }
    }
}
