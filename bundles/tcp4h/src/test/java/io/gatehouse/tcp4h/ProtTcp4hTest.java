// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.support.Gbuffers;
import io.gatehouse.testkit.FakeSocket;
import io.gatehouse.testkit.LeakWatch;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Row;
import io.gatehouse.testkit.RowCoverage;
import io.gatehouse.testkit.Tcp4hFrames;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * C_PROT_TCP4H's FSM, row by row: a {@link FakeSocket} below it stands for the C_TCP (the test says what the socket
 * reads and when it connects or closes, and sees what is sent down), a {@link Recorder} above it for the channel.
 * Timers run on a {@link ManualClock}, so timeout_header, timeout_payload and timeout_close take no time. Each test
 * names the rows it checks ({@link Row}); {@link #shouldHaveATestForEveryRowOfTheFsm} fails when a row has none.
 */
@Timeout(30)
class ProtTcp4hTest {
    private static final String WFH = ProtTcp4h.ST_WAIT_FRAME_HEADER;
    private static final String WP = ProtTcp4h.ST_WAIT_PAYLOAD;
    private static LeakWatch leaks;

    private final ManualClock clock = new ManualClock();
    private LogCapture logs;
    private YunoRuntime rt;
    private Recorder up;
    private GObj p;
    private FakeSocket sock;

    @BeforeAll
    static void watchLeaks() {
        leaks = new LeakWatch();
    }

    @AfterAll
    static void noBufferLeaked() throws Exception {
        assertEquals("", leaks.stop(), "Netty's leak detector reported a leak");
    }

    /** C_RECORDER "up" over C_PROT_TCP4H "p" over C_FAKE_SOCKET "s", with the kw entries given to p and s. */
    private void start(String tcp4hKw, String socketKw) {
        start(Recorder.GCLASS, tcp4hKw, socketKw);
    }

    /** {@link #start(String, String)} with "up" of gclass {@code upper} (C_RECORDER, or one that takes message batches). */
    private void start(String upper, String tcp4hKw, String socketKw) {
        logs = new LogCapture();
        String cfg = "{\"services\":[{\"name\":\"up\",\"gclass\":\"" + upper + "\",\"children\":["
                + "{\"name\":\"p\",\"gclass\":\"C_PROT_TCP4H\",\"kw\":{" + (tcp4hKw == null ? "" : tcp4hKw) + "},\"children\":["
                + "{\"name\":\"s\",\"gclass\":\"C_FAKE_SOCKET\",\"kw\":{" + (socketKw == null ? "" : socketKw) + "}}]}]}]}";
        rt = YunoRuntime.builder().name("tcp4h").clock(clock)
                .gclass(new ProtTcp4hGClass().spec(), FakeSocket.SPEC, Recorder.SPEC, Recorder.SPEC_MESSAGE_BATCHES)
                .config(cfg).build().start();
        up = (Recorder) rt.service("up").behavior();
        p = rt.call(() -> rt.service("up").child("p"));
        sock = (FakeSocket) rt.call(() -> p.bottom().behavior());
    }

    private void start() {
        start(null, null);
    }

    @AfterEach
    void tearDown() {
        if (rt != null) rt.close();
        if (logs != null) logs.close();
    }

    // --- Driving it ---

    private void connect() {
        rt.call(sock::connect);
    }

    private void read(byte[] bytes) {
        rt.call(() -> sock.receive(bytes));
    }

    private void read(String frame) {
        read(Tcp4hFrames.of(frame));
    }

    /** Lets what the action just done set off on the core loop arrive (the close that answers a drop). */
    private void settle() {
        rt.run(() -> { });
    }

    private int send(String event, ObjectNode kw) {
        return rt.call(() -> p.send(event, kw, null));
    }

    private String state() {
        return rt.call(p::state);
    }

    private List<String> messages() {
        return up.events(Ev.EV_ON_MESSAGE).stream().map(Recorder.Event::payloadText).toList();
    }

    private List<FakeSocket.Sent> sent(String event) {
        return sock.sent(event);
    }

    private long timeoutIn() {
        settle();
        return clock.nextDue() < 0 ? -1 : clock.nextDue() - clock.monotonicMillis();
    }

    private static byte[] concat(byte[]... parts) {
        return Tcp4hFrameDecoderTest.concat(parts);
    }

    private static ObjectNode gbuffer(String text) {
        return Kw.withGbuffer(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8));
    }

    /** Opens the connection and sends a protocol error (header 4): p closes and drops the socket. */
    private void openAndBreak() {
        connect();
        read(new byte[] {0, 0, 0, 4});
    }

    @Test
    void shouldHaveATestForEveryRowOfTheFsm() {
        assertEquals(List.of(), RowCoverage.uncovered(ProtTcp4h.FSM, ProtTcp4hTest.class), "rows without a test");
        assertEquals(List.of(), RowCoverage.unknown(ProtTcp4h.FSM, ProtTcp4hTest.class), "@Row naming no row");
    }

    // --- ST_DISCONNECTED ---

    @Test
    @Row(state = St.ST_DISCONNECTED, event = Ev.EV_CONNECTED)
    void shouldOpenAndWaitForAHeaderWhenTheTransportConnects() {
        start();
        assertEquals(St.ST_DISCONNECTED, state());
        connect();
        Recorder.Event open = up.await(Ev.EV_ON_OPEN, 1000);
        assertEquals("127.0.0.1:40000", open.kw.path(Kw.PEERNAME).asText());
        assertEquals("p", open.src);
        assertEquals(WFH, state());
        assertTrue(rt.call(() -> p.readBool(ProtTcp4h.CONNECTED)));
        assertEquals(-1, timeoutIn(), "no timer without timeout_header");
    }

    @Test
    @Row(state = St.ST_DISCONNECTED, event = Ev.EV_DISCONNECTED)
    void shouldPublishTheCloseOfItsOwnDropWhenTheTransportReportsIt() {
        start(null, "\"answer_drops\":false");
        openAndBreak();
        assertEquals(1, logs.count("frame_length cannot be 0"));
        assertEquals(1, sent(Ev.EV_DROP).size());
        assertEquals(3000, timeoutIn(), "timeout_close runs until the transport reports the close");
        assertEquals(St.ST_DISCONNECTED, state());
        assertEquals(0, up.count(Ev.EV_ON_CLOSE));
        rt.call(sock::disconnect);   // the socket's close, answering the drop
        assertEquals(1, up.count(Ev.EV_ON_CLOSE));
        assertEquals(-1, timeoutIn(), "timeout_close cancelled");
        assertFalse(rt.call(() -> p.readBool(ProtTcp4h.CONNECTED)));
    }

    @Test
    @Row(state = St.ST_DISCONNECTED, event = Ev.EV_DISCONNECTED)
    void shouldNotPublishACloseThatHadNoOpen() {
        start();
        assertEquals(0, (int) rt.call(() -> p.send(Ev.EV_DISCONNECTED, Kw.create(), p.bottom())));
        assertEquals(0, up.count(Ev.EV_ON_CLOSE));
    }

    @Test
    @Row(state = St.ST_DISCONNECTED, event = Ev.EV_TIMEOUT)
    void shouldDropAgainWhenTheTransportDoesNotReportTheCloseWithinTimeoutClose() {
        start("\"timeout_close\":1000", "\"answer_drops\":false");
        openAndBreak();
        assertEquals(1, sent(Ev.EV_DROP).size());
        clock.advance(999);
        assertEquals(0, logs.count("Timeout waiting disconnected"));
        clock.advance(1);
        assertEquals(1, logs.count("Timeout waiting disconnected"));
        assertEquals(LogCapture.Level.WARN, logs.with("Timeout waiting disconnected").get(0).level);
        assertEquals(2, sent(Ev.EV_DROP).size(), "the transport is told again");
    }

    @Test
    @Row(state = St.ST_DISCONNECTED, event = Ev.EV_STOPPED)
    void shouldDestroyAVolatileTransportWhenItStops() {
        start();
        GObj v = rt.call(() -> {
            GObj g = p.createVolatileChild("v", FakeSocket.GCLASS, null);
            p.setBottom(g);
            return g;
        });
        rt.call(() -> ((FakeSocket) v.behavior()).stopped());
        settle();
        assertNull(rt.call(p::bottom));
        assertTrue(rt.call(v::isDestroyed));
    }

    @Test
    @Row(state = St.ST_DISCONNECTED, event = Ev.EV_STOPPED)
    void shouldKeepATransportFromTheConfigWhenItStops() {
        start();
        rt.call(sock::stopped);
        settle();
        assertEquals(sock.gobj(), rt.call(p::bottom));
        assertFalse(rt.call(() -> sock.gobj().isDestroyed()));
    }

    @Test
    @Row(state = St.ST_DISCONNECTED, event = Ev.EV_DROP)
    void shouldPassADropDownWhileDisconnected() {
        start();
        assertEquals(0, send(Ev.EV_DROP, null));
        assertEquals(1, sent(Ev.EV_DROP).size());
    }

    @Test
    @Row(state = St.ST_DISCONNECTED, event = Ev.EV_PAUSE_INPUT)
    void shouldStopTheTransportReadingWhenPausedWhileDisconnected() {
        start();
        send(Ev.EV_PAUSE_INPUT, null);
        assertEquals(1, sent(Ev.EV_PAUSE_INPUT).size());
        assertTrue(rt.call(() -> p.readBool(ProtTcp4h.INPUT_BLOCKED)));
    }

    @Test
    @Row(state = St.ST_DISCONNECTED, event = Ev.EV_RESUME_INPUT)
    void shouldLiftAPauseWhileDisconnectedAndReadOnceConnected() {
        start();
        send(Ev.EV_PAUSE_INPUT, null);
        assertEquals(0, send(Ev.EV_RESUME_INPUT, null));
        assertEquals(0, sent(Ev.EV_RESUME_INPUT).size(), "a disconnected transport is not told");
        connect();
        read("after");
        assertEquals(List.of("after"), messages());
        assertFalse(rt.call(() -> p.readBool(ProtTcp4h.INPUT_BLOCKED)));
    }

    @Test
    @Row(state = St.ST_DISCONNECTED, event = Ev.EV_RX_DATA)
    void shouldDropBytesThatArriveAfterItsOwnCloseSilently() {
        start(null, "\"answer_drops\":false");
        openAndBreak();
        int logged = logs.all().size();
        read("late");
        assertEquals(List.of(), messages());
        assertEquals(logged, logs.all().size(), "nothing said");
    }

    @Test
    @Row(state = St.ST_DISCONNECTED, event = Ev.EV_TX_READY)
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_TX_READY)
    @Row(state = ProtTcp4h.ST_WAIT_PAYLOAD, event = Ev.EV_TX_READY)
    void shouldTakeTxReadyInEveryStateWithoutPassingItUp() {
        start();
        assertEquals(0, (int) rt.call(sock::txReady));
        connect();
        assertEquals(0, (int) rt.call(sock::txReady));
        read(new byte[] {0, 0, 0, 9, 'a'});
        assertEquals(WP, state());
        assertEquals(0, (int) rt.call(sock::txReady));
        assertEquals(0, up.count(Ev.EV_TX_READY));
        assertEquals(0, logs.count("Event NOT DEFINED in state"));
    }

    @Test
    void shouldRefuseToSendWhileDisconnected() {
        start();
        assertEquals(-1, send(Ev.EV_SEND_MESSAGE, gbuffer("x")));
        assertEquals(1, logs.count("Event NOT DEFINED in state"));
        assertEquals(0, sent(Ev.EV_TX_DATA).size());
    }

    // --- ST_WAIT_FRAME_HEADER ---

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_RX_DATA)
    void shouldPublishOneMessagePerFrameWhateverTheReadsCarry() {
        start();
        connect();
        read(concat(Tcp4hFrames.of("ab"), Tcp4hFrames.of("cde")));
        assertEquals(List.of("ab", "cde"), messages(), "two frames in one read");
        read(new byte[] {0, 0});
        assertEquals(WFH, state(), "half a header");
        read(concat(new byte[] {0, 7}, "xyz".getBytes(StandardCharsets.US_ASCII), new byte[] {0, 0, 0}));
        assertEquals(List.of("ab", "cde", "xyz"), messages(), "a header split across reads");
        read(new byte[] {6, 'o', 'k'});
        assertEquals(List.of("ab", "cde", "xyz", "ok"), messages(), "a frame's end and the next header's start");
        assertEquals(WFH, state());
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_RX_DATA)
    void shouldCloseWithAnErrorOnAHeaderOfFour() {
        start();
        connect();
        read(concat(Tcp4hFrames.of("before"), new byte[] {0, 0, 0, 4}, Tcp4hFrames.of("after")));
        assertEquals(List.of("before"), messages(), "the rest of the read is not read");
        LogCapture.Rec e = logs.with("frame_length cannot be 0").get(0);
        assertEquals(LogCapture.Level.ERROR, e.level);
        assertEquals("127.0.0.1:40000", e.fields.get("peername"));
        assertEquals(St.ST_DISCONNECTED, state());
        assertEquals(1, sent(Ev.EV_DROP).size());
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_RX_DATA)
    void shouldCloseWithAWarningOnAPayloadOverMaxPktSizeOrAHeaderUnderFour() {
        start("\"max_pkt_size\":10", null);
        connect();
        read(Tcp4hFrames.of("0123456789"));
        assertEquals(List.of("0123456789"), messages(), "exactly max_pkt_size is taken");
        read(new byte[] {0, 0, 0, 15});
        LogCapture.Rec w = logs.with("tcp4h head too long").get(0);
        assertEquals(LogCapture.Level.WARN, w.level);
        assertEquals(11L, w.fields.get("len"));
        assertEquals(10, w.fields.get("max_pkt_size"));
        assertEquals(St.ST_DISCONNECTED, state());
        settle();
        connect();
        read(new byte[] {0, 0, 0, 2});
        assertEquals(2, logs.count("tcp4h head too long"), "a header under 4 wraps to a payload of about 4 GiB");
    }

    @Test
    void shouldApplyAWrittenMaxPktSizeFromTheNextHeader() {
        start();
        connect();
        read(new byte[] {0, 0, 0, 24, 'a'});   // header of a 20-byte payload: taken under the default limit
        ObjectNode w = rt.command("write-attr service=up gobj=p attr=max_pkt_size value=10");
        assertEquals(0, w.path("result").asInt(), w.toString());
        read("bcdefghijklmnopqrst".getBytes(StandardCharsets.US_ASCII));
        assertEquals(List.of("abcdefghijklmnopqrst"), messages(), "the frame under way keeps the limit it had");
        read(Tcp4hFrames.of("0123456789a"));
        assertEquals(1, logs.count("tcp4h head too long"), "the next header meets the new limit");
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_SEND_MESSAGE)
    void shouldWriteTheHeaderInTheRoomInFrontWhenThePayloadHasIt() {
        start();
        connect();
        ByteBuf roomy = Gbuffers.allocate(5).writeBytes("roomy".getBytes(StandardCharsets.US_ASCII));
        ObjectNode kw = Kw.withGbuffer(roomy);
        kw.put("tag", 7);
        assertEquals(0, send(Ev.EV_SEND_MESSAGE, kw));
        FakeSocket.Sent tx = sent(Ev.EV_TX_DATA).get(0);
        assertArrayEquals(Tcp4hFrames.of("roomy"), tx.bytes);
        assertEquals(7, tx.kw.path("tag").asInt(), "the kw went down as it came");
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_SEND_MESSAGE)
    void shouldCopyASmallPayloadWithoutRoomAndLeaveItsNeighboursAlone() {
        start();
        connect();
        ByteBuf shared = Unpooled.copiedBuffer("0123456789", StandardCharsets.US_ASCII);
        ByteBuf tail = shared.retainedSlice(0, 10).readerIndex(6);
        send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(tail));
        assertArrayEquals(Tcp4hFrames.of("6789"), sent(Ev.EV_TX_DATA).get(0).bytes);
        assertEquals("0123456789", shared.toString(StandardCharsets.US_ASCII));
        shared.release();
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_SEND_MESSAGE)
    void shouldFrameALargePayloadWithoutRoomAsItIs() {
        start();
        connect();
        byte[] big = new byte[10_000];
        Arrays.fill(big, (byte) 'q');
        send(Ev.EV_SEND_MESSAGE, Kw.withGbuffer(Unpooled.wrappedBuffer(big)));
        assertArrayEquals(Tcp4hFrames.of(big), sent(Ev.EV_TX_DATA).get(0).bytes);
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_SEND_MESSAGE)
    void shouldFrameEachMessageOfASendBatchIntoOneBufferWithTheFramesRanges() {
        start();
        connect();
        assertTrue(rt.call(() -> p.gclass().takesSendBatches()));
        // the ranges counted from the reader index, which is not at 0; bytes outside them are not sent
        ByteBuf all = Gbuffers.allocate(64).writeBytes("{\"a\":1}--{\"bb\":22}{}".getBytes(StandardCharsets.US_ASCII));
        ObjectNode kw = Kw.withGbuffer(all);
        int[] ranges = {0, 7, 9, 18, 18, 20};
        Kw.putRef(kw, Kw.BATCH, ranges);
        assertEquals(0, send(Ev.EV_SEND_MESSAGE, kw));
        List<FakeSocket.Sent> tx = sent(Ev.EV_TX_DATA);
        assertEquals(1, tx.size(), "one buffer for the batch");
        assertArrayEquals(concat(Tcp4hFrames.of("{\"a\":1}"), Tcp4hFrames.of("{\"bb\":22}"), Tcp4hFrames.of("{}")),
                tx.get(0).bytes);
        assertArrayEquals(new int[] {0, 11, 11, 24, 24, 30}, ranges, "the frames' ranges, for the transport's counters");
        assertEquals(3, tx.get(0).messages);
        assertEquals(0, all.refCnt(), "the batch's buffer is released once copied into frames");
    }

    // --- Message batches up ---

    /** The messages of each EV_ON_MESSAGE, one list per event. */
    private List<List<String>> messagesPerEvent() {
        return up.events(Ev.EV_ON_MESSAGE).stream().map(Recorder.Event::messageTexts).toList();
    }

    @Test
    void shouldSendTheCompleteFramesOfOneReadUpAsOneBatchWhenTheGobjAboveTakesThem() {
        start(Recorder.GCLASS_MESSAGE_BATCHES, null, null);
        connect();
        byte[] d = Tcp4hFrames.of("{\"d\":4}");
        // three complete frames and all of a fourth but its last two bytes, in one read
        int cut = d.length - 2;
        read(concat(Tcp4hFrames.of("{\"a\":1}"), Tcp4hFrames.of("{\"b\":2}"), Tcp4hFrames.of("{\"c\":3}"),
                Arrays.copyOf(d, cut)));
        assertEquals(List.of(List.of("{\"a\":1}", "{\"b\":2}", "{\"c\":3}")), messagesPerEvent());
        assertEquals(WP, state(), "the fourth frame's payload is under way");
        // the rest of the fourth, then two more: the gathered one goes alone, the two complete ones together
        read(concat(Arrays.copyOfRange(d, cut, d.length), Tcp4hFrames.of("{\"e\":5}"), Tcp4hFrames.of("{\"f\":6}")));
        assertEquals(List.of(List.of("{\"a\":1}", "{\"b\":2}", "{\"c\":3}"), List.of("{\"d\":4}"),
                List.of("{\"e\":5}", "{\"f\":6}")), messagesPerEvent());
        assertEquals(WFH, state());
        // one frame alone in a read goes alone
        read("{\"g\":7}");
        assertEquals(List.of("{\"g\":7}"), messagesPerEvent().get(3));
        assertNull(up.events(Ev.EV_ON_MESSAGE).get(3).messageRanges);
    }

    @Test
    void shouldSendAtMostMaxBatchMessagesInOneBatch() {
        start(Recorder.GCLASS_MESSAGE_BATCHES, null, null);
        connect();
        int n = ProtTcp4h.MAX_BATCH_MESSAGES + 5;
        byte[][] frames = new byte[n][];
        for (int i = 0; i < n; i++) frames[i] = Tcp4hFrames.of("{\"i\":" + i + "}");
        read(concat(frames));
        List<List<String>> got = messagesPerEvent();
        assertEquals(2, got.size());
        assertEquals(ProtTcp4h.MAX_BATCH_MESSAGES, got.get(0).size());
        assertEquals(5, got.get(1).size());
        assertEquals("{\"i\":" + (n - 1) + "}", got.get(1).get(4));
        assertEquals("{\"i\":0}", got.get(0).get(0));
    }

    @Test
    void shouldSendTheFramesBeforeABadHeaderUpAndThenCloseWithTheError() {
        start(Recorder.GCLASS_MESSAGE_BATCHES, "\"max_pkt_size\":10", null);
        connect();
        read(concat(Tcp4hFrames.of("{\"a\":1}"), Tcp4hFrames.of("0123456789"), new byte[] {0, 0, 0, 15, 'x'}));
        assertEquals(List.of(List.of("{\"a\":1}", "0123456789")), messagesPerEvent(),
                "the frames before the bad header are not lost");
        assertEquals(1, logs.count("tcp4h head too long"));
        assertEquals(St.ST_DISCONNECTED, state());
        settle();
        connect();
        read(concat(Tcp4hFrames.of("{\"b\":2}"), new byte[] {0, 0, 0, 4}));
        assertEquals(List.of("{\"b\":2}"), messagesPerEvent().get(1));
        assertEquals(1, logs.count("frame_length cannot be 0"), "a zero-length frame after a good one");
    }

    @Test
    void shouldSendEachFrameAloneWhenAnInputThresholdCountsThem() {
        start(Recorder.GCLASS_MESSAGE_BATCHES, "\"input_threshold_msgs\":100", null);
        connect();
        read(concat(Tcp4hFrames.of("{\"a\":1}"), Tcp4hFrames.of("{\"b\":2}"), Tcp4hFrames.of("{\"c\":3}")));
        assertEquals(List.of(List.of("{\"a\":1}"), List.of("{\"b\":2}"), List.of("{\"c\":3}")), messagesPerEvent());
    }

    @Test
    void shouldSendEachFrameAloneToAGobjThatDoesNotTakeMessageBatches() {
        start();
        connect();
        read(concat(Tcp4hFrames.of("{\"a\":1}"), Tcp4hFrames.of("{\"b\":2}")));
        assertEquals(List.of(List.of("{\"a\":1}"), List.of("{\"b\":2}")), messagesPerEvent());
        assertNull(up.events(Ev.EV_ON_MESSAGE).get(0).messageRanges);
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_SEND_MESSAGE)
    void shouldSendAKwWithoutGbufferAsCompactJson() {
        start();
        connect();
        send(Ev.EV_SEND_MESSAGE, Kw.create().put("a", 1));
        assertArrayEquals(Tcp4hFrames.of("{\"a\":1}"), sent(Ev.EV_TX_DATA).get(0).bytes);
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_DISCONNECTED)
    void shouldPublishTheCloseWhenTheTransportDisconnects() {
        start();
        connect();
        read(new byte[] {0, 0});
        rt.call(sock::disconnect);
        assertEquals(1, up.count(Ev.EV_ON_CLOSE));
        assertEquals(St.ST_DISCONNECTED, state());
        assertFalse(rt.call(() -> p.readBool(ProtTcp4h.CONNECTED)));
        connect();
        read("fresh");
        assertEquals(List.of("fresh"), messages(), "the half header of the last connection is forgotten");
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_DROP)
    void shouldDropTheTransportWhenAskedWhileOpen() {
        start();
        connect();
        assertEquals(0, send(Ev.EV_DROP, null));
        assertEquals(1, sent(Ev.EV_DROP).size());
        settle();
        assertEquals(1, up.count(Ev.EV_ON_CLOSE));
        assertEquals(St.ST_DISCONNECTED, state());
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_PAUSE_INPUT)
    void shouldHoldWhatIsReadWhilePausedAndStopTheTransport() {
        start();
        connect();
        send(Ev.EV_PAUSE_INPUT, null);
        assertEquals(1, sent(Ev.EV_PAUSE_INPUT).size());
        assertTrue(rt.call(() -> p.readBool(ProtTcp4h.INPUT_BLOCKED)));
        read("held");
        assertEquals(List.of(), messages(), "reads on their way when the transport stopped wait here");
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_RESUME_INPUT)
    void shouldDeliverWhatWasHeldAndLetTheTransportReadOnResume() {
        start();
        connect();
        send(Ev.EV_PAUSE_INPUT, null);
        read(concat(Tcp4hFrames.of("one"), Tcp4hFrames.of("two")));
        send(Ev.EV_RESUME_INPUT, null);
        assertEquals(List.of("one", "two"), messages());
        assertEquals(1, sent(Ev.EV_RESUME_INPUT).size());
        assertFalse(rt.call(() -> p.readBool(ProtTcp4h.INPUT_BLOCKED)));
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_RESUME_INPUT)
    void shouldStopAtTheInputThresholdUntilTheConsumerCreditsBack() {
        start("\"input_threshold_msgs\":2", null);
        connect();
        read(concat(Tcp4hFrames.of("1"), Tcp4hFrames.of("2"), Tcp4hFrames.of("3"), Tcp4hFrames.of("4"), Tcp4hFrames.of("5")));
        assertEquals(List.of("1", "2"), messages());
        List<Recorder.Event> m = up.events(Ev.EV_ON_MESSAGE);
        assertFalse(m.get(0).kw.path(Kw.IS_BLOCKED).asBoolean());
        assertTrue(m.get(1).kw.path(Kw.IS_BLOCKED).asBoolean(), "the frame that reaches the threshold says so");
        assertEquals(1, sent(Ev.EV_PAUSE_INPUT).size());
        send(Ev.EV_RESUME_INPUT, Kw.create().put(Kw.CREDIT_MSGS, 1));
        assertEquals(List.of("1", "2", "3"), messages(), "one credited, one more handed up");
        send(Ev.EV_RESUME_INPUT, null);
        assertEquals(List.of("1", "2", "3", "4", "5"), messages());
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_TIMEOUT)
    void shouldCloseAConnectionThatSendsNoFrameWithinTimeoutHeader() {
        start("\"timeout_header\":300", null);
        connect();
        clock.advance(299);
        assertEquals(WFH, state());
        clock.advance(1);
        LogCapture.Rec w = logs.with("Timeout waiting frame header").get(0);
        assertEquals("first frame", w.fields.get("waiting"));
        assertEquals("127.0.0.1:40000", w.fields.get("peername"));
        assertEquals(St.ST_DISCONNECTED, state());
        assertEquals(1, sent(Ev.EV_DROP).size());
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_TIMEOUT)
    void shouldTimeAHeaderLeftIncompleteFromTheEndOfTheLastFrameHoweverItDrips() {
        start("\"timeout_header\":300", null);
        connect();
        read(concat(Tcp4hFrames.of("c"), new byte[] {0}));   // a frame and the first byte of the next header
        clock.advance(200);
        read(new byte[] {0});
        clock.advance(99);
        read(new byte[] {0});
        assertEquals(WFH, state(), "more header bytes do not restart it");
        clock.advance(1);
        assertEquals("rest of a header", logs.with("Timeout waiting frame header").get(0).fields.get("waiting"));
        assertEquals(St.ST_DISCONNECTED, state());
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_TIMEOUT)
    void shouldNeverTimeAConnectionIdleBetweenFramesNorOneThatIsPaused() {
        start("\"timeout_header\":300", null);
        connect();
        read("a");
        assertEquals(-1, timeoutIn(), "idle after a complete frame: not timed");
        clock.advance(60_000);
        read(new byte[] {0, 0});
        send(Ev.EV_PAUSE_INPUT, null);
        assertEquals(-1, timeoutIn(), "we stopped reading: the peer is not late");
        clock.advance(60_000);
        assertEquals(WFH, state());
        send(Ev.EV_RESUME_INPUT, null);
        assertEquals(300, timeoutIn(), "timed again from the resume");
        assertEquals(0, logs.count("Timeout waiting frame header"));
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_FRAME_HEADER, event = Ev.EV_TIMEOUT)
    void shouldKeepAHalfHeaderOpenByDefault() {
        start();
        connect();
        read(new byte[] {0, 0});
        assertEquals(-1, timeoutIn(), "timeout_header 0: Yuneta's behaviour, no timer");
        rt.call(() -> p.send(Ev.EV_TIMEOUT, null, p));   // a stale timer finds nothing to do
        assertEquals(WFH, state());
        assertEquals(0, logs.count("Timeout waiting frame header"));
    }

    // --- ST_WAIT_PAYLOAD ---

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_PAYLOAD, event = Ev.EV_RX_DATA)
    void shouldGatherAPayloadSplitAcrossReads() {
        start();
        connect();
        byte[] f = Tcp4hFrames.of("a payload in three reads");
        read(Arrays.copyOfRange(f, 0, 6));
        assertEquals(WP, state());
        read(Arrays.copyOfRange(f, 6, 15));
        assertEquals(WP, state());
        read(Arrays.copyOfRange(f, 15, f.length));
        assertEquals(List.of("a payload in three reads"), messages());
        assertEquals(WFH, state());
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_PAYLOAD, event = Ev.EV_SEND_MESSAGE)
    void shouldSendWhileAPayloadIsIncoming() {
        start();
        connect();
        read(new byte[] {0, 0, 0, 9, 'h', 'e'});
        assertEquals(0, send(Ev.EV_SEND_MESSAGE, gbuffer("out")));
        assertArrayEquals(Tcp4hFrames.of("out"), sent(Ev.EV_TX_DATA).get(0).bytes);
        read("llo".getBytes(StandardCharsets.US_ASCII));
        assertEquals(List.of("hello"), messages(), "sending did not disturb the frame coming in");
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_PAYLOAD, event = Ev.EV_DISCONNECTED)
    void shouldReleaseAPartialPayloadWhenTheTransportDisconnects() {
        start();
        connect();
        read(new byte[] {0, 0, 0, 104, 1, 2, 3});
        rt.call(sock::disconnect);
        assertEquals(1, up.count(Ev.EV_ON_CLOSE));
        assertEquals(St.ST_DISCONNECTED, state());
        assertEquals(-1, timeoutIn(), "no payload timer left");
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_PAYLOAD, event = Ev.EV_TIMEOUT)
    void shouldCloseWhenThePayloadDoesNotCompleteWithinTimeoutPayload() {
        start();
        connect();
        read(new byte[] {0, 0, 0, 14, 1, 2, 3});
        clock.advance(4999);
        assertEquals(WP, state());
        clock.advance(1);
        LogCapture.Rec w = logs.with("Timeout waiting PAYLOAD data").get(0);
        assertEquals(LogCapture.Level.WARN, w.level);
        assertEquals(5000L, w.fields.get("timeout_payload"));
        assertEquals(St.ST_DISCONNECTED, state());
        assertEquals(1, sent(Ev.EV_DROP).size());
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_PAYLOAD, event = Ev.EV_TIMEOUT)
    void shouldCountTimeoutPayloadFromTheLastRead() {
        start("\"timeout_payload\":1000", null);
        connect();
        read(new byte[] {0, 0, 0, 14, 1});
        clock.advance(600);
        read(new byte[] {2});
        clock.advance(400);   // the timer armed at the first read fires early and waits the rest
        assertEquals(WP, state());
        assertEquals(600, timeoutIn());
        clock.advance(600);
        assertEquals(1, logs.count("Timeout waiting PAYLOAD data"));
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_PAYLOAD, event = Ev.EV_DROP)
    void shouldDropTheTransportWhileAPayloadIsIncoming() {
        start();
        connect();
        read(new byte[] {0, 0, 0, 14, 1, 2, 3});
        send(Ev.EV_DROP, null);
        assertEquals(1, sent(Ev.EV_DROP).size());
        settle();
        assertEquals(1, up.count(Ev.EV_ON_CLOSE));
        assertEquals(-1, timeoutIn());
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_PAYLOAD, event = Ev.EV_PAUSE_INPUT)
    void shouldStopTheTransportAndHoldTheRestOfAPayloadWhenPaused() {
        start();
        connect();
        read(new byte[] {0, 0, 0, 9, 'h', 'e'});
        send(Ev.EV_PAUSE_INPUT, null);
        assertEquals(1, sent(Ev.EV_PAUSE_INPUT).size());
        read("llo".getBytes(StandardCharsets.US_ASCII));
        assertEquals(List.of(), messages());
    }

    @Test
    @Row(state = ProtTcp4h.ST_WAIT_PAYLOAD, event = Ev.EV_RESUME_INPUT)
    void shouldCompleteAHeldPayloadOnResume() {
        start();
        connect();
        read(new byte[] {0, 0, 0, 9, 'h', 'e'});
        send(Ev.EV_PAUSE_INPUT, null);
        read("llo".getBytes(StandardCharsets.US_ASCII));
        send(Ev.EV_RESUME_INPUT, null);
        assertEquals(List.of("hello"), messages());
        assertEquals(1, sent(Ev.EV_RESUME_INPUT).size());
        assertEquals(WFH, state());
    }

    // --- Trace ---

    @Test
    void shouldSayEveryFrameWhenTracedTraffic() {
        start();
        assertEquals(java.util.Set.of(ProtTcp4h.TRACE_TRAFFIC), ProtTcp4h.SPEC.traceLevels().keySet());
        rt.run(() -> p.setTrace(ProtTcp4h.TRACE_TRAFFIC, true));
        connect();
        read("in");
        send(Ev.EV_SEND_MESSAGE, gbuffer("out!"));
        assertEquals(2, logs.with("frame received").get(0).fields.get("bytes"));
        assertEquals(8, logs.with("frame sent").get(0).fields.get("bytes"));
        rt.run(() -> p.setTrace(ProtTcp4h.TRACE_TRAFFIC, false));
        read("quiet");
        assertEquals(1, logs.count("frame received"));
    }
}
