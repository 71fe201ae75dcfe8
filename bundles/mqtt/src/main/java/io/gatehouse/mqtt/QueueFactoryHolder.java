// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.mqtt;

import io.gatehouse.api.queue.TrQueueFactory;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;

import java.util.concurrent.atomic.AtomicReference;

/**
 * The queue factory (the trqueue service) while there is one, for both gclasses of this bundle: a QoS 2 message's
 * record is written through it before its packet id is noted ({@link ProtMqtt}). It comes and goes without the
 * gclasses going (a dynamic reference), the highest-ranked one while several trqueue revisions are installed.
 */
@Component(immediate = true, service = {})
public final class QueueFactoryHolder {
    private static final AtomicReference<TrQueueFactory> CURRENT = new AtomicReference<>();

    /** The factory of the running trqueue, or null (none installed, or outside OSGi). */
    static TrQueueFactory current() {
        return CURRENT.get();
    }

    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY, unbind = "unsetFactory")
    void setFactory(TrQueueFactory f) {
        CURRENT.set(f);
    }

    void unsetFactory(TrQueueFactory f) {
        CURRENT.compareAndSet(f, null);
    }
}
