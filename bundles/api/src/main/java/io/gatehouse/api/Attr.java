// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.NullNode;

import java.util.Objects;

/**
 * One attribute of a gclass, declared once in the gclass's attribute table: name, type, default, flags and
 * description. A typed handle: {@code gobj.read(TIMEOUT_PAYLOAD)} answers a {@code Long}.
 *
 * <p>Each attribute gets a slot in its gclass when the {@link GClassSpec} is built: a gobj keeps its values in
 * arrays indexed by slot, so {@code gobj.readLong(A)} is an array load and a gclass reads its attributes where it
 * needs them instead of copying them into fields. Numbers and booleans ({@link #isNumeric()}) live in a
 * {@code long[]}, strings and JSON in an {@code Object[]}. An attribute belongs to the gclass that declares it
 * (another gclass reads it by name, through {@link GObj#readAttr}).
 *
 * @param <T> the Java type of the value: String, Long, Double, Boolean or JsonNode
 */
public final class Attr<T> {
    private final String name;
    private final AttrType type;
    private final T defaultValue;
    private final int flags;
    private final String description;
    /** Set once, when the first spec holding this attribute is built; -1 before. */
    private int slot = -1;
    private String gclass;

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

    /**
     * A counter: an integer the gclass increments with {@link GObj#inc} / {@link GObj#add}, starting at 0. It is a
     * stats attribute whatever the flags say; give {@link AttrFlag#RSTATS} when {@code __reset__} may zero it.
     */
    public static Attr<Long> counter(String name, int flags, String description) {
        return new Attr<>(name, AttrType.COUNTER, 0L, flags | AttrFlag.STATS, description);
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

    /** True for INTEGER, COUNTER, REAL and BOOLEAN: the value lives in the gobj's {@code long[]}. */
    public boolean isNumeric() {
        return type == AttrType.INTEGER || type == AttrType.COUNTER || type == AttrType.REAL || type == AttrType.BOOLEAN;
    }

    /** The slot given by the gclass that declares this attribute, or -1 when no spec holds it yet. */
    public int slot() { return slot; }

    /** The first gclass whose spec was built with this attribute, or null when no spec holds it yet. */
    public String gclass() { return gclass; }

    /**
     * Called by {@link GClassSpec.Builder#build()}. Two gclasses may share an attribute (one behaviour serving two
     * gclass names) only where it has the same slot in both: a slot is the attribute's for good.
     */
    synchronized void bind(String gclassName, int index) {
        if (slot == index) return;
        if (slot >= 0) {
            throw new IllegalArgumentException("attribute '" + name + "' has slot " + slot + " in gclass " + gclass
                    + " and would get slot " + index + " in " + gclassName
                    + ": declare it in the same position, or declare a new Attr in " + gclassName + "'s own table");
        }
        gclass = gclassName;
        slot = index;
    }

    // --- Values in the long[] of a gobj ---

    /** The default as it is stored in a gobj's {@code long[]} (numeric attributes only). */
    public long defaultBits() {
        return toBits(defaultValue);
    }

    /** A value of this numeric attribute as stored in a {@code long[]}: longs as they are, doubles as raw bits. */
    public long toBits(Object value) {
        if (value == null) return 0;
        switch (type) {
            case INTEGER:
            case COUNTER: return (Long) value;
            case REAL: return Double.doubleToRawLongBits((Double) value);
            case BOOLEAN: return ((Boolean) value) ? 1 : 0;
            default: throw new IllegalStateException("attribute '" + name + "' is not numeric");
        }
    }

    /** The boxed value of stored bits. */
    @SuppressWarnings("unchecked")
    public T fromBits(long bits) {
        switch (type) {
            case INTEGER:
            case COUNTER: return (T) Long.valueOf(bits);
            case REAL: return (T) Double.valueOf(Double.longBitsToDouble(bits));
            case BOOLEAN: return (T) Boolean.valueOf(bits != 0);
            default: throw new IllegalStateException("attribute '" + name + "' is not numeric");
        }
    }

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
            case INTEGER:
            case COUNTER: return f.numberNode((Long) value);
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
            case COUNTER:
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
        String typeName = type == AttrType.COUNTER ? "integer" : type.name().toLowerCase();
        return new IllegalArgumentException("attribute '" + name + "' must be " + typeName
                + ", got " + v.getNodeType().name().toLowerCase() + " " + shown);
    }

    @Override
    public String toString() {
        return name + ":" + type;
    }
}
