// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Tcp4hFrames;
import io.gatehouse.testkit.TestCerts;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * C_TCP_S TLS operations: view-cert, crypto written while listening (hot reload), the expiry warning. Clients
 * are plain JDK SSLSockets so the test sees exactly the certificate the listener presents.
 */
@Timeout(60)
class TcpSCertsTest {
    private static TestCerts first;
    private static TestCerts second;

    @BeforeAll
    static void makeCerts() throws Exception {
        first = TestCerts.generate("first", null, 40);
        second = TestCerts.generate("second", null, 40);
    }

    private static String json(String s) {
        return Kw.MAPPER.valueToTree(s).toString();
    }

    private static String tlsServerCfg(int port, TestCerts certs) {
        String crypto = "\"crypto\":{\"ssl_certificate\":" + json(certs.certPem) + ",\"ssl_certificate_key\":"
                + json(certs.keyPem) + "}";
        return Support.serverConfig(port, 3, crypto).replace("tcp://127.0.0.1:", "tcps://127.0.0.1:");
    }

    private static ObjectNode command(YunoRuntime rt, String command) {
        return rt.command("command-yuno service=in gobj=listen command=" + command);
    }

    private static ObjectNode writeCrypto(YunoRuntime rt, JsonNode crypto) {
        ObjectNode kw = Kw.create();
        kw.put("service", "in");
        kw.put("gobj", "listen");
        kw.put("attr", "crypto");
        kw.set("value", crypto);
        return rt.command("write-attr", kw);
    }

    private static ObjectNode crypto(String cert, String key) {
        ObjectNode c = Kw.create();
        c.put("ssl_certificate", cert);
        c.put("ssl_certificate_key", key);
        return c;
    }

    /**
     * A TLS client trusting both test certificates. A fresh SSLContext each time: a resumed session would report
     * the certificate of the session it resumes, not the one the listener presents now.
     */
    private static SSLSocket connect(int port) throws Exception {
        KeyStore trust = KeyStore.getInstance("PKCS12");
        trust.load(null, null);
        trust.setCertificateEntry("first", first.cert);
        trust.setCertificateEntry("second", second.cert);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        SSLSocket s = (SSLSocket) ctx.getSocketFactory().createSocket();
        s.connect(new InetSocketAddress("127.0.0.1", port), 5000);
        s.setSoTimeout(5000);
        s.startHandshake();
        return s;
    }

    private static String peerSubject(SSLSocket s) throws Exception {
        return ((X509Certificate) s.getSession().getPeerCertificates()[0]).getSubjectX500Principal().getName();
    }

    private static GObj listener(YunoRuntime rt) {
        return rt.call(() -> rt.yuno().service("in").child("listen"));
    }

    @Test
    void shouldDescribeTheServedCertificateInViewCert() throws Exception {
        int port = Ports.free();
        try (LogCapture logs = new LogCapture(); YunoRuntime srv = Support.runtime(tlsServerCfg(port, first))) {
            srv.start();
            ObjectNode r = command(srv, "view-cert");
            assertEquals(0, r.path("result").asInt(), r.toString());
            JsonNode d = r.path("data");
            assertEquals("CN=first", d.path("subject").asText());
            assertEquals("CN=first", d.path("issuer").asText(), "self-signed");
            assertEquals(first.cert.getSerialNumber().toString(16), d.path("serial").asText());
            assertEquals(first.cert.getNotBefore().toInstant().toString(), d.path("not_before").asText());
            assertEquals(first.cert.getNotAfter().toInstant().toString(), d.path("not_after").asText());
            // 40 days of validity that started a moment ago: 39 whole days left
            assertEquals(39, d.path("days_remaining").asLong());
            assertTrue(d.path("days_remaining").isIntegralNumber());
            assertEquals("tcps://127.0.0.1:" + port, d.path("url").asText());
            List<String> sans = new ArrayList<>();
            d.path("subject_alt_names").forEach(n -> sans.add(n.asText()));
            assertEquals(List.of("DNS:localhost", "IP:127.0.0.1"), sans);
            assertEquals(0, logs.with("TLS certificate expires soon").size(), logs.all().toString());

            GObj l = listener(srv);
            srv.run(l::stop);
            ObjectNode stopped = command(srv, "view-cert");
            assertEquals(-1, stopped.path("result").asInt());
            assertEquals("Listener is not TLS-enabled or not running", stopped.path("comment").asText());
        }
    }

    @Test
    void shouldRefuseViewCertAndReloadCertsOnAPlainListener() throws Exception {
        int port = Ports.free();
        try (YunoRuntime srv = Support.runtime(Support.serverConfig(port, 1, null))) {
            srv.start();
            GObj l = listener(srv);
            assertTrue(srv.call(l::isRunning));
            for (String cmd : List.of("view-cert", "reload-certs")) {
                ObjectNode r = command(srv, cmd);
                assertEquals(-1, r.path("result").asInt(), cmd);
                assertEquals("Listener is not TLS-enabled or not running", r.path("comment").asText(), cmd);
            }
        }
    }

    @Test
    void shouldServeAWrittenCryptoToNewConnectionsOnly(@TempDir Path dir) throws Exception {
        Path certFile = Files.writeString(dir.resolve("second.crt"), second.certPem);
        Path keyFile = Files.writeString(dir.resolve("second.key"), second.keyPem);
        int port = Ports.free();
        try (LogCapture logs = new LogCapture(); YunoRuntime srv = Support.runtime(tlsServerCfg(port, first))) {
            Recorder srec = Recorder.create(srv, "rec");
            srv.run(() -> srv.yuno().service("in").subscribe(null, srec.gobj()));
            srv.start();
            try (SSLSocket before = connect(port)) {
                assertEquals("CN=first", peerSubject(before));
                assertNotNull(srec.await(Ev.EV_ON_OPEN, 5000));

                ObjectNode w = writeCrypto(srv, crypto(certFile.toString(), keyFile.toString()));
                assertEquals(0, w.path("result").asInt(), w.toString());
                assertEquals(1, logs.with("TLS certificates reloaded").size(), logs.all().toString());

                try (SSLSocket after = connect(port)) {
                    assertEquals("CN=second", peerSubject(after));
                }
                // The connection made before the reload still carries data on its own session.
                before.getOutputStream().write(Tcp4hFrames.of("still here"));
                before.getOutputStream().flush();
                assertEquals("still here", srec.await(Ev.EV_ON_MESSAGE, 5000).payloadText());
            }
            assertEquals("CN=second", command(srv, "view-cert").path("data").path("subject").asText());
            GObj l = listener(srv);
            assertTrue(srv.call(() -> l.isRunning() && l.inState(St.ST_IDLE)));

            ObjectNode again = command(srv, "reload-certs");
            assertEquals(0, again.path("result").asInt(), again.toString());
            assertEquals("TLS certificates reloaded", again.path("comment").asText());
        }
    }

    @Test
    void shouldKeepServingTheOldCertificateWhenAWrittenCryptoIsBroken() throws Exception {
        int port = Ports.free();
        try (LogCapture logs = new LogCapture(); YunoRuntime srv = Support.runtime(tlsServerCfg(port, first))) {
            srv.start();
            List<ObjectNode> broken = List.of(
                    crypto("/nonexistent/gatehouse/second.crt", second.keyPem),
                    crypto("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n",
                            second.keyPem),
                    crypto(second.certPem, ""));
            int failures = 0;
            JsonNode before = srv.call(() -> listener(srv).readAttr("crypto"));
            for (ObjectNode bad : broken) {
                ObjectNode answer = writeCrypto(srv, bad);
                assertEquals(-1, answer.path("result").asInt(), "a crypto that cannot serve is refused: " + answer);
                assertTrue(answer.path("comment").asText().startsWith("crypto refused"), answer.toString());
                assertEquals(before, srv.call(() -> listener(srv).readAttr("crypto")), "the crypto in use stays written");
                failures++;
                List<LogCapture.Rec> errors = logs.with("reload-certs FAILED");
                assertEquals(failures, errors.size(), bad + " " + logs.all());
                assertTrue(String.valueOf(errors.get(failures - 1).fields.get("error")).length() > 0);

                try (SSLSocket s = connect(port)) {
                    assertEquals("CN=first", peerSubject(s), "the old context still serves");
                }
                assertEquals("CN=first", command(srv, "view-cert").path("data").path("subject").asText(),
                        "view-cert shows the certificate in use, not the one written");
            }
            assertTrue(String.valueOf(logs.with("reload-certs FAILED").get(0).fields.get("error"))
                    .contains("/nonexistent/gatehouse/second.crt"), logs.all().toString());
            // crypto still names the first certificate: reloading it works
            ObjectNode r = command(srv, "reload-certs");
            assertEquals(0, r.path("result").asInt(), r.toString());
            GObj l = listener(srv);
            assertTrue(srv.call(() -> l.isRunning() && l.inState(St.ST_IDLE)));
            assertEquals(1, logs.with("TLS certificates reloaded").size());
            try (SSLSocket s = connect(port)) {
                assertEquals("CN=first", peerSubject(s));
            }
        }
    }

    @Test
    void shouldWarnWhenTheCertificateExpiresWithin30DaysOrHasExpired() throws Exception {
        // Half a day off the day boundary: a DST change inside the relative start date moves it by an hour.
        TestCerts expired = TestCerts.generate("expired", "-10d-12H", 5);
        TestCerts soon = TestCerts.generate("soon", null, 10);
        int port = Ports.free();
        try (LogCapture logs = new LogCapture(); YunoRuntime srv = Support.runtime(tlsServerCfg(port, expired))) {
            srv.start();
            List<LogCapture.Rec> atStart = logs.with("TLS certificate expired");
            assertEquals(1, atStart.size(), logs.all().toString());
            // ended 5.5 days ago: rounded down to -6
            assertEquals(-6L, ((Number) atStart.get(0).fields.get("days_remaining")).longValue());
            assertEquals(-6, command(srv, "view-cert").path("data").path("days_remaining").asInt());

            writeCrypto(srv, crypto(soon.certPem, soon.keyPem));
            List<LogCapture.Rec> onReload = logs.with("TLS certificate expires soon");
            assertEquals(1, onReload.size(), logs.all().toString());
            assertEquals(9L, ((Number) onReload.get(0).fields.get("days_remaining")).longValue());
            assertEquals("CN=soon", onReload.get(0).fields.get("subject"));
        }
    }
}
