// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp4h;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_PROT_TCP4H as a DS service. The gclass is declared in {@link ProtTcp4h}. */
@Component(service = GClass.class)
public final class ProtTcp4hGClass extends GClassComponent {
    public ProtTcp4hGClass() {
        super(ProtTcp4h.SPEC);
    }
}
