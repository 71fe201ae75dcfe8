package io.gatehouse.systests;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Reliability: queue files damaged while the gateway is down (after kill -9 with everything queued, the
 * destinations down): a segment truncated in the middle of a record, a run of a record zero-filled, one byte of
 * a record flipped, a flipped byte in the segment header, a torn topic_var.json. The gateway must start, set the
 * damaged part aside, report it in its log, and deliver the rest. Only output-0 (even ids) is damaged; output-1
 * must deliver everything.
 */
class CorruptQueueIT {
    enum Damage { TRUNCATED, ZERO_FILLED, FLIPPED_BYTE, HEADER_BYTE, TOPIC_VAR }

    @Test
    @Timeout(900)
    void shouldStartSetTheDamagedPartAsideAndDeliverTheRest() throws Exception {
        List<String> failures = new ArrayList<>();
        for (Damage d : Damage.values()) {
            try {
                scenario(d);
            } catch (AssertionError e) {
                failures.add(d + ": " + e.getMessage());
            }
        }
        assertTrue(failures.isEmpty(), String.join("\n", failures));
    }

    /** One record of a segment: its offset, length and the id it carries. */
    record Frame(long offset, int length, long id) {}

    static List<Frame> frames(Path seg) throws IOException {
        List<Frame> out = new ArrayList<>();
        try (FileChannel ch = FileChannel.open(seg, StandardOpenOption.READ)) {
            ByteBuffer all = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size());
            int off = 64;
            while (off + 40 <= all.limit()) {
                int len = all.getInt(off);
                if (len < 40 || off + len > all.limit()) break;
                byte[] payload = new byte[len - 40];
                all.get(off + 40, payload);
                String s = new String(payload, StandardCharsets.US_ASCII);
                int at = s.indexOf("\"id\":\"msg-");
                long id = -1;
                if (at >= 0) {
                    int k = at + 10;
                    id = 0;
                    while (k < s.length() && Character.isDigit(s.charAt(k))) id = id * 10 + (s.charAt(k++) - '0');
                }
                out.add(new Frame(off, len, id));
                off += (len + 7) & ~7;
            }
        }
        return out;
    }

    void scenario(Damage damage) throws Exception {
        int count = Reliability.pick(6_000, 100_000);
        Path work = Reliability.work("corrupt-" + damage.name().toLowerCase(Locale.ROOT));
        Reliability.Ports p = new Reliability.Ports();
        Path config = Reliability.writeConfig(work, Reliability.gatewayConfig(p));
        Path data = work.resolve("data");
        Path log = work.resolve("gateway.log");
        try (GatewayProcess gw = new GatewayProcess(config, data, log, p.control)) {
            // 1. everything queued (destinations down), then a crash
            gw.start();
            gw.awaitListening(p.input, 60_000);
            Reliability.Producer producer = new Reliability.Producer(p.input, 0, count);
            assertTrue(producer.run(120_000), "every message acked before the damage");
            gw.kill9();

            // 2. damage output-0's queue
            Path topic = data.resolve("queues/output-0/gate_events");
            Path keys = topic.resolve("keys/__rowid__");
            Path seg;
            try (Stream<Path> s = Files.list(keys)) {
                seg = s.filter(f -> f.toString().endsWith(".seg")).sorted().reduce((a, b) -> b).orElseThrow();
            }
            List<Frame> frames = frames(seg);
            assertEquals(count / 2, frames.size(), "output-0 holds the even ids");
            int k = frames.size() / 2;
            Frame hit = frames.get(k);
            BitSet before = new BitSet();
            BitSet after = new BitSet();
            for (int i = 0; i < frames.size(); i++) {
                if (i < k) before.set((int) frames.get(i).id());
                else if (i > k) after.set((int) frames.get(i).id());
            }
            boolean recordDamaged = true;
            try (RandomAccessFile f = new RandomAccessFile(seg.toFile(), "rw")) {
                switch (damage) {
                    case TRUNCATED:
                        f.setLength(hit.offset() + hit.length() / 2);
                        break;
                    case ZERO_FILLED:
                        f.seek(hit.offset());
                        f.write(new byte[Math.min(256, hit.length())]);
                        break;
                    case FLIPPED_BYTE:
                        f.seek(hit.offset() + 40 + 10);
                        int b = f.read();
                        f.seek(hit.offset() + 40 + 10);
                        f.write(b ^ 0x5a);
                        break;
                    case HEADER_BYTE:
                        recordDamaged = false;
                        f.seek(30);
                        int h = f.read();
                        f.seek(30);
                        f.write(h ^ 0xff);
                        break;
                    case TOPIC_VAR:
                        recordDamaged = false;
                        Files.writeString(topic.resolve("topic_var.json"), "{\"first_rowid\": 12, \"backup_qu");
                        break;
                    default:
                        throw new IllegalStateException();
                }
            }
            if (!recordDamaged) {
                before.or(after);
                before.set((int) hit.id());
                after.clear();
            }

            // 3. restart with the destinations up
            Reliability.Ledger ledger = new Reliability.Ledger();
            try (Reliability.IdSink s0 = new Reliability.IdSink(p.sink0, ledger);
                 Reliability.IdSink s1 = new Reliability.IdSink(p.sink1, ledger)) {
                gw.start();
                gw.awaitListening(p.input, 60_000);
                BitSet odd = new BitSet();
                for (int i = 1; i < count; i += 2) odd.set(i);
                BitSet expected = (BitSet) odd.clone();
                expected.or(before);
                Reliability.awaitDelivered(ledger, expected, 60_000);
                Reliability.awaitQuiet(ledger, 2_000, 30_000);
                BitSet got = ledger.snapshot();
                long lostOdd = ledger.lost(odd);
                long lostBefore = ledger.lost(before);
                BitSet afterGot = (BitSet) after.clone();
                afterGot.and(got);
                long lostAll = count - got.cardinality();
                List<String> aside;
                try (Stream<Path> s = Files.list(keys)) {
                    aside = s.map(x -> x.getFileName().toString()).filter(n -> n.contains(".tail-") || n.contains(".corrupt-")
                            || n.contains(".damaged-")).toList();
                }
                String text = Reliability.log(log);
                String reported = Stream.of("Queue records damaged, set aside", "Queue tail truncated",
                        "Queue segment corrupt, set aside",
                        "Queue segment header repaired", "Cannot load topic_var.json").filter(text::contains)
                        .findFirst().orElse("nothing");
                boolean alive = Reliability.queued(p.control, 1) >= 0;
                Reliability.report("corrupt queue: " + damage.name().toLowerCase(Locale.ROOT).replace('_', ' '), count,
                        got.cardinality(), lostAll, ledger.duplicates(), String.format(Locale.ROOT,
                                "damaged record %s (row %d of %d in output-0); records after it delivered %d of %d;"
                                        + " log: \"%s\"; set aside: %s; other queue lost %d; gateway answers: %s",
                                recordDamaged ? "msg-" + hit.id() : "none", k + 1, frames.size(), afterGot.cardinality(),
                                after.cardinality(), reported, aside, lostOdd, alive));
                assertTrue(alive, "the gateway runs and answers");
                assertEquals(0, lostOdd, "the undamaged queue delivers everything");
                assertEquals(0, lostBefore, "every record before the damage is delivered");
                assertTrue(!reported.equals("nothing") || damage == Damage.TOPIC_VAR && lostAll == 0,
                        "the damage is reported in the log");
                if (damage == Damage.FLIPPED_BYTE || damage == Damage.ZERO_FILLED) {
                    assertTrue(!aside.isEmpty(), "the damaged part is set aside");
                    // recovery resynchronises on the next valid frame: only the damaged record is lost
                    assertEquals(after.cardinality(), afterGot.cardinality(), "every record after the damaged one");
                    assertEquals(1, lostAll, "only the damaged record is lost");
                }
                assertEquals(0, gw.stop(), "SIGTERM stops the gateway with exit 0");
            }
        }
    }
}
