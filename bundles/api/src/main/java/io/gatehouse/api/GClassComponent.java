// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import java.util.Objects;

/**
 * The base of every gclass's DS component: it publishes the spec the gobj class declares, and nothing else.
 *
 * <pre>{@code
 * @Component(service = GClass.class)
 * public final class ChannelGClass extends GClassComponent {
 *     public ChannelGClass() { super(Channel.SPEC); }
 * }
 * }</pre>
 *
 * A gclass whose gobjs need an OSGi service takes it in an {@code @Activate} constructor and hands it over with
 * {@link GClassSpec#withFactory}: {@code super(QIoGate.SPEC.withFactory(g -> new QIoGate(g, queues)))}.
 */
public abstract class GClassComponent implements GClass {
    private final GClassSpec<?> spec;

    protected GClassComponent(GClassSpec<?> spec) {
        this.spec = Objects.requireNonNull(spec, "spec");
    }

    @Override
    public final GClassSpec<?> spec() {
        return spec;
    }

    @Override
    public String toString() {
        return "gclass " + spec.name();
    }
}
