// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassComponent;
import io.gatehouse.api.queue.TrQueueFactory;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferencePolicyOption;

/**
 * C_QIOGATE as a DS service, registered once a {@link TrQueueFactory} (the trqueue bundle) is there: its gobjs
 * open their queues from it. The gclass is declared in {@link QIoGate}.
 *
 * <p>The reference is static and greedy: each trqueue revision registers its factory ranked by its bundle version,
 * so when a higher trqueue is installed beside the one serving, DS makes this component again with the higher
 * factory (and again with the lower one when the higher goes: a rollback). Each time this gclass leaves and comes
 * back, core suspends the gates and hands them to the new component's spec, whose behaviours open their queues
 * through the new factory with their in-flight windows kept ({@link QIoGate#onImport}).
 */
@Component(service = GClass.class)
public final class QIoGateGClass extends GClassComponent {
    @Activate
    public QIoGateGClass(@Reference(policyOption = ReferencePolicyOption.GREEDY) TrQueueFactory queues) {
        super(QIoGate.SPEC.withFactory(g -> new QIoGate(g, queues)));
    }
}
