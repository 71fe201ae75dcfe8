// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import org.osgi.service.component.annotations.Component;

/** The C_MQIOGATE gclass: routes each message to one of its C_QIOGATE children, or to all. Behaviour: {@link MqIoGate}. */
@Component(service = GClass.class, property = GClass.PROP_NAME + "=" + GClassNames.C_MQIOGATE)
public final class MqIoGateGClass implements GClass {

    public static final GClassSpec<MqIoGate> SPEC = GClassSpec.builder(GClassNames.C_MQIOGATE, MqIoGate.class)
            .description("Sends each message to one of its C_QIOGATE children (lastdigits, consistent) or to all")
            .attrs(MqIoGate.ATTRS)
            .fsm(MqIoGate.FSM)
            .commands(MqIoGate.COMMANDS)
            .traceLevels(MqIoGate.TRACE_MESSAGES)
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(MqIoGate::new)
            .build();

    @Override
    public GClassSpec<?> spec() {
        return SPEC;
    }
}
