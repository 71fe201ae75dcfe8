// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

/**
 * A typed command parameter (Yuneta's pm_* rows). Values come as {@code key=value} text or JSON and are
 * converted with the same rules as attributes.
 */
public final class Param {
    private final String name;
    private final AttrType type;
    private final String defaultValue;
    private final String description;

    public Param(String name, AttrType type, String defaultValue, String description) {
        this.name = name;
        this.type = type;
        this.defaultValue = defaultValue;
        this.description = description == null ? "" : description;
    }

    public static Param string(String name, String def, String description) {
        return new Param(name, AttrType.STRING, def, description);
    }

    public static Param integer(String name, String def, String description) {
        return new Param(name, AttrType.INTEGER, def, description);
    }

    public static Param bool(String name, String def, String description) {
        return new Param(name, AttrType.BOOLEAN, def, description);
    }

    public String name() { return name; }
    public AttrType type() { return type; }
    public String defaultValue() { return defaultValue; }
    public String description() { return description; }
}
