// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.iogate;

import io.gatehouse.testkit.GClassLayout;
import io.gatehouse.testkit.SpecDoc;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** What a reader of the gclass sees matches what the code declares: docs/GATES.md, and the one layout. */
class SpecDocTest {
    @Test
    void shouldBeDescribedInGatesMdAsItsSpecDeclares() {
        assertEquals(List.of(), SpecDoc.differences(SpecDoc.find("docs/GATES.md"), IoGate.SPEC));
    }

    @Test
    void shouldFollowTheLayoutOfAGclass() {
        assertEquals(List.of(), GClassLayout.differences(GClassLayout.source(IoGate.class)));
    }
}
