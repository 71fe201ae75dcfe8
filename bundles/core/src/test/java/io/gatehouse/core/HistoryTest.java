package io.gatehouse.core;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import io.gatehouse.api.Kw;
import org.junit.jupiter.api.Test;

import java.io.StringWriter;
import java.lang.management.ManagementFactory;
import java.util.LinkedHashMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The sampler's rings: fixed memory, oldest first, gaps as null, series that stop are dropped. */
class HistoryTest {
    @Test
    void shouldKeepTheLastCapacitySamplesOldestFirst() throws Exception {
        History h = new History(4, 10);
        for (int t = 1; t <= 6; t++) h.tick(t * 1000L, Map.of("a", (double) t));
        float[] a = h.values("a");
        assertEquals(4, a.length);
        assertEquals(3f, a[0]);
        assertEquals(6f, a[3]);
        StringWriter w = new StringWriter();
        try (JsonGenerator g = Kw.MAPPER.getFactory().createGenerator(w)) {
            h.writeJson(g);
        }
        JsonNode j = Kw.MAPPER.readTree(w.toString());
        assertEquals("[3000,4000,5000,6000]", j.get("times").toString());
        assertEquals("[3.0,4.0,5.0,6.0]", j.get("series").get("a").toString());
    }

    @Test
    void shouldShowGapsAndDropASeriesSilentForAWholeRing() {
        History h = new History(3, 10);
        h.tick(1, Map.of("a", 1.0, "b", 1.0));
        h.tick(2, Map.of("a", 2.0));
        assertTrue(Float.isNaN(h.values("b")[1]), "b had no sample at tick 2");
        h.tick(3, Map.of("a", 3.0));
        h.tick(4, Map.of("a", 4.0));
        assertNull(h.values("b"), "b gave nothing for a whole ring: gone");
        assertNotNull(h.values("a"));
    }

    @Test
    void shouldNotGrowPastMaxSeries() {
        History h = new History(10, 2);
        Map<String, Double> v = new LinkedHashMap<>();
        for (int i = 0; i < 5; i++) v.put("s" + i, 1.0);
        h.tick(1, v);
        assertEquals(2, h.seriesCount());
    }

    /**
     * The bound the docs state: 100 series of one hour (3,600 one-second samples) hold at most
     * {@link History#boundBytes}. Measured as the bytes this thread allocated while building and filling the
     * history (retained memory can only be less), so the figure holds whatever the collector does.
     */
    @Test
    void shouldStayUnderItsStatedBoundFor100SeriesOfOneHour() {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        int series = 100;
        int samples = 3600;
        String[] ids = new String[series];
        for (int i = 0; i < series; i++) ids[i] = "q/__output_side__/output-" + i + "/msgs_in_queue";
        Map<String, Double> values = new LinkedHashMap<>();
        long tid = Thread.currentThread().getId();
        long before = threads.getThreadAllocatedBytes(tid);
        History h = new History(samples, Sampler.MAX_SERIES);
        for (String id : ids) values.put(id, 0.0);
        h.tick(0, values);
        long afterFirst = threads.getThreadAllocatedBytes(tid);
        for (int t = 1; t < samples * 2; t++) {
            for (int i = 0; i < series; i++) values.put(ids[i], (double) (t + i));
            h.tick(t * 1000L, values);
        }
        long afterTwoHours = threads.getThreadAllocatedBytes(tid);
        long held = afterFirst - before;
        long bound = History.boundBytes(samples, series);
        System.out.printf("history: %d series x %d samples: %,d bytes allocated to build it (bound %,d);"
                        + " %,d bytes allocated by %,d further ticks (boxing of the test's own map values)%n",
                series, samples, held, bound, afterTwoHours - afterFirst, samples * 2 - 1);
        assertTrue(held <= bound, "built in " + held + " bytes, bound " + bound);
        assertTrue(bound < 1_600_000, "100 series x 1 h stays under 1.6 MB: " + bound);
        assertEquals(series, h.seriesCount());
        assertEquals(samples, h.values(ids[0]).length);
    }
}
