// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.iogate;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;
import io.gatehouse.channel.Channel;
import io.gatehouse.core.YunoRuntime;
import io.gatehouse.tcp.TcpGClass;
import io.gatehouse.tcp.TcpSGClass;
import io.gatehouse.tcp4h.ProtTcp4hGClass;
import io.gatehouse.testkit.LogCapture;
import io.gatehouse.testkit.ManualClock;
import io.gatehouse.testkit.Recorder;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Real TCP4H over loopback: a server yuno and a client yuno, each an IOGATE over channels. The client runs on a
 * {@link ManualClock}, so its reconnects happen when a test advances it; what the tests wait for is socket I/O.
 */
@Timeout(60)
class IoGateLoopbackTest {
    private static final long WAIT = 10_000;
    /** The client C_TCPs' timeout_between_connections, ms. */
    private static final long RECONNECT_MS = 300;

    private final ManualClock clientClock = new ManualClock();

    private final List<String> errors = Collections.synchronizedList(new ArrayList<>());
    /** The traces of C_PROT_TCP4H's writes ("frame sent", "frames sent") of a protocol whose trace is on. */
    private final List<String> writes = Collections.synchronizedList(new ArrayList<>());
    private final Consumer<LogCapture.Rec> sink = r -> {
        if (r.level == LogCapture.Level.ERROR || r.level == LogCapture.Level.WARN) {
            errors.add(r.gobj + ": " + r.msg + " " + r.fields);
        }
        if (r.msg.startsWith("frame")) writes.add(r.msg + " " + r.fields);
    };
    private LogCapture capture;
    private YunoRuntime server;
    private YunoRuntime client;
    private Recorder serverApp;
    private Recorder clientApp;
    private GObj serverGate;
    private GObj clientGate;

    static GClassSpec<?>[] specs() {
        return new GClassSpec<?>[] {IoGate.SPEC, Channel.SPEC, new TcpGClass().spec(), new TcpSGClass().spec(),
                new ProtTcp4hGClass().spec()};
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static String serverConfig(int port, int channels) {
        return "{\"services\": [{\"name\": \"__input_side__\", \"gclass\": \"C_IOGATE\", "
                + "\"children\": [{\"name\": \"server_port\", \"gclass\": \"C_TCP_S\", "
                + "   \"kw\": {\"url\": \"tcp://127.0.0.1:" + port + "\"}}],"
                + "\"[^^children^^]\": {\"__range__\": [1, " + channels + "], \"__vars__\": {}, "
                + "  \"__content__\": {\"name\": \"in-(^^__range__^^)\", \"gclass\": \"C_CHANNEL\", \"children\": ["
                + "     {\"name\": \"in-(^^__range__^^)\", \"gclass\": \"C_PROT_TCP4H\", \"kw\": {\"iamServer\": true}}]}}"
                + "}]}";
    }

    static String clientConfig(int port, int channels, int sendType) {
        StringBuilder ch = new StringBuilder();
        for (int i = 1; i <= channels; i++) {
            if (i > 1) ch.append(", ");
            ch.append("{\"name\": \"out-").append(i).append("\", \"gclass\": \"C_CHANNEL\", \"children\": [")
                    .append("{\"name\": \"out-").append(i).append("\", \"gclass\": \"C_PROT_TCP4H\", \"children\": [")
                    .append("{\"name\": \"out-").append(i).append("\", \"gclass\": \"C_TCP\", \"kw\": {")
                    .append("\"url\": \"tcp://127.0.0.1:").append(port).append("\", ")
                    .append("\"timeout_between_connections\": ").append(RECONNECT_MS).append("}}]}]}");
        }
        return "{\"services\": [{\"name\": \"__output_side__\", \"gclass\": \"C_IOGATE\", "
                + "\"kw\": {\"send_type\": " + sendType + "}, \"children\": [" + ch + "]}]}";
    }

    @BeforeEach
    void setUp() {
        capture = new LogCapture(sink);
    }

    private void startBoth(int channels, int sendType) {
        startBoth(channels, sendType, false);
    }

    /** {@link #startBoth(int, int)}, the server's app taking message batches when {@code messageBatches}. */
    private void startBoth(int channels, int sendType, boolean messageBatches) {
        int port = freePort();
        server = YunoRuntime.builder().name("srv").gclass(specs()).config(serverConfig(port, channels)).build();
        serverGate = server.service("__input_side__");
        serverApp = messageBatches ? Recorder.createTakingMessageBatches(server, "server-app")
                : Recorder.create(server, "server-app");
        server.run(() -> serverGate.subscribe(null, serverApp.gobj()));
        server.start();
        client = YunoRuntime.builder().name("cli").clock(clientClock).gclass(specs())
                .config(clientConfig(port, channels, sendType)).build();
        clientGate = client.service("__output_side__");
        clientApp = Recorder.create(client, "client-app");
        client.run(() -> clientGate.subscribe(null, clientApp.gobj()));
        client.start();
        assertTrue(clientApp.awaitCount(Ev.EV_ON_OPEN, channels, WAIT), "client channels open");
        assertTrue(serverApp.awaitCount(Ev.EV_ON_OPEN, channels, WAIT), "server channels open");
    }

    @AfterEach
    void tearDown() {
        if (client != null) client.close();
        if (server != null) server.close();
        if (capture != null) capture.close();
    }

    private static ObjectNode msg(String text) {
        return Kw.withGbuffer(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8));
    }

    private static void send(YunoRuntime rt, GObj gate, ObjectNode kw) {
        rt.run(() -> gate.send(Ev.EV_SEND_MESSAGE, kw, null));
    }

    /**
     * Moves the client's clock one reconnect delay at a time until it has seen {@code opens} EV_ON_OPENs: a
     * reconnect that comes before the server freed its channel is refused, and C_TCP tries again a delay later.
     */
    private void reconnect(int opens) {
        for (int i = 0; i < 20; i++) {
            clientClock.advance(RECONNECT_MS);
            if (clientApp.awaitCount(Ev.EV_ON_OPEN, opens, 1000)) return;
        }
        throw new AssertionError("the client did not reconnect: " + clientApp.events());
    }

    @Test
    void shouldExchangeMessagesBothWaysBetweenAClientAndAServerYuno() {
        startBoth(1, 0);
        send(client, clientGate, msg("ping-1"));
        Recorder.Event got = serverApp.await(Ev.EV_ON_MESSAGE, WAIT);
        assertNotNull(got);
        assertEquals("ping-1", got.payloadText());
        assertEquals("in-1", got.kw.get(Kw.TEMP).get("channel").asText());

        // the reply goes out on the same connection through __temp__
        ObjectNode reply = msg("pong-1");
        reply.set(Kw.TEMP, got.kw.get(Kw.TEMP).deepCopy());
        send(server, serverGate, reply);
        Recorder.Event back = clientApp.await(Ev.EV_ON_MESSAGE, WAIT);
        assertNotNull(back);
        assertEquals("pong-1", back.payloadText());
        assertEquals("out-1", back.kw.get(Kw.TEMP).get("channel").asText());

        // a kw without gbuffer travels as its JSON
        ObjectNode json = Kw.create();
        json.put("id", 7);
        send(client, clientGate, json);
        Recorder.Event j = serverApp.await(Ev.EV_ON_MESSAGE, WAIT);
        assertTrue(j.payloadText().contains("\"id\":7"), j.payloadText());

        ObjectNode cs = client.command("stats-yuno service=__output_side__");
        assertEquals(2, cs.get("data").get("txMsgs").asLong());
        assertEquals(1, cs.get("data").get("rxMsgs").asLong());
        ObjectNode ss = server.command("stats-yuno service=__input_side__");
        assertEquals(1, ss.get("data").get("txMsgs").asLong());
        assertEquals(2, ss.get("data").get("rxMsgs").asLong());
        assertEquals(2, ss.get("data").get("channels").get("in-1").get("rxMsgs").asLong());
        assertTrue(errors.isEmpty(), errors.toString());
    }

    /** A send batch of {@code texts}, with a byte between the messages that is not one of them. */
    private static ObjectNode batch(String... texts) {
        io.netty.buffer.ByteBuf all = Unpooled.buffer();
        int[] ranges = new int[texts.length * 2];
        for (int i = 0; i < texts.length; i++) {
            if (i > 0) all.writeByte('#');
            ranges[2 * i] = all.writerIndex();
            all.writeCharSequence(texts[i], StandardCharsets.UTF_8);
            ranges[2 * i + 1] = all.writerIndex();
        }
        ObjectNode kw = Kw.withGbuffer(all);
        Kw.putRef(kw, Kw.BATCH, ranges);
        return kw;
    }

    private static List<String> texts(Recorder app) {
        List<String> out = new ArrayList<>();
        for (Recorder.Event e : app.events(Ev.EV_ON_MESSAGE)) out.add(e.payloadText());
        return out;
    }

    @Test
    void shouldSendASendBatchWholeDownItsChannelAndCountEachMessageAtEveryLevel() {
        startBoth(1, 0);
        send(client, clientGate, msg("alone"));
        send(client, clientGate, batch("b-0", "b-1", "{\"b\":2}"));
        send(client, clientGate, batch("c-0"));
        assertTrue(serverApp.awaitCount(Ev.EV_ON_MESSAGE, 5, WAIT));
        assertEquals(List.of("alone", "b-0", "b-1", "{\"b\":2}", "c-0"), texts(serverApp));
        GObj channel = client.call(() -> clientGate.child("out-1"));
        GObj tcp = client.call(() -> channel.bottom().bottom());
        assertEquals(5L, client.call(() -> clientGate.readAttr("txMsgs").asLong()));
        assertEquals(5L, client.call(() -> channel.readAttr("txMsgs").asLong()));
        assertEquals(5L, client.call(() -> tcp.readAttr("txMsgs").asLong()), "frames, not buffers");
        assertEquals(5 * 4 + 5 + 3 + 3 + 7 + 3, client.call(() -> tcp.readAttr("txBytes").asLong()));
        assertEquals(List.of(), errors);
    }

    @Test
    void shouldHandTheFramesOfOneReadUpAsOneEventToAnAppThatTakesMessageBatches() {
        startBoth(1, 0, true);
        String[] texts = new String[300];
        for (int i = 0; i < texts.length; i++) texts[i] = "{\"n\":" + i + "}";
        send(client, clientGate, batch(texts));   // one write of 300 frames: the server reads several at a time
        List<String> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + WAIT;
        int batches = 0;
        while (got.size() < texts.length && System.currentTimeMillis() < deadline) {
            Recorder.Event e = serverApp.await(Ev.EV_ON_MESSAGE, 1000);
            if (e == null) continue;
            got.addAll(e.messageTexts());
            if (e.messageRanges != null) {
                batches++;
                assertTrue(e.messageRanges.length >= 4, "a batch holds two messages or more");
                assertTrue(e.kw.has(Kw.TEMP), "the gate names the channel, for the answers");
            }
        }
        assertEquals(List.of(texts), got, "every message, in order");
        assertTrue(batches > 0, "the frames of a read go up together");
        GObj channel = server.call(() -> serverGate.child("in-1"));
        assertEquals(300L, server.call(() -> serverGate.readAttr("rxMsgs").asLong()), "counted by message");
        assertEquals(300L, server.call(() -> channel.readAttr("rxMsgs").asLong()));
        assertEquals(List.of(), errors);
    }

    @Test
    void shouldSendASendBatchWholeToTheChannelItsTempHolds() {
        startBoth(2, 0);
        send(client, clientGate, msg("hello"));
        Recorder.Event got = serverApp.await(Ev.EV_ON_MESSAGE, WAIT);
        assertNotNull(got);
        ObjectNode replies = batch("r-0", "r-1", "r-2");
        String name = got.kw.get(Kw.TEMP).get(Kw.TEMP_CHANNEL).asText();
        GObj channel = server.call(() -> serverGate.child(name));
        ObjectNode temp = replies.putObject(Kw.TEMP).put(Kw.TEMP_CHANNEL, name);
        Kw.putRef(temp, Kw.TEMP_CHANNEL_GOBJ, channel);   // the channel's name and its gobj, as the relay's acks
        server.run(() -> channel.bottom().setTrace("traffic", true));
        send(server, serverGate, replies);
        assertTrue(clientApp.awaitCount(Ev.EV_ON_MESSAGE, 3, WAIT));
        assertEquals(List.of("r-0", "r-1", "r-2"), texts(clientApp));
        assertEquals(1, writes.size(), "one write for the batch: " + writes);
        assertTrue(writes.get(0).startsWith("frames sent"), writes.toString());
        assertEquals(3L, server.call(() -> channel.readAttr("txMsgs").asLong()));
        assertEquals(3L, server.call(() -> channel.bottom().bottom().readAttr("txMsgs").asLong()));
        assertEquals(List.of(), errors);
    }

    @Test
    void shouldSendTheMessagesOfASendBatchOneByOneInRoundRobinAndToAll() {
        startBoth(3, 2);
        send(client, clientGate, batch("rr-0", "rr-1", "rr-2", "rr-3", "rr-4", "rr-5"));
        assertTrue(serverApp.awaitCount(Ev.EV_ON_MESSAGE, 6, WAIT));
        java.util.Map<String, Integer> perChannel = new java.util.TreeMap<>();
        for (Recorder.Event e : serverApp.events(Ev.EV_ON_MESSAGE)) {
            perChannel.merge(e.kw.get(Kw.TEMP).get("channel").asText(), 1, Integer::sum);
        }
        assertEquals(java.util.Map.of("in-1", 2, "in-2", 2, "in-3", 2), perChannel, "round robin per message");
        assertEquals(6L, client.call(() -> clientGate.readAttr("txMsgs").asLong()));

        client.run(() -> clientGate.writeAttr("send_type", Kw.MAPPER.getNodeFactory().numberNode(1)));
        send(client, clientGate, batch("all-0", "all-1"));
        assertTrue(serverApp.awaitCount(Ev.EV_ON_MESSAGE, 12, WAIT), "both messages on each of three peers");
        List<String> got = texts(serverApp).subList(6, 12);
        assertEquals(3, Collections.frequency(got, "all-0"));
        assertEquals(3, Collections.frequency(got, "all-1"));
        assertEquals(List.of(), errors);
    }

    @Test
    void shouldReconnectAfterADrop() {
        startBoth(1, 0);
        client.run(() -> clientGate.send(Ev.EV_DROP, null, null));
        assertNotNull(clientApp.await(Ev.EV_ON_CLOSE, WAIT));
        assertNotNull(serverApp.await(Ev.EV_ON_CLOSE, WAIT));
        clientClock.advance(RECONNECT_MS - 1);
        assertEquals(1, clientApp.count(Ev.EV_ON_OPEN), "no reconnect before timeout_between_connections");
        reconnect(2);
        assertTrue(serverApp.awaitCount(Ev.EV_ON_OPEN, 2, WAIT), "server channel free again");
        send(client, clientGate, msg("after-reconnect"));
        Recorder.Event got = serverApp.await(Ev.EV_ON_MESSAGE, WAIT);
        assertNotNull(got);
        assertEquals("after-reconnect", got.payloadText());

        // the server side drops this time
        server.run(() -> serverGate.send(Ev.EV_DROP, null, null));
        assertTrue(clientApp.awaitCount(Ev.EV_ON_CLOSE, 2, WAIT));
        reconnect(3);
    }

    @Test
    void shouldBroadcastTheFullPayloadToThreePeers() {
        startBoth(3, 1);
        String payload = "{\"id\": 1, \"tm\": 1, \"content\": \"broadcast to every open channel\"}";
        send(client, clientGate, msg(payload));
        assertTrue(serverApp.awaitCount(Ev.EV_ON_MESSAGE, 3, WAIT), "three peers received");
        Set<String> channels = new HashSet<>();
        for (Recorder.Event e : serverApp.events(Ev.EV_ON_MESSAGE)) {
            assertEquals(payload, e.payloadText(), "full payload on " + e.kw.get(Kw.TEMP));
            channels.add(e.kw.get(Kw.TEMP).get("channel").asText());
        }
        assertEquals(Set.of("in-1", "in-2", "in-3"), channels);
        // nobody saw an empty frame: no channel closed, no error
        assertEquals(0, serverApp.count(Ev.EV_ON_CLOSE));
        assertEquals(3, client.command("stats-yuno service=__output_side__").get("data").get("txMsgs").asLong());
        assertTrue(errors.isEmpty(), errors.toString());

        // and the other way: the server broadcasts to its three clients
        ObjectNode kw = msg("from-server");
        kw.put(Kw.SEND_TYPE, 1);
        send(server, serverGate, kw);
        assertTrue(clientApp.awaitCount(Ev.EV_ON_MESSAGE, 3, WAIT));
        for (Recorder.Event e : clientApp.events(Ev.EV_ON_MESSAGE)) assertEquals("from-server", e.payloadText());
    }

    @Test
    void shouldRoundRobinOverThreePeers() {
        startBoth(3, 2);
        for (int i = 0; i < 6; i++) send(client, clientGate, msg("rr-" + i));
        assertTrue(serverApp.awaitCount(Ev.EV_ON_MESSAGE, 6, WAIT));
        java.util.Map<String, List<String>> byChannel = new java.util.TreeMap<>();
        java.util.Map<String, String> firstChannelOf = new java.util.HashMap<>();
        for (Recorder.Event e : serverApp.events(Ev.EV_ON_MESSAGE)) {
            String ch = e.kw.get(Kw.TEMP).get("channel").asText();
            byChannel.computeIfAbsent(ch, k -> new ArrayList<>()).add(e.payloadText());
            firstChannelOf.put(e.payloadText(), ch);
        }
        assertEquals(3, byChannel.size(), byChannel.toString());
        for (List<String> l : byChannel.values()) assertEquals(2, l.size(), byChannel.toString());
        // message i and i+3 went through the same client channel, so they arrive on the same server channel
        for (int i = 0; i < 3; i++) {
            assertEquals(firstChannelOf.get("rr-" + i), firstChannelOf.get("rr-" + (i + 3)));
        }
        ObjectNode env = client.command("stats-yuno service=__output_side__");
        for (String c : List.of("out-1", "out-2", "out-3")) {
            assertEquals(2, env.get("data").get("channels").get(c).get("txMsgs").asLong(), c);
        }
    }

    @Test
    void shouldAnswerTheStatsEnvelopeAndViewChannelsOverCommands() {
        startBoth(2, 0);
        send(client, clientGate, msg("counted"));
        assertNotNull(serverApp.await(Ev.EV_ON_MESSAGE, WAIT));
        ObjectNode env = server.command("stats-yuno service=__input_side__");
        assertEquals(0, env.get("result").asInt());
        assertEquals("", env.get("comment").asText());
        assertTrue(env.get("schema").isNull());
        JsonNode data = env.get("data");
        for (String k : List.of("txMsgs", "rxMsgs", "txMsgsec", "rxMsgsec", "maxtxMsgsec", "maxrxMsgsec")) {
            assertTrue(data.has(k), k);
        }
        assertEquals(1, data.get("rxMsgs").asLong());
        assertEquals(2, data.get("channels").size());

        ObjectNode view = server.command("view-channels service=__input_side__ opened=1");
        assertEquals(0, view.get("result").asInt(), view.toString());
        assertEquals(4, view.get("data").size(), view.toString());
        assertTrue(view.get("data").get(2).asText().contains("127.0.0.1:"), view.toString());

        // a channel read by someone other than its gate answers the transport's stats
        ObjectNode chStats = server.call(() -> serverGate.child("in-1").stats("", null, null));
        assertEquals(0, chStats.get("result").asInt(), chStats.toString());
        assertTrue(chStats.get("data").has("rxBytes"), chStats.toString());
    }
}
