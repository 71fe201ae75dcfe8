// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.bench.perf;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.bench.load.SideBySide;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;

import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The durable path's per-message work on the core loop, with no sockets and no load generator: a stand-in input
 * gate publishes LoadGen's 128-byte messages (with {@code __md_trq__}) to the real C_RELAY, whose output is a real
 * C_QIOGATE ({@code q}: fsync interval, tkey tm, as SideBySide's qiogate-interval) or a C_MQIOGATE over two
 * ({@code mq2}, lastdigits on id); the queues have no bottom (nothing is sent: transmit and the sinks' acks are
 * not in it). Per message: the core thread's CPU and bytes allocated over a round, which covers the forward, the
 * enqueue, the group commit's completion and the ack upstream (counted by the stand-in gate). One thread, no
 * competition for the loop: the figure does not depend on rates or batching, and little on the machine's load.
 *
 * <pre>DurableProbe q|mq2 [messages per round=100000] [rounds=5]</pre>
 *
 * Uses only what every revision has (the gclasses of {@link SideBySide#gclasses}), so the same class runs against
 * an older jar: {@code java -cp <dir with this class>:old.jar ...}.
 */
public final class DurableProbe {
    private DurableProbe() {}

    /** The input gate: publishes what the probe gives it, counts the acks sent back down to it. */
    static final class Gate implements GObjBehavior {
        final GObj gobj;
        long acks;

        Gate(GObj g) {
            this.gobj = g;
        }

        int acSend(String ev, ObjectNode kw, GObj src) {
            acks++;
            Kw.release(kw);
            return 0;
        }
    }

    static final GClassSpec<Gate> GATE = GClassSpec.builder("C_PROBE_GATE", Gate.class)
            .description("the probe's input gate")
            .fsm(Fsm.<Gate>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, Gate::acSend)
                    .publishes(Ev.EV_ON_MESSAGE).build())
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(Gate::new).build();

    private static String queue(String name) {
        return "{\"name\":\"" + name + "\",\"gclass\":\"C_QIOGATE\",\"kw\":{\"topic_name\":\"bench\",\"tkey\":\"tm\","
                + "\"fsync_policy\":\"interval\",\"alert_queue_size\":0}}";
    }

    public static void main(String[] args) throws Exception {
        String cfg = args.length > 0 ? args[0] : "q";
        int perRound = args.length > 1 ? Integer.parseInt(args[1]) : 100_000;
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        String out = cfg.equals("mq2")
                ? "{\"name\":\"out\",\"gclass\":\"C_MQIOGATE\",\"kw\":{\"method\":\"lastdigits\",\"digits\":1,\"key\":\"id\"},"
                    + "\"children\":[" + queue("q0") + "," + queue("q1") + "]}"
                : queue("out");
        String config = "{\"services\":[{\"name\":\"in\",\"gclass\":\"C_PROBE_GATE\"}," + out + ","
                + "{\"name\":\"relay\",\"gclass\":\"C_RELAY\",\"kw\":{\"input\":\"in\",\"output\":\"out\"}}]}";
        Path data = Files.createTempDirectory("gatehouse-probe-");
        com.sun.management.ThreadMXBean tm = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        try (TrQueueFactoryImpl queues = new TrQueueFactoryImpl()) {
            List<GClassSpec<?>> gclasses = new ArrayList<>(SideBySide.gclasses(queues));
            gclasses.add(GATE);
            try (YunoRuntime rt = YunoRuntime.builder().name("probe").dataDir(data).gclasses(gclasses).config(config)
                    .build().start()) {
                long core = rt.call(() -> Thread.currentThread().getId());
                GObj in = rt.call(() -> rt.service("in"));
                Gate gate = rt.call(() -> (Gate) in.behavior());
                long sent = 0;
                System.out.printf(Locale.ROOT, "# DurableProbe %s: %d messages per round, %d rounds; load %s%n", cfg,
                        perRound, rounds, new String(Files.readAllBytes(Path.of("/proc/loadavg"))).trim());
                for (int r = 1; r <= rounds; r++) {
                    long cpu0 = tm.getThreadCpuTime(core);
                    long alloc0 = tm.getThreadAllocatedBytes(core);
                    long wall0 = System.nanoTime();
                    for (int b = 0; b < perRound; b += 500) {
                        final long first = sent;
                        rt.run(() -> {
                            for (long i = first; i < first + 500; i++) {
                                ObjectNode kw = Kw.withGbuffer(message(i));
                                kw.putObject(Kw.TEMP).put(Kw.TEMP_CHANNEL, "in-1");
                                in.publish(Ev.EV_ON_MESSAGE, kw);
                            }
                        });
                        sent += 500;
                    }
                    long deadline = System.currentTimeMillis() + 60_000;
                    while (rt.call(() -> gate.acks) < sent && System.currentTimeMillis() < deadline) Thread.sleep(1);
                    long acks = rt.call(() -> gate.acks);
                    double cpu = (tm.getThreadCpuTime(core) - cpu0) / 1000.0 / perRound;
                    double alloc = (double) (tm.getThreadAllocatedBytes(core) - alloc0) / perRound;
                    double wall = (System.nanoTime() - wall0) / 1e9;
                    System.out.printf(Locale.ROOT, "PROBE cfg=%s round=%d msgs=%d acks=%d core_cpu_us_per_msg=%.3f "
                            + "core_alloc_b_per_msg=%.0f wall_s=%.2f load=%s%n", cfg, r, perRound, acks, cpu, alloc, wall,
                            new String(Files.readAllBytes(Path.of("/proc/loadavg"))).split(" ")[0]);
                }
            }
        } finally {
            SideBySide.deleteTree(data);
        }
    }

    /** LoadGen's message: {@code {"id":"L0-<n>","ts":<n>,"tm":<n>,"pad":"xx..","__md_trq__":{...}}}, 128 bytes. */
    private static ByteBuf message(long n) {
        String head = "{\"id\":\"L0-" + n + "\",\"ts\":" + (1_000_000_000L + n) + ",\"tm\":" + (1_764_633_600L + n / 1000)
                + ",\"pad\":\"";
        String tail = "\",\"__md_trq__\":{\"__msg_rowid__\":" + (n + 1) + ",\"__msg_t__\":1764633600}}";
        int pad = Math.max(0, 128 - head.length() - tail.length());
        byte[] b = (head + "x".repeat(pad) + tail).getBytes(StandardCharsets.US_ASCII);
        ByteBuf buf = PooledByteBufAllocator.DEFAULT.directBuffer(b.length);
        buf.writeBytes(b);
        return buf;
    }
}
