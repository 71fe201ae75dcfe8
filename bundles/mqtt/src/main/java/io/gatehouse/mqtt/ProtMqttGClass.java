// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_PROT_MQTT as a DS service. The gclass is declared in {@link ProtMqtt}. */
@Component(service = GClass.class)
public final class ProtMqttGClass extends GClassComponent {
    public ProtMqttGClass() {
        super(ProtMqtt.SPEC);
    }
}
