package io.gatehouse.launcher;

/**
 * The little JSON the command-line clients need, without a JSON library on the launcher's class path
 * (the launcher must stay a plain jar beside the framework).
 */
final class Json {
    private Json() {}

    static String quote(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': sb.append("\\\""); break;
                case '\\': sb.append("\\\\"); break;
                case '\n': sb.append("\\n"); break;
                case '\r': sb.append("\\r"); break;
                case '\t': sb.append("\\t"); break;
                default:
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
            }
        }
        return sb.append('"').toString();
    }

    /** The integer value of the first {@code "name": N} in the text; {@code def} if none. */
    static long longField(String json, String name, long def) {
        String key = "\"" + name + "\"";
        int i = json.indexOf(key);
        if (i < 0) return def;
        i = json.indexOf(':', i + key.length());
        if (i < 0) return def;
        i++;
        while (i < json.length() && Character.isWhitespace(json.charAt(i))) i++;
        int j = i;
        if (j < json.length() && json.charAt(j) == '-') j++;
        while (j < json.length() && Character.isDigit(json.charAt(j))) j++;
        if (j == i) return def;
        try {
            return Long.parseLong(json.substring(i, j));
        } catch (NumberFormatException e) {
            return def;
        }
    }

    static int intField(String json, String name, int def) {
        return (int) longField(json, name, def);
    }

    /** Indents compact JSON for a person to read; strings are copied as they are. */
    static String pretty(String json) {
        StringBuilder sb = new StringBuilder(json.length() * 2);
        int depth = 0;
        boolean inString = false;
        for (int i = 0; i < json.length(); i++) {
            char c = json.charAt(i);
            if (inString) {
                sb.append(c);
                if (c == '\\' && i + 1 < json.length()) sb.append(json.charAt(++i));
                else if (c == '"') inString = false;
                continue;
            }
            switch (c) {
                case '"': inString = true; sb.append(c); break;
                case '{': case '[':
                    sb.append(c);
                    if (i + 1 < json.length() && (json.charAt(i + 1) == '}' || json.charAt(i + 1) == ']')) {
                        sb.append(json.charAt(++i));
                    } else {
                        depth++;
                        newline(sb, depth);
                    }
                    break;
                case '}': case ']': depth--; newline(sb, depth); sb.append(c); break;
                case ',': sb.append(c); newline(sb, depth); break;
                case ':': sb.append(": "); break;
                default: if (!Character.isWhitespace(c)) sb.append(c);
            }
        }
        return sb.toString();
    }

    private static void newline(StringBuilder sb, int depth) {
        sb.append('\n');
        for (int i = 0; i < depth; i++) sb.append("  ");
    }
}
