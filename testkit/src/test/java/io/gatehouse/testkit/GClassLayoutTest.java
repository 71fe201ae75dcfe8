// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The layout check finds a missing SPDX line or port line, and banners out of order or not in the layout. */
class GClassLayoutTest {
    static final String GOOD = String.join("\n",
            "// SPDX-License-Identifier: Apache-2.0", "package x;", "",
            "/** C_X: what it does. No C original: new in Gatehouse. */", "public final class X {",
            "    // --- Attributes ---", "    // --- FSM ---", "    // --- Spec ---", "    // --- Private data ---",
            "    // --- Framework methods ---", "    // --- Actions ---", "    // --- Local methods ---", "}", "");

    @TempDir
    Path tmp;

    private List<String> check(String source) throws IOException {
        Path f = tmp.resolve("X.java");
        Files.writeString(f, source);
        return GClassLayout.differences(f);
    }

    @Test
    void shouldFindNothingInASourceThatFollowsTheLayout() throws IOException {
        assertEquals(List.of(), check(GOOD));
        assertEquals(List.of(), check(GOOD.replace("No C original: new in Gatehouse.", "Port of {@code c_x.c} @1.")));
    }

    @Test
    void shouldFindBannersOutOfOrderOrOutsideTheLayout() throws IOException {
        assertEquals(List.of("banner 'Framework methods' comes after 'Actions'"),
                check(GOOD.replace("    // --- Framework methods ---\n    // --- Actions ---",
                        "    // --- Actions ---\n    // --- Framework methods ---")));
        assertEquals(List.of("banner 'Stats' is not a section of the layout " + GClassLayout.SECTIONS),
                check(GOOD.replace("    // --- Local methods ---", "    // --- Stats ---")));
        assertEquals(List.of("no '// --- Spec ---' banner"), check(GOOD.replace("    // --- Spec ---\n", "")));
    }

    @Test
    void shouldFindAMissingSpdxOrPortLine() throws IOException {
        assertEquals(List.of("the first line is not the SPDX line"),
                check(GOOD.replace("// SPDX-License-Identifier: Apache-2.0\n", "")));
        assertEquals(List.of("the class javadoc does not say where the gclass comes from (Port of ... / No C original)"),
                check(GOOD.replace(" No C original: new in Gatehouse.", "")));
    }
}
