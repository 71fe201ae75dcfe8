// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Checks that a gobj class source follows the one layout of docs/CORE.md ("Adding a gclass"): the SPDX line
 * first, a class javadoc that says where the gclass comes from ("Port of ..." or "No C original"), and the
 * {@code // --- Name ---} banners in this order, each at most once: Attributes, Trace levels, FSM, Spec,
 * Private data, Framework methods, Commands, Actions, Local methods. A gclass without commands has no Commands
 * banner; any other banner is a difference.
 */
public final class GClassLayout {
    /** The sections of a gobj class, in order. */
    public static final List<String> SECTIONS = List.of("Attributes", "Trace levels", "FSM", "Spec", "Private data",
            "Framework methods", "Commands", "Actions", "Local methods");
    private static final List<String> REQUIRED = List.of("Attributes", "FSM", "Spec", "Private data",
            "Framework methods", "Actions");
    private static final Pattern BANNER = Pattern.compile("^\\s*// --- (.+) ---\\s*$");

    private GClassLayout() {}

    /** The source of a class of the module under test, {@code src/main/java/<package path>/<Name>.java}. */
    public static Path source(Class<?> c) {
        return SpecDoc.find("src/main/java/" + c.getName().replace('.', '/') + ".java");
    }

    /** How {@code source} departs from the layout; empty when it follows it. */
    public static List<String> differences(Path source) {
        List<String> lines;
        try {
            lines = Files.readAllLines(source);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> out = new ArrayList<>();
        if (lines.isEmpty() || !lines.get(0).startsWith("// SPDX-License-Identifier: ")) {
            out.add("the first line is not the SPDX line");
        }
        String text = String.join("\n", lines);
        int classAt = text.indexOf("public final class ");
        int javadocAt = classAt < 0 ? -1 : text.lastIndexOf("/**", classAt);
        String javadoc = javadocAt < 0 ? "" : text.substring(javadocAt, classAt);
        if (!javadoc.contains("Port of ") && !javadoc.contains("No C original")) {
            out.add("the class javadoc does not say where the gclass comes from (Port of ... / No C original)");
        }
        int last = -1;
        List<String> seen = new ArrayList<>();
        for (String l : lines) {
            Matcher m = BANNER.matcher(l);
            if (!m.matches()) continue;
            String name = m.group(1);
            int at = SECTIONS.indexOf(name);
            if (at < 0) {
                out.add("banner '" + name + "' is not a section of the layout " + SECTIONS);
            } else if (at <= last) {
                out.add("banner '" + name + "' comes after '" + SECTIONS.get(last) + "'");
            } else {
                last = at;
            }
            seen.add(name);
        }
        for (String r : REQUIRED) if (!seen.contains(r)) out.add("no '// --- " + r + " ---' banner");
        return out;
    }
}
