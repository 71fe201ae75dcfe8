package io.gatehouse.bench.load;

import io.netty.buffer.ByteBuf;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.ToLongFunction;

/**
 * What the destinations received, per producer connection of one {@link LoadGen} run: the meter of the
 * sustained mode. Producer, gateway and sinks run in one JVM, so the sinks ({@link RawSink} with a
 * {@link Receiver} each) mark every frame here and the producers read the counts directly, with no message
 * on the wire for it.
 *
 * <p>A message is known by its {@code "id":"<prefix><connection>-<rowid>"} (the load generator writes it first
 * in the JSON, and every path keeps it). Only the <b>first copy</b> of an id counts: a queue that sends a
 * message again after a lost ack, or a broadcast to two sinks, must not look like throughput. The end-to-end
 * latency of a first copy is its arrival time minus the {@code "ts"} the producer wrote into it
 * ({@link System#nanoTime()}, the same clock: one JVM).
 *
 * <p>Memory is bounded: per connection, a ring of {@code span} bits for the ids between the lowest one not
 * received yet and {@code span} above it (every id below it was received), and one latency recorder per sink
 * thread. The sustained producer never sends an id {@code span} or more above that lowest one, so there the
 * count is exact; in burst mode an id that arrives more than {@code span} ahead of a missing one moves the
 * ring past the missing ones, which are then {@code skipped} (and counted as duplicates if they come later).
 */
public final class Delivery {
    private static final byte[] ID_KEY = "\"id\":\"".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] TS_KEY = "\"ts\":".getBytes(StandardCharsets.US_ASCII);
    /** Latency range of the recorders, µs: an hour (a backlog drained very late still fits). */
    private static final long MAX_MICROS = 3_600_000_000L;

    private final byte[] prefix;
    private final Track[] tracks;
    private final List<Recorder> recorders = new CopyOnWriteArrayList<>();
    private final AtomicLong unknown = new AtomicLong();

    /**
     * @param prefix      the producers' id prefix ({@link LoadGen.Options#prefix})
     * @param connections the producer connections of the run
     * @param minSpan     the reorder (ids above the lowest one not received) to track exactly, rounded up to a
     *                    power of two
     */
    public Delivery(String prefix, int connections, int minSpan) {
        this.prefix = prefix.getBytes(StandardCharsets.US_ASCII);
        int span = Integer.highestOneBit(Math.max(64, minSpan) - 1) << 1;
        tracks = new Track[connections];
        for (int i = 0; i < connections; i++) tracks[i] = new Track(span);
    }

    /** The span the sustained producer stays within for {@code maxBacklog}: four times it, at least 2^16. */
    static int spanFor(int maxBacklog) {
        return (int) Math.min(1 << 30, Math.max(1 << 16, 4L * maxBacklog));
    }

    Track track(int connection) {
        return tracks[connection];
    }

    /** A receiver for one sink thread: its own latency recorder, so that sinks do not contend on one. */
    public Receiver receiver() {
        Receiver r = new Receiver();
        recorders.add(r.latency);
        return r;
    }

    /** First copies received so far, over all connections (volatile reads: no lock on the sinks' path). */
    public long firstCopies() {
        long n = 0;
        for (Track t : tracks) n += t.received;
        return n;
    }

    /** Copies of ids already received. */
    public long duplicates() {
        return sum(t -> t.duplicates);
    }

    /** Ids given up on (an id came more than a span ahead of them; only in burst mode). */
    public long skipped() {
        return sum(t -> t.skipped);
    }

    private long sum(ToLongFunction<Track> f) {
        long n = 0;
        for (Track t : tracks) {
            synchronized (t) {
                n += f.applyAsLong(t);
            }
        }
        return n;
    }

    /** Frames that did not carry an id of this run. */
    public long unknown() {
        return unknown.get();
    }

    /** The end-to-end latencies (µs) of the first copies since the previous call; the first call opens the window. */
    public Histogram takeLatency() {
        Histogram h = new Histogram(MAX_MICROS, 3);
        for (Recorder r : recorders) h.add(r.getIntervalHistogram());
        return h;
    }

    /** One sink thread's side: parses a frame's id and send time and marks it. */
    public final class Receiver {
        final Recorder latency = new Recorder(MAX_MICROS, 3);

        /** Marks one frame (the payload, or a whole TCP4H frame: the scan skips the header). */
        public void onFrame(ByteBuf b) {
            int at = Scan.indexOf(b, ID_KEY);
            if (at < 0 || !startsWith(b, at + ID_KEY.length, prefix)) {
                unknown.incrementAndGet();
                return;
            }
            int k = at + ID_KEY.length + prefix.length;
            int end = b.writerIndex();
            int conn = 0;
            boolean digits = false;
            byte c = 0;
            while (k < end && (c = b.getByte(k++)) >= '0' && c <= '9') {
                conn = conn * 10 + (c - '0');
                digits = true;
            }
            if (!digits || c != '-' || conn >= tracks.length) {
                unknown.incrementAndGet();
                return;
            }
            long rowid = Scan.number(b, k);
            if (rowid < 0) {
                unknown.incrementAndGet();
                return;
            }
            Track t = tracks[conn];
            if (!t.mark(rowid)) return;
            int ts = Scan.indexOf(b, TS_KEY, k);
            if (ts >= 0) {
                long sent = Scan.number(b, ts + TS_KEY.length);
                long micros = (System.nanoTime() - sent) / 1000;
                latency.recordValue(Math.max(0, Math.min(micros, MAX_MICROS)));
            }
            t.wakeIfParked();
        }
    }

    private static boolean startsWith(ByteBuf b, int at, byte[] p) {
        if (at + p.length > b.writerIndex()) return false;
        for (int j = 0; j < p.length; j++) {
            if (b.getByte(at + j) != p[j]) return false;
        }
        return true;
    }

    /**
     * One producer connection's ids. Marked by the sink threads (two sinks may get ids of one connection, hence
     * the lock); {@link #received} and {@link #low} are volatile so that the producer reads them without it.
     */
    static final class Track {
        private final long[] words;
        private final int mask;
        /** Every rowid below it was received (or skipped). Rowids start at 1. */
        private volatile long low = 1;
        private volatile long received;
        private long duplicates;
        private long skipped;
        /** Set by a producer that stopped for want of deliveries; {@link #wake} sends it on again. */
        private final AtomicBoolean parked = new AtomicBoolean();
        private volatile long parkedAt;
        private volatile long slack = 1;
        private volatile Runnable wake;

        Track(int span) {
            words = new long[span >>> 6];
            mask = span - 1;
        }

        int span() {
            return mask + 1;
        }

        long received() {
            return received;
        }

        long low() {
            return low;
        }

        /** Marks {@code rowid}; true if it is its first copy. */
        synchronized boolean mark(long rowid) {
            long lo = low;
            if (rowid < lo) {
                duplicates++;
                return false;
            }
            int span = mask + 1;
            if (rowid >= lo + span) lo = skipTo(rowid - span + 1);
            int i = (int) (rowid & mask);
            long bit = 1L << i;
            if ((words[i >>> 6] & bit) != 0) {
                duplicates++;
                return false;
            }
            words[i >>> 6] |= bit;
            received++;
            if (rowid == lo) advance(lo);
            return true;
        }

        /** Moves the low end from {@code lo} over the received ids, clearing their bits for the ids a span above. */
        private void advance(long lo) {
            for (int j = (int) (lo & mask); (words[j >>> 6] & (1L << j)) != 0; j = (int) (lo & mask)) {
                words[j >>> 6] &= ~(1L << j);
                lo++;
            }
            low = lo;
        }

        /** Moves the low end to {@code to}, counting the ids passed that were never received. */
        private long skipTo(long to) {
            long lo = low;
            if (to - lo >= words.length * 64L) {
                long set = 0;
                for (long w : words) set += Long.bitCount(w);
                skipped += (to - lo) - set;
                Arrays.fill(words, 0);
            } else {
                for (; lo < to; lo++) {
                    int j = (int) (lo & mask);
                    long bit = 1L << j;
                    if ((words[j >>> 6] & bit) == 0) skipped++;
                    else words[j >>> 6] &= ~bit;
                }
            }
            advance(to);
            return low;
        }

        /** The producer's side: how to send it on, and after how many deliveries (fewer wake-ups). */
        void onWake(Runnable wake, long slack) {
            this.wake = wake;
            this.slack = Math.max(1, slack);
        }

        /** The producer stops for want of deliveries; it is woken once {@code slack} more first copies arrived. */
        void park() {
            parkedAt = received;
            parked.set(true);
        }

        void unpark() {
            parked.set(false);
        }

        private void wakeIfParked() {
            if (parked.get() && received - parkedAt >= slack && parked.compareAndSet(true, false)) {
                Runnable w = wake;
                if (w != null) w.run();
            }
        }
    }
}
