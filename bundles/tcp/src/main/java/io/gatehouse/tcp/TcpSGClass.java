// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_TCP_S as a DS service. The gclass is declared in {@link TcpS}. */
@Component(service = GClass.class)
public final class TcpSGClass extends GClassComponent {
    public TcpSGClass() {
        super(TcpS.SPEC);
    }
}
