// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.sink;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_SINK as a DS service. The gclass is declared in {@link Sink}. */
@Component(service = GClass.class)
public final class SinkGClass extends GClassComponent {
    public SinkGClass() {
        super(Sink.SPEC);
    }
}
