package io.gatehouse.relay;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassSpec;
import org.osgi.service.component.annotations.Component;

/** The C_RELAY gclass service. */
@Component(service = GClass.class, property = GClass.PROP_NAME + "=C_RELAY")
public class RelayGClass implements GClass {
    @Override
    public GClassSpec<?> spec() {
        return Relay.SPEC;
    }
}
