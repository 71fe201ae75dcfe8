package io.gatehouse.core;

import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The live page's recent history: one fixed-size ring of floats per series, one slot per sampler tick, all
 * rings aligned on one ring of tick times. Memory is fixed by the two bounds and nothing else:
 * {@code capacity × 8} bytes of times plus, per series, {@code capacity × 4} bytes of values and about 250 bytes
 * of map entry, id and array header ({@link #boundBytes}). A series seen for the first time starts as NaN
 * ("no sample"); one that got no value for a whole ring is dropped, so the series of a service removed from the
 * config go away; past {@code maxSeries}, new series are not kept (logged once), so gobjs created at run time
 * cannot grow it.
 *
 * <p>Written by the sampler on the core thread once a second, read by the HTTP thread for {@code /api/history}:
 * both under this object's lock, held for one tick's writes or one copy.
 */
final class History {
    /** Bytes per series besides its values: map entry, key string, array header (measured in HistoryTest). */
    static final int SERIES_OVERHEAD_BYTES = 256;

    private final int capacity;
    private final int maxSeries;
    private final long[] times;
    private final Map<String, Ring> series = new LinkedHashMap<>();
    /** Ticks taken so far; the next tick writes slot {@code ticks % capacity}. */
    private long ticks;
    private boolean fullLogged;

    private static final class Ring {
        final float[] values;
        /** The last tick that gave this series a value. */
        long lastTick;

        Ring(int capacity) {
            values = new float[capacity];
            Arrays.fill(values, Float.NaN);
        }
    }

    History(int capacity, int maxSeries) {
        if (capacity < 2 || maxSeries < 1) throw new IllegalArgumentException("capacity >= 2 and maxSeries >= 1");
        this.capacity = capacity;
        this.maxSeries = maxSeries;
        this.times = new long[capacity];
    }

    /** The most memory a history of these bounds holds, in bytes. */
    static long boundBytes(int capacity, int maxSeries) {
        return 64L + capacity * 8L + (long) maxSeries * (capacity * 4L + SERIES_OVERHEAD_BYTES);
    }

    int capacity() {
        return capacity;
    }

    synchronized int seriesCount() {
        return series.size();
    }

    /**
     * One tick: every series gets {@code values.get(id)}, or NaN when the map has none for it. Values of series
     * beyond {@code maxSeries} are dropped.
     */
    synchronized void tick(long epochMs, Map<String, Double> values) {
        int slot = (int) (ticks % capacity);
        times[slot] = epochMs;
        for (Ring r : series.values()) r.values[slot] = Float.NaN;
        for (Map.Entry<String, Double> e : values.entrySet()) {
            Ring r = series.get(e.getKey());
            if (r == null) {
                if (series.size() >= maxSeries) {
                    if (!fullLogged) {
                        fullLogged = true;
                        io.gatehouse.support.Glog.warn(null, "Live view history full: new series not kept",
                                "max_series", maxSeries, "series", e.getKey());
                    }
                    continue;
                }
                r = new Ring(capacity);
                r.lastTick = ticks;   // a new series lives at least one ring, even if its first samples are NaN
                series.put(e.getKey(), r);
            }
            double v = e.getValue() == null ? Double.NaN : e.getValue();
            r.values[slot] = (float) v;
            if (!Double.isNaN(v)) r.lastTick = ticks;
        }
        long dropBefore = ticks - capacity;
        for (Iterator<Ring> it = series.values().iterator(); it.hasNext(); ) {
            if (it.next().lastTick <= dropBefore) it.remove();
        }
        ticks++;
    }

    /**
     * {@code {"capacity", "samples", "times": [oldest..newest epoch ms], "series": {id: [values, null for none]}}},
     * oldest first.
     */
    synchronized void writeJson(JsonGenerator g) throws IOException {
        int n = (int) Math.min(ticks, capacity);
        int first = (int) ((ticks - n) % capacity);
        g.writeStartObject();
        g.writeNumberField("capacity", capacity);
        g.writeNumberField("samples", n);
        g.writeArrayFieldStart("times");
        for (int i = 0; i < n; i++) g.writeNumber(times[(first + i) % capacity]);
        g.writeEndArray();
        g.writeObjectFieldStart("series");
        for (Map.Entry<String, Ring> e : series.entrySet()) {
            g.writeArrayFieldStart(e.getKey());
            float[] v = e.getValue().values;
            for (int i = 0; i < n; i++) {
                float x = v[(first + i) % capacity];
                if (Float.isNaN(x)) g.writeNull();
                else g.writeNumber(x);
            }
            g.writeEndArray();
        }
        g.writeEndObject();
        g.writeEndObject();
    }

    /** The values of one series, oldest first (tests). */
    synchronized float[] values(String id) {
        Ring r = series.get(id);
        if (r == null) return null;
        int n = (int) Math.min(ticks, capacity);
        int first = (int) ((ticks - n) % capacity);
        float[] out = new float[n];
        for (int i = 0; i < n; i++) out[i] = r.values[(first + i) % capacity];
        return out;
    }
}
