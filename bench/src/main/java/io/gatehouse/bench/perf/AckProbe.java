// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.bench.perf;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * What C_RELAY spends to write one upstream ack at EV_ON_DURABLE, on one thread, exact bytes and CPU per ack:
 * {@code md} writes it from the metadata's dict ({@code MdTrq.writeAckStart}, before issue 17's batch work),
 * {@code bytes} copies the ack's start kept from the scan ({@code MdTrq.startAck(byte[])}, after), and {@code keep}
 * is what keeping it costs when the message is forwarded ({@code MdTrq.ackStart()}). The relay's
 * classes are package-private: reached by reflection, as HotPath reaches Tcp4hBench.
 *
 * <pre>AckProbe [acks=1000000] [rounds=3]</pre>
 */
public final class AckProbe {
    private AckProbe() {}

    public static void main(String[] args) throws Exception {
        int n = args.length > 0 ? Integer.parseInt(args[0]) : 1_000_000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        Class<?> c = Class.forName("io.gatehouse.relay.MdTrq");
        Constructor<?> k = c.getDeclaredConstructor();
        k.setAccessible(true);
        Object scan = k.newInstance();
        Method scanM = c.getDeclaredMethod("scan", ByteBuf.class);
        Method tree = c.getDeclaredMethod("tree");
        Method writeAckStart = c.getDeclaredMethod("writeAckStart", ObjectNode.class);
        Method endAck = c.getDeclaredMethod("endAck", ByteBuf.class, int.class);
        Method ackStart = null;
        Method startAckBytes = null;
        try {
            ackStart = c.getDeclaredMethod("ackStart");
            startAckBytes = c.getDeclaredMethod("startAck", byte[].class);
        } catch (NoSuchMethodException before) {
            // a build before the bytes were kept: only the md way
        }
        for (Method m : new Method[] {scanM, tree, writeAckStart, endAck, ackStart, startAckBytes}) {
            if (m != null) m.setAccessible(true);
        }
        byte[] msg = ("{\"id\":\"m1-123456\",\"ts\":1764633600123456789,\"tm\":1764633600,\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\","
                + "\"__md_trq__\":{\"__msg_rowid__\":123456,\"__msg_t__\":1}}").getBytes(StandardCharsets.UTF_8);
        ByteBuf in = PooledByteBufAllocator.DEFAULT.directBuffer(msg.length);
        in.writeBytes(msg);
        scanM.invoke(scan, in);
        ObjectNode md = (ObjectNode) ((ObjectNode) tree.invoke(scan)).get(Kw.MD_TRQ);
        byte[] start = ackStart == null ? null : (byte[]) ackStart.invoke(scan);
        in.release();
        com.sun.management.ThreadMXBean mx =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        long tid = Thread.currentThread().getId();
        for (int r = 1; r <= rounds; r++) {
            for (String way : start == null ? new String[] {"md"} : new String[] {"md", "bytes", "keep"}) {
                long a0 = mx.getThreadAllocatedBytes(tid);
                long c0 = mx.getCurrentThreadCpuTime();
                long sum = 0;
                for (int i = 0; i < n; i++) {
                    if (way.equals("keep")) {
                        // what forwarding a message now adds: the ack's start copied out of the scan's bytes
                        sum += ((byte[]) ackStart.invoke(scan)).length;
                        continue;
                    }
                    ByteBuf b = way.equals("md")
                            ? (ByteBuf) writeAckStart.invoke(null, md)
                            : (ByteBuf) startAckBytes.invoke(null, (Object) start);
                    b = (ByteBuf) endAck.invoke(null, b, 0);
                    sum += b.readableBytes();
                    b.release();
                }
                long cpu = mx.getCurrentThreadCpuTime() - c0;
                long alloc = mx.getThreadAllocatedBytes(tid) - a0;
                System.out.printf(Locale.ROOT, "round %d %s: %.0f ns cpu and %.0f B allocated per ack (%d B each)%n",
                        r, way, (double) cpu / n, (double) alloc / n, sum / n);
            }
        }
    }
}
