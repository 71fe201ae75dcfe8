// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import org.osgi.framework.Bundle;
import org.osgi.framework.wiring.BundleWiring;

import java.util.Collection;

/**
 * Loads every class of a bundle's current revision (without initializing them), so that reading the jar and
 * defining its classes happen when the revision starts, not in a live upgrade's pause (the first use of a class
 * loads it, on the core loop, while messages wait). A stopped revision's loader then also keeps what it needs to go
 * on running.
 */
public final class BundleClasses {
    private BundleClasses() {
    }

    /** Answers how many classes were loaded; -1 when the bundle has no class loader (not resolved). */
    public static int loadAll(Bundle b) {
        BundleWiring w = b == null ? null : b.adapt(BundleWiring.class);
        ClassLoader cl = w == null ? null : w.getClassLoader();
        if (cl == null) return -1;
        Collection<String> names = w.listResources("/", "*.class",
                BundleWiring.LISTRESOURCES_RECURSE | BundleWiring.LISTRESOURCES_LOCAL);
        int n = 0;
        for (String res : names) {
            if (res.endsWith("module-info.class") || res.endsWith("package-info.class")) continue;
            String cn = res.substring(0, res.length() - ".class".length()).replace('/', '.');
            try {
                Class.forName(cn, false, cl);
                n++;
            } catch (ClassNotFoundException | LinkageError e) {
                // an optional import missing: that class could not run anyway
            }
        }
        return n;
    }
}
