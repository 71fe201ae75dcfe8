// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.util.Base64;
import java.util.concurrent.TimeUnit;

/** A self-signed EC certificate for localhost/127.0.0.1, made at test time with the JDK's keytool. */
final class TestCerts {
    final String certPem;
    final String keyPem;

    private TestCerts(String certPem, String keyPem) {
        this.certPem = certPem;
        this.keyPem = keyPem;
    }

    static TestCerts generate(String cn) throws Exception {
        Path dir = Files.createTempDirectory("gatehouse-tls");
        Path ks = dir.resolve("ks.p12");
        String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        Process p = new ProcessBuilder(keytool, "-genkeypair", "-alias", "k", "-keyalg", "EC", "-groupname", "secp256r1",
                "-dname", "CN=" + cn, "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-validity", "2",
                "-keystore", ks.toString(), "-storetype", "PKCS12", "-storepass", "changeit", "-keypass", "changeit")
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) throw new IllegalStateException("keytool: " + out);
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(ks)) {
            store.load(in, "changeit".toCharArray());
        }
        PrivateKey key = (PrivateKey) store.getKey("k", "changeit".toCharArray());
        Certificate cert = store.getCertificate("k");
        Files.delete(ks);
        Files.delete(dir);
        return new TestCerts(pem("CERTIFICATE", cert.getEncoded()), pem("PRIVATE KEY", key.getEncoded()));
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, "\n".getBytes()).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }
}
