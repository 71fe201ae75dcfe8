package io.gatehouse.bench.load;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LoadGenFrameTest {
    private static final byte[] HEAD = "{\"id\":\"m3-".getBytes(StandardCharsets.US_ASCII);

    @Test
    void aFrameIsTcp4hAroundJsonOfTheAskedSize() throws Exception {
        for (int size : new int[] {64, 128, 700}) {
            ByteBuf b = LoadGen.frame(UnpooledByteBufAllocator.DEFAULT, HEAD, size, 1234567, 987654321012L);
            try {
                assertEquals(b.readableBytes(), b.readInt(), "the header counts itself");
                int len = b.readableBytes();
                assertTrue(size < 110 ? len > size : len == size, "padded to " + size + " when there is room: " + len);
                JsonNode n = new ObjectMapper().readTree(b.toString(StandardCharsets.US_ASCII));
                assertEquals("m3-1234567", n.get("id").asText());
                assertEquals(987654321012L, n.get("ts").asLong());
                assertEquals(1234567 & 0xffff, n.get("tm").asLong());
                assertEquals(1234567, n.get("__md_trq__").get("__msg_rowid__").asLong());
                assertEquals(1, n.get("__md_trq__").get("__msg_t__").asLong());
                assertEquals(1234567, Scan.rowid(b));
            } finally {
                b.release();
            }
        }
        assertEquals(1, LoadGen.digits(0));
        assertEquals(19, LoadGen.digits(Long.MAX_VALUE));
    }
}
