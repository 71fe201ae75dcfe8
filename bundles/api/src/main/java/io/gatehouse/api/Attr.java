package io.gatehouse.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;

import java.util.Objects;

/**
 * One attribute of a gclass, declared once in the gclass's attribute table: name, type, default, flags and
 * description. A typed handle: {@code gobj.read(TIMEOUT_PAYLOAD)} answers a {@code Long}.
 *
 * @param <T> the Java type of the value: String, Long, Double, Boolean or JsonNode
 */
public final class Attr<T> {
    private final String name;
    private final AttrType type;
    private final T defaultValue;
    private final int flags;
    private final String description;

    private Attr(String name, AttrType type, T defaultValue, int flags, String description) {
        this.name = Objects.requireNonNull(name, "name");
        this.type = Objects.requireNonNull(type, "type");
        this.defaultValue = defaultValue;
        this.flags = flags;
        this.description = description == null ? "" : description;
    }

    public static Attr<String> string(String name, String def, int flags, String description) {
        return new Attr<>(name, AttrType.STRING, def, flags, description);
    }

    public static Attr<Long> integer(String name, long def, int flags, String description) {
        return new Attr<>(name, AttrType.INTEGER, def, flags, description);
    }

    public static Attr<Double> real(String name, double def, int flags, String description) {
        return new Attr<>(name, AttrType.REAL, def, flags, description);
    }

    public static Attr<Boolean> bool(String name, boolean def, int flags, String description) {
        return new Attr<>(name, AttrType.BOOLEAN, def, flags, description);
    }

    /** A JSON attribute: {@code type} is DICT, LIST or JSON; {@code def} may be null. */
    public static Attr<JsonNode> json(String name, AttrType type, JsonNode def, int flags, String description) {
        if (type != AttrType.DICT && type != AttrType.LIST && type != AttrType.JSON) {
            throw new IllegalArgumentException("json attribute " + name + " needs DICT, LIST or JSON, not " + type);
        }
        return new Attr<>(name, type, def, flags, description);
    }

    public String name() { return name; }
    public AttrType type() { return type; }
    public T defaultValue() { return defaultValue; }
    public int flags() { return flags; }
    public String description() { return description; }

    public boolean is(int flag) { return AttrFlag.has(flags, flag); }

    /** The default as JSON (a fresh copy for containers). */
    public JsonNode defaultJson() {
        return toJson(defaultValue);
    }

    /** Converts a value of this attribute's Java type to JSON. */
    public JsonNode toJson(Object value) {
        JsonNodeFactory f = JsonNodeFactory.instance;
        if (value == null) {
            return NullNode.instance;
        }
        switch (type) {
            case STRING: return f.textNode((String) value);
            case INTEGER: return f.numberNode((Long) value);
            case REAL: return f.numberNode((Double) value);
            case BOOLEAN: return f.booleanNode((Boolean) value);
            default: return ((JsonNode) value).deepCopy();
        }
    }

    /**
     * Checks and converts a JSON value to this attribute's Java type.
     *
     * @throws IllegalArgumentException naming the attribute when the value does not fit the type
     */
    @SuppressWarnings("unchecked")
    public T fromJson(JsonNode v) {
        if (v == null || v.isNull() || v.isMissingNode()) {
            if (type == AttrType.STRING || type == AttrType.JSON || type == AttrType.DICT || type == AttrType.LIST) {
                return type == AttrType.STRING ? null : (T) NullNode.instance;
            }
            return defaultValue;
        }
        switch (type) {
            case STRING:
                if (v.isTextual()) return (T) v.asText();
                if (v.isNumber() || v.isBoolean()) return (T) v.asText();
                throw bad(v);
            case INTEGER:
                if (v.isIntegralNumber() && v.canConvertToLong()) return (T) Long.valueOf(v.asLong());
                if (v.isNumber() && v.asDouble() == Math.rint(v.asDouble())) return (T) Long.valueOf((long) v.asDouble());
                if (v.isBoolean()) return (T) Long.valueOf(v.asBoolean() ? 1 : 0);
                if (v.isTextual()) {
                    try {
                        return (T) Long.valueOf(Long.parseLong(v.asText().trim()));
                    } catch (NumberFormatException e) {
                        throw bad(v);
                    }
                }
                throw bad(v);
            case REAL:
                if (v.isNumber()) return (T) Double.valueOf(v.asDouble());
                if (v.isTextual()) {
                    try {
                        return (T) Double.valueOf(Double.parseDouble(v.asText().trim()));
                    } catch (NumberFormatException e) {
                        throw bad(v);
                    }
                }
                throw bad(v);
            case BOOLEAN:
                if (v.isBoolean()) return (T) Boolean.valueOf(v.asBoolean());
                if (v.isIntegralNumber() && (v.asLong() == 0 || v.asLong() == 1)) return (T) Boolean.valueOf(v.asLong() == 1);
                if (v.isTextual()) {
                    String s = v.asText().trim().toLowerCase();
                    if (s.equals("true") || s.equals("1")) return (T) Boolean.TRUE;
                    if (s.equals("false") || s.equals("0")) return (T) Boolean.FALSE;
                }
                throw bad(v);
            case DICT:
                if (v.isObject()) return (T) v.deepCopy();
                throw bad(v);
            case LIST:
                if (v.isArray()) return (T) v.deepCopy();
                throw bad(v);
            default:
                return (T) v.deepCopy();
        }
    }

    private IllegalArgumentException bad(JsonNode v) {
        String shown = v.toString();
        if (shown.length() > 60) shown = shown.substring(0, 60) + "...";
        return new IllegalArgumentException("attribute '" + name + "' must be " + type.name().toLowerCase()
                + ", got " + v.getNodeType().name().toLowerCase() + " " + shown);
    }

    @Override
    public String toString() {
        return name + ":" + type;
    }
}
