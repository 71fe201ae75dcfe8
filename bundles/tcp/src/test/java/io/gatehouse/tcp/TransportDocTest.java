// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.testkit.AttrDoc;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** docs/TRANSPORT.md's attribute tables of C_TCP and C_TCP_S say what the specs declare: name, type, default, flags. */
class TransportDocTest {

    @Test
    void shouldDocumentTheAttributesOfCTcpAsItsSpecDeclaresThem() {
        assertEquals("", AttrDoc.check(AttrDoc.doc("docs/TRANSPORT.md"), "C_TCP", Tcp.SPEC));
    }

    @Test
    void shouldDocumentTheAttributesOfCTcpSAsItsSpecDeclaresThem() {
        assertEquals("", AttrDoc.check(AttrDoc.doc("docs/TRANSPORT.md"), "C_TCP_S", TcpS.SPEC));
    }
}
