// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.qiogate;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.queue.TrQueueFactory;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * The C_QIOGATE gclass: a persistent queue with acks in front of one bottom. Behaviour: {@link QIoGate}. The
 * queues come from the {@link TrQueueFactory} service (the trqueue bundle), injected in the constructor; outside
 * OSGi, {@link #spec(TrQueueFactory)} builds the same spec around any factory.
 */
@Component(service = GClass.class, property = GClass.PROP_NAME + "=" + GClassNames.C_QIOGATE)
public final class QIoGateGClass implements GClass {
    private final GClassSpec<QIoGate> spec;

    @Activate
    public QIoGateGClass(@Reference TrQueueFactory factory) {
        this.spec = spec(factory);
    }

    /**
     * The gclass spec with its queues from {@code factory}; null finds the factory at start with
     * {@code yuno().lookup(TrQueueFactory.class)}.
     */
    public static GClassSpec<QIoGate> spec(TrQueueFactory factory) {
        return GClassSpec.builder(GClassNames.C_QIOGATE, QIoGate.class)
                .description("Persistent queue with acks in front of one bottom (retries, credit window)")
                .attrs(QIoGate.ATTRS)
                .fsm(QIoGate.FSM)
                .commands(QIoGate.COMMANDS)
                .traceLevels(QIoGate.TRACE_MESSAGES, QIoGate.TRACE_QUEUE_PROT)
                .acceptUnusedYunetaKeys(QIoGate.UNUSED_YUNETA_KEYS)
                .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
                .factory(g -> new QIoGate(g, factory))
                .build();
    }

    @Override
    public GClassSpec<?> spec() {
        return spec;
    }
}
