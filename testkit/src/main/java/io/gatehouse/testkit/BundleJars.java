// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarInputStream;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

/** Bundle jars for upgrade tests: the same classes under a higher version, as a release would make them. */
public final class BundleJars {
    private BundleJars() {}

    /**
     * A copy of {@code jar} in {@code dir} whose Bundle-Version is the original's {@code major.minor.(micro+step)}
     * (a qualifier such as SNAPSHOT dropped, so the copy sorts above the original).
     */
    public static Path bumped(Path jar, Path dir, int step) throws IOException {
        return bumped(jar, dir, step, Map.of(), "");
    }

    /**
     * As {@link #bumped(Path, Path, int)}, with manifest headers set over the original's, and {@code suffix} in the
     * file name: the broken releases an upgrade must refuse (an {@code Import-Package} nothing exports, a
     * {@code Bundle-Activator} that is not there, another {@code Bundle-SymbolicName}).
     */
    public static Path bumped(Path jar, Path dir, int step, Map<String, String> headers, String suffix) throws IOException {
        try (InputStream in = Files.newInputStream(jar); JarInputStream j = new JarInputStream(in)) {
            Manifest mf = new Manifest(j.getManifest());
            String next = nextVersion(mf.getMainAttributes().getValue("Bundle-Version"), step);
            mf.getMainAttributes().put(new Attributes.Name("Bundle-Version"), next);
            headers.forEach((k, v) -> mf.getMainAttributes().put(new Attributes.Name(k), v));
            String name = jar.getFileName().toString().replace(".jar", "") + "-" + next + suffix + ".jar";
            Path out = dir.resolve(name);
            try (OutputStream os = Files.newOutputStream(out); JarOutputStream w = new JarOutputStream(os, mf)) {
                for (JarEntry e; (e = j.getNextJarEntry()) != null; ) {
                    w.putNextEntry(new JarEntry(e.getName()));
                    j.transferTo(w);
                    w.closeEntry();
                }
            }
            return out;
        }
    }

    /** The Bundle-Version of a jar. */
    public static String version(Path jar) throws IOException {
        try (InputStream in = Files.newInputStream(jar); JarInputStream j = new JarInputStream(in)) {
            return j.getManifest().getMainAttributes().getValue("Bundle-Version");
        }
    }

    static String nextVersion(String version, int step) {
        String[] p = version.split("\\.");
        int major = Integer.parseInt(p[0]);
        int minor = p.length > 1 ? Integer.parseInt(p[1]) : 0;
        int micro = p.length > 2 ? Integer.parseInt(p[2]) : 0;
        return major + "." + minor + "." + (micro + step);
    }
}
