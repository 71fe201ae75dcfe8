// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.Kw;
import io.gatehouse.api.St;

/**
 * Minimal stand-ins for the gclasses above the transport (the real ones live in other bundles, which this
 * bundle must not depend on): a C_CHANNEL that relays its bottom's publications up and sends down, and a
 * C_TEST_GATE that republishes what its channels publish, tagged with {@code __temp__.channel}, and sends to
 * the channel named in {@code __temp__.channel} (or the first one).
 */
final class TestGClasses {
    private TestGClasses() {}

    static final class Channel implements GObjBehavior {
        final GObj gobj;

        Channel(GObj g) {
            this.gobj = g;
        }

        private int up(String ev, ObjectNode kw, GObj src) {
            return gobj.publish(ev, kw);
        }

        private int down(String ev, ObjectNode kw, GObj src) {
            if (gobj.bottom() == null) {
                Kw.release(kw);
                return -1;
            }
            return gobj.bottom().send(ev, kw, gobj);
        }

        static final GClassSpec<Channel> SPEC = GClassSpec.builder("C_CHANNEL", Channel.class)
            .description("test stand-in C_CHANNEL (Channel)")
                .fsm(Fsm.<Channel>builder()
                        .state(St.ST_IDLE)
                        .on(Ev.EV_ON_OPEN, Channel::up)
                        .on(Ev.EV_ON_CLOSE, Channel::up)
                        .on(Ev.EV_ON_MESSAGE, Channel::up)
                        .on(Ev.EV_SEND_MESSAGE, Channel::down)
                        .on(Ev.EV_DROP, Channel::down)
                        .on(Ev.EV_PAUSE_INPUT, Channel::down)
                        .on(Ev.EV_RESUME_INPUT, Channel::down)
                        .publishes(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE)
                        .build())
                .factory(Channel::new)
                .build();
    }

    static final class Gate implements GObjBehavior {
        final GObj gobj;

        Gate(GObj g) {
            this.gobj = g;
        }

        private int up(String ev, ObjectNode kw, GObj src) {
            ObjectNode temp = kw.putObject(Kw.TEMP);
            temp.put("channel", src.name());
            return gobj.publish(ev, kw);
        }

        private int down(String ev, ObjectNode kw, GObj src) {
            String ch = Kw.getString(kw, Kw.TEMP + "`channel", "");
            for (GObj c : gobj.children()) {
                if (!"C_CHANNEL".equals(c.gclassName())) continue;
                if (ch.isEmpty() || ch.equals(c.name())) {
                    kw.remove(Kw.TEMP);
                    return c.send(ev, kw, gobj);
                }
            }
            Kw.release(kw);
            return -1;
        }

        static final GClassSpec<Gate> SPEC = GClassSpec.builder("C_TEST_GATE", Gate.class)
            .description("test stand-in C_TEST_GATE (Gate)")
                .fsm(Fsm.<Gate>builder()
                        .state(St.ST_IDLE)
                        .on(Ev.EV_ON_OPEN, Gate::up)
                        .on(Ev.EV_ON_CLOSE, Gate::up)
                        .on(Ev.EV_ON_MESSAGE, Gate::up)
                        .on(Ev.EV_SEND_MESSAGE, Gate::down)
                        .on(Ev.EV_DROP, Gate::down)
                        .on(Ev.EV_RESUME_INPUT, Gate::down)
                        .publishes(Ev.EV_ON_OPEN, Ev.EV_ON_CLOSE, Ev.EV_ON_MESSAGE)
                        .build())
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(Gate::new)
                .build();
    }
}
