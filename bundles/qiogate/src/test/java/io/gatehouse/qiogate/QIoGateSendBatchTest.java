// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.testkit.FakeBottom;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Every test of {@link QIoGateTest} again, over a bottom that takes send batches (as C_IOGATE over a TCP4H channel
 * does): what a pass takes from the queue goes down in one event, and nothing a test sees may change but that.
 */
class QIoGateSendBatchTest extends QIoGateTest {
    @Override
    GClassSpec<FakeBottom> bottomSpec() {
        return FakeBottom.SPEC_SEND_BATCHES;
    }

    @Test
    void shouldSendWhatAPassTakesAsOneBatchWithinTheWindow() {
        givenGate("{\"topic_name\":\"t\",\"max_pending_acks\":4}");
        for (int i = 1; i <= 6; i++) send("{\"id\":\"" + i + "\"}");
        rt.run(() -> bottom().open());
        assertEquals(List.of(1L, 2L, 3L, 4L), bottomRowids(), "the window's worth");
        assertEquals(1, bottom().batches(), "in one batch");

        ObjectNode first = bottom().sent().get(0);
        ObjectNode second = bottom().sent().get(1);
        rt.run(() -> {
            bottom().ack(first, 0);
            bottom().ack(second, 0);
        });
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L, 6L), bottomRowids());
        assertEquals(2, bottom().batches(), "the room two acks made filled by one more pass");
        assertEquals(4, stats().get("pending_acks").asInt());
    }
}
