// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import org.osgi.service.component.annotations.Component;

/** The C_PROT_TCP4H gclass: 4-byte big-endian length-prefixed messages. Behaviour: {@link ProtTcp4h}. */
@Component(service = GClass.class, property = GClass.PROP_NAME + "=" + GClassNames.C_PROT_TCP4H)
public final class ProtTcp4hGClass implements GClass {

    static final GClassSpec<ProtTcp4h> SPEC = GClassSpec.builder(GClassNames.C_PROT_TCP4H, ProtTcp4h.class)
            .description("4-byte big-endian length-prefixed messages (header = payload length + 4)")
            .attrs(ProtTcp4h.ATTRS)
            .fsm(ProtTcp4h.FSM)
            .traceLevels("traffic")
            .acceptUnusedYunetaKeys("cert_pem", "user_data", "user_data2")
            .factory(ProtTcp4h::new)
            .build();

    @Override
    public GClassSpec<?> spec() {
        return SPEC;
    }
}
