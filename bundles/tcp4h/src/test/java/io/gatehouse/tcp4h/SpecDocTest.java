// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import io.gatehouse.testkit.GClassLayout;
import io.gatehouse.testkit.SpecDoc;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** What a reader of C_PROT_TCP4H sees matches what the code declares: docs/TRANSPORT.md, and the one layout. */
class SpecDocTest {
    @Test
    void shouldBeDescribedInTransportMdAsItsSpecDeclares() {
        assertEquals(List.of(), SpecDoc.differences(SpecDoc.find("docs/TRANSPORT.md"), ProtTcp4h.SPEC));
    }

    @Test
    void shouldFollowTheLayoutOfAGclass() {
        assertEquals(List.of(), GClassLayout.differences(GClassLayout.source(ProtTcp4h.class)));
    }
}
