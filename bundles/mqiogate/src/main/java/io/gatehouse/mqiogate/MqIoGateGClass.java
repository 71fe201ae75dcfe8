// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqiogate;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_MQIOGATE as a DS service. The gclass is declared in {@link MqIoGate}. */
@Component(service = GClass.class)
public final class MqIoGateGClass extends GClassComponent {
    public MqIoGateGClass() {
        super(MqIoGate.SPEC);
    }
}
