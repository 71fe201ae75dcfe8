// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

/** The value type of an attribute, as Yuneta's DTP_* types. */
public enum AttrType {
    /** A string; JSON null is kept as null. */
    STRING,
    /** A 64-bit integer. A string holding an integer is accepted (config variables substitute as strings). */
    INTEGER,
    /**
     * A 64-bit integer that only counts up ({@link GObj#inc}, {@link GObj#add}), kept in the gobj's attribute
     * slot so every reader sees each increment. Always a stats attribute; {@code __reset__} sets it back to 0
     * when it is also {@link AttrFlag#RSTATS}. Metrics export it as a counter ({@code *_total}), other numbers
     * as gauges.
     */
    COUNTER,
    /** A double. Integers and numeric strings are accepted. */
    REAL,
    /** A boolean. 0/1 and "true"/"false" are accepted. */
    BOOLEAN,
    /** A JSON object. */
    DICT,
    /** A JSON array. */
    LIST,
    /** Any JSON value. */
    JSON
}
