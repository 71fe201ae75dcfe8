// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.gatehouse.support.Glog;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The persistent attributes of services (Yuneta's rule: services only), one JSON file per service under
 * {@code <data>/persistent/}, written atomically (temp file, fsync, rename) so a crash leaves the old or the new
 * values, never half of them.
 */
final class PersistentAttrs {
    private final Path dataDir;

    PersistentAttrs(Path dataDir) {
        this.dataDir = dataDir;
    }

    private Path file(GObjImpl g) {
        String safe = g.fullName().replaceAll("[^A-Za-z0-9_.-]", "_");
        return dataDir.resolve("persistent").resolve(safe + ".json");
    }

    /** The saved values of a service, or null (none, or unreadable: logged, the defaults stay). */
    ObjectNode load(GObjImpl g) {
        if (dataDir == null) return null;
        Path f = file(g);
        if (!Files.exists(f)) return null;
        try {
            JsonNode n = Kw.MAPPER.readTree(Files.readString(f));
            return n instanceof ObjectNode ? (ObjectNode) n : null;
        } catch (IOException e) {
            Glog.error(g, "Cannot read persistent attributes, defaults used", "file", f.toString(), "error", e.getMessage());
            return null;
        }
    }

    void save(GObjImpl g) {
        if (dataDir == null || !g.isService()) return;
        Path f = file(g);
        try {
            Files.createDirectories(f.getParent());
            Path tmp = f.resolveSibling(f.getFileName() + ".tmp");
            Files.write(tmp, Kw.MAPPER.writerWithDefaultPrettyPrinter().writeValueAsString(g.persistentJson())
                    .getBytes(StandardCharsets.UTF_8));
            try (var ch = java.nio.channels.FileChannel.open(tmp, java.nio.file.StandardOpenOption.WRITE)) {
                ch.force(true);
            }
            try {
                Files.move(tmp, f, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, f, StandardCopyOption.REPLACE_EXISTING);
            }
        } catch (IOException e) {
            Glog.error(g, "Cannot save persistent attributes", "file", f.toString(), "error", e.getMessage());
        }
    }
}
