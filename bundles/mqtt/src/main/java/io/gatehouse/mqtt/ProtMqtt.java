// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.AttrType;
import io.gatehouse.api.Cancellable;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;
import io.gatehouse.api.queue.TrQueueFactory;
import io.gatehouse.support.Gbuffers;
import io.gatehouse.support.Glog;
import io.gatehouse.support.InputThreshold;
import io.gatehouse.support.ProtocolBottom;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.mqtt.MqttConnAckMessage;
import io.netty.handler.codec.mqtt.MqttConnAckVariableHeader;
import io.netty.handler.codec.mqtt.MqttConnectMessage;
import io.netty.handler.codec.mqtt.MqttConnectPayload;
import io.netty.handler.codec.mqtt.MqttConnectReturnCode;
import io.netty.handler.codec.mqtt.MqttConnectVariableHeader;
import io.netty.handler.codec.mqtt.MqttFixedHeader;
import io.netty.handler.codec.mqtt.MqttIdentifierRejectedException;
import io.netty.handler.codec.mqtt.MqttMessage;
import io.netty.handler.codec.mqtt.MqttMessageIdAndPropertiesVariableHeader;
import io.netty.handler.codec.mqtt.MqttMessageIdVariableHeader;
import io.netty.handler.codec.mqtt.MqttMessageType;
import io.netty.handler.codec.mqtt.MqttProperties;
import io.netty.handler.codec.mqtt.MqttPubReplyMessageVariableHeader;
import io.netty.handler.codec.mqtt.MqttPublishMessage;
import io.netty.handler.codec.mqtt.MqttQoS;
import io.netty.handler.codec.mqtt.MqttReasonCodeAndPropertiesVariableHeader;
import io.netty.handler.codec.mqtt.MqttSubAckMessage;
import io.netty.handler.codec.mqtt.MqttSubAckPayload;
import io.netty.handler.codec.mqtt.MqttSubscribeMessage;
import io.netty.handler.codec.mqtt.MqttUnacceptableProtocolVersionException;
import io.netty.handler.codec.mqtt.MqttUnsubAckMessage;
import io.netty.handler.codec.mqtt.MqttUnsubAckPayload;
import io.netty.handler.codec.mqtt.MqttUnsubscribeMessage;
import io.netty.handler.codec.mqtt.MqttVersion;
import io.netty.util.ReferenceCountUtil;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Port of the server side of Yuneta's C_PROT_MQTT2 (c_prot_mqtt2.c, registered under that name and as
 * C_PROT_MQTT), without its client side, its own queues and its broker: the server side of MQTT 3.1.1 and 5.0,
 * under a C_CHANNEL over a C_TCP (C_TCP_S {@code mqtt://}, {@code mqtts://}), on Netty's codec-mqtt. It is an
 * ingest: devices publish, every PUBLISH goes up as a message (EV_ON_MESSAGE), and a QoS 1/2 PUBLISH is answered
 * (PUBACK / PUBREC) only once the queue above has it durably.
 *
 * <pre>
 *   ST_DISCONNECTED --EV_CONNECTED--&gt; ST_WAIT_CONNECT --CONNECT accepted, CONNACK--&gt; ST_CONNECTED
 *         ^                                  |  timeout_handshake, a first packet that is          |
 *         |                                  |  not CONNECT, a refused CONNECT                      |
 *         +---- EV_DISCONNECTED, or our own close (EV_DROP to the bottom) -------------------------+
 * </pre>
 *
 * <b>Acks map to durability through the queue protocol, the relay's one path.</b> A QoS 1/2 PUBLISH goes up with
 * a {@code __md_trq__} of its own ({@code __msg_rowid__} = a sequence of this gobj, {@code mqtt_conn} = the
 * connection, {@code mqtt_packet_id}, {@code mqtt_qos}); C_RELAY answers it once the output confirmed it durable,
 * with that dict and {@code result} 0, sent down on this connection (EV_SEND_MESSAGE), or with a negative result
 * when the output refused the message. An ack turns into PUBACK (QoS 1) or PUBREC (QoS 2); a refusal into a
 * PUBACK/PUBREC with reason 0x97 on 5.0, and on 3.1.1 (no failure ack there) into a close, so the client sends
 * again. QoS 0 goes up without {@code __md_trq__}.
 *
 * <b>QoS 2 packet ids</b> live in the yuno's {@link Sessions} from the PUBLISH to the PUBREL (persisted for
 * persistent sessions): a PUBLISH resent with an id it holds is not queued again. An id taken by a connection
 * whose ack can no longer come (the connection closed before it, or the gateway restarted) is an <i>orphan</i>:
 * it was handed to the queue (the id is recorded only after the queue took the message), so a resend is
 * answered PUBREC without queuing it again.
 *
 * <b>Flow control.</b> QoS 1/2 messages in flight (up and not yet acked) are bounded by {@code receive_maximum},
 * announced on 5.0; at the bound the socket is not read until acks come back (TCP backpressure), on 3.1.1 too.
 * The seeds/001 input thresholds ({@code input_threshold_msgs/_bytes}, credited with EV_RESUME_INPUT) stop
 * reading the same way.
 *
 * <b>Errors</b> are said once per connection: a malformed or refused packet is logged and the connection closed
 * (5.0: a DISCONNECT with the reason first); the rest of what the peer sent is discarded.
 *
 * <b>Live upgrade</b> (state version 1): the connection goes to the next revision as it is, mid-packet included:
 * the codec's channel, the framer's partial packet, the reads held back, the CONNECT's state, the messages in flight
 * and those of closed connections still awaited, the timers' deadlines, and the yuno's session store (handed over
 * once, whole, by the first gobj that exports).
 */
public final class ProtMqtt implements GObjBehavior {
    public static final String GCLASS = "C_PROT_MQTT";
    /** Yuneta's current name for the same gclass. */
    public static final String GCLASS2 = "C_PROT_MQTT2";

    // --- Attributes ---

    static final Attr<Boolean> IAM_SERVER = Attr.bool("iamServer", true, AttrFlag.RD,
            "Server side (the only side this gclass has: false is a config error)");
    static final Attr<Long> MAX_PACKET_SIZE = Attr.integer("max_packet_size", 524_288, AttrFlag.WR,
            "Largest packet accepted, bytes, fixed header included (announced as Maximum Packet Size on 5.0);"
            + " 0 = the protocol's 256 MiB. The default keeps a base64-wrapped payload under the queue's 1 MiB record");
    static final Attr<Long> MAX_CLIENT_ID_LENGTH = Attr.integer("max_client_id_length", 256, AttrFlag.RD,
            "Longest client identifier accepted");
    static final Attr<Boolean> ALLOW_ZERO_LENGTH_CLIENTID = Attr.bool("allow_zero_length_clientid", true, AttrFlag.WR,
            "An empty client id gets one assigned (clean sessions only on 3.1.1, as MQTT says)");
    static final Attr<JsonNode> USERS = Attr.json("users", AttrType.JSON, null, AttrFlag.WR,
            "Who may connect: {\"name\": \"password\" or \"sha256:<hex>\"}; null = anyone (no username needed)");
    static final Attr<JsonNode> TOPICS = Attr.json("topics", AttrType.JSON, null, AttrFlag.WR,
            "Topic filters a client may publish to (+ and # wildcards); null = any topic");
    static final Attr<Long> MAX_QOS = Attr.integer("max_qos", 2, AttrFlag.WR,
            "Highest QoS accepted (announced as Maximum QoS on 5.0); a PUBLISH above it is a protocol error");
    static final Attr<Long> RECEIVE_MAXIMUM = Attr.integer("receive_maximum", 1000, AttrFlag.WR,
            "QoS 1/2 PUBLISHes a connection may have unacked: announced on 5.0; at the bound reading stops");
    static final Attr<Long> MAX_KEEPALIVE = Attr.integer("max_keepalive", 60, AttrFlag.WR,
            "5.0: a client asking for a longer (or no) keep-alive is told this one (Server Keep Alive); 0 = no cap");
    static final Attr<Long> MAX_TOPIC_ALIAS = Attr.integer("max_topic_alias", 10, AttrFlag.WR,
            "5.0: topic aliases a client may define (announced as Topic Alias Maximum); 0 = none");
    static final Attr<Long> MAX_SESSION_EXPIRY_INTERVAL = Attr.integer("max_session_expiry_interval", 604_800,
            AttrFlag.WR, "Seconds a persistent session (3.1.1 clean session 0, 5.0 expiry > 0) outlives its"
            + " connection at most; 0 = sessions end with their connection");
    static final Attr<Long> MAX_SESSIONS = Attr.integer("max_sessions", 10_000, AttrFlag.WR,
            "Sessions kept by the yuno's session store; beyond, the one disconnected longest ago goes");
    static final Attr<String> TOPIC_KEY = Attr.string("topic_key", "mqtt_topic", AttrFlag.RD,
            "Key of the message that holds the PUBLISH topic");
    static final Attr<String> PAYLOAD_KEY = Attr.string("payload_key", "mqtt_payload_base64", AttrFlag.RD,
            "Key that holds the base64 payload when it is not a JSON object");
    static final Attr<Long> TIMEOUT_HANDSHAKE = Attr.integer("timeout_handshake", 5000, AttrFlag.PERSIST,
            "A connection that sends no CONNECT within this time is closed, ms");
    static final Attr<Long> TIMEOUT_PAYLOAD = Attr.integer("timeout_payload", 5000, AttrFlag.PERSIST,
            "A packet left incomplete this long after its last bytes is a close, ms");
    static final Attr<Long> TIMEOUT_CLOSE = Attr.integer("timeout_close", 3000, AttrFlag.PERSIST,
            "Timeout waiting the transport to disconnect after a drop, ms");
    static final Attr<Long> TIMEOUT_ACKS_AFTER_CLOSE = Attr.integer("timeout_acks_after_close", 5000, AttrFlag.PERSIST,
            "After a connection closed with QoS 1/2 messages in flight, how long their acks are still awaited (a"
            + " QoS 2 resend on a new connection gets its PUBREC from them); the channel closes then, ms");
    static final Attr<Long> INPUT_THRESHOLD_MSGS = Attr.integer("input_threshold_msgs", 0, AttrFlag.WR,
            "Input threshold, messages handed up and not credited back; 0 = unlimited");
    static final Attr<Long> INPUT_THRESHOLD_BYTES = Attr.integer("input_threshold_bytes", 0, AttrFlag.WR,
            "Input threshold, bytes handed up and not credited back; 0 = unlimited");
    static final Attr<Boolean> CONNECTED = Attr.bool("connected", false, AttrFlag.VOLATILE | AttrFlag.STATS,
            "Transport connected");
    static final Attr<Boolean> IN_SESSION = Attr.bool("in_session", false, AttrFlag.VOLATILE | AttrFlag.STATS,
            "CONNECT accepted");
    static final Attr<String> CLIENT_ID = Attr.string("client_id", "", AttrFlag.VOLATILE | AttrFlag.STATS,
            "Client id of the session");
    static final Attr<Long> PROTOCOL_VERSION = Attr.integer("protocol_version", 0, AttrFlag.VOLATILE | AttrFlag.STATS,
            "4 = MQTT 3.1.1, 5 = MQTT 5.0 (3 = 3.1)");
    static final Attr<Long> KEEPALIVE = Attr.integer("keepalive", 0, AttrFlag.VOLATILE | AttrFlag.STATS,
            "Keep-alive in force, seconds (the connection closes after 1.5 times it without a packet)");
    static final Attr<Long> INFLIGHT = Attr.integer("inflight", 0, AttrFlag.VOLATILE | AttrFlag.STATS,
            "QoS 1/2 messages up and not yet acked");
    static final Attr<Boolean> INPUT_BLOCKED = Attr.bool("input_blocked", false, AttrFlag.VOLATILE | AttrFlag.STATS,
            "Reading stopped (input threshold, receive_maximum reached, or EV_PAUSE_INPUT)");
    static final Attr<Long> PUBLISH_QOS0 = Attr.counter("publish_qos0", AttrFlag.RSTATS, "QoS 0 PUBLISHes taken");
    static final Attr<Long> PUBLISH_QOS1 = Attr.counter("publish_qos1", AttrFlag.RSTATS, "QoS 1 PUBLISHes taken");
    static final Attr<Long> PUBLISH_QOS2 = Attr.counter("publish_qos2", AttrFlag.RSTATS, "QoS 2 PUBLISHes taken");
    static final Attr<Long> QOS2_DUPLICATES = Attr.counter("qos2_duplicates", AttrFlag.RSTATS,
            "QoS 2 PUBLISHes resent with an id already taken: answered, not queued again");
    static final Attr<Long> ACKS = Attr.counter("acks", AttrFlag.RSTATS, "PUBACK/PUBREC sent for durable messages");
    static final Attr<Long> NACKS = Attr.counter("nacks", AttrFlag.RSTATS,
            "Messages the queue refused (5.0: PUBACK/PUBREC 0x97; 3.1.1: connection closed)");
    static final Attr<Long> CONNECTS_REFUSED = Attr.counter("connects_refused", AttrFlag.RSTATS,
            "CONNECTs answered with a refusal");
    static final Attr<Long> PROTOCOL_ERRORS = Attr.counter("protocol_errors", AttrFlag.RSTATS,
            "Connections closed for a malformed packet or a protocol violation");
    static final Attr<Long> WILLS = Attr.counter("wills", AttrFlag.RSTATS, "Will messages sent up");

    /** Every attribute, in one order for both gclass names (a shared attribute has one slot). */
    private static final Attr<?>[] ATTRS = {IAM_SERVER, MAX_PACKET_SIZE, MAX_CLIENT_ID_LENGTH, ALLOW_ZERO_LENGTH_CLIENTID,
        USERS, TOPICS, MAX_QOS, RECEIVE_MAXIMUM, MAX_KEEPALIVE, MAX_TOPIC_ALIAS, MAX_SESSION_EXPIRY_INTERVAL, MAX_SESSIONS,
        TOPIC_KEY, PAYLOAD_KEY, TIMEOUT_HANDSHAKE, TIMEOUT_PAYLOAD, TIMEOUT_CLOSE, TIMEOUT_ACKS_AFTER_CLOSE, INPUT_THRESHOLD_MSGS,
        INPUT_THRESHOLD_BYTES, CONNECTED, IN_SESSION, CLIENT_ID, PROTOCOL_VERSION, KEEPALIVE, INFLIGHT, INPUT_BLOCKED,
        PUBLISH_QOS0, PUBLISH_QOS1, PUBLISH_QOS2, QOS2_DUPLICATES, ACKS, NACKS, CONNECTS_REFUSED, PROTOCOL_ERRORS, WILLS};

    // --- Trace levels ---

    static final String TRACE_TRAFFIC = "traffic";

    // --- FSM ---

    static final String ST_WAIT_CONNECT = "ST_WAIT_CONNECT";
    /** Sent by a new connection of the same client id to the gobj that holds the session now. */
    static final String EV_TAKEN_OVER = "EV_TAKEN_OVER";
    /**
     * Sent by a closed connection, while it awaits its acks, to the connection now holding the session: a QoS 2 id
     * the new one saw resent is durable ({@code result} 0) or was refused (negative).
     */
    static final String EV_QOS2_DONE = "EV_QOS2_DONE";

    static final Fsm<ProtMqtt> FSM = Fsm.<ProtMqtt>builder()
        .state(St.ST_DISCONNECTED)
            .on(Ev.EV_CONNECTED,     ProtMqtt::acConnected,       ST_WAIT_CONNECT)
            .on(Ev.EV_DISCONNECTED,  ProtMqtt::acDisconnected)
            .on(Ev.EV_TIMEOUT,       ProtMqtt::acTimeout)
            .on(Ev.EV_STOPPED,       ProtMqtt::acStopped)
            .on(Ev.EV_DROP,          ProtMqtt::acDrop)
            .on(Ev.EV_SEND_MESSAGE,  ProtMqtt::acSendMessage)   // a late ack: nothing to answer any more
            .on(Ev.EV_PAUSE_INPUT,   ProtMqtt::acPauseInput)
            .on(Ev.EV_RESUME_INPUT,  ProtMqtt::acResumeInput)
            .ignore(Ev.EV_RX_DATA)   // bytes of a read that followed our own close
            .ignore(Ev.EV_TX_READY)
            .ignore(EV_TAKEN_OVER)
            .ignore(EV_QOS2_DONE)
        .state(ST_WAIT_CONNECT)
            .enteredByAction()
            .on(Ev.EV_RX_DATA,       ProtMqtt::acRxData)
            .on(Ev.EV_SEND_MESSAGE,  ProtMqtt::acSendMessage)
            .on(Ev.EV_DISCONNECTED,  ProtMqtt::acDisconnected,    St.ST_DISCONNECTED)
            .on(Ev.EV_TIMEOUT,       ProtMqtt::acTimeout)
            .on(Ev.EV_DROP,          ProtMqtt::acDrop)
            .on(Ev.EV_PAUSE_INPUT,   ProtMqtt::acPauseInput)
            .on(Ev.EV_RESUME_INPUT,  ProtMqtt::acResumeInput)
            .ignore(Ev.EV_TX_READY)
            .ignore(EV_TAKEN_OVER)
            .ignore(EV_QOS2_DONE)
        .state(St.ST_CONNECTED)
            .enteredByAction()
            .on(Ev.EV_RX_DATA,       ProtMqtt::acRxData)
            .on(Ev.EV_SEND_MESSAGE,  ProtMqtt::acSendMessage)
            .on(Ev.EV_DISCONNECTED,  ProtMqtt::acDisconnected,    St.ST_DISCONNECTED)
            .on(Ev.EV_TIMEOUT,       ProtMqtt::acTimeout)
            .on(Ev.EV_DROP,          ProtMqtt::acDrop)
            .on(Ev.EV_PAUSE_INPUT,   ProtMqtt::acPauseInput)
            .on(Ev.EV_RESUME_INPUT,  ProtMqtt::acResumeInput)
            .on(EV_TAKEN_OVER,       ProtMqtt::acTakenOver)
            .on(EV_QOS2_DONE,        ProtMqtt::acQos2Done)
            .ignore(Ev.EV_TX_READY)
        .publishes(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE)
        .build();

    // --- Spec ---

    public static final GClassSpec<ProtMqtt> SPEC = spec(GCLASS);
    public static final GClassSpec<ProtMqtt> SPEC2 = spec(GCLASS2);

    private static GClassSpec<ProtMqtt> spec(String name) {
        return GClassSpec.builder(name, ProtMqtt.class)
                .description("MQTT 3.1.1 and 5.0 server side (an ingest): PUBLISH up as messages, PUBACK/PUBREC"
                        + " once durable")
                .attrs(ATTRS)
                .fsm(FSM)
                .command("view-sessions", "The yuno's MQTT sessions: how many, and QoS 2 ids held", ProtMqtt::cmdViewSessions)
                .traceLevel(TRACE_TRAFFIC, "Trace every packet read and written, with its type and size")
                // Yuneta's client side, its own queues and broker (auth by treedb, outgoing inflight) are not here.
                .acceptUnusedYunetaKeys("tranger_queues", "treedb_name", "alert_message", "backup_queue_size",
                        "alert_queue_size", "timeout_ack", "mqtt_client_id", "mqtt_protocol", "mqtt_clean_session",
                        "mqtt_session_expiry_interval", "mqtt_keepalive", "mqtt_connect_properties",
                        "mqtt_will_topic", "mqtt_will_payload", "mqtt_will_qos", "mqtt_will_retain",
                        "mqtt_will_properties", "user_id", "user_passw", "jwt", "url", "cert_pem",
                        "timeout_periodic", "timeout_backup", "max_inflight_bytes", "max_inflight_messages",
                        "max_queued_bytes", "max_queued_messages", "message_size_limit", "retain_available",
                        "user_data", "user_data2", "subscriber")
                .linkUp(CONNECTED)
                .stateVersion(STATE_VERSION)
                .factory(ProtMqtt::new)
                .build();
    }

    /** The version of what {@link #onExport} hands over (docs/CORE.md, "Live upgrade"); {@link #onImport} takes it only. */
    static final int STATE_VERSION = 1;

    /** 5.0 reason code for a message the queue refused: retry later. */
    static final byte RC_QUOTA_EXCEEDED = (byte) 0x97;
    static final byte RC_NOT_AUTHORIZED = (byte) 0x87;
    static final byte RC_IMPLEMENTATION_SPECIFIC = (byte) 0x83;
    static final byte RC_PACKET_ID_NOT_FOUND = (byte) 0x92;
    static final byte RC_NO_SUBSCRIPTION_EXISTED = 0x11;
    static final byte RC_MALFORMED = (byte) 0x81;
    static final byte RC_PROTOCOL_ERROR = (byte) 0x82;
    static final byte RC_RECEIVE_MAX_EXCEEDED = (byte) 0x93;
    static final byte RC_TOPIC_ALIAS_INVALID = (byte) 0x94;
    static final byte RC_PACKET_TOO_LARGE = (byte) 0x95;
    static final byte RC_QOS_NOT_SUPPORTED = (byte) 0x9B;
    static final byte RC_SESSION_TAKEN_OVER = (byte) 0x8E;
    static final byte RC_KEEP_ALIVE_TIMEOUT = (byte) 0x8D;
    static final byte RC_TOPIC_NAME_INVALID = (byte) 0x90;
    /** 5.0 DISCONNECT reason "normal, but publish the Will". */
    static final int RC_DISCONNECT_WITH_WILL = 0x04;

    private static final String TIMER = "timer";
    private static final String T_HANDSHAKE = "handshake";
    private static final String T_KEEPALIVE = "keepalive";
    private static final String T_PAYLOAD = "payload";
    private static final String T_CLOSE = "close";
    private static final String T_LINGER = "linger";

    // --- Private data ---

    private final GObj gobj;
    /**
     * Rows looked at after each queue's noted position for a QoS 2 resend after a restart: the message went up alone
     * (the core thread runs it to the queue before anything else), so it is the first; the rest is margin.
     */
    static final int RECORDS_AFTER_POSITIONS = 4;

    /** The yuno's queue factory, if any: QoS 2 ids are noted only once the queues wrote what they took. */
    private final Supplier<TrQueueFactory> queues;
    private final ByteBufAllocator alloc = PooledByteBufAllocator.DEFAULT;
    private Sessions sessions;
    private TopicFilters topics;
    private final MqttFramer framer = new MqttFramer(0);
    private InputThreshold inputThreshold = new InputThreshold();
    /** Reads (or their rest) waiting while the input is blocked, in arrival order. */
    private final ArrayDeque<ByteBuf> held = new ArrayDeque<>();
    /** QoS 1/2 messages up and not acked: packet id → (sequence << 2 | qos). */
    private final Map<Integer, Long> pending = new HashMap<>();

    // Per connection: plain fields, reset by acConnected (what a live handover would export).
    private MqttCodec codec;
    private final IngestJson ingest = new IngestJson();
    private final FastPublish fastPublish = new FastPublish();
    private final IngestJson.AckScan ackScan = new IngestJson.AckScan();
    /** Counts connections of this gobj: an ack names the one its message came on. */
    private long epoch;
    private long seq;
    private int version;
    private Sessions.Session session;
    private String peer = "";
    private String sock = "";
    private boolean opened;
    private boolean pausedByUpper;
    private boolean bottomPaused;
    private long keepAliveMs;
    private long lastPacketMs;
    private long lastReadMs;
    private String willTopic;
    private byte[] willPayload;
    private String[] aliases;
    private int pendingQos2;
    private boolean saidNotIngest;
    private boolean saidTopicRefused;
    /** Its own timer: a CONNECT dripped in byte by byte must not restart it with each payload timer. */
    private final Timer handshakeTimer = new Timer(T_HANDSHAKE);
    private final Timer keepAliveTimer = new Timer(T_KEEPALIVE);
    private final Timer payloadTimer = new Timer(T_PAYLOAD);
    private final Timer closeTimer = new Timer(T_CLOSE);
    /** How long the acks of closed connections are still awaited ({@link #retired}). */
    private final Timer lingerTimer = new Timer(T_LINGER);
    /** When a live upgrade suspended this gobj (the yuno's clock, ms); -1 when it is not suspended. */
    private long suspendedAtMs = -1;
    /** The suspension stopped the transport's reading (the next revision resumes it). */
    private boolean pausedForUpgrade;
    /**
     * QoS 1/2 messages of closed connections of this gobj whose acks may still come, by sequence: the channel
     * stays open for them (the relay answers through it) until they are in or {@code timeout_acks_after_close}.
     */
    private final Map<Long, Retired> retired = new HashMap<>();

    /** A message in flight when its connection closed. */
    private static final class Retired {
        final int packetId;
        final int qos;
        final Sessions.Session session;

        Retired(int packetId, int qos, Sessions.Session session) {
            this.packetId = packetId;
            this.qos = qos;
            this.session = session;
        }
    }

    /** A timer of the gobj and when it falls due on the yuno's clock, which is what a live upgrade hands over. */
    private final class Timer {
        final String which;
        private Cancellable armed = Cancellable.NONE;
        /** When it falls due (ms); -1 when it is not armed. */
        long dueMs = -1;

        Timer(String which) {
            this.which = which;
        }

        void arm(long ms) {
            armAt(nowMs() + Math.max(1, ms));
        }

        void armAt(long due) {
            armed.cancel();
            dueMs = due;
            armed = gobj.setTimeout(Math.max(1, due - nowMs()), Ev.EV_TIMEOUT, timerKw(which));
        }

        void cancel() {
            stop();
            dueMs = -1;
        }

        /** Stops it and keeps the deadline (a suspended gobj makes nothing happen by itself). */
        void stop() {
            armed.cancel();
            armed = Cancellable.NONE;
        }

        boolean isArmed() {
            return dueMs >= 0;
        }

        /** It fired: answers whether it was armed (a timeout of a timer cancelled since is nothing). */
        boolean fired() {
            boolean was = dueMs >= 0;
            armed = Cancellable.NONE;
            dueMs = -1;
            return was;
        }
    }

    ProtMqtt(GObj gobj) {
        this(gobj, () -> {
            TrQueueFactory f = QueueFactoryHolder.current();
            return f != null ? f : gobj.yuno().lookup(TrQueueFactory.class);
        });
    }

    /** {@code queues}: the queue factory (the trqueue service, or the yuno's outside OSGi), null when there is none. */
    ProtMqtt(GObj gobj, Supplier<TrQueueFactory> queues) {
        this.gobj = gobj;
        this.queues = queues;
    }

    // --- Framework methods ---

    @Override
    public void onCreate() {
        if (!gobj.readBool(IAM_SERVER)) {
            throw new IllegalArgumentException("C_PROT_MQTT is the server side only: iamServer must be true");
        }
        topics = TopicFilters.of(gobj.read(TOPICS));
        checkUsers(gobj.read(USERS));
        framer.setMaxPacketSize(gobj.readLong(MAX_PACKET_SIZE));
        sessions = Sessions.acquire(gobj.yuno().dataDir(), gobj.yuno(), nowEpochMs(),
                w -> Glog.warn(gobj, w, "msgset", "internal_error"));
    }

    @Override
    public int onStop() {
        clearTimer();
        handshakeTimer.cancel();
        keepAliveTimer.cancel();
        GObj bottom = gobj.bottom();
        if (bottom != null && bottom.isRunning()) bottom.stop();
        return 0;
    }

    @Override
    public void onDestroy() {
        clearTimer();
        handshakeTimer.cancel();
        keepAliveTimer.cancel();
        lingerTimer.cancel();
        for (Retired r : retired.values()) {
            if (r.session != null) r.session.unconfirmed.remove(r.packetId);
        }
        retired.clear();
        endConnection();
        if (sessions != null) {
            sessions.release();
            sessions = null;
        }
    }

    @Override
    public void onWriting(String attr) {
        if (attr.equals(TOPICS.name())) topics = TopicFilters.of(gobj.read(TOPICS));
        else if (attr.equals(USERS.name())) checkUsers(gobj.read(USERS));
        else if (attr.equals(MAX_PACKET_SIZE.name())) framer.setMaxPacketSize(gobj.readLong(MAX_PACKET_SIZE));
    }

    /**
     * A live upgrade waits for the new revision (a {@code Bundle.update()}): reading stops (EV_PAUSE_INPUT to the
     * transport; core holds what is sent to the gobj meanwhile) and so do the timers, whose deadlines are kept. The
     * time until the next revision takes over is not counted against the client.
     */
    @Override
    public void onSuspend() {
        suspendedAtMs = nowMs();
        for (Timer t : timers()) t.stop();
        GObj bottom = gobj.bottom();
        if (!bottomPaused && !gobj.inState(St.ST_DISCONNECTED) && bottom != null
                && bottom.acceptsEvent(Ev.EV_PAUSE_INPUT)) {
            bottom.send(Ev.EV_PAUSE_INPUT, null, gobj);
            pausedForUpgrade = true;
        }
    }

    /**
     * The gobj's connection as it is, for the next revision: the session store (one node for every gobj of the
     * yuno), the codec's channel, the framer's state with its partial packet, the reads held back and the input
     * threshold (by reference: ownership goes with the state), the CONNECT's state, the messages in flight and those
     * of closed connections whose acks may still come, and the timers' deadlines.
     */
    @Override
    public ObjectNode onExport() {
        ObjectNode s = Kw.create();
        s.set("sessions", sessions.handOver());
        s.put("session", session == null ? -1 : sessions.exportSession(session));
        s.put("epoch", epoch).put("seq", seq).put("version", version).put("peer", peer).put("sock", sock)
                .put("opened", opened).put("paused_by_upper", pausedByUpper)
                .put("bottom_paused", bottomPaused || pausedForUpgrade).put("keepalive_ms", keepAliveMs)
                .put("last_packet_ms", lastPacketMs).put("last_read_ms", lastReadMs).put("pending_qos2", pendingQos2)
                .put("said_not_ingest", saidNotIngest).put("said_topic_refused", saidTopicRefused)
                .put("suspended_at_ms", suspendedAtMs);
        if (willTopic != null) s.put("will_topic", willTopic).put("will_payload", willPayload);
        if (aliases != null) {
            ArrayNode a = s.putArray("aliases");
            for (String t : aliases) a.add(t);
        }
        ObjectNode due = s.putObject("timers");
        for (Timer t : timers()) due.put(t.which, t.dueMs);
        ArrayNode p = s.putArray("pending");
        pending.forEach((id, v) -> p.addArray().add(id).add(v));
        ArrayNode r = s.putArray("retired");
        retired.forEach((sq, x) -> r.addArray().add(sq).add(x.packetId).add(x.qos)
                .add(x.session == null ? -1 : sessions.exportSession(x.session)));
        s.set("framer", framer.exportState());
        ArrayNode h = s.putArray("held");
        for (ByteBuf b; (b = held.poll()) != null; ) h.addPOJO(b);
        s.set("input_threshold", inputThreshold.exportState());
        if (codec != null) Kw.putRef(s, "codec", codec.channel());
        codec = null;
        pending.clear();
        retired.clear();
        for (Timer t : timers()) t.cancel();
        return s;
    }

    /**
     * Takes the state of {@link #onExport}, checked whole before anything is taken, and goes on where the other
     * revision stopped, mid-packet included. The time a {@code Bundle.update()} kept the gobj suspended does not count
     * against the client (its bytes were not read meanwhile): the handshake, keep-alive and payload deadlines move by
     * it. A transport paused for the upgrade reads again, unless the input is blocked.
     */
    @Override
    public void onImport(ObjectNode s, int stateVersion) {
        if (stateVersion != STATE_VERSION) {
            throw new IllegalArgumentException("C_PROT_MQTT takes state version " + STATE_VERSION + ", not " + stateVersion);
        }
        if (!s.path("sessions").isObject() || !s.path("timers").isObject() || !s.path("pending").isArray()
                || !s.path("retired").isArray() || !s.path("held").isArray() || !s.path("epoch").canConvertToLong()) {
            throw new IllegalArgumentException("not a C_PROT_MQTT state");
        }
        InputThreshold threshold = new InputThreshold();
        threshold.importState(s.get("input_threshold"));
        EmbeddedChannel codecChannel = Kw.ref(s, "codec", EmbeddedChannel.class);
        if (codecChannel == null && s.has("codec")) throw new IllegalArgumentException("codec is not a channel");
        MqttCodec takenCodec = codecChannel == null ? null : new MqttCodec(codecChannel);
        List<ByteBuf> reads = new ArrayList<>();
        for (JsonNode b : s.get("held")) {
            Object o = b.isPojo() ? ((com.fasterxml.jackson.databind.node.POJONode) b).getPojo() : null;
            if (!(o instanceof ByteBuf)) throw new IllegalArgumentException("a held read is not a ByteBuf");
            reads.add((ByteBuf) o);
        }
        TopicFilters takenTopics = TopicFilters.of(gobj.read(TOPICS));
        checkUsers(gobj.read(USERS));
        Sessions store = Sessions.adopt(gobj.yuno().dataDir(), gobj.yuno(), (ObjectNode) s.get("sessions"),
                w -> Glog.warn(gobj, w, "msgset", "internal_error"));
        framer.setMaxPacketSize(gobj.readLong(MAX_PACKET_SIZE));
        try {
            framer.importState(s.get("framer"));   // takes nothing when it refuses
        } catch (IllegalArgumentException e) {
            store.release();
            throw e;
        }
        // nothing below throws: what the state references is this behaviour's from here on
        topics = takenTopics;
        sessions = store;
        session = sessions.byUid(s.path("session").asLong(-1));
        codec = takenCodec;
        held.addAll(reads);
        inputThreshold = threshold;
        long suspendedMs = s.path("suspended_at_ms").asLong(-1) < 0 ? 0
                : Math.max(0, nowMs() - s.path("suspended_at_ms").asLong());
        epoch = s.path("epoch").asLong();
        seq = s.path("seq").asLong();
        version = s.path("version").asInt();
        peer = s.path("peer").asText("");
        sock = s.path("sock").asText("");
        opened = s.path("opened").asBoolean();
        pausedByUpper = s.path("paused_by_upper").asBoolean();
        bottomPaused = s.path("bottom_paused").asBoolean();
        keepAliveMs = s.path("keepalive_ms").asLong();
        lastPacketMs = s.path("last_packet_ms").asLong() + suspendedMs;
        lastReadMs = s.path("last_read_ms").asLong() + suspendedMs;
        pendingQos2 = s.path("pending_qos2").asInt();
        saidNotIngest = s.path("said_not_ingest").asBoolean();
        saidTopicRefused = s.path("said_topic_refused").asBoolean();
        if (s.hasNonNull("will_topic")) {
            willTopic = s.get("will_topic").asText();
            try {
                willPayload = s.path("will_payload").binaryValue();
            } catch (java.io.IOException e) {
                willPayload = new byte[0];
            }
            if (willPayload == null) willPayload = new byte[0];
        }
        if (s.path("aliases").isArray()) {
            aliases = new String[s.get("aliases").size()];
            for (int i = 0; i < aliases.length; i++) {
                JsonNode a = s.get("aliases").get(i);
                aliases[i] = a.isNull() ? null : a.asText();
            }
        }
        for (JsonNode e : s.get("pending")) pending.put(e.get(0).asInt(), e.get(1).asLong());
        for (JsonNode e : s.get("retired")) {
            retired.put(e.get(0).asLong(), new Retired(e.get(1).asInt(), e.get(2).asInt(), sessions.byUid(e.get(3).asLong())));
        }
        for (Timer t : timers()) {
            long due = s.get("timers").path(t.which).asLong(-1);
            if (due < 0) continue;
            boolean clientSide = t == handshakeTimer || t == keepAliveTimer || t == payloadTimer;
            t.armAt(clientSide ? due + suspendedMs : due);
        }
        if (!gobj.inState(St.ST_DISCONNECTED) || bottomPaused) updateBottomPause();
    }

    // --- Commands ---

    private ObjectNode cmdViewSessions(ObjectNode kw, GObj src) {
        ObjectNode d = Kw.create();
        d.put("sessions", sessions.size());
        d.put("qos2_ids", sessions.qos2Ids());
        if (sessions.lastError() != null) d.put("error", sessions.lastError());
        return io.gatehouse.api.Envelope.ok("", d);
    }

    // --- Actions ---

    private int acConnected(String event, ObjectNode kw, GObj src) {
        endConnection();
        gobj.resetVolatiles();
        gobj.set(CONNECTED, true);
        epoch++;
        peer = Kw.getString(kw, Kw.PEERNAME, "");
        sock = Kw.getString(kw, Kw.SOCKNAME, "");
        Kw.release(kw);
        codec = new MqttCodec(framer.maxPacketSize(), (int) gobj.readLong(MAX_CLIENT_ID_LENGTH));
        lastReadMs = nowMs();
        lastPacketMs = lastReadMs;
        if (!gobj.isRunning()) {
            gobj.changeState(St.ST_DISCONNECTED);
            return 0;
        }
        gobj.changeState(ST_WAIT_CONNECT);
        armHandshake();
        return 0;
    }

    private int acDisconnected(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        boolean inSession = session != null && gobj.readBool(IN_SESSION);
        if (inSession && willTopic != null) publishWill();
        retire();
        endConnection();
        gobj.set(CONNECTED, false);
        gobj.set(IN_SESSION, false);
        gobj.set(INPUT_BLOCKED, false);
        gobj.changeState(St.ST_DISCONNECTED);
        return closeChannelIfDone();
    }

    /**
     * The connection is over: what it has in flight waits for its acks with the channel open (the relay answers
     * through it). A QoS 2 id among them is "unconfirmed" in its session: a resend on a new connection waits for
     * that ack instead of taking the id as an orphan.
     */
    private void retire() {
        if (pending.isEmpty()) return;
        // Bounded: a client that reconnects again and again with messages in flight does not pile up waits.
        if (retired.size() + pending.size() > 65_535) retiredTimedOut();
        for (Map.Entry<Integer, Long> e : pending.entrySet()) {
            int qos = (int) (e.getValue() & 3);
            retired.put(e.getValue() >>> 2, new Retired(e.getKey(), qos, session));
            if (qos == 2 && session != null) session.unconfirmed.add(e.getKey());
        }
        pending.clear();
        pendingQos2 = 0;
        gobj.setLong(INFLIGHT, 0);
        if (!lingerTimer.isArmed()) lingerTimer.arm(gobj.readLong(TIMEOUT_ACKS_AFTER_CLOSE));
    }

    /** EV_ON_CLOSE once nothing holds the channel: no session on it and no ack awaited. */
    private int closeChannelIfDone() {
        if (!opened || !retired.isEmpty() || gobj.readBool(IN_SESSION)) return 0;
        opened = false;
        ObjectNode close = Kw.create();
        close.put(Kw.PEERNAME, peer);
        close.put(Kw.SOCKNAME, sock);
        return gobj.publish(Ev.EV_ON_CLOSE, close);
    }

    /** An ack (or refusal) for a message of a closed connection: its session learns what became of a QoS 2 id. */
    private void retiredAnswered(Retired r, int result) {
        if (r.qos != 2 || r.session == null) return;
        Sessions.Session s = r.session;
        s.unconfirmed.remove(r.packetId);
        if (result >= 0) {
            sessions.putQos2(s, r.packetId, Sessions.DURABLE);
        } else {
            boolean resent = s.waiting.contains(r.packetId);
            sessions.releaseQos2(s, r.packetId);   // refused: the id is free again
            if (resent) s.waiting.add(r.packetId);
        }
        qos2Done(s, r.packetId, result);
    }

    /** No more acks are awaited for closed connections: their QoS 2 ids are orphans from now on. */
    private void retiredTimedOut() {
        lingerTimer.cancel();
        for (Retired r : new java.util.ArrayList<>(retired.values())) {
            if (r.qos == 2 && r.session != null && r.session.unconfirmed.remove(r.packetId)) {
                qos2Done(r.session, r.packetId, 0);   // handed to the queue before it was recorded: an orphan
            }
        }
        retired.clear();
        closeChannelIfDone();
    }

    /** A QoS 2 id of {@code s} is settled: a resend that waits for it on the session's connection is answered. */
    private void qos2Done(Sessions.Session s, int id, int result) {
        if (!s.waiting.remove(id)) return;
        GObj owner = s.owner;
        if (owner == null || owner.isDestroyed()) return;
        ObjectNode kw = Kw.create();
        kw.put("packet_id", id);
        kw.put(Kw.RESULT, result);
        owner.send(EV_QOS2_DONE, kw, gobj);
    }

    private int acQos2Done(String event, ObjectNode kw, GObj src) {
        int id = kw.path("packet_id").asInt(-1);
        int result = kw.path(Kw.RESULT).asInt(0);
        Kw.release(kw);
        if (session == null) return 0;
        if (result >= 0) {
            if (!session.qos2.containsKey(id)) return 0;   // released meanwhile
            sessions.putQos2(session, id, Sessions.DURABLE);
            gobj.inc(ACKS);
            txAck(MqttMessageType.PUBREC, id);
            return 0;
        }
        refused(2, id);
        return 0;
    }

    private int acRxData(String event, ObjectNode kw, GObj src) {
        ByteBuf buf = Kw.takeGbuffer(kw);
        if (buf == null) {
            Glog.error(gobj, "gbuffer NULL", "event", event);
            return -1;
        }
        lastReadMs = nowMs();
        if (inputBlocked() || !held.isEmpty()) {
            held.add(buf);
            drainHeld();
            return 0;
        }
        process(buf);
        return 0;
    }

    /** An ack (or a refusal) from the relay for a message we sent up; anything else is not for an ingest. */
    private int acSendMessage(String event, ObjectNode kw, GObj src) {
        IngestJson.Ack a;
        ByteBuf buf = Kw.gbuffer(kw);
        if (buf != null) {
            a = ackScan.read(buf);
        } else {
            a = new IngestJson.Ack();   // an ack as a dict (not what the relay sends, but the same meaning)
            JsonNode md = kw.get(Kw.MD_TRQ);
            if (md != null && md.isObject() && md.has("mqtt_packet_id")) {
                a.ours = true;
                a.seq = md.path("__msg_rowid__").asLong(-1);
                a.conn = md.path("mqtt_conn").asLong(-1);
                a.packetId = md.path("mqtt_packet_id").asInt(-1);
                a.result = md.path(Kw.RESULT).asInt(kw.path(Kw.RESULT).asInt(0));
            }
        }
        Kw.release(kw);
        if (!a.ours) {
            if (!saidNotIngest) {
                saidNotIngest = true;
                Glog.warn(gobj, "Message for an MQTT publisher not sent: C_PROT_MQTT is an ingest (said once per"
                        + " connection)", "peername", peer);
            }
            return -1;
        }
        long conn = a.conn;
        int packetId = a.packetId;
        long sq = a.seq;
        int result = a.result;
        Retired r = retired.remove(sq);
        if (r != null) {
            retiredAnswered(r, result);   // the client is gone: nothing to answer it
            if (retired.isEmpty()) {
                lingerTimer.cancel();
                closeChannelIfDone();
            }
            return 0;
        }
        if (conn != epoch || !gobj.inState(St.ST_CONNECTED)) return 0;   // not ours any more
        Long p = pending.get(packetId);
        if (p == null || (p >>> 2) != sq) return 0;                       // answered already
        pending.remove(packetId);
        int qos = (int) (p & 3);
        if (qos == 2) pendingQos2--;
        gobj.setLong(INFLIGHT, pending.size());
        if (result >= 0) {
            gobj.inc(ACKS);
            if (qos == 2) {
                sessions.putQos2(session, packetId, Sessions.DURABLE);
                txAck(MqttMessageType.PUBREC, packetId);
            } else {
                txAck(MqttMessageType.PUBACK, packetId);
            }
        } else {
            if (qos == 2) sessions.releaseQos2(session, packetId);
            if (!refused(qos, packetId)) return 0;
        }
        updateBottomPause();
        if (!inputBlocked()) drainHeld();
        return 0;
    }

    /** The queue refused a message: 5.0 says so in its ack; 3.1.1 can only close. False when it closed. */
    private boolean refused(int qos, int packetId) {
        gobj.inc(NACKS);
        if (version == 5) {
            tx(pubReply(qos == 2 ? MqttMessageType.PUBREC : MqttMessageType.PUBACK, packetId, RC_QUOTA_EXCEEDED));
            return true;
        }
        Glog.error(gobj, "MQTT message refused by the queue: closing (3.1.1 has no failure ack, the client"
                + " sends it again)", "msgset", "protocol_error", "peername", peer,
                "client_id", session == null ? "" : session.clientId, "packet_id", packetId, "qos", qos);
        close(-1);
        return false;
    }

    private int acTimeout(String event, ObjectNode kw, GObj src) {
        String which = Kw.getString(kw, TIMER, "");
        Kw.release(kw);
        long now = nowMs();
        Timer t = timer(which);
        if (t == null || !t.fired()) return 0;
        switch (which) {
            case T_HANDSHAKE:
                if (!gobj.inState(ST_WAIT_CONNECT)) return 0;
                if (inputBlocked()) {
                    armHandshake();   // we stopped reading: not late
                    return 0;
                }
                Glog.warn(gobj, "Timeout waiting CONNECT", "msgset", "protocol_error", "peername", peer,
                        "timeout_handshake", gobj.readLong(TIMEOUT_HANDSHAKE));
                gobj.inc(PROTOCOL_ERRORS);
                close(-1);
                return 0;
            case T_KEEPALIVE:
                if (!gobj.inState(St.ST_CONNECTED) || keepAliveMs <= 0) return 0;
                long limit = keepAliveMs * 3 / 2;
                long quiet = now - lastPacketMs;
                if (inputBlocked()) {
                    lastPacketMs = now;   // we stopped reading: the client is not late
                    armKeepAlive(limit);
                } else if (quiet >= limit) {
                    Glog.warn(gobj, "MQTT keep-alive timeout: no packet within 1.5 times the keep-alive",
                            "msgset", "protocol_error", "peername", peer, "client_id", session.clientId,
                            "keepalive_s", keepAliveMs / 1000);
                    close(RC_KEEP_ALIVE_TIMEOUT);
                } else {
                    armKeepAlive(limit - quiet);
                }
                return 0;
            case T_PAYLOAD:
                if (gobj.inState(St.ST_DISCONNECTED) || !framer.hasPartial()) return 0;
                long timeout = gobj.readLong(TIMEOUT_PAYLOAD);
                if (inputBlocked()) {
                    lastReadMs = now;   // we stopped reading: the client is not late
                    payloadTimer.arm(timeout);
                    return 0;
                }
                if (now - lastReadMs < timeout) {
                    payloadTimer.arm(timeout - (now - lastReadMs));
                    return 0;
                }
                Glog.warn(gobj, "Timeout waiting the rest of an MQTT packet", "msgset", "protocol_error",
                        "peername", peer, "timeout_payload", timeout);
                gobj.inc(PROTOCOL_ERRORS);
                close(RC_MALFORMED);
                return 0;
            case T_LINGER:
                retiredTimedOut();
                return 0;
            case T_CLOSE:
                if (!gobj.inState(St.ST_DISCONNECTED)) return 0;
                Glog.warn(gobj, "Timeout waiting disconnected", "msgset", "protocol_error");
                dropBottom();
                return 0;
            default:
                return 0;
        }
    }

    private int acTakenOver(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        Glog.info(gobj, "MQTT session taken over by a new connection of the same client id", "peername", peer,
                "client_id", session == null ? "" : session.clientId);
        // The new connection owns the session from now on; acks of what we have in flight still come here.
        retire();
        close(RC_SESSION_TAKEN_OVER);
        return 0;
    }

    private int acDrop(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        dropBottom();
        return 0;
    }

    private int acStopped(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        ProtocolBottom.stopped(gobj, src);
        return 0;
    }

    private int acPauseInput(String event, ObjectNode kw, GObj src) {
        Kw.release(kw);
        pausedByUpper = true;
        updateBottomPause();
        return 0;
    }

    private int acResumeInput(String event, ObjectNode kw, GObj src) {
        inputThreshold.credit(kw, gobj.readLong(INPUT_THRESHOLD_MSGS), gobj.readLong(INPUT_THRESHOLD_BYTES));
        Kw.release(kw);
        pausedByUpper = false;
        drainHeld();
        if (!gobj.inState(St.ST_DISCONNECTED)) updateBottomPause();
        return 0;
    }

    // --- Local methods ---

    // Packets: what a whole packet does, by type.


    /**
     * Cuts {@code buf} (owned) into packets and handles each. Stops early, keeping the rest in {@link #held},
     * when the input blocks; stops and discards the rest when the connection was closed meanwhile.
     */
    private void process(ByteBuf buf) {
        try {
            for (;;) {
                if (inputBlocked()) {
                    if (buf.isReadable()) {
                        held.add(buf);
                        buf = null;
                    }
                    return;
                }
                ByteBuf packet = framer.decode(alloc, buf);
                if (packet == null) break;
                lastPacketMs = nowMs();
                handle(packet);
                if (gobj.isDestroyed() || gobj.inState(St.ST_DISCONNECTED)) return;
            }
            if (framer.error() != MqttFramer.Error.NONE) {
                if (framer.error() == MqttFramer.Error.TOO_LARGE) {
                    Glog.error(gobj, "MQTT packet too large: closing", "msgset", "protocol_error", "peername", peer,
                            "packet_size", framer.badLength(), "max_packet_size", framer.maxPacketSize());
                    gobj.inc(PROTOCOL_ERRORS);
                    close(RC_PACKET_TOO_LARGE);
                } else {
                    malformed("remaining length over 4 bytes", framer.pendingType());
                }
                return;
            }
        } finally {
            if (buf != null) buf.release();
        }
        // before the CONNECT the handshake timer bounds the whole wait; after it, a packet must not stall halfway
        if (framer.hasPartial() && !payloadTimer.isArmed() && gobj.inState(St.ST_CONNECTED)) {
            payloadTimer.arm(gobj.readLong(TIMEOUT_PAYLOAD));
        }
    }

    private void drainHeld() {
        while (!inputBlocked() && !held.isEmpty() && !gobj.inState(St.ST_DISCONNECTED)) {
            process(held.poll());
        }
    }

    private void handle(ByteBuf packet) {
        if (gobj.inState(St.ST_CONNECTED) && publishFast(packet)) return;
        int size = packet.readableBytes();
        MqttMessage m = codec.decode(packet);
        DecoderResult r = m.decoderResult();
        MqttMessageType type = m.fixedHeader() == null ? null : m.fixedHeader().messageType();
        if (gobj.isTraced(TRACE_TRAFFIC)) Glog.info(gobj, "packet received", "type", String.valueOf(type), "bytes", size);
        if (r != null && r.isFailure()) {
            ReferenceCountUtil.release(m);
            Throwable cause = r.cause();
            if (type == MqttMessageType.CONNECT && gobj.inState(ST_WAIT_CONNECT)) {
                refuseBadConnect(cause);
            } else {
                malformed(String.valueOf(cause.getMessage()), type == null ? -1 : type.value());
            }
            return;
        }
        if (gobj.inState(ST_WAIT_CONNECT)) {
            if (type != MqttMessageType.CONNECT) {
                ReferenceCountUtil.release(m);
                protocolError("first packet is not CONNECT: " + type, RC_PROTOCOL_ERROR);
                return;
            }
            onConnect((MqttConnectMessage) m);
            return;
        }
        switch (type) {
            case PUBLISH:
                MqttPublishMessage p = (MqttPublishMessage) m;
                onPublish(p.variableHeader().topicName(), p.fixedHeader().qosLevel().value(),
                        p.variableHeader().packetId(), p.variableHeader().properties(), p.payload());
                return;
            case PUBREL:
                onPubrel(((MqttMessageIdVariableHeader) m.variableHeader()).messageId());
                return;
            case PINGREQ:
                tx(new MqttMessage(new MqttFixedHeader(MqttMessageType.PINGRESP, false, MqttQoS.AT_MOST_ONCE, false, 0)));
                return;
            case SUBSCRIBE:
                onSubscribe((MqttSubscribeMessage) m);
                return;
            case UNSUBSCRIBE:
                onUnsubscribe((MqttUnsubscribeMessage) m);
                return;
            case DISCONNECT:
                onDisconnect(m);
                return;
            case PUBACK:
            case PUBREC:
            case PUBCOMP:
                return;   // answers to publishes of ours: an ingest sends none, nothing to complete
            case CONNECT:
                ReferenceCountUtil.release(m);
                protocolError("second CONNECT on the connection", RC_PROTOCOL_ERROR);
                return;
            default:
                ReferenceCountUtil.release(m);
                protocolError("unexpected " + type + " from a client", RC_PROTOCOL_ERROR);
        }
    }

    private void refuseBadConnect(Throwable cause) {
        gobj.inc(CONNECTS_REFUSED);
        MqttConnectReturnCode rc;
        if (cause instanceof MqttUnacceptableProtocolVersionException) {
            rc = MqttConnectReturnCode.CONNECTION_REFUSED_UNACCEPTABLE_PROTOCOL_VERSION;   // the 3.1.1 form: any client reads it
        } else if (cause instanceof MqttIdentifierRejectedException) {
            rc = codec.version() == MqttVersion.MQTT_5 ? MqttConnectReturnCode.CONNECTION_REFUSED_CLIENT_IDENTIFIER_NOT_VALID
                    : MqttConnectReturnCode.CONNECTION_REFUSED_IDENTIFIER_REJECTED;
        } else {
            malformed("bad CONNECT: " + cause.getMessage(), MqttMessageType.CONNECT.value());
            return;
        }
        Glog.warn(gobj, "MQTT CONNECT refused", "msgset", "protocol_error", "peername", peer,
                "reason", rc.name(), "error", String.valueOf(cause.getMessage()));
        tx(connAck(rc, false, MqttProperties.NO_PROPERTIES));
        close(-1);
    }

    private void onConnect(MqttConnectMessage c) {
        MqttConnectVariableHeader vh = c.variableHeader();
        MqttConnectPayload pl = c.payload();
        version = vh.version();
        boolean v5 = version == 5;
        MqttProperties props = vh.properties();
        gobj.setLong(PROTOCOL_VERSION, version);
        String clientId = pl.clientIdentifier() == null ? "" : pl.clientIdentifier();
        if (v5 && props.getProperty(MqttProperties.MqttPropertyType.AUTHENTICATION_METHOD.value()) != null) {
            refuse(MqttConnectReturnCode.CONNECTION_REFUSED_BAD_AUTHENTICATION_METHOD, clientId, "enhanced"
                    + " authentication (AUTH) is not supported");
            return;
        }
        String auth = authenticate(vh, pl);
        if (auth != null) {
            boolean noUser = auth.startsWith("no");
            refuse(v5 ? (noUser ? MqttConnectReturnCode.CONNECTION_REFUSED_NOT_AUTHORIZED_5
                            : MqttConnectReturnCode.CONNECTION_REFUSED_BAD_USERNAME_OR_PASSWORD)
                    : (noUser ? MqttConnectReturnCode.CONNECTION_REFUSED_NOT_AUTHORIZED
                            : MqttConnectReturnCode.CONNECTION_REFUSED_BAD_USER_NAME_OR_PASSWORD), clientId, auth);
            return;
        }
        boolean clean = vh.isCleanSession();
        String assigned = null;
        if (clientId.isEmpty()) {
            if (!gobj.readBool(ALLOW_ZERO_LENGTH_CLIENTID) || (!v5 && !clean)) {
                refuse(v5 ? MqttConnectReturnCode.CONNECTION_REFUSED_CLIENT_IDENTIFIER_NOT_VALID
                        : MqttConnectReturnCode.CONNECTION_REFUSED_IDENTIFIER_REJECTED, clientId,
                        "empty client id" + (!v5 && !clean ? " with clean session 0" : " not allowed"));
                return;
            }
            assigned = "gatehouse-" + gobj.yuno().name() + "-" + gobj.name() + "-" + epoch;
            clientId = assigned;
        }
        long maxQos = gobj.readLong(MAX_QOS);
        if (vh.isWillFlag()) {
            String wt = pl.willTopic();
            if (wt == null || wt.isEmpty() || wt.indexOf('+') >= 0 || wt.indexOf('#') >= 0) {
                refuse(v5 ? MqttConnectReturnCode.CONNECTION_REFUSED_TOPIC_NAME_INVALID
                        : MqttConnectReturnCode.CONNECTION_REFUSED_IDENTIFIER_REJECTED, clientId, "bad will topic");
                return;
            }
            if (vh.willQos() > maxQos) {
                refuse(v5 ? MqttConnectReturnCode.CONNECTION_REFUSED_QOS_NOT_SUPPORTED
                        : MqttConnectReturnCode.CONNECTION_REFUSED_NOT_AUTHORIZED, clientId, "will QoS over max_qos");
                return;
            }
            if (!topics.allows(wt)) {
                refuse(v5 ? MqttConnectReturnCode.CONNECTION_REFUSED_NOT_AUTHORIZED_5
                        : MqttConnectReturnCode.CONNECTION_REFUSED_NOT_AUTHORIZED, clientId, "will topic not allowed");
                return;
            }
        }
        // keep-alive: 5.0 clients are told the server's when theirs is longer or none
        int ka = vh.keepAliveTimeSeconds();
        long maxKa = gobj.readLong(MAX_KEEPALIVE);
        boolean announceKa = false;
        if (v5 && maxKa > 0 && (ka == 0 || ka > maxKa)) {
            ka = (int) maxKa;
            announceKa = true;
        }
        // session lifetime after the connection: 3.1.1 by clean session, 5.0 by its expiry interval
        long maxExpiry = gobj.readLong(MAX_SESSION_EXPIRY_INTERVAL);
        long expiry;
        boolean announceExpiry = false;
        if (v5) {
            MqttProperties.MqttProperty<?> e = props.getProperty(MqttProperties.MqttPropertyType.SESSION_EXPIRY_INTERVAL.value());
            long asked = e == null ? 0 : ((Integer) e.value()) & 0xFFFFFFFFL;
            expiry = Math.min(asked, Math.max(0, maxExpiry));
            announceExpiry = expiry != asked;
        } else {
            expiry = clean ? 0 : Math.max(0, maxExpiry);
        }
        boolean persistent = expiry > 0;
        long nowEpoch = nowEpochMs();
        Sessions.Session existing = sessions.get(clientId, nowEpoch);
        if (existing != null && existing.owner != null && existing.owner != gobj && !existing.owner.isDestroyed()) {
            existing.owner.send(EV_TAKEN_OVER, null, gobj);
            existing = sessions.get(clientId, nowEpoch);
        }
        if (existing != null && clean) {
            sessions.remove(existing);
            existing = null;
        }
        boolean present = existing != null;
        Sessions.Session s = existing;
        if (s == null) {
            s = sessions.create(clientId, persistent, expiry, gobj.readLong(MAX_SESSIONS), nowEpoch);
            if (s == null) {
                refuse(v5 ? MqttConnectReturnCode.CONNECTION_REFUSED_QUOTA_EXCEEDED
                        : MqttConnectReturnCode.CONNECTION_REFUSED_SERVER_UNAVAILABLE, clientId,
                        "session store full (max_sessions, every session connected)");
                return;
            }
        } else {
            sessions.setExpiry(s, persistent, expiry);
        }
        s.owner = gobj;
        s.ownerEpoch = epoch;
        s.disconnectedAt = -1;
        session = s;
        if (vh.isWillFlag()) {
            willTopic = pl.willTopic();
            byte[] w = pl.willMessageInBytes();
            willPayload = w == null ? new byte[0] : w;
        }
        keepAliveMs = ka * 1000L;
        gobj.setLong(KEEPALIVE, ka);
        gobj.set(CLIENT_ID, clientId);
        gobj.set(IN_SESSION, true);
        long maxAlias = v5 ? gobj.readLong(MAX_TOPIC_ALIAS) : 0;
        aliases = maxAlias > 0 ? new String[(int) Math.min(maxAlias, 65535) + 1] : null;

        MqttProperties ack = MqttProperties.NO_PROPERTIES;
        if (v5) {
            ack = new MqttProperties();
            ack.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.RECEIVE_MAXIMUM.value(), receiveMaximum()));
            if (maxQos < 2) ack.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.MAXIMUM_QOS.value(), (int) maxQos));
            ack.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.MAXIMUM_PACKET_SIZE.value(), framer.maxPacketSize()));
            ack.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.TOPIC_ALIAS_MAXIMUM.value(), (int) maxAlias));
            ack.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.WILDCARD_SUBSCRIPTION_AVAILABLE.value(), 0));
            ack.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.SUBSCRIPTION_IDENTIFIER_AVAILABLE.value(), 0));
            ack.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.SHARED_SUBSCRIPTION_AVAILABLE.value(), 0));
            if (announceKa) ack.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.SERVER_KEEP_ALIVE.value(), ka));
            if (announceExpiry) ack.add(new MqttProperties.IntegerProperty(MqttProperties.MqttPropertyType.SESSION_EXPIRY_INTERVAL.value(), (int) expiry));
            if (assigned != null) ack.add(new MqttProperties.StringProperty(MqttProperties.MqttPropertyType.ASSIGNED_CLIENT_IDENTIFIER.value(), assigned));
        }
        clearTimer();
        handshakeTimer.cancel();
        gobj.changeState(St.ST_CONNECTED);
        tx(connAck(MqttConnectReturnCode.CONNECTION_ACCEPTED, present, ack));
        if (keepAliveMs > 0) armKeepAlive(keepAliveMs * 3 / 2);
        if (opened) return;   // still open for the acks of an earlier connection: the channel stays as it is
        opened = true;
        ObjectNode open = Kw.create();
        open.put(Kw.PEERNAME, peer);
        open.put(Kw.SOCKNAME, sock);
        open.put("mqtt_client_id", clientId);
        if (vh.hasUserName() && pl.userName() != null) open.put("mqtt_username", pl.userName());
        gobj.publish(Ev.EV_ON_OPEN, open);
    }

    /**
     * A connected client's PUBLISH in its plain form, read by {@link FastPublish} without the codec (the packet every
     * message is); false, nothing consumed, for anything else.
     *
     * @param packet one whole packet (owned: consumed when this answers true)
     */
    private boolean publishFast(ByteBuf packet) {
        if (!fastPublish.read(packet, version == 5)) return false;
        if (gobj.isTraced(TRACE_TRAFFIC)) {
            Glog.info(gobj, "packet received", "type", MqttMessageType.PUBLISH.name(), "bytes", packet.readableBytes());
        }
        packet.readerIndex(fastPublish.payloadStart);
        onPublish(fastPublish.topic, fastPublish.qos, fastPublish.packetId, MqttProperties.NO_PROPERTIES, packet);
        return true;
    }

    /**
     * A PUBLISH of a connected client ({@code id} -1 at QoS 0; {@code properties} those of 5.0, else none).
     *
     * @param payload its payload (owned: released here)
     */
    private void onPublish(String topic, int qos, int id, MqttProperties properties, ByteBuf payload) {
        try {
            if (qos > gobj.readLong(MAX_QOS)) {
                protocolError("PUBLISH QoS " + qos + " over max_qos", RC_QOS_NOT_SUPPORTED);
                return;
            }
            if (version == 5) {
                MqttProperties.MqttProperty<?> a = properties
                        .getProperty(MqttProperties.MqttPropertyType.TOPIC_ALIAS.value());
                if (a != null) {
                    int alias = (Integer) a.value();
                    if (aliases == null || alias <= 0 || alias >= aliases.length) {
                        protocolError("topic alias " + alias + " over max_topic_alias", RC_TOPIC_ALIAS_INVALID);
                        return;
                    }
                    if (topic.isEmpty()) {
                        topic = aliases[alias];
                        if (topic == null) {
                            protocolError("topic alias " + alias + " used before it was set", RC_PROTOCOL_ERROR);
                            return;
                        }
                    } else {
                        aliases[alias] = topic;
                    }
                }
            }
            if (topic.isEmpty()) {
                protocolError("PUBLISH without a topic", version == 5 ? RC_TOPIC_NAME_INVALID : RC_PROTOCOL_ERROR);
                return;
            }
            if (!topics.allows(topic)) {
                refusePublish(topic, qos, id);
                return;
            }
            if (qos == 0) {
                gobj.inc(PUBLISH_QOS0);
                up(topic, payload, null);
                return;
            }
            if (pending.containsKey(id)) {
                // the same id while its ack is on the way: the answer will come with the ack
                if (qos == 2) gobj.inc(QOS2_DUPLICATES);
                return;
            }
            if (qos == 2) {
                Byte st = session.qos2.get(id);
                if (st != null) {
                    // taken before, by this session: answered, not queued twice
                    gobj.inc(QOS2_DUPLICATES);
                    if (st == Sessions.RECEIVED && session.unconfirmed.contains(id)) {
                        session.waiting.add(id);   // its ack is still on the way to a closed connection
                        return;
                    }
                    if (st == Sessions.RECEIVED) sessions.putQos2(session, id, Sessions.DURABLE);   // an orphan
                    gobj.inc(ACKS);
                    txAck(MqttMessageType.PUBREC, id);
                    return;
                }
                String intent = session.intents.get(id);
                if (intent != null && queuedBeforeTheRestart(intent, topic, payload)) {
                    // a kill came after the queue took it and before its id was noted: answered, not queued twice
                    gobj.inc(QOS2_DUPLICATES);
                    sessions.putQos2(session, id, Sessions.DURABLE);
                    gobj.inc(ACKS);
                    txAck(MqttMessageType.PUBREC, id);
                    return;
                }
            }
            int max = receiveMaximum();
            int unacked = pending.size() + session.qos2.size() - pendingQos2;
            if (version == 5 && unacked >= max) {
                protocolError("more unacknowledged QoS 1/2 PUBLISHes than the Receive Maximum " + max,
                        RC_RECEIVE_MAX_EXCEEDED);
                return;
            }
            gobj.inc(qos == 1 ? PUBLISH_QOS1 : PUBLISH_QOS2);
            long s = ++seq;
            pending.put(id, (s << 2) | qos);
            if (qos == 2) pendingQos2++;
            gobj.setLong(INFLIGHT, pending.size());
            IngestJson.Md md = new IngestJson.Md();
            md.seq = s;
            md.t = nowEpochMs() / 1000;
            md.conn = epoch;
            md.packetId = id;
            md.qos = qos;
            Sessions.Session own = session;
            // Where the queues stand goes to the session store first: a kill between the queue taking the message
            // and the id being noted below leaves this note, and the resend after the restart finds the message in
            // the row after them (queuedBeforeTheRestart) rather than queueing it twice.
            if (qos == 2) noteIntent(own, id);
            up(topic, payload, md);
            if (qos == 2) {
                Long still = own == session ? pending.get(id) : null;
                boolean taken = still != null && (still >>> 2) == s;
                // The queue took it (no refusal came back inside the send): from now on a resend is not queued. The
                // queue may hold its record back until the end of the loop's turn: it goes to the file first, so
                // that a crash never leaves the id noted without the record (a failed write: not noted, and the
                // note of the positions stays, for the resend after a crash to look the record up).
                if (taken && recordsWritten()) sessions.putQos2(session, id, Sessions.RECEIVED);
                else if (!taken) sessions.dropIntent(own, id);
            }
            if (pending.size() >= max) updateBottomPause();
        } finally {
            payload.release();
        }
    }

    /** Notes in the session store where the queues stand before a QoS 2 message goes up (see {@link Sessions#intend}). */
    private void noteIntent(Sessions.Session s, int id) {
        TrQueueFactory f = s.persistent ? queues.get() : null;
        if (f != null) sessions.intend(s, id, f.positions());
    }

    /**
     * Whether the message of this QoS 2 resend is in a queue already, written by the run before a restart in the rows
     * after the positions noted before it went up: the kill came after the queue took it and before its id was
     * noted. Compared as JSON without metadata keys (the ack data the relay drops, the keys the queue drops). Said in the log either way: this happens once per kill at most.
     */
    private boolean queuedBeforeTheRestart(String positions, String topic, ByteBuf payload) {
        TrQueueFactory f = queues.get();
        List<byte[]> records = f == null ? List.of() : f.earlierRecordsAfter(positions, RECORDS_AFTER_POSITIONS);
        boolean found = false;
        if (!records.isEmpty()) {
            ByteBuf msg = ingest.build(alloc, gobj.read(TOPIC_KEY), gobj.read(PAYLOAD_KEY), topic, payload, null, false);
            ObjectNode sent;
            try {
                sent = withoutMetadata(msg);
            } finally {
                msg.release();
            }
            for (int i = 0; i < records.size() && sent != null && !found; i++) {
                found = sent.equals(withoutMetadata(io.netty.buffer.Unpooled.wrappedBuffer(records.get(i))));
            }
        }
        Glog.info(gobj, found
                        ? "MQTT QoS 2 resend after a restart: the queue took its message before the kill, answered, not queued again"
                        : "MQTT QoS 2 resend after a restart: its message is not in the queues, queued now",
                "peername", peer, "client_id", session.clientId, "records_looked_at", records.size());
        return found;
    }

    /** The JSON object in {@code json} without its metadata keys ({@code Kw.withoutMetadata}); null when it is not one. */
    private static ObjectNode withoutMetadata(ByteBuf json) {
        try {
            return Kw.withoutMetadata(Kw.parse(json));
        } catch (java.io.IOException notAnObject) {
            return null;
        }
    }

    /** What the queues took on this thread is in their files (a crash of the process keeps it); false: not yet. */
    private boolean recordsWritten() {
        TrQueueFactory f = queues.get();
        return f == null || f.writeHeldBack();
    }

    /** A PUBLISH to a topic the config does not allow: 5.0 says so in the ack, 3.1.1 can only close. */
    private void refusePublish(String topic, int qos, int id) {
        if (version != 5) {
            Glog.error(gobj, "MQTT PUBLISH to a topic not allowed (topics): closing", "msgset", "protocol_error",
                    "peername", peer, "client_id", session.clientId, "topic", topic);
            gobj.inc(PROTOCOL_ERRORS);
            close(-1);
            return;
        }
        if (!saidTopicRefused) {
            saidTopicRefused = true;
            Glog.warn(gobj, "MQTT PUBLISH to a topic not allowed (topics): refused (said once per connection)",
                    "peername", peer, "client_id", session.clientId, "topic", topic);
        }
        if (qos == 1) tx(pubReply(MqttMessageType.PUBACK, id, RC_NOT_AUTHORIZED));
        else if (qos == 2) tx(pubReply(MqttMessageType.PUBREC, id, RC_NOT_AUTHORIZED));
    }

    /** The message goes up: the JSON of the payload (or its wrapping) with the topic, and the ack data. */
    private void up(String topic, ByteBuf payload, IngestJson.Md md) {
        ByteBuf msg = ingest.build(alloc, gobj.read(TOPIC_KEY), gobj.read(PAYLOAD_KEY), topic, payload, md, false);
        ObjectNode kw = Kw.withGbuffer(msg);
        if (inputThreshold.handedUp(msg.readableBytes(), gobj.readLong(INPUT_THRESHOLD_MSGS),
                gobj.readLong(INPUT_THRESHOLD_BYTES))) {
            kw.put(Kw.IS_BLOCKED, true);
            updateBottomPause();
        }
        gobj.publish(Ev.EV_ON_MESSAGE, kw);
    }

    private void publishWill() {
        gobj.inc(WILLS);
        ByteBuf p = io.netty.buffer.Unpooled.wrappedBuffer(willPayload);
        ByteBuf msg = ingest.build(alloc, gobj.read(TOPIC_KEY), gobj.read(PAYLOAD_KEY), willTopic, p, null, true);
        willTopic = null;
        willPayload = null;
        gobj.publish(Ev.EV_ON_MESSAGE, Kw.withGbuffer(msg));
    }

    private void onPubrel(int id) {
        // an id whose A or D line a kill took (they wait for the next line written) still has its I line
        boolean known = session.qos2.containsKey(id) || session.intents.containsKey(id);
        sessions.releaseQos2(session, id);
        if (known || version != 5) txAck(MqttMessageType.PUBCOMP, id);
        else tx(pubReply(MqttMessageType.PUBCOMP, id, RC_PACKET_ID_NOT_FOUND));
    }

    private void onSubscribe(MqttSubscribeMessage m) {
        int n = m.payload().topicSubscriptions().size();
        int[] codes = new int[n];
        // an ingest has nothing to deliver: 5.0 says "not authorized", 3.1.1 has only "failure" (0x80)
        java.util.Arrays.fill(codes, version == 5 ? (RC_NOT_AUTHORIZED & 0xff) : 0x80);
        int id = m.idAndPropertiesVariableHeader().messageId();
        tx(new MqttSubAckMessage(new MqttFixedHeader(MqttMessageType.SUBACK, false, MqttQoS.AT_MOST_ONCE, false, 0),
                new MqttMessageIdAndPropertiesVariableHeader(id, MqttProperties.NO_PROPERTIES),
                new MqttSubAckPayload(codes)));
    }

    private void onUnsubscribe(MqttUnsubscribeMessage m) {
        int n = m.payload().topics().size();
        int id = m.idAndPropertiesVariableHeader().messageId();
        MqttUnsubAckPayload pl = null;
        if (version == 5) {
            short[] codes = new short[n];
            java.util.Arrays.fill(codes, RC_NO_SUBSCRIPTION_EXISTED);
            pl = new MqttUnsubAckPayload(codes);
        }
        tx(new MqttUnsubAckMessage(new MqttFixedHeader(MqttMessageType.UNSUBACK, false, MqttQoS.AT_MOST_ONCE, false, 0),
                new MqttMessageIdAndPropertiesVariableHeader(id, MqttProperties.NO_PROPERTIES), pl));
    }

    private void onDisconnect(MqttMessage m) {
        int reason = 0;
        if (version == 5 && m.variableHeader() instanceof MqttReasonCodeAndPropertiesVariableHeader) {
            MqttReasonCodeAndPropertiesVariableHeader h = (MqttReasonCodeAndPropertiesVariableHeader) m.variableHeader();
            reason = h.reasonCode() & 0xff;
            MqttProperties.MqttProperty<?> e = h.properties()
                    .getProperty(MqttProperties.MqttPropertyType.SESSION_EXPIRY_INTERVAL.value());
            if (e != null && session != null) {
                long asked = ((Integer) e.value()) & 0xFFFFFFFFL;
                long expiry = Math.min(asked, Math.max(0, gobj.readLong(MAX_SESSION_EXPIRY_INTERVAL)));
                sessions.setExpiry(session, expiry > 0, expiry);
            }
        }
        if (reason != RC_DISCONNECT_WITH_WILL) {
            willTopic = null;   // a normal DISCONNECT discards the Will
            willPayload = null;
        }
        close(-1);
    }

    // The connection: limits, answers, closing, flow control, timers.

    private int receiveMaximum() {
        return (int) Math.max(1, Math.min(65535, gobj.readLong(RECEIVE_MAXIMUM)));
    }

    private void refuse(MqttConnectReturnCode rc, String clientId, String why) {
        gobj.inc(CONNECTS_REFUSED);
        Glog.warn(gobj, "MQTT CONNECT refused", "msgset", "protocol_error", "peername", peer, "client_id", clientId,
                "reason", rc.name(), "why", why);
        tx(connAck(rc, false, MqttProperties.NO_PROPERTIES));
        close(-1);
    }

    /** Null when the credentials pass; else why not ("no username..." when none was given). */
    private String authenticate(MqttConnectVariableHeader vh, MqttConnectPayload pl) {
        JsonNode users = gobj.read(USERS);
        if (users == null || !users.isObject()) return null;
        if (!vh.hasUserName() || pl.userName() == null) return "no username given and users are configured";
        JsonNode want = users.get(pl.userName());
        byte[] given = vh.hasPassword() && pl.passwordInBytes() != null ? pl.passwordInBytes() : new byte[0];
        if (want == null || !want.isTextual()) return "bad username or password";
        String w = want.asText();
        boolean ok;
        if (w.startsWith("sha256:")) {
            ok = MessageDigest.isEqual(hex(sha256(given)).getBytes(StandardCharsets.US_ASCII),
                    w.substring(7).toLowerCase(java.util.Locale.ROOT).getBytes(StandardCharsets.US_ASCII));
        } else {
            ok = MessageDigest.isEqual(w.getBytes(StandardCharsets.UTF_8), given);
        }
        return ok ? null : "bad username or password";
    }

    private static void checkUsers(JsonNode users) {
        if (users == null || users.isNull()) return;
        if (!users.isObject()) throw new IllegalArgumentException("users must be a dict {name: password}");
        for (Iterator<Map.Entry<String, JsonNode>> it = users.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            if (!e.getValue().isTextual()) throw new IllegalArgumentException("users." + e.getKey() + " must be a string");
        }
    }

    private static byte[] sha256(byte[] b) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(b);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder(b.length * 2);
        for (byte x : b) sb.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        return sb.toString();
    }

    private void malformed(String what, int type) {
        Glog.error(gobj, "Malformed MQTT packet: closing", "msgset", "protocol_error", "peername", peer,
                "packet_type", type, "error", what);
        gobj.inc(PROTOCOL_ERRORS);
        close(RC_MALFORMED);
    }

    private void protocolError(String what, byte reason) {
        Glog.error(gobj, "MQTT protocol error: closing", "msgset", "protocol_error", "peername", peer,
                "client_id", session == null ? "" : session.clientId, "error", what);
        gobj.inc(PROTOCOL_ERRORS);
        close(reason);
    }

    /**
     * The success PUBACK / PUBREC / PUBCOMP, written by hand: four bytes, the same on 3.1.1 and 5.0 (5.0 leaves
     * out a reason code 0 without properties). The hot path of every QoS 1/2 message; the codec would build a
     * message object and run it through a pipeline for them. Everything else goes through Netty's encoder.
     */
    private void txAck(MqttMessageType type, int id) {
        GObj bottom = gobj.bottom();
        if (bottom == null || codec == null) return;
        ByteBuf out = Gbuffers.allocateHeap(4);   // C_TCP copies it into its batch: no pool, no leak sampling
        out.writeByte(type.value() << 4).writeByte(2).writeShort(id);
        if (gobj.isTraced(TRACE_TRAFFIC)) Glog.info(gobj, "packet sent", "type", type.name(), "bytes", 4);
        bottom.send(Ev.EV_TX_DATA, Kw.withGbuffer(out), gobj);
    }

    private static MqttMessage pubReply(MqttMessageType type, int id, int reason) {
        return new MqttMessage(new MqttFixedHeader(type, false, MqttQoS.AT_MOST_ONCE, false, 0),
                new MqttPubReplyMessageVariableHeader(id, (byte) reason, MqttProperties.NO_PROPERTIES));
    }

    private static MqttConnAckMessage connAck(MqttConnectReturnCode rc, boolean present, MqttProperties props) {
        return new MqttConnAckMessage(new MqttFixedHeader(MqttMessageType.CONNACK, false, MqttQoS.AT_MOST_ONCE, false, 0),
                new MqttConnAckVariableHeader(rc, present, props));
    }

    private void tx(MqttMessage m) {
        GObj bottom = gobj.bottom();
        if (bottom == null || codec == null) {
            ReferenceCountUtil.release(m);
            return;
        }
        ByteBuf out;
        try {
            out = codec.encode(m);
        } catch (RuntimeException e) {
            Glog.error(gobj, "Cannot encode MQTT packet", "msgset", "internal_error", "error", String.valueOf(e));
            return;
        }
        if (gobj.isTraced(TRACE_TRAFFIC)) {
            Glog.info(gobj, "packet sent", "type", String.valueOf(m.fixedHeader().messageType()), "bytes", out.readableBytes());
        }
        bottom.send(Ev.EV_TX_DATA, Kw.withGbuffer(out), gobj);
    }

    /**
     * Closes the connection: 5.0 sessions hear why first (a DISCONNECT with {@code reason}, a reason code byte,
     * unless it is -1),
     * then the transport is dropped; nothing more is read.
     */
    private void close(int reason) {
        // reason codes are bytes (0x80 and up are negative as Java bytes); -1 (0xff) is no code at all
        if (reason != -1 && version == 5 && gobj.inState(St.ST_CONNECTED)) {
            tx(new MqttMessage(new MqttFixedHeader(MqttMessageType.DISCONNECT, false, MqttQoS.AT_MOST_ONCE, false, 0),
                    new MqttReasonCodeAndPropertiesVariableHeader((byte) reason, MqttProperties.NO_PROPERTIES)));
        }
        gobj.changeState(St.ST_DISCONNECTED);
        retire();
        releaseHeld();
        keepAliveTimer.cancel();
        payloadTimer.cancel();
        closeTimer.arm(gobj.readLong(TIMEOUT_CLOSE));
        dropBottom();
    }

    private void dropBottom() {
        ProtocolBottom.drop(gobj, false);
    }

    /** What a connection leaves: its session goes back to the store, its buffers are released. */
    private void endConnection() {
        clearTimer();   // payload or close timer of the connection that ended
        handshakeTimer.cancel();
        if (session != null && session.owner == gobj) sessions.disconnected(session, nowEpochMs());
        session = null;
        pending.clear();
        pendingQos2 = 0;
        framer.reset();
        releaseHeld();
        if (codec != null) {
            codec.close();
            codec = null;
        }
        inputThreshold.reset();
        pausedByUpper = false;
        bottomPaused = false;
        keepAliveTimer.cancel();
        keepAliveMs = 0;
        willTopic = null;
        willPayload = null;
        aliases = null;
        version = 0;
        saidNotIngest = false;
        saidTopicRefused = false;
    }

    private boolean inputBlocked() {
        return inputThreshold.isBlocked() || pausedByUpper || pending.size() >= receiveMaximum();
    }

    /** Tells the bottom to stop or resume reading when the blocked state changed. */
    private void updateBottomPause() {
        boolean want = inputBlocked();
        gobj.set(INPUT_BLOCKED, want);
        if (want == bottomPaused) return;
        bottomPaused = want;
        ProtocolBottom.pauseReads(gobj, want);
    }

    private void releaseHeld() {
        for (ByteBuf b; (b = held.poll()) != null; ) b.release();
    }

    private long nowMs() {
        return gobj.yuno().clock().monotonicMillis();
    }

    private long nowEpochMs() {
        return gobj.yuno().clock().epochMillis();
    }

    /** The payload and close timers of a connection. */
    private void clearTimer() {
        payloadTimer.cancel();
        closeTimer.cancel();
    }

    private Timer timer(String which) {
        switch (which) {
            case T_HANDSHAKE: return handshakeTimer;
            case T_KEEPALIVE: return keepAliveTimer;
            case T_PAYLOAD: return payloadTimer;
            case T_CLOSE: return closeTimer;
            case T_LINGER: return lingerTimer;
            default: return null;
        }
    }

    private Timer[] timers() {
        return new Timer[] {handshakeTimer, keepAliveTimer, payloadTimer, closeTimer, lingerTimer};
    }

    private static ObjectNode timerKw(String which) {
        ObjectNode kw = Kw.create();
        kw.put(TIMER, which);
        return kw;
    }

    private void armHandshake() {
        handshakeTimer.arm(gobj.readLong(TIMEOUT_HANDSHAKE));
    }

    private void armKeepAlive(long ms) {
        keepAliveTimer.arm(ms);
    }
}
