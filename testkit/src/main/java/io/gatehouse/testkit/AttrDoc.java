// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.GClassSpec;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Keeps the attribute table of a gclass in a Markdown document true to its spec. The table is the first one after
 * the heading {@code ## <heading>} and has the columns {@code attribute | type | default | flags | notes}, one row
 * per attribute in the spec's order; the first four are what {@link #row} renders from the spec, the notes are the
 * document's own. A test asserts {@code AttrDoc.check(doc, heading, SPEC)} is empty; when it is not, the message
 * holds the table as it should read (the notes kept), ready to paste.
 *
 * <pre>{@code assertEquals("", AttrDoc.check(AttrDoc.doc("docs/TRANSPORT.md"), "C_TCP", Tcp.SPEC));}</pre>
 */
public final class AttrDoc {
    private static final String HEADER = "| attribute | type | default | flags | notes |";
    private static final String RULE = "|---|---|---|---|---|";

    private AttrDoc() {}

    /**
     * A document of the repository, found from the working directory of the test (a module's directory) upwards.
     *
     * @throws IllegalStateException when no directory above has it
     */
    public static Path doc(String relative) {
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path p = dir.resolve(relative);
            if (Files.isRegularFile(p)) return p;
        }
        throw new IllegalStateException(relative + " not found above " + Path.of("").toAbsolutePath());
    }

    /** Empty when the table under {@code ## heading} matches the spec; else what differs, and the table to paste. */
    public static String check(Path doc, String heading, GClassSpec<?> spec) {
        List<String> lines;
        try {
            lines = Files.readAllLines(doc);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> table = tableUnder(lines, heading);
        Map<String, String> notes = new LinkedHashMap<>();
        List<String> problems = new ArrayList<>();
        if (table.isEmpty()) {
            problems.add("no attribute table under '## " + heading + "' in " + doc);
        } else if (!table.get(0).replace(" ", "").equals(HEADER.replace(" ", ""))) {
            problems.add("the table's header is not " + HEADER + ": " + table.get(0));
        }
        List<String> names = new ArrayList<>();
        for (int i = 2; i < table.size(); i++) {
            String[] cells = cells(table.get(i));
            String name = cells.length > 0 ? cells[0].replace("`", "").trim() : "";
            names.add(name);
            notes.put(name, cells.length > 4 ? cells[4].trim() : "");
            Attr<?> a = spec.attr(name);
            if (a == null) {
                problems.add("'" + name + "' is not an attribute of " + spec.name());
                continue;
            }
            String want = row(a, "");
            String got = "| " + String.join(" | ", java.util.Arrays.copyOf(cells, Math.min(4, cells.length))) + " | |";
            if (!normalize(got).equals(normalize(want))) problems.add("row of " + name + " reads " + got + ", the spec says " + want);
        }
        List<String> specNames = new ArrayList<>(spec.attrs().keySet());
        if (!names.equals(specNames)) problems.add("rows " + names + ", the spec's attributes in order " + specNames);
        if (problems.isEmpty()) return "";
        StringBuilder sb = new StringBuilder();
        for (String p : problems) sb.append(p).append('\n');
        sb.append("\nThe table as it should read:\n\n").append(table(spec, notes));
        return sb.toString();
    }

    /** The whole table for {@code spec}; a row's notes from {@code notes} by name, else the attribute's description. */
    public static String table(GClassSpec<?> spec, Map<String, String> notes) {
        StringBuilder sb = new StringBuilder(HEADER).append('\n').append(RULE).append('\n');
        for (Attr<?> a : spec.attrs().values()) {
            String n = notes.get(a.name());
            sb.append(row(a, n == null || n.isEmpty() ? a.description() : n)).append('\n');
        }
        return sb.toString();
    }

    /** One row: {@code | `name` | type | default (JSON) | flags | notes |}. */
    public static String row(Attr<?> a, String notes) {
        return "| `" + a.name() + "` | " + a.type().name().toLowerCase(Locale.ROOT) + " | " + a.defaultJson()
                + " | " + flags(a.flags()) + " | " + notes + " |";
    }

    /** The flags by their short names, the composite ones once (persist implies wr, rstats implies stats). */
    public static String flags(int f) {
        List<String> out = new ArrayList<>();
        if (AttrFlag.has(f, AttrFlag.RD)) out.add("rd");
        if (AttrFlag.has(f, AttrFlag.PSTATS)) out.add("pstats");
        else if (AttrFlag.has(f, AttrFlag.PERSIST)) out.add("persist");
        else if (AttrFlag.has(f, AttrFlag.WR)) out.add("wr");
        if (AttrFlag.has(f, AttrFlag.VOLATILE)) out.add("volatile");
        if (AttrFlag.has(f, AttrFlag.RSTATS)) out.add("rstats");
        else if (AttrFlag.has(f, AttrFlag.STATS) && !AttrFlag.has(f, AttrFlag.PSTATS)) out.add("stats");
        if (AttrFlag.has(f, AttrFlag.REQUIRED)) out.add("required");
        return String.join(", ", out);
    }

    private static List<String> tableUnder(List<String> lines, String heading) {
        List<String> table = new ArrayList<>();
        String h = "## " + heading;
        int i = 0;
        while (i < lines.size() && !(lines.get(i).equals(h) || lines.get(i).startsWith(h + " "))) i++;
        for (i++; i < lines.size() && !lines.get(i).startsWith("## "); i++) {
            if (lines.get(i).startsWith("|")) {
                table.add(lines.get(i));
            } else if (!table.isEmpty()) {
                break;
            }
        }
        return table;
    }

    private static String[] cells(String line) {
        String t = line.trim();
        if (t.startsWith("|")) t = t.substring(1);
        if (t.endsWith("|")) t = t.substring(0, t.length() - 1);
        String[] c = t.split("\\|", -1);
        for (int i = 0; i < c.length; i++) c[i] = c[i].trim();
        return c;
    }

    private static String normalize(String row) {
        return row.replaceAll("\\s+", "");
    }
}
