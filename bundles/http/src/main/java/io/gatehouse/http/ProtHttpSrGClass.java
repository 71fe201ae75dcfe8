// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.http;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_PROT_HTTP_SR as a DS service. The gclass is declared in {@link ProtHttpSr}. */
@Component(service = GClass.class)
public final class ProtHttpSrGClass extends GClassComponent {
    public ProtHttpSrGClass() {
        super(ProtHttpSr.SPEC);
    }
}
