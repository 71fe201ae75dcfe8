// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.relay;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_RELAY as a DS service. The gclass is declared in {@link Relay}. */
@Component(service = GClass.class)
public final class RelayGClass extends GClassComponent {
    public RelayGClass() {
        super(Relay.SPEC);
    }
}
