// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** A self-signed EC certificate for localhost/127.0.0.1, made at test time with the JDK's keytool. */
public final class TestCerts {
    public final String certPem;
    public final String keyPem;
    public final X509Certificate cert;

    private TestCerts(String certPem, String keyPem, X509Certificate cert) {
        this.certPem = certPem;
        this.keyPem = keyPem;
        this.cert = cert;
    }

    public static TestCerts generate(String cn) throws Exception {
        return generate(cn, null, 2);
    }

    /** {@code startDate} in keytool's syntax ("-10d": ten days ago), null for now. */
    public static TestCerts generate(String cn, String startDate, int validityDays) throws Exception {
        Path dir = Files.createTempDirectory("gatehouse-tls");
        Path ks = dir.resolve("ks.p12");
        String keytool = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        List<String> cmd = new ArrayList<>(List.of(keytool, "-genkeypair", "-alias", "k", "-keyalg", "EC",
                "-groupname", "secp256r1", "-dname", "CN=" + cn, "-ext", "SAN=dns:localhost,ip:127.0.0.1",
                "-validity", String.valueOf(validityDays), "-keystore", ks.toString(), "-storetype", "PKCS12",
                "-storepass", "changeit", "-keypass", "changeit"));
        if (startDate != null) cmd.addAll(List.of("-startdate", startDate));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
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
        return new TestCerts(pem("CERTIFICATE", cert.getEncoded()), pem("PRIVATE KEY", key.getEncoded()),
                (X509Certificate) cert);
    }

    private static String pem(String type, byte[] der) {
        return "-----BEGIN " + type + "-----\n" + Base64.getMimeEncoder(64, "\n".getBytes()).encodeToString(der)
                + "\n-----END " + type + "-----\n";
    }
}
