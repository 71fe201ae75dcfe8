// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.kafka;

import io.gatehouse.testkit.GClassLayout;
import io.gatehouse.testkit.SpecDoc;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** What a reader of the gclass sees matches what the code declares: docs/KAFKA.md, and the one layout. */
class SpecDocTest {
    @Test
    void shouldBeDescribedInKafkaMdAsItsSpecDeclares() {
        assertEquals(List.of(), SpecDoc.differences(SpecDoc.find("docs/KAFKA.md"), KafkaOut.SPEC));
    }

    @Test
    void shouldFollowTheLayoutOfAGclass() {
        assertEquals(List.of(), GClassLayout.differences(GClassLayout.source(KafkaOut.class)));
    }
}
