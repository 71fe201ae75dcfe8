package io.gatehouse.sink;

import io.gatehouse.api.GClass;
import io.gatehouse.api.GClassSpec;
import org.osgi.service.component.annotations.Component;

/** The C_SINK gclass service. */
@Component(service = GClass.class, property = GClass.PROP_NAME + "=C_SINK")
public class SinkGClass implements GClass {
    @Override
    public GClassSpec<?> spec() {
        return Sink.SPEC;
    }
}
