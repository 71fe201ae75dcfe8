// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import io.gatehouse.api.queue.TrQueueFactory;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * C_QIOGATE as a DS service, registered once a {@link TrQueueFactory} (the trqueue bundle) is there: its gobjs
 * open their queues from it. The gclass is declared in {@link QIoGate}.
 */
@Component(service = GClass.class)
public final class QIoGateGClass extends GClassComponent {
    @Activate
    public QIoGateGClass(@Reference TrQueueFactory queues) {
        super(QIoGate.SPEC.withFactory(g -> new QIoGate(g, queues)));
    }
}
