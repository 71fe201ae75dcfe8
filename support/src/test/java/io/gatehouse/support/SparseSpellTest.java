// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SparseSpellTest {

    @Test
    void shouldShrinkOnlyAtTheEndOfASpellOfSparseCalls() {
        SparseSpell spell = new SparseSpell();
        for (int i = 1; i < 5; i++) assertFalse(spell.shrinkNow(10, 1024, 64, 5), "call " + i);
        assertTrue(spell.shrinkNow(10, 1024, 64, 5));
        assertFalse(spell.shrinkNow(10, 512, 64, 5), "a new spell begins after a shrink");
    }

    @Test
    void shouldStartTheSpellAgainWhenTheTableFillsUp() {
        SparseSpell spell = new SparseSpell();
        for (int i = 0; i < 4; i++) assertFalse(spell.shrinkNow(0, 1024, 64, 5));
        assertFalse(spell.shrinkNow(128, 1024, 64, 5), "an eighth full is not sparse");
        for (int i = 0; i < 4; i++) assertFalse(spell.shrinkNow(0, 1024, 64, 5), "call " + i + " of the new spell");
        assertTrue(spell.shrinkNow(0, 1024, 64, 5));
    }

    @Test
    void shouldNeverShrinkBelowTheMinimumNorWithoutPatience() {
        SparseSpell spell = new SparseSpell();
        for (int i = 0; i < 100; i++) assertFalse(spell.shrinkNow(0, 64, 64, 1));
        assertTrue(spell.shrinkNow(0, 128, 64, 1), "a patience of one shrinks at the first sparse call");
        for (int i = 0; i < 3; i++) spell.shrinkNow(0, 1024, 64, 5);
        spell.reset();
        for (int i = 1; i < 5; i++) assertFalse(spell.shrinkNow(0, 1024, 64, 5));
        assertTrue(spell.shrinkNow(0, 1024, 64, 5));
    }
}
