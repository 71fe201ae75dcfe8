// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.AttrType;
import io.gatehouse.api.CommandSpec;
import io.gatehouse.api.GClassSpec;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Checks the section of a gclass in a Markdown document against its spec, so the tables a reader trusts cannot
 * drift from the code. The section is the one whose heading is {@code ## <gclass name>}; in it:
 *
 * <ul>
 *   <li>the table with header {@code | name | type | default | flags | meaning |} lists every attribute that is
 *       not a stats attribute, with the spec's type ({@code string}, {@code int}, {@code real}, {@code bool},
 *       {@code json}; a unit may follow), default ({@code ""} or {@code —} for none) and flags ({@code rd},
 *       {@code wr}, {@code persist}, {@code required}, {@code volatile}, comma-separated);</li>
 *   <li>the table with header {@code | name | kind | meaning |} lists every stats attribute: kind {@code counter},
 *       {@code gauge} (a number the gclass computes), {@code bool} or {@code string};</li>
 *   <li>a paragraph starting with {@code Trace levels:} names every trace level in backquotes (what a level does
 *       goes in parentheses after its name);</li>
 *   <li>a table with header {@code | command |...} names every command ({@code help} may be listed too).</li>
 * </ul>
 */
public final class SpecDoc {
    private static final Pattern TICKED = Pattern.compile("`([^`]+)`");

    private SpecDoc() {}

    /** A file of the repository ({@code docs/GATES.md}), found from the working directory upwards. */
    public static Path find(String relative) {
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            Path p = d.resolve(relative);
            if (Files.isRegularFile(p)) return p;
        }
        throw new IllegalStateException(relative + " not found above " + Path.of("").toAbsolutePath());
    }

    /** What the section of {@code spec}'s gclass in {@code markdown} says differently from the spec; empty if nothing. */
    public static List<String> differences(Path markdown, GClassSpec<?> spec) {
        List<String> section = section(markdown, spec.name());
        List<String> out = new ArrayList<>();
        if (section.isEmpty()) {
            out.add("no section '## " + spec.name() + "' in " + markdown);
            return out;
        }
        checkAttributes(section, spec, out);
        checkStats(section, spec, out);
        checkTraceLevels(section, spec, out);
        checkCommands(section, spec, out);
        return out;
    }

    private static List<String> section(Path markdown, String gclass) {
        List<String> lines;
        try {
            lines = Files.readAllLines(markdown);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> out = new ArrayList<>();
        boolean in = false;
        for (String l : lines) {
            if (l.startsWith("## ")) {
                if (in) break;
                in = l.substring(3).trim().equals(gclass);
                continue;
            }
            if (in) out.add(l);
        }
        return out;
    }

    /** The rows (cells trimmed) of the first table whose header starts with {@code header}. */
    private static List<String[]> table(List<String> section, String header) {
        List<String[]> rows = new ArrayList<>();
        boolean in = false;
        for (String l : section) {
            String t = l.trim();
            if (!in) {
                if (t.replace(" ", "").startsWith(header.replace(" ", ""))) in = true;
                continue;
            }
            if (!t.startsWith("|")) break;
            if (t.startsWith("|---") || t.startsWith("| ---")) continue;
            String[] cells = t.substring(1, t.endsWith("|") ? t.length() - 1 : t.length()).split("\\|", -1);
            for (int i = 0; i < cells.length; i++) cells[i] = cells[i].trim();
            rows.add(cells);
        }
        return rows;
    }

    private static String unticked(String cell) {
        Matcher m = TICKED.matcher(cell);
        return m.find() ? m.group(1) : cell.trim();
    }

    private static void checkAttributes(List<String> section, GClassSpec<?> spec, List<String> out) {
        Map<String, Attr<?>> wanted = new LinkedHashMap<>();
        for (Attr<?> a : spec.attrs().values()) if (!a.is(AttrFlag.STATS)) wanted.put(a.name(), a);
        List<String[]> rows = table(section, "| name | type | default | flags |");
        if (rows.isEmpty() && !wanted.isEmpty()) {
            out.add("no attribute table for " + wanted.keySet());
            return;
        }
        for (String[] r : rows) {
            String name = unticked(r[0]);
            Attr<?> a = wanted.remove(name);
            if (a == null) {
                out.add("attribute '" + name + "' is documented but not in the spec (or is a stats attribute)");
                continue;
            }
            String type = r.length > 1 ? r[1].replace("*", "").trim().split("\\s+")[0].toLowerCase() : "";
            if (!type.equals(typeWord(a.type()))) out.add(name + ": type '" + type + "', spec " + typeWord(a.type()));
            String def = r.length > 2 ? defaultWord(r[2]) : "";
            String specDef = a.defaultValue() == null ? "" : String.valueOf(a.defaultValue());
            if (!def.equals(specDef)) out.add(name + ": default '" + def + "', spec '" + specDef + "'");
            Set<String> flags = new TreeSet<>();
            if (r.length > 3) {
                for (String f : r[3].split(",")) if (!f.isBlank()) flags.add(f.trim().toLowerCase());
            }
            if (!flags.equals(flagWords(a))) out.add(name + ": flags " + flags + ", spec " + flagWords(a));
        }
        if (!wanted.isEmpty()) out.add("attributes not documented: " + wanted.keySet());
    }

    private static void checkStats(List<String> section, GClassSpec<?> spec, List<String> out) {
        Map<String, Attr<?>> wanted = new LinkedHashMap<>();
        for (Attr<?> a : spec.attrs().values()) if (a.is(AttrFlag.STATS)) wanted.put(a.name(), a);
        List<String[]> rows = table(section, "| name | kind | meaning |");
        for (String[] r : rows) {
            String name = unticked(r[0]);
            Attr<?> a = wanted.remove(name);
            if (a == null) {
                out.add("stats attribute '" + name + "' is documented but not in the spec");
                continue;
            }
            String kind = r.length > 1 ? r[1].toLowerCase() : "";
            if (!kind.equals(kindWord(a))) out.add(name + ": kind '" + kind + "', spec " + kindWord(a));
        }
        if (!wanted.isEmpty()) out.add("stats attributes not documented: " + wanted.keySet());
    }

    private static void checkTraceLevels(List<String> section, GClassSpec<?> spec, List<String> out) {
        Set<String> doc = new TreeSet<>();
        boolean found = false;
        StringBuilder paragraph = new StringBuilder();
        for (String l : section) {
            if (!found) {
                if (!l.startsWith("Trace levels:")) continue;
                found = true;
            } else if (l.isBlank()) {
                break;
            }
            paragraph.append(' ').append(l);
        }
        // the names, without what is said about them in parentheses
        Matcher m = TICKED.matcher(paragraph.toString().replaceAll("\\([^)]*\\)", ""));
        while (m.find()) doc.add(m.group(1));
        Set<String> specLevels = new TreeSet<>(spec.traceLevels().keySet());
        if (!found && !specLevels.isEmpty()) out.add("no 'Trace levels:' line for " + specLevels);
        else if (!doc.equals(specLevels)) out.add("trace levels " + doc + ", spec " + specLevels);
    }

    private static void checkCommands(List<String> section, GClassSpec<?> spec, List<String> out) {
        Set<String> doc = new TreeSet<>();
        for (String[] r : table(section, "| command |")) {
            Matcher m = TICKED.matcher(r[0]);
            while (m.find()) doc.add(m.group(1));
        }
        doc.remove("help");
        Set<String> specCommands = new TreeSet<>();
        for (CommandSpec<?> c : spec.commands()) specCommands.add(c.name());
        if (!doc.equals(specCommands)) out.add("commands " + doc + ", spec " + specCommands);
    }

    private static String typeWord(AttrType t) {
        switch (t) {
            case STRING: return "string";
            case INTEGER: return "int";
            case COUNTER: return "counter";
            case REAL: return "real";
            case BOOLEAN: return "bool";
            default: return "json";
        }
    }

    private static String kindWord(Attr<?> a) {
        switch (a.type()) {
            case COUNTER: return "counter";
            case INTEGER:
            case REAL: return "gauge";
            case BOOLEAN: return "bool";
            case STRING: return "string";
            default: return "json";
        }
    }

    private static String defaultWord(String cell) {
        String d = cell.replace("`", "").trim();
        if (d.equals("—") || d.equals("-") || d.equals("\"\"") || d.equals("null")) return "";
        if (d.length() >= 2 && d.startsWith("\"") && d.endsWith("\"")) return d.substring(1, d.length() - 1);
        return d;
    }

    private static Set<String> flagWords(Attr<?> a) {
        Set<String> s = new TreeSet<>();
        if (a.is(AttrFlag.RD)) s.add("rd");
        if (a.is(AttrFlag.PERSIST)) s.add("persist");
        else if (a.is(AttrFlag.WR)) s.add("wr");
        if (a.is(AttrFlag.REQUIRED)) s.add("required");
        if (a.is(AttrFlag.VOLATILE)) s.add("volatile");
        return s;
    }
}
