// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.Glog;
import io.gatehouse.api.LogSink;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.tcp4h.ProtTcp4hGClass;

import java.io.IOException;
import java.io.InputStream;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Test helpers: free ports, a runtime with the transport gclasses, captured logs, socket reads. */
final class Support {
    private Support() {}

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }

    static GClassSpec<?>[] specs() {
        return new GClassSpec<?>[] {new TcpGClass().spec(), new TcpSGClass().spec(), new ProtTcp4hGClass().spec(),
            TestGClasses.Channel.SPEC, TestGClasses.Gate.SPEC};
    }

    static YunoRuntime runtime(String config) {
        return runtime(config, 0);
    }

    /** A runtime whose sockets are served by {@code ioThreads} worker loops (0 = the core loop). */
    static YunoRuntime runtime(String config, int ioThreads) {
        return YunoRuntime.builder().name("t").ioThreads(ioThreads).gclass(specs()).config(config).build();
    }

    /** Live threads of the io_threads worker loops of yunos named {@code yunoName}. */
    static List<String> ioThreads(String yunoName) {
        return threads("gatehouse-io-" + yunoName + "-");
    }

    static List<String> threads(String prefix) {
        List<String> out = new ArrayList<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && t.getName().startsWith(prefix)) out.add(t.getName());
        }
        return out;
    }

    /** The io_threads workers of yunos named {@code yunoName} still alive after waiting up to {@code timeoutMs}. */
    static List<String> ioThreadsLeft(String yunoName, long timeoutMs) throws InterruptedException {
        return threadsLeft("gatehouse-io-" + yunoName + "-", timeoutMs);
    }

    /** Waits (a closed group's threads end just after its termination is signalled) until none is left. */
    static List<String> threadsLeft(String prefix, long timeoutMs) throws InterruptedException {
        long end = System.currentTimeMillis() + timeoutMs;
        List<String> left = threads(prefix);
        while (!left.isEmpty() && System.currentTimeMillis() < end) {
            Thread.sleep(10);
            left = threads(prefix);
        }
        return left;
    }

    /**
     * Collects what is printed on System.err (where slf4j-simple writes Netty's leak reports) while still
     * printing it, so a test class can fail on "LEAK:". The paranoid detector reports a leaked buffer once it
     * was garbage collected and another buffer is tracked: {@link #stop} collects and allocates to flush them.
     */
    static final class LeakWatch {
        private final java.io.PrintStream original = System.err;
        private final java.io.ByteArrayOutputStream seen = new java.io.ByteArrayOutputStream();

        LeakWatch() {
            java.io.OutputStream tee = new java.io.OutputStream() {
                @Override
                public void write(int b) {
                    original.write(b);
                    synchronized (seen) {
                        seen.write(b);
                    }
                }

                @Override
                public void write(byte[] b, int off, int len) {
                    original.write(b, off, len);
                    synchronized (seen) {
                        seen.write(b, off, len);
                    }
                }
            };
            System.setErr(new java.io.PrintStream(tee, true));
        }

        /** Stops collecting; answers the leak reports seen (empty if none). */
        String stop() throws InterruptedException {
            try {
                for (int r = 0; r < 5; r++) {
                    System.gc();
                    Thread.sleep(50);
                    for (int i = 0; i < 100; i++) io.netty.buffer.PooledByteBufAllocator.DEFAULT.directBuffer(16).release();
                }
            } finally {
                System.setErr(original);
            }
            String all;
            synchronized (seen) {
                all = seen.toString(java.nio.charset.StandardCharsets.UTF_8);
            }
            int i = all.indexOf("LEAK:");
            return i < 0 ? "" : all.substring(i, Math.min(all.length(), i + 4000));
        }
    }

    /** Client side: a gate, a channel, C_PROT_TCP4H and C_TCP connecting to {@code port}. */
    static String clientConfig(int port, String tcpKw) {
        return "{\"services\":[{\"name\":\"out\",\"gclass\":\"C_TEST_GATE\",\"autostart\":true,\"children\":["
                + "{\"name\":\"out\",\"gclass\":\"C_CHANNEL\",\"children\":["
                + "{\"name\":\"out\",\"gclass\":\"C_PROT_TCP4H\",\"children\":["
                + "{\"name\":\"out\",\"gclass\":\"C_TCP\",\"kw\":{\"url\":\"tcp://127.0.0.1:" + port + "\""
                + (tcpKw == null ? "" : "," + tcpKw) + "}}]}]}]}]}";
    }

    /** One captured log record. */
    static final class Rec {
        final LogSink.Level level;
        final String gobj;
        final String msg;
        final Map<String, Object> fields;
        final long atMs;

        Rec(LogSink.Level level, String gobj, String msg, Map<String, Object> fields) {
            this.level = level;
            this.gobj = gobj;
            this.msg = msg;
            this.fields = fields;
            this.atMs = System.nanoTime() / 1_000_000L;
        }

        @Override
        public String toString() {
            return level + " " + gobj + " " + msg + " " + fields;
        }
    }

    /** Captures Glog records until closed. */
    static final class Logs implements LogSink, AutoCloseable {
        private final List<Rec> recs = new ArrayList<>();

        Logs() {
            Glog.addSink(this);
        }

        @Override
        public synchronized void log(Level level, String gobj, String msg, Map<String, Object> fields) {
            recs.add(new Rec(level, gobj, msg, fields));
            notifyAll();
        }

        synchronized List<Rec> all() {
            return new ArrayList<>(recs);
        }

        synchronized List<Rec> with(String msg) {
            List<Rec> out = new ArrayList<>();
            for (Rec r : recs) if (r.msg.equals(msg)) out.add(r);
            return out;
        }

        synchronized boolean await(String msg, int n, long timeoutMs) throws InterruptedException {
            long end = System.currentTimeMillis() + timeoutMs;
            while (with(msg).size() < n) {
                long left = end - System.currentTimeMillis();
                if (left <= 0) return false;
                wait(left);
            }
            return true;
        }

        @Override
        public void close() {
            Glog.removeSink(this);
        }
    }

    static byte[] frame(String s) {
        byte[] p = s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] f = new byte[p.length + 4];
        int l = p.length + 4;
        f[0] = (byte) (l >>> 24);
        f[1] = (byte) (l >>> 16);
        f[2] = (byte) (l >>> 8);
        f[3] = (byte) l;
        System.arraycopy(p, 0, f, 4, p.length);
        return f;
    }

    /** Reads one TCP4H frame's payload from a blocking socket stream. */
    static String readFrame(InputStream in) throws IOException {
        byte[] h = in.readNBytes(4);
        if (h.length < 4) return null;
        int l = ((h[0] & 0xFF) << 24) | ((h[1] & 0xFF) << 16) | ((h[2] & 0xFF) << 8) | (h[3] & 0xFF);
        byte[] p = in.readNBytes(l - 4);
        return new String(p, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** Server side of the canonical topology: a gate with a listener and n channels over C_PROT_TCP4H. */
    static String serverConfig(int port, int channels, String listenerKw, String tcp4hKw) {
        StringBuilder sb = new StringBuilder();
        sb.append("{\"services\":[{\"name\":\"in\",\"gclass\":\"C_TEST_GATE\",\"autostart\":true,\"children\":[");
        sb.append("{\"name\":\"listen\",\"gclass\":\"C_TCP_S\",\"kw\":{\"url\":\"tcp://127.0.0.1:").append(port)
                .append("\"").append(listenerKw == null ? "" : "," + listenerKw).append("}}");
        for (int i = 1; i <= channels; i++) {
            sb.append(",{\"name\":\"in-").append(i).append("\",\"gclass\":\"C_CHANNEL\",\"children\":[")
              .append("{\"name\":\"in-").append(i).append("\",\"gclass\":\"C_PROT_TCP4H\",\"kw\":{")
              .append(tcp4hKw == null ? "" : tcp4hKw).append("}}]}");
        }
        sb.append("]}]}");
        return sb.toString();
    }
}
