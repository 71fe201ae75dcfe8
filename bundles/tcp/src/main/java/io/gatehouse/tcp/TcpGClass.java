// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import org.osgi.service.component.annotations.Component;

/** The C_TCP gclass: one TCP/TLS connection, client or server side. Behaviour: {@link Tcp}. Manual start. */
@Component(service = GClass.class, property = GClass.PROP_NAME + "=" + GClassNames.C_TCP)
public final class TcpGClass implements GClass {

    static final GClassSpec<Tcp> SPEC = GClassSpec.builder(GClassNames.C_TCP, Tcp.class)
            .description("TCP transport (client or server side of one connection), TLS optional")
            .attrs(Tcp.ATTRS)
            .fsm(Tcp.FSM)
            .traceLevels("connections", "traffic", "tls")
            .manualStart()
            .acceptUnusedYunetaKeys("ytls", "fd_clisrv", "fd_listen", "jwt", "cert_pem", "skip_cert_cn",
                    "user_data", "user_data2")
            .factory(Tcp::new)
            .build();

    @Override
    public GClassSpec<?> spec() {
        return SPEC;
    }
}
