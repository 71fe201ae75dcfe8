// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.portal;

import io.gatehouse.testkit.GClassLayout;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The gclass follows the one layout (its attributes are documented in docs/CONTROL.md). */
class SpecDocTest {
    @Test
    void shouldFollowTheLayoutOfAGclass() {
        assertEquals(List.of(), GClassLayout.differences(GClassLayout.source(Portal.class)));
    }
}
