// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;

/**
 * A C_CHANNEL stand-in for the tests of bundles below the channel (transports, protocols), which do not depend on
 * bundles/channel: it publishes what its bottom publishes (EV_ON_OPEN, EV_ON_CLOSE, EV_ON_MESSAGE) as it came and
 * sends down what it is sent (EV_SEND_MESSAGE, EV_DROP, EV_PAUSE_INPUT, EV_RESUME_INPUT). It has the real gclass's
 * name, so C_TCP_S binds a connection to each one as it does in a gateway; never register it beside the real one.
 */
public final class StubChannel implements GObjBehavior {
    public static final String GCLASS = GClassNames.C_CHANNEL;

    public static final GClassSpec<StubChannel> SPEC = GClassSpec.builder(GCLASS, StubChannel.class)
            .description("A C_CHANNEL stand-in: relays its bottom's publications up and what it is sent down (tests)")
            .fsm(Fsm.<StubChannel>builder()
                    .state(St.ST_IDLE)
                    .on(Ev.EV_ON_OPEN, StubChannel::up)
                    .on(Ev.EV_ON_CLOSE, StubChannel::up)
                    .on(Ev.EV_ON_MESSAGE, StubChannel::up)
                    .on(Ev.EV_SEND_MESSAGE, StubChannel::down)
                    .on(Ev.EV_DROP, StubChannel::down)
                    .on(Ev.EV_PAUSE_INPUT, StubChannel::down)
                    .on(Ev.EV_RESUME_INPUT, StubChannel::down)
                    .publishes(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE)
                    .build())
            .factory(StubChannel::new)
            .build();

    private final GObj gobj;

    private StubChannel(GObj gobj) {
        this.gobj = gobj;
    }

    private int up(String event, ObjectNode kw, GObj src) {
        return gobj.publish(event, kw);
    }

    private int down(String event, ObjectNode kw, GObj src) {
        if (gobj.bottom() == null) {
            Kw.release(kw);
            return -1;
        }
        return gobj.bottom().send(event, kw, gobj);
    }
}
