// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.api.queue.TrQueue;
import io.gatehouse.channel.Channel;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.iogate.IoGate;
import io.gatehouse.tcp.TcpGClass;
import io.gatehouse.tcp.TcpSGClass;
import io.gatehouse.tcp4h.ProtTcp4hGClass;
import io.gatehouse.testkit.AckPeer;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Poll;
import io.gatehouse.testkit.Ports;
import io.gatehouse.testkit.Recorder;
import io.gatehouse.testkit.Revision;
import io.gatehouse.trqueue.TrQueueFactoryImpl;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A live upgrade of C_QIOGATE, and of the trqueue under it, in the middle of a flow over a real TCP4H link to an
 * acking peer, with the real store on disk: the peer sees every message once (nothing in flight is sent again)
 * and its connection is never closed; the acks the peer sends after the upgrade clear the window.
 *
 * <p>The gateway runs on a {@link ManualClock}, so no ack timeout fires while the test waits for socket I/O; the
 * peer holds back its acks for some messages, so they are in flight when the upgrade comes, and sends them later.
 */
@Timeout(90)
class QIoGateLoopbackHandoverTest {
    private static final long WAIT = 15_000;

    @TempDir
    Path tmp;

    private final List<AutoCloseable> open = new ArrayList<>();
    private final ManualClock clock = new ManualClock();
    private final Set<String> held = ConcurrentHashMap.newKeySet();
    private YunoRuntime peer;
    private AckPeer acker;
    private Recorder peerLinks;
    private YunoRuntime gw;

    @AfterEach
    void tearDown() throws Exception {
        Collections.reverse(open);
        for (AutoCloseable c : open) c.close();
    }

    static GClassSpec<?>[] transport() {
        return new GClassSpec<?>[] {IoGate.SPEC, Channel.SPEC, new TcpGClass().spec(), new TcpSGClass().spec(),
            new ProtTcp4hGClass().spec()};
    }

    /** Waits for socket I/O, bounded in time. */
    static void eventually(BooleanSupplier cond, String what) {
        assertTrue(Poll.until(cond, WAIT), "timed out waiting: " + what);
    }

    /**
     * The peer: a server gate with one channel, an acking gobj that holds back the acks of {@link #held}, and a
     * recorder of the link's opens and closes.
     */
    void startPeer(int port) {
        String cfg = "{\"services\": [{\"name\": \"__input_side__\", \"gclass\": \"C_IOGATE\", "
                + "\"children\": [{\"name\": \"server_port\", \"gclass\": \"C_TCP_S\", "
                + "   \"kw\": {\"url\": \"tcp://127.0.0.1:" + port + "\"}}],"
                + "\"[^^children^^]\": {\"__range__\": [1, 1], \"__vars__\": {}, "
                + "  \"__content__\": {\"name\": \"in-(^^__range__^^)\", \"gclass\": \"C_CHANNEL\", \"children\": ["
                + "     {\"name\": \"in-(^^__range__^^)\", \"gclass\": \"C_PROT_TCP4H\", \"kw\": {\"iamServer\": true}}]}}"
                + "}]}";
        List<GClassSpec<?>> specs = new ArrayList<>(List.of(transport()));
        specs.add(AckPeer.SPEC);
        specs.add(Recorder.SPEC);
        peer = YunoRuntime.builder().name("peer").dataDir(tmp.resolve("peer")).gclasses(specs).config(cfg).build();
        open.add(peer);
        acker = peer.call(() -> {
            GObj g = peer.yuno().root().createVolatileChild("acker", AckPeer.GCLASS, null);
            peer.yuno().service("__input_side__").subscribe(null, g);
            return (AckPeer) g.behavior();
        });
        acker.policy = m -> held.contains(m.path("id").asText()) ? null : 0;
        peerLinks = peer.call(() -> {
            GObj g = peer.yuno().root().createVolatileChild("links", Recorder.GCLASS, null);
            peer.yuno().service("__input_side__").subscribe(null, g);
            return (Recorder) g.behavior();
        });
        peer.start();
    }

    /** The peer acks, late, the messages it held back: on its one channel, as it would have at once. */
    void ackHeld() {
        for (ObjectNode m : acker.received()) {
            if (!held.remove(m.path("id").asText())) continue;
            ObjectNode ack = TrQueue.answer(m, 0);
            ObjectNode kw = Kw.withGbuffer(Unpooled.copiedBuffer(Kw.toJson(ack), StandardCharsets.UTF_8));
            kw.putObject(Kw.TEMP).put(Kw.TEMP_CHANNEL, "in-1");
            peer.run(() -> peer.yuno().service("__input_side__").send(Ev.EV_SEND_MESSAGE, kw, null));
        }
    }

    /** The gateway: C_QIOGATE > C_IOGATE > C_CHANNEL > C_PROT_TCP4H > C_TCP towards the peer, over {@code queues}. */
    void startGateway(int port, TrQueueFactoryImpl queues) {
        String cfg = "{\"services\": [{\"name\": \"q\", \"gclass\": \"C_QIOGATE\", \"kw\": {\"topic_name\": \"t\"}, "
                + "\"children\": [{\"name\": \"out\", \"gclass\": \"C_IOGATE\", \"children\": ["
                + "{\"name\": \"out\", \"gclass\": \"C_CHANNEL\", \"children\": ["
                + "{\"name\": \"out\", \"gclass\": \"C_PROT_TCP4H\", \"children\": ["
                + "{\"name\": \"out\", \"gclass\": \"C_TCP\", \"kw\": {\"url\": \"tcp://127.0.0.1:" + port + "\"}}]}]}]}]}]}";
        List<GClassSpec<?>> specs = new ArrayList<>(List.of(transport()));
        specs.add(new QIoGateGClass(queues).spec());
        gw = YunoRuntime.builder().name("gw").dataDir(tmp.resolve("gw")).clock(clock).upgradeGraceMs(60_000)
                .gclasses(specs).config(cfg).build().start();
        open.add(gw);
        eventually(() -> view().path("link_open").asBoolean(), "the link open");
    }

    TrQueueFactoryImpl factory() {
        TrQueueFactoryImpl f = new TrQueueFactoryImpl();
        open.add(f);
        return f;
    }

    JsonNode view() {
        return gw.command("command-yuno service=q command=view-queue").path("data");
    }

    void send(int from, int to) {
        for (int i = from; i <= to; i++) {
            String id = String.valueOf(i);
            assertEquals(0, gw.call(() -> gw.service("q").send(Ev.EV_SEND_MESSAGE, Kw.create().put("id", id), null)));
        }
    }

    /** Messages 1..10 sent, 6..10 still in flight (the peer holds their acks back). */
    void flowUntilSomeAreInFlight() {
        for (int i = 6; i <= 10; i++) held.add(String.valueOf(i));
        send(1, 10);
        assertTrue(acker.awaitReceived(10, WAIT));
        eventually(() -> view().path("msgs_in_queue").asInt() == 5, "1..5 acked");
        assertEquals(5, view().path("pending_acks").asInt());
    }

    /** The rest of the flow after the upgrade: new messages, the late acks; every message arrived once. */
    void finishFlowAndCheckNothingWasSentTwice() {
        send(11, 15);
        assertTrue(acker.awaitReceived(15, WAIT));
        ackHeld();
        eventually(() -> view().path("msgs_in_queue").asInt() == 0, "every message acked");
        assertEquals(0, view().path("pending_acks").asInt());
        List<String> expected = new ArrayList<>();
        for (int i = 1; i <= 15; i++) expected.add(String.valueOf(i));
        clock.advance(120_000);   // ack timeouts would have sent the unacked again: there are none
        assertEquals(expected, acker.ids(), "each message once, in order: nothing in flight was sent again");
        assertEquals(1, peerLinks.count(Ev.EV_ON_OPEN), "one connection");
        assertEquals(0, peerLinks.count(Ev.EV_ON_CLOSE), "never closed");
        assertEquals(0, stats().path("retries").asInt());
    }

    JsonNode stats() {
        return gw.command("stats-yuno service=q").path("data");
    }

    @Test
    void shouldKeepTheLinkAndSendNothingAgainWhenTheGateIsUpgradedMidFlow() {
        int port = Ports.free();
        startPeer(port);
        TrQueueFactoryImpl queues = factory();
        startGateway(port, queues);
        flowUntilSomeAreInFlight();

        Revision.handOver(gw, new QIoGateGClass(queues).spec(), 1);

        finishFlowAndCheckNothingWasSentTwice();
    }

    @Test
    void shouldKeepTheLinkAndSendNothingAgainThroughABundleUpdateOfTheGate() {
        int port = Ports.free();
        startPeer(port);
        TrQueueFactoryImpl queues = factory();
        startGateway(port, queues);
        flowUntilSomeAreInFlight();

        gw.gclassesGone(List.of("C_QIOGATE"));
        ackHeld();                 // acks arriving while the gate waits for its new revision: held in core
        eventually(() -> stats().path("rxMsgs").asInt() == 10, "the late acks reached the gate");
        assertEquals(5, stats().path("msgs_in_queue").asInt(), "held, not applied yet");
        Revision.handOver(gw, new QIoGateGClass(queues).spec(), 1);

        finishFlowAndCheckNothingWasSentTwice();
    }

    @Test
    void shouldOpenTheTopicAgainThroughAnUpdatedTrqueueAndSendNothingAgain() {
        int port = Ports.free();
        startPeer(port);
        TrQueueFactoryImpl before = factory();
        startGateway(port, before);
        flowUntilSomeAreInFlight();

        // Bundle.update() of trqueue: C_QIOGATE's component goes with the factory (the gates are suspended), the
        // old factory closes its queues and releases their locks, the new trqueue comes and C_QIOGATE with it.
        gw.gclassesGone(List.of("C_QIOGATE"));
        before.close();
        TrQueueFactoryImpl updated = factory();
        Revision.handOver(gw, new QIoGateGClass(updated).spec(), 1);
        assertEquals(5, view().path("pending_acks").asInt(), "the window kept over the topic opened again");

        finishFlowAndCheckNothingWasSentTwice();
    }

    @Test
    void shouldMoveToAHigherTrqueueRunningBesideAndSendNothingAgain() {
        int port = Ports.free();
        startPeer(port);
        TrQueueFactoryImpl lower = factory();
        startGateway(port, lower);
        flowUntilSomeAreInFlight();

        // A higher trqueue installed beside: the greedy reference makes C_QIOGATE's component again with its
        // factory, while the lower trqueue stays active with the topic open until the gate lets it go.
        gw.gclassesGone(List.of("C_QIOGATE"));
        TrQueueFactoryImpl higher = factory();
        // No rebuild: the old handle, and with it the topic's lock, was let go before the higher factory opened it.
        Revision.handOver(gw, new QIoGateGClass(higher).spec(), 1);

        finishFlowAndCheckNothingWasSentTwice();
    }

    @Test
    void shouldTakeTheQueueOverFromATrqueueParkedByItsBundleUpdateAndSendNothingAgain() {
        int port = Ports.free();
        startPeer(port);
        TrQueueFactoryImpl before = factory();
        startGateway(port, before);
        flowUntilSomeAreInFlight();

        // Bundle.update() of trqueue as TrQueueService does it: the gates are suspended with C_QIOGATE's component,
        // the old factory parks its queues (forced, files kept open), the new trqueue takes them over.
        gw.gclassesGone(List.of("C_QIOGATE"));
        before.park();
        TrQueueFactoryImpl updated = factory();
        Revision.handOver(gw, new QIoGateGClass(updated).spec(), 1);
        assertEquals(5, view().path("pending_acks").asInt(), "the window kept over the queue taken over");

        finishFlowAndCheckNothingWasSentTwice();
    }

    @Test
    void shouldOpenTheTopicAgainWhenTheNewTrqueueCannotTakeTheQueueOverAndLoseNothing() {
        int port = Ports.free();
        startPeer(port);
        TrQueueFactoryImpl lower = factory();
        startGateway(port, lower);
        flowUntilSomeAreInFlight();

        // A trqueue whose takeover fails: the gate closes the old handle and opens the topic again (the fallback).
        TrQueueFactoryImpl failing = new TrQueueFactoryImpl() {
            @Override
            public TrQueue takeOver(TrQueue from, Path trangerPath, String database, String topicName, String tkey,
                                    int systemFlag, long backupQueueSize, io.gatehouse.api.queue.TrQueueOptions options) {
                throw new IllegalStateException("cannot take it over");
            }
        };
        open.add(failing);
        gw.gclassesGone(List.of("C_QIOGATE"));
        Revision.handOver(gw, new QIoGateGClass(failing).spec(), 1);
        assertEquals(5, view().path("pending_acks").asInt(), "the window kept over the topic opened again");
        assertEquals(5, view().path("msgs_in_queue").asInt(), "nothing lost: the pending ones loaded again");

        finishFlowAndCheckNothingWasSentTwice();
    }
}
