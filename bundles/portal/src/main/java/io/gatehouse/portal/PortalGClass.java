// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.portal;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_PORTAL as a DS service. The gclass is declared in {@link Portal}. */
@Component(service = GClass.class)
public final class PortalGClass extends GClassComponent {
    public PortalGClass() {
        super(Portal.SPEC);
    }
}
