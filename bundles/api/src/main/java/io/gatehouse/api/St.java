// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

/** State names used by more than one gclass. Gclass-private states are plain strings in the gclass. */
public final class St {
    private St() {}

    public static final String ST_IDLE = "ST_IDLE";
    public static final String ST_STOPPED = "ST_STOPPED";
    public static final String ST_WAIT_STOPPED = "ST_WAIT_STOPPED";
    public static final String ST_CLOSED = "ST_CLOSED";
    public static final String ST_OPENED = "ST_OPENED";
    public static final String ST_DISCONNECTED = "ST_DISCONNECTED";
    public static final String ST_WAIT_CONNECTED = "ST_WAIT_CONNECTED";
    public static final String ST_WAIT_HANDSHAKE = "ST_WAIT_HANDSHAKE";
    public static final String ST_CONNECTED = "ST_CONNECTED";
}
