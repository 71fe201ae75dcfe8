// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

/**
 * Event names shared by every gclass. The constant's value is the Yuneta identifier, so it is also the
 * trace and wire name. Events are compared by name ({@link String#equals}), never by identity.
 */
public final class Ev {
    private Ev() {}

    // --- Channel input (sent down) ---
    public static final String EV_SEND_MESSAGE = "EV_SEND_MESSAGE";
    public static final String EV_SEND_IEV = "EV_SEND_IEV";
    public static final String EV_DROP = "EV_DROP";

    // --- Publications (going up) ---
    public static final String EV_ON_OPEN = "EV_ON_OPEN";
    public static final String EV_ON_CLOSE = "EV_ON_CLOSE";
    public static final String EV_ON_MESSAGE = "EV_ON_MESSAGE";
    public static final String EV_ON_COMMAND = "EV_ON_COMMAND";
    public static final String EV_ON_IEV_MESSAGE = "EV_ON_IEV_MESSAGE";
    public static final String EV_ON_ID = "EV_ON_ID";
    public static final String EV_ON_ID_NAK = "EV_ON_ID_NAK";
    /**
     * Sent back to the sender of an EV_SEND_MESSAGE whose kw carried a {@link Kw#DURABLE} dict, once the message is
     * stored durably, by a gclass that declares {@link GClassSpec.Builder#confirmsDurability()}; the kw is that
     * dict. Never sent for a message that was refused or could not be stored.
     */
    public static final String EV_ON_DURABLE = "EV_ON_DURABLE";
    /**
     * Sent back to the sender of EV_SEND_MESSAGEs whose kw carried a {@link Kw#DURABLE_TOKEN}, by a gclass that
     * declares {@link GClassSpec.Builder#answersDurableTokens()}: one event for every token of that sender one
     * group commit made durable, in the order the messages were sent. The kw holds {@link Kw#TOKENS} (a reference
     * to a {@code long[]}), {@link Kw#COUNT} (how many of its first entries are tokens) and {@link Kw#RESULT}: 0,
     * or negative when those messages will never be confirmed (their queue closed, or was backed up, before they
     * were known durable), so the sender answers its own producers with a nack and forgets the tokens.
     *
     * @since 2.2
     */
    public static final String EV_ON_DURABLE_TOKENS = "EV_ON_DURABLE_TOKENS";

    // --- Tube traffic (transport <-> protocol) ---
    public static final String EV_CONNECT = "EV_CONNECT";
    public static final String EV_CONNECTED = "EV_CONNECTED";
    public static final String EV_DISCONNECTED = "EV_DISCONNECTED";
    public static final String EV_RX_DATA = "EV_RX_DATA";
    public static final String EV_TX_DATA = "EV_TX_DATA";
    public static final String EV_TX_READY = "EV_TX_READY";

    // --- Flow control (seeds/001 input thresholds) ---
    /** Sent down to a transport: stop reading the socket. */
    public static final String EV_PAUSE_INPUT = "EV_PAUSE_INPUT";
    /** Sent down to a transport: resume reading the socket (the consumer "unblocks" the channel). */
    public static final String EV_RESUME_INPUT = "EV_RESUME_INPUT";

    // --- System ---
    public static final String EV_TIMEOUT = "EV_TIMEOUT";
    public static final String EV_TIMEOUT_PERIODIC = "EV_TIMEOUT_PERIODIC";
    public static final String EV_STOPPED = "EV_STOPPED";
}
