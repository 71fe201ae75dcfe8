// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import org.osgi.annotation.versioning.ConsumerType;

/**
 * A gclass, published as an OSGi service ({@code service = GClass.class}); its name is the spec's
 * ({@link GClassSpec#name()}). It holds no per-instance state: it describes the class and makes behaviours for
 * the gobjs that core creates. A gclass bundle writes it as a few lines on {@link GClassComponent}.
 */
@ConsumerType
public interface GClass {
    GClassSpec<?> spec();
}
