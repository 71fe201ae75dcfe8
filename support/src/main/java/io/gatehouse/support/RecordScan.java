// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import java.util.Arrays;

/**
 * The walk of {@link JsonScan} that also tells whether an object's bytes, as they stand, are the record a queue
 * stores for its dict ({@code Kw.JSON_RECORD}: the compact JSON Jackson writes, no key twice, no {@code __x} key at
 * any depth) and indexes its top-level members ({@code Kw.RECORD_FIELDS}) on the way. A producer that checks its
 * input with this walk (C_PROT_HTTP_SR) hands its objects up as records, and C_RELAY does not walk them again; C_RELAY's
 * own walk, which also copies and cuts, keeps its keys and members with the same checks.
 *
 * <p>One per gclass instance, used on its core loop.
 */
public class RecordScan extends JsonScan {
    /** Keys held for the duplicate check of the objects being walked; deeper or wider messages are not vouched for. */
    private static final int MAX_RECORD_KEYS = 256;
    /** Keys of one object that the duplicate check compares pairwise; an object with more is not vouched for. */
    protected static final int MAX_OBJECT_KEYS = 64;

    private final int[] recKeyFrom = new int[MAX_RECORD_KEYS];
    private final int[] recKeyTo = new int[MAX_RECORD_KEYS];
    /** The keys held for the duplicate check: those of the objects open in the walk, innermost last. */
    protected int recKeys;
    /** Where the top-level members indexed so far start (their keys' opening quotes). */
    private final int[] fieldIndex = new int[MAX_OBJECT_KEYS];
    private int recFields;
    /** While {@link #recordObject} walks: every byte so far is as the record has it. */
    private boolean inForm;

    public RecordScan(int scratchSize) {
        super(scratchSize);
    }

    /**
     * The object at {@code i}, checked as {@link #object} checks it: the index after it, or -1. After it,
     * {@link #recordFields} is the index of its members when its bytes {@code [i, end)} are a record as they stand,
     * else null (whitespace between tokens, an escape or a number Jackson writes otherwise, a key twice, an
     * {@code __x} key), which is not an error: such an object is made into a record by a walk that copies it.
     */
    public final int recordObject(int i) {
        resetRecord();
        inForm = true;
        int end = formObject(i, 1, i);
        if (end < 0) inForm = false;
        return end;
    }

    /** After {@link #recordObject}: the record's member index, counted from its first byte, or null. */
    public final int[] recordFields() {
        return inForm ? takeFields() : null;
    }

    /** The members indexed since the walk began, as {@code Kw.RECORD_FIELDS} has them. */
    protected final int[] takeFields() {
        return Arrays.copyOf(fieldIndex, recFields);
    }

    /** Starts an index and a duplicate check for a new walk. */
    protected final void resetRecord() {
        recKeys = 0;
        recFields = 0;
    }

    /** Indexes a top-level member by where its key starts (at most {@value #MAX_OBJECT_KEYS}, as {@link #newKey} holds). */
    protected final void indexField(int keyAt) {
        fieldIndex[recFields++] = keyAt;
    }

    private int formObject(int i, int depth, int start) {
        if (depth > MAX_DEPTH) return -1;
        int base = recKeys;
        i = compactFirst(i, '}');
        if (i <= 0) return ~i;
        while (true) {
            int ks = i;
            i = key(i);
            if (i < 0) return -1;
            int ke = i;
            if (inForm && (!jacksonForm || !newKey(base, ks, ke) || metadataKey(ks, ke))) inForm = false;
            i = colon(i);
            if (i < 0) return -1;
            if (i != ke + 1) inForm = false;
            i = formValue(i, depth);
            if (i < 0) return -1;
            if (depth == 1 && inForm) indexField(ks - start);
            i = compactNext(i, '}');
            if (i <= 0) {
                recKeys = base;
                return ~i;
            }
        }
    }

    private int formArray(int i, int depth) {
        if (depth > MAX_DEPTH) return -1;
        i = compactFirst(i, ']');
        if (i <= 0) return ~i;
        while (true) {
            i = formValue(i, depth);
            if (i < 0) return -1;
            i = compactNext(i, ']');
            if (i <= 0) return ~i;
        }
    }

    /** {@link #first}, and the container is out of form when whitespace follows its opening bracket. */
    private int compactFirst(int i, char close) {
        int f = first(i, close);
        if (f != (f <= 0 ? ~(i + 2) : i + 1)) inForm = false;
        return f;
    }

    /** {@link #next}, and the container is out of form when whitespace is around the comma or before the close. */
    private int compactNext(int i, char close) {
        int nx = next(i, close);
        if (nx != 0 && nx != (nx < 0 ? ~(i + 1) : i + 1)) inForm = false;
        return nx;
    }

    private int formValue(int i, int depth) {
        if (i < 0 || i >= n) return -1;
        byte c = a[i];
        switch (c) {
            case '{': return formObject(i, depth + 1, 0);
            case '[': return formArray(i, depth + 1);
            case '"': {
                int end = string(i);
                if (end >= 0 && !jacksonForm) inForm = false;
                return end;
            }
            default: {
                int end = value(i, depth);   // a number or a literal
                if (end >= 0 && inForm && !writtenAsIs(i, end)) inForm = false;
                return end;
            }
        }
    }

    /**
     * Whether the number or literal in [from, to) is what Jackson writes for the node it reads: a literal, or an
     * integer that is not {@code -0} (a double is written Jackson's way).
     */
    protected final boolean writtenAsIs(int from, int to) {
        byte c = a[from];
        if (c != '-' && !isDigit(c)) return true;
        for (int k = from; k < to; k++) {
            byte d = a[k];
            if (d == '.' || d == 'e' || d == 'E') return false;
        }
        return !(to - from == 2 && c == '-' && a[from + 1] == '0');
    }

    /** Keeps the key for the duplicate check of its object ({@code [base, recKeys)}); false when it is there already. */
    protected final boolean newKey(int base, int from, int to) {
        if (recKeys == MAX_RECORD_KEYS || recKeys - base == MAX_OBJECT_KEYS) return false;
        int len = to - from;
        for (int k = base; k < recKeys; k++) {
            if (recKeyTo[k] - recKeyFrom[k] == len && a[recKeyFrom[k] + 1] == a[from + 1]
                    && Arrays.equals(a, recKeyFrom[k], recKeyTo[k], a, from, to)) {
                return false;
            }
        }
        recKeyFrom[recKeys] = from;
        recKeyTo[recKeys] = to;
        recKeys++;
        return true;
    }

    /** Yuneta's metadata keys ({@code Kw.isMetadataKey}): {@code __x...}, not {@code ___x...}; spelt canonically. */
    protected final boolean metadataKey(int from, int to) {
        return to - from > 4 && a[from + 1] == '_' && a[from + 2] == '_' && a[from + 3] != '_';
    }
}
