// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import io.gatehouse.testkit.AttrDoc;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** docs/TRANSPORT.md's attribute table of C_PROT_TCP4H says what the spec declares: name, type, default, flags. */
class ProtTcp4hDocTest {

    @Test
    void shouldDocumentTheAttributesAsTheSpecDeclaresThem() {
        assertEquals("", AttrDoc.check(AttrDoc.doc("docs/TRANSPORT.md"), "C_PROT_TCP4H", ProtTcp4h.SPEC));
    }
}
