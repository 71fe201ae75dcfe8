// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.kafka;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_KAFKA as a DS service. The gclass is declared in {@link KafkaOut}. */
@Component(service = GClass.class)
public final class KafkaOutGClass extends GClassComponent {
    public KafkaOutGClass() {
        super(KafkaOut.SPEC);
    }
}
