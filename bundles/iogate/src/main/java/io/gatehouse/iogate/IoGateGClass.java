// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.iogate;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_IOGATE as a DS service. The gclass is declared in {@link IoGate}. */
@Component(service = GClass.class)
public final class IoGateGClass extends GClassComponent {
    public IoGateGClass() {
        super(IoGate.SPEC);
    }
}
