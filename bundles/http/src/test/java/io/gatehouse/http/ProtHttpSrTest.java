// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Revision;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * C_PROT_HTTP_SR row by row: a fake transport below ({@link FakeTcp}), a relay stand-in above ({@link FakeRelay})
 * that acks, holds, nacks or refuses, and a {@link ManualClock} for the header, body, inactivity and ack timeouts.
 * Each test names the FSM rows it drives ({@code STATE/EVENT}).
 */
@Timeout(30)
class ProtHttpSrTest {
    private final ManualClock clock = new ManualClock();
    private YunoRuntime rt;
    private LogCapture logs;

    @AfterEach
    void tearDown() {
        if (rt != null) rt.close();
        if (logs != null) logs.close();
    }

    // --- the yuno and its drivers ---

    private void start(String kw) {
        start(kw, FakeRelay.GCLASS);
    }

    private void start(String kw, String relayGclass) {
        if (logs != null) logs.close();
        logs = new LogCapture();
        rt = YunoRuntime.builder().name("http").clock(clock)
                .gclass(ProtHttpSr.SPEC, FakeTcp.SPEC, FakeRelay.SPEC, FakeRelay.BATCH_SPEC)
                .config("{\"services\":[{\"name\":\"relay\",\"gclass\":\"" + relayGclass + "\"},"
                        + "{\"name\":\"http\",\"gclass\":\"C_PROT_HTTP_SR\",\"kw\":{" + kw + "},"
                        + "\"children\":[{\"name\":\"tcp\",\"gclass\":\"C_FAKE_TCP\"}]}]}")
                .build().start();
        rt.run(() -> http().subscribe(null, rt.service("relay")));
    }

    private GObj http() {
        return rt.service("http");
    }

    private FakeTcp tcp() {
        return rt.call(() -> (FakeTcp) http().bottom().behavior());
    }

    private FakeRelay relay() {
        return rt.call(() -> (FakeRelay) rt.service("relay").behavior());
    }

    private void connect() {
        rt.run(() -> tcp().connect());
    }

    private void rx(String bytes) {
        rt.run(() -> tcp().rx(bytes));
    }

    private String out() {
        return rt.call(() -> tcp().takeOut());
    }

    private String state() {
        return rt.call(() -> http().state());
    }

    private long stat(String attr) {
        return rt.call(() -> http().readAttr(attr).asLong());
    }

    private void setRelay(FakeRelay.Mode m) {
        rt.run(() -> relay().mode = m);
    }

    private static String post(String body) {
        return post("/ingest", body, "");
    }

    private static String post(String path, String body, String headers) {
        return "POST " + path + " HTTP/1.1\r\nHost: t\r\n" + headers + "Content-Length: "
                + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body;
    }

    private static String get(String path) {
        return "GET " + path + " HTTP/1.1\r\nHost: t\r\n\r\n";
    }

    /** The status codes of the answers in {@code wire}, in order. */
    private static List<Integer> statuses(String wire) {
        List<Integer> out = new ArrayList<>();
        for (int i = wire.indexOf("HTTP/1.1 "); i >= 0; i = wire.indexOf("HTTP/1.1 ", i + 1)) {
            out.add(Integer.parseInt(wire.substring(i + 9, i + 12)));
        }
        return out;
    }

    private static JsonNode lastBody(String wire) throws Exception {
        return Kw.MAPPER.readTree(wire.substring(wire.lastIndexOf("\r\n\r\n") + 4));
    }

    // --- ST_DISCONNECTED ---

    @Test
    void shouldOpenAndWaitForHeadersOnConnect() {   // ST_DISCONNECTED/EV_CONNECTED
        start("");
        assertEquals(St.ST_DISCONNECTED, state());
        connect();
        assertEquals(ProtHttpSr.ST_WAIT_HEADERS, state());
        assertEquals(1, rt.call(() -> relay().opens), "the channel above sees the link open");
        assertTrue(rt.call(() -> http().readBool(ProtHttpSr.CONNECTED)));
    }

    @Test
    void shouldAcceptOneJsonObjectOnlyOnceItsAckCame() throws Exception {   // ST_WAIT_HEADERS/EV_RX_DATA, ST_IDLE/EV_SEND_MESSAGE
        start("");
        setRelay(FakeRelay.Mode.HOLD);
        connect();
        rx(post("{\"id\":\"h-1\"}"));
        assertEquals("", out(), "no answer before the message is durable");
        assertEquals(St.ST_IDLE, state());
        assertEquals(1, rt.call(() -> relay().messages.size()));
        assertEquals("h-1", rt.call(() -> relay().messages.get(0).get("id").asText()));
        rt.run(() -> relay().ackHeld(0));
        String wire = out();
        assertEquals(List.of(200), statuses(wire), wire);
        assertEquals(1, lastBody(wire).get("accepted").asInt());
        assertTrue(wire.contains("content-type: application/json"));
        assertEquals(1, stat("accepted_requests"));
        assertEquals(1, stat("accepted_msgs"));
    }

    @Test
    void shouldAnswerAnNdjsonBatchWithItsCountWhenEveryLineIsAcked() throws Exception {
        start("");
        setRelay(FakeRelay.Mode.HOLD);
        connect();
        rx(post("{\"id\":\"a\"}\n{\"id\":\"b\"}\r\n\n  {\"id\":\"c\",\"n\":{\"deep\":[1,2]}}\n"));
        assertAnsweredOnceTheThreeHeldAreAcked();
        List<ObjectNode> md = rt.call(() -> relay().mds);
        assertEquals(md.get(0).get("conn"), md.get(2).get("conn"), "one connection");
        assertEquals(2, md.get(2).get("msg").asInt());
        assertEquals("[1,2]", rt.call(() -> relay().messages.get(2).get("n").get("deep").toString()));
    }

    @Test
    void shouldSendTheRequestUpAsOneBatchWhenEverythingAboveTakesBatchesAndAnswerAtItsOneAck() throws Exception {
        start("", "C_FAKE_BATCH_RELAY");
        setRelay(FakeRelay.Mode.HOLD);
        connect();
        rx(post("{\"id\":\"a\"}\n{\"id\":\"b\"}\r\n\n  {\"id\":\"c\",\"n\":{\"deep\":[1,2]}}\n"));
        assertEquals(List.of(3), rt.call(() -> new ArrayList<>(relay().batchSizes)), "one event for the request");
        assertEquals("b", rt.call(() -> relay().messages.get(1).get("id").asText()));
        assertEquals("[1,2]", rt.call(() -> relay().messages.get(2).get("n").get("deep").toString()));
        ObjectNode md = rt.call(() -> relay().mds.get(0));
        assertEquals(List.of("conn", "req"), iterable(md.fieldNames()), "the request's md: no message index");
        assertEquals(1, rt.call(() -> relay().heldCount()));
        assertEquals("", out());
        rt.run(() -> relay().ackHeld(0));
        String wire = out();
        assertEquals(List.of(200), statuses(wire));
        assertEquals(3, lastBody(wire).get("accepted").asInt());
        assertEquals(3, stat("accepted_msgs"));
        assertEquals(1, stat("batched_requests"));
        // a nack of the batch: 503, nothing half-accepted
        rx(post("{\"id\":1}\n{\"id\":2}"));
        rt.run(() -> relay().ackHeld(-1));
        assertEquals(List.of(503), statuses(out()));
        // one object alone goes as a message, as before
        setRelay(FakeRelay.Mode.ACK);
        rx(post("{\"id\":\"solo\"}"));
        assertEquals(List.of(200), statuses(out()));
        assertEquals(List.of(3, 2), rt.call(() -> new ArrayList<>(relay().batchSizes)));
        assertEquals(0, rt.call(() -> relay().mds.get(5).get("msg").asInt()));
    }

    @Test
    void shouldTakeTheAcksOfABatchAnsweredObjectByObject() throws Exception {
        start("", "C_FAKE_BATCH_RELAY");
        setRelay(FakeRelay.Mode.HOLD);
        rt.run(() -> relay().answerApart = true);
        connect();
        rx(post("{\"id\":1}\n{\"id\":2}\n{\"id\":3}"));
        assertAnsweredOnceTheThreeHeldAreAcked();
    }

    /** Three messages held by the relay: no answer while two are acked, then 200 accepting 3 at the third. */
    private void assertAnsweredOnceTheThreeHeldAreAcked() throws Exception {
        assertEquals(3, rt.call(() -> relay().heldCount()));
        rt.run(() -> relay().ackHeld(0, 2, 0));
        assertEquals("", out(), "two of three acked: no answer yet");
        rt.run(() -> relay().ackHeld(0));
        String wire = out();
        assertEquals(List.of(200), statuses(wire));
        assertEquals(3, lastBody(wire).get("accepted").asInt());
    }

    @Test
    void shouldSendLineByLineWhenTheRelayAboveDoesNotTakeBatches() {
        start("");
        connect();
        rx(post("{\"id\":1}\n{\"id\":2}"));
        assertEquals(List.of(200), statuses(out()));
        assertTrue(rt.call(() -> relay().batchSizes.isEmpty()));
        assertEquals(1, rt.call(() -> relay().mds.get(1).get("msg").asInt()));
        assertEquals(0, stat("batched_requests"));
    }

    @Test
    void shouldGoBackToLineByLineWhenTheRelayIsUpgradedToARevisionWithoutBatches() {
        start("", "C_FAKE_BATCH_RELAY");
        connect();
        rx(post("{\"id\":1}\n{\"id\":2}"));
        assertEquals(List.of(200), statuses(out()));
        assertEquals(List.of(2), rt.call(() -> new ArrayList<>(relay().batchSizes)));
        // the stand-in hands no state over: its service is rebuilt, and subscribed again as the gate would be
        rt.gclassArrived(Revision.withoutBatches(FakeRelay.BATCH_SPEC));
        rt.run(() -> http().subscribe(null, rt.service("relay")));
        rx(post("{\"id\":3}\n{\"id\":4}"));
        assertEquals(List.of(200), statuses(out()));
        assertTrue(rt.call(() -> relay().batchSizes.isEmpty()), "no batch for a revision that does not take them");
        assertEquals(1, rt.call(() -> relay().mds.get(1).get("msg").asInt()));
    }

    private static List<String> iterable(java.util.Iterator<String> it) {
        List<String> out = new ArrayList<>();
        it.forEachRemaining(out::add);
        return out;
    }

    @Test
    void shouldKeepItsOwnMdTrqOverOneTheClientSent() throws Exception {
        start("");
        connect();
        rx(post("{\"id\":\"x\",\"__md_trq__\":{\"conn\":1,\"req\":1,\"msg\":0}}"));
        assertEquals(List.of(200), statuses(out()), "acked by our own metadata");
        rx(post("{\"id\":\"y\"}"));
        assertEquals(List.of(200), statuses(out()));
        List<ObjectNode> md = rt.call(() -> relay().mds);
        assertEquals(md.get(1).get("conn"), md.get(0).get("conn"), "the connection's own id, not the client's: " + md);
    }

    @Test
    void shouldPublishCloseOnceAfterItsOwnClose() {   // ST_DISCONNECTED/EV_DISCONNECTED
        start("");
        connect();
        rx("POST /ingest HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}");
        assertEquals(List.of(200), statuses(out()));
        assertEquals(St.ST_DISCONNECTED, state());
        assertEquals(1, rt.call(() -> tcp().drops), "Connection: close: dropped after the answer");
        assertEquals(1, rt.call(() -> relay().closes), "EV_ON_CLOSE once, when the transport reported");
        rt.run(() -> http().send(Ev.EV_DISCONNECTED, Kw.create(), null));
        assertEquals(1, rt.call(() -> relay().closes), "never a second close");
    }

    @Test
    void shouldDropAgainWhenTheTransportDoesNotDisconnect() throws Exception {   // ST_DISCONNECTED/EV_TIMEOUT
        start("\"timeout_close\": 500");
        connect();
        rt.run(() -> tcp().holdOnDrop = true);
        rx("GARBAGE\r\n\r\n");
        assertEquals(St.ST_DISCONNECTED, state());
        assertEquals(1, rt.call(() -> tcp().drops));
        clock.advance(499);
        assertEquals(1, rt.call(() -> tcp().drops));
        clock.advance(1);
        assertEquals(2, rt.call(() -> tcp().drops));
        assertTrue(logs.count("Timeout waiting disconnected") > 0);
    }

    @Test
    void shouldCountALateAckAfterTheConnectionClosed() {   // ST_DISCONNECTED/EV_SEND_MESSAGE
        start("");
        setRelay(FakeRelay.Mode.HOLD);
        connect();
        rx(post("{\"id\":1}"));
        rt.run(() -> tcp().disconnect());
        assertEquals(St.ST_DISCONNECTED, state());
        rt.run(() -> relay().ackHeld(0));
        assertEquals(1, stat("stale_acks"));
        assertEquals(0, logs.count(LogCapture.Level.ERROR), logs.toString());
    }

    @Test
    void shouldIgnoreWhatIsNotForAClosedConnection() {   // ST_DISCONNECTED/EV_RX_DATA, EV_PAUSE_INPUT, EV_RESUME_INPUT, EV_TX_READY, EV_DROP, EV_STOPPED
        start("");
        rt.run(() -> {
            GObj h = http();
            assertEquals(0, h.send(Ev.EV_RX_DATA, Kw.withGbuffer(Unpooled.copiedBuffer("x", StandardCharsets.US_ASCII)), null));
            assertEquals(0, h.send(Ev.EV_PAUSE_INPUT, null, null));
            assertEquals(0, h.send(Ev.EV_RESUME_INPUT, null, null));
            assertEquals(0, h.send(Ev.EV_TX_READY, null, null));
            assertEquals(0, h.send(Ev.EV_STOPPED, null, null));
            assertEquals(0, h.send(Ev.EV_DROP, null, null));
        });
        assertEquals(1, rt.call(() -> tcp().drops), "EV_DROP reaches the transport");
        assertEquals(0, logs.count(LogCapture.Level.ERROR), logs.toString());
    }

    // --- ST_WAIT_HEADERS ---

    @Test
    void shouldCloseAConnectionWhoseHeadersNeverEnd() {   // ST_WAIT_HEADERS/EV_RX_DATA (partial), ST_WAIT_HEADERS/EV_TIMEOUT
        start("\"timeout_header\": 1000");
        connect();
        rx("POST /ingest HTTP/1.1\r\nHost: t\r\n");
        clock.advance(600);
        rx("X-Slow: 1\r\n");   // more bytes do not restart the guard
        assertEquals(ProtHttpSr.ST_WAIT_HEADERS, state());
        clock.advance(400);
        String wire = out();
        assertEquals(List.of(408), statuses(wire), wire);
        assertTrue(wire.contains("connection: close"));
        assertEquals(St.ST_DISCONNECTED, state());
        assertTrue(hasError("Timeout waiting HTTP request headers, closing"));
        assertEquals(0, rt.call(() -> relay().messages.size()));
    }

    @Test
    void shouldCloseASilentConnectionWithoutAnswer() {   // ST_WAIT_HEADERS/EV_TIMEOUT (nothing sent)
        start("\"timeout_header\": 1000");
        connect();
        clock.advance(1000);
        assertEquals("", out());
        assertEquals(St.ST_DISCONNECTED, state());
        assertEquals("first request", field("Timeout waiting HTTP request headers, closing", "waiting"));
    }

    @Test
    void shouldLogAConnectionClosedInTheMiddleOfItsHeaders() {   // ST_WAIT_HEADERS/EV_DISCONNECTED
        start("");
        connect();
        rx("POST /ingest HTTP/1.1\r\nHo");
        rt.run(() -> tcp().disconnect());
        assertEquals(St.ST_DISCONNECTED, state());
        assertTrue(hasError("HTTP connection closed in the middle of a request"));
        assertEquals(1, rt.call(() -> relay().closes));
    }

    @Test
    void shouldAnswerAnEarlierRequestWhileTheNextOnesHeadersArrive() {   // ST_WAIT_HEADERS/EV_SEND_MESSAGE
        start("");
        setRelay(FakeRelay.Mode.HOLD);
        connect();
        rx(post("{\"id\":1}"));
        rx("POST /ingest HTTP/1.1\r\n");
        assertEquals(ProtHttpSr.ST_WAIT_HEADERS, state());
        rt.run(() -> relay().ackHeld(0));
        assertEquals(List.of(200), statuses(out()));
        assertEquals(ProtHttpSr.ST_WAIT_HEADERS, state());
    }

    @Test
    void shouldPassDropAndFlowControlDownInEveryConnectedState() {   // */EV_DROP, */EV_PAUSE_INPUT, */EV_RESUME_INPUT, */EV_TX_READY
        start("");
        connect();
        for (String prefix : new String[] {"", "POST /ingest HTTP/1.1\r\nContent-Length: 5\r\n\r\n{", "}   "}) {
            rx(prefix);
            rt.run(() -> {
                assertEquals(0, http().send(Ev.EV_TX_READY, null, null));
                assertEquals(0, http().send(Ev.EV_PAUSE_INPUT, null, null));
            });
            assertTrue(rt.call(() -> tcp().paused), "paused in " + state());
            rt.run(() -> http().send(Ev.EV_RESUME_INPUT, null, null));
            assertFalse(rt.call(() -> tcp().paused), "resumed in " + state());
        }
        assertEquals(List.of(200), statuses(out()));
        assertEquals(St.ST_IDLE, state());
        rt.run(() -> http().send(Ev.EV_DROP, null, null));
        assertEquals(St.ST_DISCONNECTED, state());
        assertEquals(1, rt.call(() -> tcp().drops));
    }

    @Test
    void shouldNotTimeTheClientWhileInputIsPausedFromAbove() {
        start("\"timeout_header\": 1000");
        connect();
        rt.run(() -> http().send(Ev.EV_PAUSE_INPUT, null, null));
        clock.advance(5000);
        assertEquals(ProtHttpSr.ST_WAIT_HEADERS, state(), "the peer is not late while we do not read");
        rt.run(() -> http().send(Ev.EV_RESUME_INPUT, null, null));
        clock.advance(999);
        assertEquals(ProtHttpSr.ST_WAIT_HEADERS, state());
        clock.advance(1);
        assertEquals(St.ST_DISCONNECTED, state());
    }

    // --- ST_WAIT_BODY ---

    @Test
    void shouldTakeAChunkedBodyInPieces() throws Exception {   // ST_WAIT_BODY/EV_RX_DATA
        start("");
        connect();
        rx("POST /ingest HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
        assertEquals(ProtHttpSr.ST_WAIT_BODY, state());
        rx("7\r\n{\"id\":1\r\n");
        rx("a\r\n}\n{\"id\":2}\r\n");
        assertEquals(ProtHttpSr.ST_WAIT_BODY, state());
        rx("0\r\n\r\n");
        String wire = out();
        assertEquals(List.of(200), statuses(wire));
        assertEquals(2, lastBody(wire).get("accepted").asInt());
    }

    @Test
    void shouldAnswer408WhenTheBodyDoesNotComeInTime() {   // ST_WAIT_BODY/EV_TIMEOUT
        start("\"timeout_body\": 2000");
        connect();
        rx(post("{\"id\":1}").substring(0, post("{\"id\":1}").length() - 3));
        assertEquals(ProtHttpSr.ST_WAIT_BODY, state());
        clock.advance(1000);
        rx("1");   // a drip does not restart the body guard
        clock.advance(1000);
        assertEquals(List.of(408), statuses(out()));
        assertEquals(St.ST_DISCONNECTED, state());
        assertTrue(hasError("Timeout waiting HTTP request body, closing"));
        assertEquals(0, rt.call(() -> relay().messages.size()), "nothing of a partial body goes up");
    }

    @Test
    void shouldLogATruncatedChunkedBodyAndStoreNothing() {   // ST_WAIT_BODY/EV_DISCONNECTED
        start("");
        connect();
        rx("POST /ingest HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n{\"id\":1}\n\r\n5\r\n{\"id\"");
        rt.run(() -> tcp().disconnect());
        assertEquals(St.ST_DISCONNECTED, state());
        assertTrue(hasError("HTTP connection closed in the middle of a request"));
        assertEquals("body", field("HTTP connection closed in the middle of a request", "waiting"));
        assertEquals(0, rt.call(() -> relay().messages.size()));
    }

    @Test
    void shouldAnswerAnEarlierRequestWhileTheNextBodyStreams() {   // ST_WAIT_BODY/EV_SEND_MESSAGE
        start("");
        setRelay(FakeRelay.Mode.HOLD);
        connect();
        rx(post("{\"id\":1}"));
        rx("POST /ingest HTTP/1.1\r\nContent-Length: 100\r\n\r\n{");
        assertEquals(ProtHttpSr.ST_WAIT_BODY, state());
        rt.run(() -> relay().ackHeld(0));
        assertEquals(List.of(200), statuses(out()));
    }

    // --- ST_IDLE ---

    @Test
    void shouldServeSeveralRequestsOnOneKeepAliveConnection() {   // ST_IDLE/EV_RX_DATA
        start("");
        connect();
        for (int i = 0; i < 5; i++) {
            rx(post("{\"id\":" + i + "}"));
            assertEquals(List.of(200), statuses(out()), "request " + i);
            assertEquals(St.ST_IDLE, state());
        }
        assertEquals(0, rt.call(() -> tcp().drops));
        assertEquals(5, stat("accepted_requests"));
    }

    @Test
    void shouldTimeTheNextRequestsHeadersFromItsFirstBytes() {   // ST_IDLE/EV_RX_DATA (partial) -> ST_WAIT_HEADERS
        start("\"timeout_header\": 1000, \"timeout_inactivity\": 60000");
        connect();
        rx(post("{}"));
        assertEquals(List.of(200), statuses(out()));
        clock.advance(30_000);
        assertEquals(St.ST_IDLE, state(), "idle is allowed up to timeout_inactivity");
        rx("POST /ing");
        assertEquals(ProtHttpSr.ST_WAIT_HEADERS, state());
        clock.advance(1000);
        assertEquals(List.of(408), statuses(out()));
        assertEquals(St.ST_DISCONNECTED, state());
    }

    @Test
    void shouldCloseAnIdleKeepAliveConnectionQuietly() {   // ST_IDLE/EV_TIMEOUT (inactivity)
        start("\"timeout_inactivity\": 5000");
        connect();
        rx(post("{}"));
        assertEquals(List.of(200), statuses(out()));
        clock.advance(4999);
        assertEquals(St.ST_IDLE, state());
        clock.advance(1);
        assertEquals(St.ST_DISCONNECTED, state());
        assertEquals("", out());
        assertEquals(0, logs.count(LogCapture.Level.ERROR), "an idle close is normal: " + logs);
    }

    @Test
    void shouldAnswer503WithRetryAfterWhenTheAcksDoNotComeInTime() throws Exception {   // ST_IDLE/EV_TIMEOUT (acks)
        start("\"timeout_durable\": 3000, \"retry_after\": 7");
        setRelay(FakeRelay.Mode.HOLD);
        connect();
        rx(post("{\"id\":1}\n{\"id\":2}"));
        rt.run(() -> relay().ackHeld(0, 0));
        clock.advance(3000);
        String wire = out();
        assertEquals(List.of(503), statuses(wire), wire);
        assertTrue(wire.contains("retry-after: 7"), wire);
        assertEquals("no durable answer within timeout_durable", lastBody(wire).get("reason").asText());
        assertEquals(St.ST_IDLE, state(), "a refusal keeps the connection");
        rt.run(() -> relay().ackHeld(0));
        assertEquals("", out(), "the late ack changes nothing");
        assertEquals(1, stat("stale_acks"));
        assertTrue(logs.count("HTTP requests refused (503), the clients send them again") > 0);
    }

    @Test
    void shouldAnswer503AtTheFirstNackAndOfferNoMoreOfTheRequest() throws Exception {   // ST_IDLE/EV_SEND_MESSAGE (nack)
        start("");
        setRelay(FakeRelay.Mode.NACK);
        connect();
        rx(post("{\"id\":1}\n{\"id\":2}\n{\"id\":3}"));
        String wire = out();
        assertEquals(List.of(503), statuses(wire));
        assertEquals(1, rt.call(() -> relay().messages.size()), "the rest of a refused request is not offered");
        assertEquals("refused by the queue", lastBody(wire).get("reason").asText());
        setRelay(FakeRelay.Mode.ACK);
        rx(post("{\"id\":1}\n{\"id\":2}\n{\"id\":3}"));
        assertEquals(List.of(200), statuses(out()), "the client's retry is accepted");
        assertTrue(logs.count("HTTP requests accepted again") > 0);
    }

    @Test
    void shouldAnswer503WhenNothingUpstreamTakesTheMessage() {
        start("");
        setRelay(FakeRelay.Mode.FAIL);
        connect();
        rx(post("{\"id\":1}"));
        assertEquals(List.of(503), statuses(out()));
        assertEquals(1, stat("refused_requests"));
    }

    @Test
    void shouldIgnoreDuplicateAndForeignAcks() {   // ST_IDLE/EV_SEND_MESSAGE (duplicate, other connection, not an ack)
        start("");
        setRelay(FakeRelay.Mode.HOLD);
        connect();
        rx(post("{\"id\":1}\n{\"id\":2}"));
        rt.run(() -> {
            ObjectNode md0 = relay().mds.get(0);
            relay().answer(http(), md0.deepCopy(), 0);
            relay().answer(http(), md0.deepCopy(), 0);   // the same ack twice counts once
            relay().answer(http(), md0.deepCopy().put("conn", 12345), 0);   // another connection's
        });
        assertEquals("", out());
        assertEquals(1, stat("stale_acks"));
        rt.run(() -> assertEquals(-1, http().send(Ev.EV_SEND_MESSAGE,
                Kw.withGbuffer(Unpooled.copiedBuffer("{\"text\":\"push\"}", StandardCharsets.UTF_8)), null)));
        assertTrue(hasError("Message to an HTTP client dropped: only acks are expected"));
        rt.run(() -> relay().ackHeld(0, 1));
        assertEquals(List.of(200), statuses(out()));
    }

    @Test
    void shouldLogNothingWhenTheClientLeavesBetweenRequests() {   // ST_IDLE/EV_DISCONNECTED
        start("");
        connect();
        rx(post("{}"));
        out();
        rt.run(() -> tcp().disconnect());
        assertEquals(St.ST_DISCONNECTED, state());
        assertEquals(1, rt.call(() -> relay().closes));
        assertEquals(0, logs.count(LogCapture.Level.ERROR), logs.toString());
    }

    // --- pipelining and bounds ---

    @Test
    void shouldAnswerPipelinedRequestsInOrder() {
        start("");
        setRelay(FakeRelay.Mode.HOLD);
        connect();
        rx(post("{\"id\":1}") + get("/nowhere") + post("{\"id\":3}") + get("/health"));
        assertEquals("", out(), "the first answer is not decided: nothing may overtake it");
        rt.run(() -> relay().ackHeld(0, 1));   // the third request's message first
        assertEquals("", out());
        rt.run(() -> relay().ackHeld(0));
        assertEquals(List.of(200, 404, 200, 200), statuses(out()));
    }

    @Test
    void shouldStopReadingAtMaxPipelinedAndResumeWhenAnswered() {
        start("\"max_pipelined\": 2");
        setRelay(FakeRelay.Mode.HOLD);
        connect();
        rx(post("{\"id\":1}") + post("{\"id\":2}") + post("{\"id\":3}"));
        assertEquals(2, rt.call(() -> relay().messages.size()), "the third waits");
        assertTrue(rt.call(() -> tcp().paused), "the socket is not read meanwhile");
        assertEquals(2, stat("requests_in_flight"));
        rt.run(() -> relay().ackHeld(0));
        assertEquals(List.of(200, 200), statuses(out()));
        assertEquals(3, rt.call(() -> relay().messages.size()));
        assertFalse(rt.call(() -> tcp().paused));
        rt.run(() -> relay().ackHeld(0));
        assertEquals(List.of(200), statuses(out()));
    }

    @Test
    void shouldAnswer400NamingTheBadLineAndStoreNothingOfTheRequest() throws Exception {
        start("");
        connect();
        rx(post("{\"id\":1}\n{\"id\":2}\n{\"id\":3,}\n{\"id\":4}"));
        String wire = out();
        assertEquals(List.of(400), statuses(wire));
        JsonNode b = lastBody(wire);
        assertEquals("bad JSON", b.get("error").asText());
        assertEquals(3, b.get("line").asInt());
        assertEquals(0, rt.call(() -> relay().messages.size()));
        assertEquals(St.ST_IDLE, state(), "a bad body is not a bad connection");
        rx(post("[1,2]"));
        wire = out();
        assertEquals(List.of(400), statuses(wire));
        assertEquals("not a JSON object", lastBody(wire).get("detail").asText());
        rx(post("\n \n"));
        assertEquals(List.of(400), statuses(out()), "no object at all");
    }

    @Test
    void shouldAnswer413ForABodyOverTheLimitAndClose() {
        start("\"max_body_size\": 100");
        connect();
        rx(post("{\"pad\":\"" + "x".repeat(200) + "\"}"));
        String wire = out();
        assertEquals(List.of(413), statuses(wire));
        assertTrue(wire.contains("connection: close"));
        assertEquals(St.ST_DISCONNECTED, state());
        connect();
        rx("POST /ingest HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n50\r\n" + "x".repeat(80) + "\r\n");
        assertTrue(out().isEmpty());
        rx("50\r\n" + "x".repeat(80) + "\r\n");
        assertEquals(List.of(413), statuses(out()), "a chunked body is counted as it comes");
        assertEquals(0, rt.call(() -> relay().messages.size()));
    }

    @Test
    void shouldAnswer413ForTooManyLines() throws Exception {
        start("\"max_lines\": 3");
        connect();
        rx(post("{}\n{}\n{}\n{}"));
        String wire = out();
        assertEquals(List.of(413), statuses(wire));
        assertEquals(3, lastBody(wire).get("max_lines").asInt());
        assertEquals(0, rt.call(() -> relay().messages.size()));
    }

    @Test
    void shouldAnswer100ContinueThen413WhenTheAnnouncedBodyIsTooLarge() {
        start("\"max_body_size\": 10");
        connect();
        rx("POST /ingest HTTP/1.1\r\nContent-Length: 8\r\nExpect: 100-continue\r\n\r\n");
        assertEquals("HTTP/1.1 100 Continue\r\n\r\n", out());
        rx("{\"a\":12}");
        assertEquals(List.of(200), statuses(out()));
        rx("POST /ingest HTTP/1.1\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n");
        assertEquals(List.of(413), statuses(out()), "no 100 for a body we would not take");
    }

    @Test
    void shouldRequireTheBearerTokenWhenConfigured() {
        start("\"bearer_token\": \"s3cret\"");
        connect();
        rx(post("{}"));
        String wire = out();
        assertEquals(List.of(401), statuses(wire));
        assertTrue(wire.contains("www-authenticate: Bearer"));
        rx(post("/ingest", "{}", "Authorization: Bearer wrong\r\n"));
        assertEquals(List.of(401), statuses(out()));
        rx(post("/ingest", "{}", "Authorization: bearer s3cret\r\n"));
        assertEquals(List.of(200), statuses(out()));
        rx(get("/health"));
        assertEquals(List.of(200), statuses(out()), "the health check needs no token");
        assertEquals(0, rt.call(() -> tcp().drops), "4xx keep the connection");
    }

    /** A request whose body is these bytes (sent as they are, whatever they hold). */
    private static String postBytes(byte[] body, String headers) {
        return "POST /ingest HTTP/1.1\r\nHost: t\r\n" + headers + "Content-Length: " + body.length + "\r\n\r\n"
                + new String(body, StandardCharsets.ISO_8859_1);
    }

    private static byte[] gzip(String text) throws java.io.IOException {
        java.io.ByteArrayOutputStream b = new java.io.ByteArrayOutputStream();
        try (java.util.zip.GZIPOutputStream z = new java.util.zip.GZIPOutputStream(b)) {
            z.write(text.getBytes(StandardCharsets.UTF_8));
        }
        return b.toByteArray();
    }

    @Test
    void shouldTakeAGzipBodyAsTheObjectsItDecompressesTo() throws Exception {
        start("");
        connect();
        rx(postBytes(gzip("{\"id\":\"z-1\"}\n{\"id\":\"z-2\"}\n{\"id\":\"z-3\"}\n"), "Content-Encoding: gzip\r\n"));
        String wire = out();
        assertEquals(List.of(200), statuses(wire), wire);
        assertEquals(3, lastBody(wire).get("accepted").asInt());
        assertEquals("z-3", rt.call(() -> relay().messages.get(2).get("id").asText()));
        // two members one after the other are one body; x-gzip is gzip; the coding's case does not matter
        byte[] one = gzip("{\"id\":\"z-4\"}\n");
        byte[] two = gzip("{\"id\":\"z-5\"}");
        byte[] both = java.util.Arrays.copyOf(one, one.length + two.length);
        System.arraycopy(two, 0, both, one.length, two.length);
        rx(postBytes(both, "Content-Encoding: X-GZIP\r\n"));
        assertEquals(2, lastBody(out()).get("accepted").asInt());
        // chunked, the compressed bytes cut anywhere
        byte[] z = gzip("{\"id\":\"z-6\"}\n{\"id\":\"z-7\"}");
        int cut = z.length / 2;
        rx("POST /ingest HTTP/1.1\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n"
                + Integer.toHexString(cut) + "\r\n" + new String(z, 0, cut, StandardCharsets.ISO_8859_1) + "\r\n");
        assertEquals("", out());
        rx(Integer.toHexString(z.length - cut) + "\r\n" + new String(z, cut, z.length - cut, StandardCharsets.ISO_8859_1)
                + "\r\n0\r\n\r\n");
        assertEquals(2, lastBody(out()).get("accepted").asInt());
        assertEquals(7, rt.call(() -> relay().messages.size()));
        assertEquals("z-7", rt.call(() -> relay().messages.get(6).get("id").asText()));
    }

    @Test
    void shouldAnswer400ForAGzipBodyThatIsNotGzipOrIsCutShortAndKeepTheConnection() throws Exception {
        start("");
        connect();
        rx(post("/ingest", "not-really-gzip", "Content-Encoding: gzip\r\n"));
        String wire = out();
        assertEquals(List.of(400), statuses(wire));
        assertEquals("bad gzip body", lastBody(wire).get("error").asText());
        byte[] z = gzip("{\"id\":\"cut\"}\n{\"id\":\"short\"}");
        rx(postBytes(java.util.Arrays.copyOf(z, z.length - 6), "Content-Encoding: gzip\r\n"));
        wire = out();
        assertEquals(List.of(400), statuses(wire), "the end of the stream and its checksum missing");
        assertEquals("bad gzip body", lastBody(wire).get("error").asText());
        assertEquals("the gzip stream ends early", lastBody(wire).get("detail").asText());
        rx(postBytes(new byte[0], "Content-Encoding: gzip\r\n"));
        assertEquals(List.of(400), statuses(out()), "an empty body is no gzip stream");
        rx(postBytes(gzip("{\"id\":1}\n{\"id\":2,}"), "Content-Encoding: gzip\r\n"));
        wire = out();
        assertEquals(List.of(400), statuses(wire), "bad JSON inside good gzip");
        assertEquals(2, lastBody(wire).get("line").asInt());
        assertEquals(0, rt.call(() -> relay().messages.size()));
        assertEquals(St.ST_IDLE, state(), "a bad body is not a bad connection");
        rx(post("{\"id\":\"after\"}"));
        assertEquals(List.of(200), statuses(out()));
    }

    @Test
    void shouldAnswer413WhenAGzipBodyDecompressesPastTheLimitAndStoreNothing() throws Exception {
        start("\"max_body_size\": 1000");
        connect();
        byte[] bomb = gzip("{\"id\":\"small\"}\n{\"pad\":\"" + "x".repeat(200_000) + "\"}");
        assertTrue(bomb.length < 1000, "it passes as a compressed body: " + bomb.length);
        rx(postBytes(bomb, "Content-Encoding: gzip\r\n"));
        String wire = out();
        assertEquals(List.of(413), statuses(wire));
        JsonNode b = lastBody(wire);
        assertEquals("body too large once decompressed", b.get("error").asText());
        assertEquals(1000, b.get("max_body_size").asInt());
        assertEquals(0, rt.call(() -> relay().messages.size()), "not the first object either");
        assertEquals(St.ST_IDLE, state(), "the body was read whole: the connection stays");
        rx(postBytes(gzip("{\"id\":\"fits\"}"), "Content-Encoding: gzip\r\n"));
        assertEquals(List.of(200), statuses(out()));
        String exactly = "{\"pad\":\"" + "x".repeat(990) + "\"}";
        assertEquals(1000, exactly.length());
        rx(postBytes(gzip(exactly), "Content-Encoding: gzip\r\n"));
        assertEquals(List.of(200), statuses(out()), "decompressed to max_body_size exactly");
        rx(postBytes(gzip(exactly + " "), "Content-Encoding: gzip\r\n"));
        assertEquals(List.of(413), statuses(out()), "one byte over");
    }

    @Test
    void shouldAnswer415ForABodyInACodingItDoesNotTake() {
        start("");
        connect();
        for (String coding : List.of("br", "deflate", "gzip, br")) {
            rx(post("/ingest", "{}", "Content-Encoding: " + coding + "\r\n"));
            String wire = out();
            assertEquals(List.of(415), statuses(wire), coding);
            assertTrue(wire.contains("gzip and identity are taken"), wire);
        }
        rx(post("/ingest", "{}", "Content-Encoding: identity\r\n"));
        assertEquals(List.of(200), statuses(out()));
        assertEquals(1, rt.call(() -> relay().messages.size()));
    }

    @Test
    void shouldAnswer404And405() {
        start("");
        connect();
        rx(post("/elsewhere", "{}", ""));
        rx("GET /ingest HTTP/1.1\r\n\r\n");
        rx("DELETE /health HTTP/1.1\r\n\r\n");
        rx(post("/ingest?source=x", "{}", ""));
        String wire = out();
        assertEquals(List.of(404, 405, 405, 200), statuses(wire), wire);
        assertTrue(wire.contains("allow: POST"));
        assertTrue(wire.contains("allow: GET, HEAD"));
        assertEquals(1, rt.call(() -> relay().messages.size()), "only the last one went up");
    }

    @Test
    void shouldAnswerHealthFromTheGateAndTheNamedServices() throws Exception {
        start("\"health_services\": [\"relay\", \"__output_side__\"]");
        connect();
        rx(get("/health"));
        String wire = out();
        assertEquals(List.of(503), statuses(wire));
        assertEquals("[\"__output_side__\"]", lastBody(wire).get("down").toString());
        JsonNode onlyRelay = Kw.MAPPER.readTree("[\"relay\"]");
        rt.run(() -> http().writeAttr("health_services", onlyRelay));
        rx(get("/health"));
        wire = out();
        assertEquals(List.of(200), statuses(wire));
        assertEquals("up", lastBody(wire).get("status").asText());
        rx("HEAD /health HTTP/1.1\r\n\r\n");
        wire = out();
        assertEquals(List.of(200), statuses(wire));
        assertTrue(wire.endsWith("\r\n\r\n"), "HEAD: headers only");
        rt.run(() -> rt.service("relay").stop());
        rx(get("/health"));
        assertEquals(List.of(503), statuses(out()), "a stopped service is down");
    }

    @Test
    void shouldCloseOnGarbageAndOnOversizeHeaders() {
        start("\"max_header_size\": 200, \"max_uri_length\": 100");
        connect();
        rx("\u0001\u0002\u0003 not http at all\r\n\r\n");
        assertEquals(List.of(400), statuses(out()));
        assertEquals(St.ST_DISCONNECTED, state());
        assertTrue(hasError("Bad HTTP request, closing"));
        connect();
        rx("POST /ingest HTTP/1.1\r\nX: " + "a".repeat(300) + "\r\n\r\n");
        assertEquals(List.of(431), statuses(out()));
        connect();
        rx("GET /" + "a".repeat(200) + " HTTP/1.1\r\n\r\n");
        assertEquals(List.of(414), statuses(out()));
        assertEquals(3, stat("protocol_errors"));
        connect();
        rx(post("{}"));
        assertEquals(List.of(200), statuses(out()), "the gobj serves the next connection");
    }

    @Test
    void shouldCloseAfterAnHttp10Request() {
        start("");
        connect();
        rx("POST /ingest HTTP/1.0\r\nContent-Length: 2\r\n\r\n{}");
        String wire = out();
        assertEquals(List.of(200), statuses(wire));
        assertTrue(wire.contains("connection: close"));
        assertEquals(St.ST_DISCONNECTED, state());
    }

    // --- live upgrade ---

    @Test
    void shouldKeepTheConnectionAndItsRequestsAcrossALiveUpgrade() {
        start("");
        setRelay(FakeRelay.Mode.HOLD);
        connect();
        rx(post("{\"id\":1}\n{\"id\":2}"));   // waiting for its acks
        rt.run(() -> relay().ackHeld(0, 0));   // one of two acked by the old revision
        rx("POST /ingest HTTP/1.1\r\nContent-Length: 10\r\n\r\n{\"id\"");   // a body half read
        GObj before = rt.call(this::http);
        ObjectNode report = rt.gclassArrived(ProtHttpSr.SPEC.withFactory(ProtHttpSr::new));
        assertEquals(1, report.get("gobjs_migrated").asInt(), report.toString());
        assertEquals(0, report.get("rebuilt").size(), report.toString());
        assertTrue(before == rt.call(this::http), "the same gobj");
        assertEquals(ProtHttpSr.ST_WAIT_BODY, state());
        rt.run(() -> relay().ackHeld(0));   // the other ack, to the new revision
        assertEquals(List.of(200), statuses(out()), "the request of the old revision is answered");
        rx(":333}");
        assertEquals(1, rt.call(() -> relay().heldCount()), "the body read across the upgrade went up whole");
        rt.run(() -> relay().ackHeld(0));
        assertEquals(List.of(200), statuses(out()));
        assertFalse(rt.call(() -> tcp().paused), "reading resumed after the upgrade");
        assertEquals(0, rt.call(() -> tcp().drops), "the connection stayed open");
    }

    @Test
    void shouldDecompressAGzipBodyHalfReadAcrossALiveUpgrade() throws Exception {
        start("");
        connect();
        byte[] z = gzip("{\"id\":\"up-1\"}\n{\"id\":\"up-2\"}");
        String req = postBytes(z, "Content-Encoding: gzip\r\n");
        int half = req.length() - z.length / 2;
        rx(req.substring(0, half));
        ObjectNode report = rt.gclassArrived(ProtHttpSr.SPEC.withFactory(ProtHttpSr::new));
        assertEquals(1, report.get("gobjs_migrated").asInt(), report.toString());
        rx(req.substring(half));
        String wire = out();
        assertEquals(List.of(200), statuses(wire), wire);
        assertEquals(2, lastBody(wire).get("accepted").asInt(), "the new revision knew the body is gzip");
        assertEquals("up-2", rt.call(() -> relay().messages.get(1).get("id").asText()));
    }

    // --- captured logs ---

    private boolean hasError(String msg) {
        return logs.with(msg).stream().anyMatch(r -> r.level == LogCapture.Level.ERROR);
    }

    private Object field(String msg, String key) {
        List<LogCapture.Rec> said = logs.with(msg);
        return said.isEmpty() ? null : said.get(0).fields.get(key);
    }
}
