// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.JsonNode;
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

    static SslContext server(JsonNode crypto) throws IOException {
        String cert = Kw.getString(crypto, "ssl_certificate", "");
        String key = Kw.getString(crypto, "ssl_certificate_key", "");
        if (cert.isEmpty() || key.isEmpty()) {
            throw new IOException("crypto needs ssl_certificate and ssl_certificate_key");
        }
        SslContextBuilder b = SslContextBuilder.forServer(pem(cert), pem(key)).sslProvider(SslProvider.JDK);
        String ca = Kw.getString(crypto, "ssl_trusted_certificate", "");
        if (!ca.isEmpty()) {
            b.trustManager(pem(ca)).clientAuth(ClientAuth.REQUIRE);
        }
        ciphers(b, crypto);
        return b.build();
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
        if (!c.isEmpty() && !c.contains("!")) b.ciphers(java.util.List.of(c.split(":")));
    }

    /** Inline PEM text, or the content of the file it names. */
    private static InputStream pem(String v) throws IOException {
        if (v.contains("-----BEGIN")) return new ByteArrayInputStream(v.getBytes(StandardCharsets.US_ASCII));
        return new ByteArrayInputStream(Files.readAllBytes(Path.of(v)));
    }
}
