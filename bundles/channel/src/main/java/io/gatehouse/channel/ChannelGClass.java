// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.channel;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import org.osgi.service.component.annotations.Component;

/** C_CHANNEL as a DS service. The gclass is declared in {@link Channel}. */
@Component(service = GClass.class)
public final class ChannelGClass extends GClassComponent {
    public ChannelGClass() {
        super(Channel.SPEC);
    }
}
