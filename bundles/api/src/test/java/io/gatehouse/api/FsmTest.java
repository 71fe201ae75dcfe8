package io.gatehouse.api;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertSame;
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

    @Test
    void shouldFindEveryRowOfAStateByIdentityOrByEqualNameAndNothingElse() {
        Fsm.Builder<B> b = Fsm.<B>builder();
        Fsm.StateBuilder<B> st = b.state("ST_A");
        for (int i = 0; i < 37; i++) st = st.on("EV_" + i, (s, e, k, src) -> 0, i % 2 == 0 ? null : "ST_A");
        Fsm<B> fsm = st.build();
        Fsm.Rows<B> rows = fsm.rowTable("ST_A");
        for (int i = 0; i < 37; i++) {
            String built = new StringBuilder("EV_").append(i).toString();   // equal, not the same instance
            assertSame(fsm.lookup("ST_A", built), rows.get(built));
            assertEquals(i % 2 == 0 ? null : "ST_A", rows.get(built).next());
        }
        assertNull(rows.get("EV_37"));
        assertNull(rows.get(""));
        assertNull(fsm.rowTable("ST_NOPE").get("EV_1"));
    }
}
