// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_TCP as a DS service. The gclass is declared in {@link Tcp}. */
@Component(service = GClass.class)
public final class TcpGClass extends GClassComponent {
    public TcpGClass() {
        super(Tcp.SPEC);
        Tcp.preload();
    }
}
