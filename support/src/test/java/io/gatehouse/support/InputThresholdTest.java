package io.gatehouse.support;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class InputThresholdTest {

    @Test
    void shouldMarkOnlyTheMessageThatCrossesAndUnblockOnCredit() {
        InputThreshold t = new InputThreshold();
        assertFalse(t.handedUp(10, 3, 0));
        assertFalse(t.handedUp(10, 3, 0));
        assertTrue(t.handedUp(10, 3, 0), "the third message crosses 3 messages");
        assertTrue(t.isBlocked());
        assertFalse(t.handedUp(10, 3, 0), "only the crossing message is marked");
        ObjectNode credit = Kw.create();
        credit.put("msgs", 1);
        t.credit(credit, 3, 0);
        assertTrue(t.isBlocked(), "3 still pending");
        credit.put("msgs", 2);
        t.credit(credit, 3, 0);
        assertFalse(t.isBlocked(), "1 pending, under the limit");
    }

    @Test
    void shouldCountBytesAndCreditEverythingWithoutAmounts() {
        InputThreshold t = new InputThreshold();
        assertFalse(t.handedUp(600, 0, 1000));
        assertTrue(t.handedUp(600, 0, 1000));
        t.credit(null, 0, 1000);
        assertFalse(t.isBlocked());
        assertFalse(t.handedUp(600, 0, 1000), "everything was credited back");
    }

    @Test
    void shouldCountNothingWithoutLimits() {
        InputThreshold t = new InputThreshold();
        for (int i = 0; i < 1000; i++) assertFalse(t.handedUp(1 << 20, 0, 0));
        assertFalse(t.isBlocked());
    }
}
