// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.HashSet;
import java.util.Set;

/** A top-level entry of {@code services}, kept so the service can be built again (hot swap, reconfigure). */
final class ServiceNode {
    final String name;
    final ObjectNode node;
    final int priority;
    final boolean autostart;
    final boolean autoplay;
    final int order;
    GObjImpl gobj;
    /** Gclasses that were live in the subtree when it was destroyed (dynamic children included). */
    final Set<String> neededGclasses = new HashSet<>();

    ServiceNode(String name, ObjectNode node, int priority, boolean autostart, boolean autoplay, int order) {
        this.name = name;
        this.node = node;
        this.priority = priority;
        this.autostart = autostart;
        this.autoplay = autoplay;
        this.order = order;
    }
}
