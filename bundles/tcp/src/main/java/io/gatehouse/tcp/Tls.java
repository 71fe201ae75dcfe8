// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.util.Collection;
import java.util.List;

/**
 * TLS contexts from a Yuneta {@code crypto} dict (JDK provider). Keys, each a PEM file path or inline PEM text:
 * <ul>
 *   <li>{@code ssl_certificate}, {@code ssl_certificate_key}: own certificate chain and PKCS#8 key (required on
 *       a server; on a client they enable client authentication);</li>
 *   <li>{@code ssl_trusted_certificate}: CA certificates. On a client, the peers it trusts (absent: the JDK's
 *       default trust store); on a server, its presence requires client certificates signed by them;</li>
 *   <li>{@code ssl_ciphers}: optional colon-separated cipher suite list (Java names);</li>
 *   <li>{@code ssl_server_name}: SNI / host name for the client (filled from the url host when empty).</li>
 * </ul>
 */
final class Tls {
    private Tls() {}

    /** A server context and the certificate it presents, both made from one read of {@code ssl_certificate}. */
    record ServerContext(SslContext ssl, X509Certificate certificate) {}

    static ServerContext server(JsonNode crypto) throws IOException {
        String cert = Kw.getString(crypto, "ssl_certificate", "");
        String key = Kw.getString(crypto, "ssl_certificate_key", "");
        if (cert.isEmpty() || key.isEmpty()) {
            throw new IOException("crypto needs ssl_certificate and ssl_certificate_key");
        }
        // One read: a file replaced between two reads would make view-cert describe a certificate not served.
        byte[] chain = pemBytes(cert);
        X509Certificate leaf = firstCertificate(chain);
        SslContextBuilder b = SslContextBuilder.forServer(new ByteArrayInputStream(chain), pem(key))
                .sslProvider(SslProvider.JDK);
        String ca = Kw.getString(crypto, "ssl_trusted_certificate", "");
        if (!ca.isEmpty()) {
            b.trustManager(pem(ca)).clientAuth(ClientAuth.REQUIRE);
        }
        ciphers(b, crypto);
        return new ServerContext(b.build(), leaf);
    }

    static SslContext client(JsonNode crypto) throws IOException {
        SslContextBuilder b = SslContextBuilder.forClient().sslProvider(SslProvider.JDK);
        String ca = Kw.getString(crypto, "ssl_trusted_certificate", "");
        if (!ca.isEmpty()) b.trustManager(pem(ca));
        String cert = Kw.getString(crypto, "ssl_certificate", "");
        String key = Kw.getString(crypto, "ssl_certificate_key", "");
        if (!cert.isEmpty() && !key.isEmpty()) b.keyManager(pem(cert), pem(key));
        ciphers(b, crypto);
        return b.build();
    }

    private static void ciphers(SslContextBuilder b, JsonNode crypto) {
        String c = Kw.getString(crypto, "ssl_ciphers", "");
        if (!c.isEmpty() && !c.contains("!")) b.ciphers(List.of(c.split(":")));
    }

    /** Inline PEM text, or the content of the file it names. */
    private static InputStream pem(String v) throws IOException {
        return new ByteArrayInputStream(pemBytes(v));
    }

    private static byte[] pemBytes(String v) throws IOException {
        if (v.contains("-----BEGIN")) return v.getBytes(StandardCharsets.US_ASCII);
        return Files.readAllBytes(Path.of(v));
    }

    private static X509Certificate firstCertificate(byte[] pem) throws IOException {
        Collection<? extends Certificate> certs;
        try {
            certs = CertificateFactory.getInstance("X.509").generateCertificates(new ByteArrayInputStream(pem));
        } catch (CertificateException e) {
            throw new IOException("ssl_certificate: " + e.getMessage(), e);
        }
        if (certs.isEmpty()) throw new IOException("ssl_certificate holds no certificate");
        return (X509Certificate) certs.iterator().next();
    }

    /** Whole days left until notAfter, rounded down: -1 as soon as it has expired. */
    static long daysRemaining(X509Certificate c, long nowEpochMs) {
        return Math.floorDiv(c.getNotAfter().getTime() - nowEpochMs, 86_400_000L);
    }

    /** subject, issuer, serial (hex), not_before, not_after (ISO-8601 UTC), days_remaining, subject_alt_names. */
    static ObjectNode describe(X509Certificate c, long nowEpochMs) {
        ObjectNode o = Kw.create();
        o.put("subject", c.getSubjectX500Principal().getName());
        o.put("issuer", c.getIssuerX500Principal().getName());
        o.put("serial", c.getSerialNumber().toString(16));
        o.put("not_before", c.getNotBefore().toInstant().toString());
        o.put("not_after", c.getNotAfter().toInstant().toString());
        o.put("days_remaining", daysRemaining(c, nowEpochMs));
        ArrayNode sans = o.putArray("subject_alt_names");
        try {
            Collection<List<?>> names = c.getSubjectAlternativeNames();
            if (names != null) {
                for (List<?> n : names) {
                    if (n.size() > 1 && n.get(1) instanceof String) sans.add(sanPrefix((Integer) n.get(0)) + n.get(1));
                }
            }
        } catch (CertificateParsingException e) {
            // a certificate that serves but has an unreadable SAN extension: show it without names
        }
        return o;
    }

    /** openssl's spelling of the GeneralName types (RFC 5280 4.2.1.6). */
    private static String sanPrefix(int type) {
        switch (type) {
            case 1: return "email:";
            case 2: return "DNS:";
            case 6: return "URI:";
            case 7: return "IP:";
            default: return "type" + type + ":";
        }
    }
}
