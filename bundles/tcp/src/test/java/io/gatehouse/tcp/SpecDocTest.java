// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.testkit.GClassLayout;
import io.gatehouse.testkit.SpecDoc;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** What a reader of C_TCP and C_TCP_S sees matches what the code declares: docs/TRANSPORT.md, and the one layout. */
class SpecDocTest {
    @Test
    void shouldDescribeCTcpInTransportMdAsItsSpecDeclares() {
        assertEquals(List.of(), SpecDoc.differences(SpecDoc.find("docs/TRANSPORT.md"), Tcp.SPEC));
    }

    @Test
    void shouldDescribeCTcpSInTransportMdAsItsSpecDeclares() {
        assertEquals(List.of(), SpecDoc.differences(SpecDoc.find("docs/TRANSPORT.md"), TcpS.SPEC));
    }

    @Test
    void shouldFollowTheLayoutOfAGclass() {
        assertEquals(List.of(), GClassLayout.differences(GClassLayout.source(Tcp.class)));
        assertEquals(List.of(), GClassLayout.differences(GClassLayout.source(TcpS.class)));
    }
}
