package io.gatehouse.api;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * A gclass, published as an OSGi service ({@code service = GClass.class}) with the property
 * {@value #PROP_NAME} = the gclass name. It holds no per-instance state: it describes the class and makes
 * behaviours for the gobjs that core creates. When the service goes away (its bundle is updated or
 * stopped), core destroys every gobj of the class and creates them again when it comes back.
 */
@ConsumerType
public interface GClass {
    String PROP_NAME = "gclass.name";

    GClassSpec<?> spec();
}
