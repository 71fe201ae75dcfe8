// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import com.fasterxml.jackson.databind.JsonNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.GObj;
import io.gatehouse.api.Kw;

/**
 * What a protocol gclass (C_PROT_TCP4H, C_PROT_MQTT, C_PROT_HTTP_SR) does with the transport below it, written
 * once: ask it to close the connection, stop or resume its reads, forget it when it stopped, read its peer.
 * The FSM actions stay in each gclass's table; their bodies call these.
 */
public final class ProtocolBottom {
    private ProtocolBottom() {}

    /**
     * Asks the bottom to close its connection (EV_DROP), when it takes that event. A bottom that is not running is
     * left alone unless {@code evenIfStopped}: a server-side connection that stopped is gone already, while a
     * client-side C_TCP takes EV_DROP to cancel its reconnect.
     */
    public static void drop(GObj gobj, boolean evenIfStopped) {
        GObj bottom = gobj.bottom();
        if (bottom == null || (!evenIfStopped && !bottom.isRunning())) return;
        if (bottom.acceptsEvent(Ev.EV_DROP)) bottom.send(Ev.EV_DROP, null, gobj);
    }

    /** Stops ({@code pause}) or resumes the bottom's reads, when it takes EV_PAUSE_INPUT / EV_RESUME_INPUT. */
    public static void pauseReads(GObj gobj, boolean pause) {
        GObj bottom = gobj.bottom();
        String ev = pause ? Ev.EV_PAUSE_INPUT : Ev.EV_RESUME_INPUT;
        if (bottom != null && bottom.acceptsEvent(ev)) bottom.send(ev, null, gobj);
    }

    /**
     * EV_STOPPED from {@code src}: a volatile bottom (the clisrv C_TCP_S made for one accepted connection) is this
     * gobj's bottom no more and is destroyed, after the current event (it is still in the middle of stopping).
     */
    public static void stopped(GObj gobj, GObj src) {
        if (src != null && src.isVolatile() && src == gobj.bottom()) {
            gobj.setBottom(null);
            gobj.yuno().execute(src::destroy);
        }
    }

    /** The bottom's {@code peername} attribute, or "" without a bottom. */
    public static String peername(GObj gobj) {
        GObj bottom = gobj.bottom();
        JsonNode p = bottom == null ? null : bottom.readAttr(Kw.PEERNAME);
        return p == null ? "" : p.asText("");
    }
}
