package io.gatehouse.core;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;

import java.util.ArrayList;
import java.util.List;

/**
 * Parses a command line as ycommand does: {@code "stats-yuno service=__input_side__ opened=1"}. Values may
 * be quoted ('...' or "..."); a value that reads as a JSON number, boolean, object or array is kept as JSON.
 */
public final class CommandLine {
    public final String command;
    public final ObjectNode kw;

    private CommandLine(String command, ObjectNode kw) {
        this.command = command;
        this.kw = kw;
    }

    public static CommandLine parse(String line) {
        List<String> words = split(line == null ? "" : line.trim());
        ObjectNode kw = JsonNodeFactory.instance.objectNode();
        if (words.isEmpty()) throw new IllegalArgumentException("empty command");
        String cmd = words.get(0);
        for (int i = 1; i < words.size(); i++) {
            String w = words.get(i);
            int eq = w.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("parameter '" + w + "' is not key=value");
            kw.set(w.substring(0, eq), value(w.substring(eq + 1)));
        }
        return new CommandLine(cmd, kw);
    }

    private static JsonNode value(String v) {
        if (v.isEmpty()) return JsonNodeFactory.instance.textNode("");
        char c = v.charAt(0);
        if (c == '{' || c == '[' || c == '-' || Character.isDigit(c) || v.equals("true") || v.equals("false")) {
            try {
                JsonNode n = Kw.MAPPER.readTree(v);
                if (n != null && !n.isMissingNode()) return n;
            } catch (Exception notJson) {
                // a plain string such as "7778-1"
            }
        }
        return JsonNodeFactory.instance.textNode(v);
    }

    private static List<String> split(String s) {
        List<String> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        char quote = 0;
        boolean any = false;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (quote != 0) {
                if (c == quote) quote = 0;
                else cur.append(c);
            } else if (c == '\'' || c == '"') {
                quote = c;
                any = true;
            } else if (Character.isWhitespace(c)) {
                if (cur.length() > 0 || any) out.add(cur.toString());
                cur.setLength(0);
                any = false;
            } else {
                cur.append(c);
            }
        }
        if (quote != 0) throw new IllegalArgumentException("unterminated quote in command");
        if (cur.length() > 0 || any) out.add(cur.toString());
        return out;
    }
}
