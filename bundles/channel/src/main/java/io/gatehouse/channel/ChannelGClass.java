package io.gatehouse.channel;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassNames;
import io.gatehouse.api.GClassSpec;
import org.osgi.service.component.annotations.Component;

/** The C_CHANNEL gclass as a DS service; core creates the gobjs. */
@Component(service = GClass.class, property = GClass.PROP_NAME + "=" + GClassNames.C_CHANNEL)
public final class ChannelGClass implements GClass {
    @Override
    public GClassSpec<?> spec() {
        return Channel.SPEC;
    }
}
