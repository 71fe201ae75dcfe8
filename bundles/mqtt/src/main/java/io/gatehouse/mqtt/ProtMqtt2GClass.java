// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_PROT_MQTT2, Yuneta's current name for {@link ProtMqtt}: a Yuneta config that names it loads unchanged. */
@Component(service = GClass.class)
public final class ProtMqtt2GClass extends GClassComponent {
    public ProtMqtt2GClass() {
        super(ProtMqtt.SPEC2);
    }
}
