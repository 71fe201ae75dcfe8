// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.ConcurrentModificationException;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * The children of a per-message kw: an insertion-ordered map in one array, searched linearly, identity
 * first (keys are mostly the same constants). A kw on the message path holds its gbuffer and maybe
 * {@code __temp__}; a {@link LinkedHashMap} costs a table, an entry per key and hashing for that. Past
 * {@link #MAX_SMALL} keys it moves into a LinkedHashMap, so a large dict is not searched linearly.
 */
final class KwMap extends AbstractMap<String, JsonNode> {
    static final int MAX_SMALL = 8;

    /** keys at even indexes, values at odd ones; null before the first key and once {@link #big} took over. */
    private Object[] kv;
    private int size;
    private LinkedHashMap<String, JsonNode> big;
    private int modCount;
    private Set<Map.Entry<String, JsonNode>> entrySet;

    KwMap() {
        // no table until the first key: a gbuffer kw often never gets one
    }

    private int indexOf(Object key) {
        Object[] a = kv;
        int n = size << 1;
        for (int i = 0; i < n; i += 2) {
            if (a[i] == key) return i;
        }
        if (key == null) return -1;
        for (int i = 0; i < n; i += 2) {
            if (key.equals(a[i])) return i;
        }
        return -1;
    }

    @Override
    public int size() {
        return big != null ? big.size() : size;
    }

    @Override
    public boolean isEmpty() {
        return size() == 0;
    }

    @Override
    public boolean containsKey(Object key) {
        return big != null ? big.containsKey(key) : indexOf(key) >= 0;
    }

    @Override
    public JsonNode get(Object key) {
        if (big != null) return big.get(key);
        int i = indexOf(key);
        return i < 0 ? null : (JsonNode) kv[i + 1];
    }

    @Override
    public JsonNode put(String key, JsonNode value) {
        if (big != null) return big.put(key, value);
        int i = indexOf(key);
        if (i >= 0) {
            JsonNode old = (JsonNode) kv[i + 1];
            kv[i + 1] = value;
            return old;
        }
        if (size == MAX_SMALL) {
            big = new LinkedHashMap<>(32);
            for (int j = 0; j < size << 1; j += 2) big.put((String) kv[j], (JsonNode) kv[j + 1]);
            kv = null;
            size = 0;
            modCount++;
            return big.put(key, value);
        }
        int at = size << 1;
        if (kv == null) {
            kv = new Object[4];
        } else if (at == kv.length) {
            Object[] grown = new Object[kv.length << 1];
            System.arraycopy(kv, 0, grown, 0, at);
            kv = grown;
        }
        kv[at] = key;
        kv[at + 1] = value;
        size++;
        modCount++;
        return null;
    }

    @Override
    public JsonNode remove(Object key) {
        if (big != null) return big.remove(key);
        int i = indexOf(key);
        if (i < 0) return null;
        JsonNode old = (JsonNode) kv[i + 1];
        removeAt(i);
        return old;
    }

    private void removeAt(int i) {
        int end = size << 1;
        System.arraycopy(kv, i + 2, kv, i, end - i - 2);
        kv[end - 2] = null;
        kv[end - 1] = null;
        size--;
        modCount++;
    }

    @Override
    public void clear() {
        if (big != null) {
            big.clear();
            return;
        }
        if (kv != null) {
            for (int i = 0; i < size << 1; i++) kv[i] = null;
        }
        size = 0;
        modCount++;
    }

    @Override
    public Set<Map.Entry<String, JsonNode>> entrySet() {
        if (big != null) return big.entrySet();
        Set<Map.Entry<String, JsonNode>> es = entrySet;
        if (es == null) {
            es = new AbstractSet<>() {
                @Override
                public Iterator<Map.Entry<String, JsonNode>> iterator() {
                    return big != null ? big.entrySet().iterator() : new SmallIterator();
                }

                @Override
                public int size() {
                    return KwMap.this.size();
                }

                @Override
                public void clear() {
                    KwMap.this.clear();
                }
            };
            entrySet = es;
        }
        return es;
    }

    /** Iterates the array; remove() is supported (Jackson's retain/without use it through keySet()). */
    private final class SmallIterator implements Iterator<Map.Entry<String, JsonNode>> {
        private int next;
        private int last = -1;
        private int expectedMod = modCount;

        @Override
        public boolean hasNext() {
            return next < size << 1;
        }

        @Override
        public Map.Entry<String, JsonNode> next() {
            if (expectedMod != modCount || big != null) throw new ConcurrentModificationException();
            if (next >= size << 1) throw new NoSuchElementException();
            last = next;
            next += 2;
            return new Entry(last);
        }

        @Override
        public void remove() {
            if (last < 0) throw new IllegalStateException();
            if (expectedMod != modCount || big != null) throw new ConcurrentModificationException();
            removeAt(last);
            next = last;
            last = -1;
            expectedMod = modCount;
        }
    }

    /** A live entry: setValue writes through while the key is still at its index. */
    private final class Entry implements Map.Entry<String, JsonNode> {
        private final String key;
        private JsonNode value;
        private final int index;

        Entry(int index) {
            this.index = index;
            this.key = (String) kv[index];
            this.value = (JsonNode) kv[index + 1];
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
            if (big != null) {
                big.put(key, v);
            } else if (index < size << 1 && kv[index] == key) {
                kv[index + 1] = v;
            } else {
                put(key, v);
            }
            return old;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Map.Entry)) return false;
            Map.Entry<?, ?> e = (Map.Entry<?, ?>) o;
            return key.equals(e.getKey()) && java.util.Objects.equals(value, e.getValue());
        }

        @Override
        public int hashCode() {
            return key.hashCode() ^ java.util.Objects.hashCode(value);
        }

        @Override
        public String toString() {
            return key + "=" + value;
        }
    }
}
