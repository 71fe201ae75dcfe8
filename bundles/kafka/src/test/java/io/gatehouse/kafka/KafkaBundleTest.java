// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.kafka;

import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.Manifest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The bundle rules, read from the manifest bnd wrote for this bundle: it exports nothing (only api does), it imports
 * from Gatehouse only {@code io.gatehouse.api} packages, and KafkaLink is inside it as a private package.
 */
class KafkaBundleTest {
    @Test
    void shouldExportNothingAndImportOnlyApiFromGatehouseWithKafkaLinkInside() throws Exception {
        Path mf = Path.of("target/classes/META-INF/MANIFEST.MF");
        assertTrue(Files.exists(mf), "bnd-process wrote " + mf.toAbsolutePath());
        Manifest m;
        try (InputStream in = Files.newInputStream(mf)) {
            m = new Manifest(in);
        }
        assertNull(m.getMainAttributes().getValue("Export-Package"), "exports nothing");
        List<String> gatehouse = new ArrayList<>();
        for (String pkg : packages(m.getMainAttributes().getValue("Import-Package"))) {
            if (pkg.startsWith("io.gatehouse.") && !pkg.startsWith("io.gatehouse.api")) gatehouse.add(pkg);
        }
        assertEquals(List.of(), gatehouse, "Gatehouse packages imported besides api");
        assertTrue(Files.exists(Path.of("target/classes/io/gatehouse/kafka/link/KafkaLink.class")),
                "KafkaLink copied into the bundle (and, by the check above, not imported)");
    }

    /** The package names of a manifest header (attributes and quoted version ranges skipped). */
    static List<String> packages(String header) {
        List<String> out = new ArrayList<>();
        if (header == null) return out;
        boolean quoted = false;
        StringBuilder cur = new StringBuilder();
        for (char c : (header + ",").toCharArray()) {
            if (c == '"') quoted = !quoted;
            if (c == ',' && !quoted) {
                String clause = cur.toString().trim();
                int semi = clause.indexOf(';');
                out.add(semi < 0 ? clause : clause.substring(0, semi));
                cur.setLength(0);
            } else {
                cur.append(c);
            }
        }
        return out;
    }
}
