package io.gatehouse.api;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FsmTest {
    interface B {}

    @Test
    void shouldStartInTheFirstDeclaredState() {
        Fsm<B> fsm = Fsm.<B>builder()
                .state("ST_A").on("EV_X", (s, e, k, src) -> 0, "ST_B")
                .state("ST_B").ignore("EV_Y")
                .build();
        assertEquals("ST_A", fsm.initialState());
        assertNotNull(fsm.lookup("ST_A", "EV_X"));
        assertNull(fsm.lookup("ST_A", "EV_Y"));
        assertNull(fsm.lookup("ST_B", "EV_Y").action());
        assertTrue(fsm.inputEvents().contains("EV_Y"));
    }

    @Test
    void shouldRejectAnUndeclaredTargetState() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Fsm.<B>builder()
                .state("ST_A").on("EV_X", null, "ST_NOPE").build());
        assertTrue(e.getMessage().contains("ST_NOPE"), e.getMessage());
    }

    @Test
    void shouldRejectAnUnreachableState() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> Fsm.<B>builder()
                .state("ST_A").ignore("EV_X")
                .state("ST_LONELY").ignore("EV_Y")
                .build());
        assertTrue(e.getMessage().contains("ST_LONELY"), e.getMessage());
    }

    @Test
    void shouldAcceptAStateEnteredByAnAction() {
        Fsm<B> fsm = Fsm.<B>builder()
                .state("ST_A").ignore("EV_X")
                .state("ST_B").enteredByAction().ignore("EV_Y")
                .build();
        assertEquals(2, fsm.states().size());
    }

    @Test
    void shouldRejectAnEventDeclaredTwiceInOneState() {
        assertThrows(IllegalArgumentException.class, () -> Fsm.<B>builder()
                .state("ST_A").ignore("EV_X").ignore("EV_X"));
    }
}
