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
        return YunoRuntime.builder().name("t").gclass(specs()).config(config).build();
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
