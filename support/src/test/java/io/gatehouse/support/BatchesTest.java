// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BatchesTest {
    @Test
    void shouldReadTheRangesOfABatchAsKwRefDoes() {
        assertNull(Batches.rangesOf(null));
        assertNull(Batches.rangesOf(Kw.withGbuffer(Unpooled.buffer(1))));
        ObjectNode plain = Kw.create().put(Kw.BATCH, "not ranges");
        assertNull(Batches.rangesOf(plain));
        assertEquals(1, Batches.messagesOf(plain));
        for (ObjectNode kw : List.of(Kw.create(), Kw.withGbuffer(Unpooled.buffer(1)))) {
            int[] ranges = {0, 2, 2, 5};
            kw.put("a", 1);
            Kw.putRef(kw, Kw.BATCH, ranges);
            assertArrayEquals(Kw.ref(kw, Kw.BATCH, int[].class), Batches.rangesOf(kw));
            assertEquals(2, Batches.messagesOf(kw));
            assertEquals(Kw.messages(kw), Batches.messagesOf(kw));
            Kw.release(kw);
        }
    }

    @Test
    void shouldSendTheMessagesOfABatchApartWithTheOtherKeysAndReleaseItsBuffer() {
        ByteBuf all = Unpooled.copiedBuffer("xx{\"a\":1}--{}", StandardCharsets.UTF_8).readerIndex(2);
        ObjectNode kw = Kw.withGbuffer(all);
        Kw.putRef(kw, Kw.BATCH, new int[] {0, 7, 9, 11});
        kw.put("tag", "t");
        List<String> got = new ArrayList<>();
        int answer = Batches.sendApart(kw, one -> {
            ByteBuf b = Kw.takeGbuffer(one);
            assertTrue(Gbuffers.canPrepend(b, 4), "room for a protocol's header, as a message alone has");
            got.add(b.toString(StandardCharsets.UTF_8) + " " + one.path("tag").asText() + " " + one.has(Kw.BATCH));
            b.release();
            return got.size() == 1 ? -1 : 0;
        });
        assertEquals(List.of("{\"a\":1} t false", "{} t false"), got, "in order, every one sent after a refusal");
        assertEquals(-1, answer, "the first refusal's answer");
        assertEquals(0, all.refCnt());
    }
}
