package io.gatehouse.api;

/** The value type of an attribute, as Yuneta's DTP_* types. */
public enum AttrType {
    /** A string; JSON null is kept as null. */
    STRING,
    /** A 64-bit integer. A string holding an integer is accepted (config variables substitute as strings). */
    INTEGER,
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
