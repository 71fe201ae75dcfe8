// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import org.osgi.service.component.annotations.Component;

/** The C_TCP_S gclass: TCP/TLS listener binding connections to channels. Behaviour: {@link TcpS}. */
@Component(service = GClass.class, property = GClass.PROP_NAME + "=" + GClassNames.C_TCP_S)
public final class TcpSGClass implements GClass {

    static final GClassSpec<TcpS> SPEC = GClassSpec.builder(GClassNames.C_TCP_S, TcpS.class)
            .description("TCP/TLS listener: binds accepted connections to C_CHANNEL siblings (or creates them)")
            .attrs(TcpS.ATTRS)
            .fsm(TcpS.FSM)
            .commands(TcpS.CMD_RELOAD_CERTS, TcpS.CMD_VIEW_CERT)
            .traceLevels("listen", "not-accepted", "tls")
            .acceptUnusedYunetaKeys("shared", "use_dups", "only_allowed_ips", "trace_tls", "exitOnError",
                    "user_data", "user_data2")
            .factory(TcpS::new)
            .build();

    @Override
    public GClassSpec<?> spec() {
        return SPEC;
    }
}
