package io.gatehouse.iogate;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import org.osgi.service.component.annotations.Component;

/** The C_IOGATE gclass as a DS service; core creates the gobjs. */
@Component(service = GClass.class, property = GClass.PROP_NAME + "=" + GClassNames.C_IOGATE)
public final class IoGateGClass implements GClass {
    @Override
    public GClassSpec<?> spec() {
        return IoGate.SPEC;
    }
}
