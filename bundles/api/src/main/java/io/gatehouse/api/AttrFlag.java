// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

/** Attribute flags, as Yuneta's SDF_* flags. Combine with bitwise or. */
public final class AttrFlag {
    private AttrFlag() {}

    /** Configurable at creation, read-only afterwards. */
    public static final int RD = 0x0001;
    /** Writable at run time ({@code write-attr}); the gobj's {@code onWriting} hook is told. */
    public static final int WR = 0x0002;
    /** Saved under the data directory and restored when the service is created again. Implies WR. */
    public static final int PERSIST = 0x0004 | WR;
    /** Appears in stats. */
    public static final int STATS = 0x0010;
    /** Stats that {@code __reset__} sets back to the default. */
    public static final int RSTATS = 0x0020 | STATS;
    /** Stats that are also persistent. */
    public static final int PSTATS = 0x0040 | STATS | PERSIST;
    /** Reset to the default when the gobj disconnects (connection-scoped values). */
    public static final int VOLATILE = 0x0080;
    /** Must be given a non-empty value in the config. */
    public static final int REQUIRED = 0x0100;

    public static boolean has(int flags, int flag) {
        return (flags & flag) == flag;
    }
}
