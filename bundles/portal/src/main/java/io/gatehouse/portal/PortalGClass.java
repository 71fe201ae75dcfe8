// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.portal;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassSpec;
import org.osgi.service.component.annotations.Component;

/** The C_PORTAL gclass: a link to another hub's control endpoint. Behaviour: {@link Portal}. */
@Component(service = GClass.class, property = GClass.PROP_NAME + "=" + Portal.GCLASS)
public final class PortalGClass implements GClass {

    static final GClassSpec<Portal> SPEC = GClassSpec.builder(Portal.GCLASS, Portal.class)
            .description("Link to another hub (seeds/003 portal): hello with the hub names, then registry messages")
            .attrs(Portal.ATTRS)
            .fsm(Portal.FSM)
            .subscriptionModel(GClassSpec.SubscriptionModel.SERVICE)
            .factory(Portal::new)
            .build();

    @Override
    public GClassSpec<?> spec() {
        return SPEC;
    }
}
