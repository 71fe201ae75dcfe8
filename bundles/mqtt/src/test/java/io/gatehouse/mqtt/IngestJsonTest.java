// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import com.fasterxml.jackson.databind.JsonNode;
import io.gatehouse.api.Kw;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The message a payload becomes is the one Jackson decides (forwarded as is when Jackson reads one object, wrapped
 * otherwise), whether the byte walk or Jackson answered; and an ack read from its bytes says what its tree says.
 */
class IngestJsonTest {
    private static final ByteBufAllocator ALLOC = PooledByteBufAllocator.DEFAULT;

    /** The message as Jackson alone decides it (no ack data, not a Will). */
    private static String reference(byte[] payload, String topic) {
        boolean[] empty = new boolean[1];
        int end = payload.length == 0 ? -1 : IngestJson.objectEnd(payload, 0, payload.length, empty);
        String tail = "\"mqtt_topic\":\"" + topic + "\"}";
        if (end < 0) {
            return "{\"mqtt_payload_base64\":\"" + Base64.getEncoder().encodeToString(payload) + "\"," + tail;
        }
        return new String(payload, 0, end, StandardCharsets.ISO_8859_1) + (empty[0] ? "" : ",") + tail;
    }

    /** The message built, from a direct buffer whose payload starts past other bytes (as a PUBLISH arrives). */
    private static String built(IngestJson ingest, byte[] payload, String topic) {
        ByteBuf in = ALLOC.directBuffer(payload.length + 5);
        in.writeBytes(new byte[] {1, 2, 3, 4, 5}).readerIndex(5);
        in.writeBytes(payload);
        ByteBuf out = ingest.build(ALLOC, "mqtt_topic", "mqtt_payload_base64", topic, in, null, false);
        try {
            assertEquals(5, in.readerIndex(), "the payload is not consumed");
            if (out.readableBytes() <= IngestJson.HEAP_MAX - 200) {
                assertTrue(out.hasArray() && out.arrayOffset() == 0 && out.readerIndex() == 0,
                        "a small message is built where the relay reads it in place");
            }
            return out.toString(StandardCharsets.ISO_8859_1);
        } finally {
            out.release();
            in.release();
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void shouldForwardWhatJacksonReadsAsOneObjectAndWrapTheRest() {
        List<byte[]> cases = new ArrayList<>();
        for (String s : new String[] {"{}", " { } ", "{\"id\":\"x-17\"}", " {\"a\":1}\n", "{\"a\":1}x", "{\"a\":1}{\"b\":2}",
            "[1]", "\"s\"", "12", "null", "{\"a\":", "{\"a\":1,}", "{'a':1}", "{\"a\":01}", "{\"a\":1e5,\"b\":[true,null]}",
            "{\"caf\u00e9\":\"\u00fc\\u00e9\\n\"}", "{\"a\":\"\\x\"}", "{\"a\":\"tab\there\"}", "\ufeff{\"bom\":1}",
            "{\"n\":" + "9".repeat(150) + "}", "{\"d\":" + "[".repeat(70) + "]".repeat(70) + "}", "", " "}) {
            cases.add(bytes(s));
        }
        cases.add(new byte[] {'{', '"', 'a', '"', ':', '"', (byte) 0xc3, '"', '}'});   // broken UTF-8
        cases.add(new byte[] {'{', '"', (byte) 0xf0, (byte) 0x9f, (byte) 0x98, (byte) 0x80, '"', ':', '1', '}'});
        Random r = new Random(15);
        for (int i = 0; i < 500; i++) {
            byte[] b = new byte[r.nextInt(200)];
            r.nextBytes(b);
            if (r.nextBoolean() && b.length > 1) {
                b[0] = '{';
                b[b.length - 1] = '}';
            }
            cases.add(b);
        }
        for (int i = 0; i < 500; i++) {
            StringBuilder sb = new StringBuilder("{");
            int fields = r.nextInt(6);
            for (int f = 0; f < fields; f++) {
                if (f > 0) sb.append(',');
                sb.append("\"k").append(f).append("\":");
                switch (r.nextInt(5)) {
                    case 0: sb.append(r.nextLong()); break;
                    case 1: sb.append('"').append(Long.toHexString(r.nextLong())).append('"'); break;
                    case 2: sb.append("{\"x\":[1,2.5,-3e2,\"y\"]}"); break;
                    case 3: sb.append(r.nextBoolean()); break;
                    default: sb.append("null");
                }
            }
            String s = sb.append('}').toString();
            byte[] b = bytes(s);
            if (r.nextInt(5) == 0) b[r.nextInt(b.length)] = (byte) r.nextInt(256);   // one byte spoilt
            cases.add(b);
        }
        IngestJson ingest = new IngestJson();
        int forwarded = 0;
        for (byte[] c : cases) {
            String want = reference(c, "devices/7");
            assertEquals(want, built(ingest, c, "devices/7"), () -> new String(c, StandardCharsets.ISO_8859_1));
            if (!want.startsWith("{\"mqtt_payload_base64\"")) forwarded++;
        }
        assertTrue(forwarded > 400, "objects are forwarded as they are: " + forwarded);
    }

    @Test
    void shouldBuildLargeMessagesInTheAllocatorsBuffersAndAddTheAckData() throws Exception {
        ByteArrayOutputStream big = new ByteArrayOutputStream();
        big.writeBytes(bytes("{\"blob\":\""));
        big.writeBytes(bytes("z".repeat(200_000)));
        big.writeBytes(bytes("\"}"));
        byte[] payload = big.toByteArray();
        IngestJson.Md md = new IngestJson.Md();
        md.seq = 123_456_789_012L;
        md.t = 1_700_000_000L;
        md.conn = 7;
        md.packetId = 65535;
        md.qos = 2;
        IngestJson ingest = new IngestJson();
        ByteBuf in = ALLOC.directBuffer().writeBytes(payload);
        ByteBuf out = ingest.build(ALLOC, "mqtt_topic", "mqtt_payload_base64", "a/\"b\"", in, md, true);
        in.release();
        assertTrue(ingest.retainedBytes() <= IngestJson.KEEP_SCRATCH,
                "a connection does not keep a large payload's scratch: " + ingest.retainedBytes());
        try {
            JsonNode m = Kw.parse(out);
            assertEquals(200_000, m.get("blob").asText().length());
            assertEquals("a/\"b\"", m.get("mqtt_topic").asText());
            assertTrue(m.get("mqtt_will").asBoolean());
            JsonNode trq = m.get(Kw.MD_TRQ);
            assertEquals(123_456_789_012L, trq.get("__msg_rowid__").asLong());
            assertEquals(1_700_000_000L, trq.get("__msg_t__").asLong());
            assertEquals(7, trq.get("mqtt_conn").asLong());
            assertEquals(65535, trq.get("mqtt_packet_id").asInt());
            assertEquals(2, trq.get("mqtt_qos").asInt());
        } finally {
            out.release();
        }
    }

    private static String answer(IngestJson.Ack a) {
        return a.ours ? "seq=" + a.seq + " conn=" + a.conn + " id=" + a.packetId + " result=" + a.result : "not ours";
    }

    @Test
    void shouldReadAnAckFromItsBytesAsFromItsTree() {
        List<String> acks = new ArrayList<>(List.of(
                "{\"__md_trq__\":{\"__msg_rowid__\":12,\"__msg_t__\":1700000000,\"mqtt_conn\":3,\"mqtt_packet_id\":7,"
                        + "\"mqtt_qos\":1,\"result\":0}}",
                "{\"__md_trq__\":{\"__msg_rowid__\":12,\"mqtt_conn\":3,\"mqtt_packet_id\":7,\"result\":-1}}",
                "{\"result\":-3,\"__md_trq__\":{\"__msg_rowid__\":12,\"mqtt_conn\":3,\"mqtt_packet_id\":7}}",
                "{\"result\":-3,\"__md_trq__\":{\"__msg_rowid__\":12,\"mqtt_packet_id\":7,\"result\":0}}",
                "{\"__md_trq__\":{\"__msg_rowid__\":12,\"mqtt_conn\":3}}",
                "{\"__md_trq__\":{\"mqtt_packet_id\":\"7\"}}",
                "{\"__md_trq__\":{\"mqtt_packet_id\":7.0}}",
                "{\"__md_trq__\":{\"mqtt_packet_id\":7},\"__md_trq__\":{\"mqtt_packet_id\":9}}",
                "{\"__md_trq__\":{\"mqtt_packet_id\":7},\"__md_trq__\":1}",
                "{\"__md_trq__\":{\"mqtt_packet_id\":7}} trailing",
                "{\"\\u005f_md_trq__\":{\"mqtt_packet_id\":7}}",
                "{\"__md_trq__\":{\"mqtt_packet_id\":7,\"__msg_rowid__\":99999999999999999999}}",
                "[1]", "not json", "{}", ""));
        Random r = new Random(16);
        for (int i = 0; i < 300; i++) {
            String a = acks.get(r.nextInt(12));
            int cut = r.nextInt(a.length());
            acks.add(r.nextBoolean() ? a.substring(0, cut) : a.substring(0, cut) + (char) (32 + r.nextInt(95))
                    + a.substring(cut + 1));
        }
        IngestJson.AckScan scan = new IngestJson.AckScan();
        int ours = 0;
        for (String a : acks) {
            ByteBuf b = ALLOC.directBuffer();
            b.writeBytes(bytes(a));
            try {
                String want = answer(IngestJson.parseAck(b));
                assertEquals(want, answer(scan.read(b)), a);
                if (!want.equals("not ours")) ours++;
            } finally {
                b.release();
            }
        }
        assertTrue(ours > 20, "acks of ours among the cases: " + ours);
        ByteBuf relays = Unpooled.wrappedBuffer(bytes(acks.get(0)));
        assertEquals(IngestJson.AckScan.FOUND, scan.scan(relays), "the relay's ack is read from its bytes");
    }
}
