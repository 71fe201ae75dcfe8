// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.node.ObjectNode;
import org.osgi.annotation.versioning.ConsumerType;
import org.osgi.annotation.versioning.ProviderType;

/**
 * The yuno's message registry (the Stem registry of seeds/003): addresses {@code hub / service / target}, and
 * the portals (links) that reach other hubs. Obtained with {@code yuno.lookup(Registry.class)}; every method
 * runs on the yuno's core thread.
 *
 * <p>A <b>message</b> is a kw: {@code {"to": {"hub", "service", "target"}, "from": {...}, "type": "cmd" | ...,
 * "command": "...", "kw": {...}, "id": N}}. Delivery rules, in order:
 * <ol>
 *   <li>{@code to.hub} set and not this hub: the link that reaches that hub (a direct portal, else a route
 *       learnt from traffic), else the link aliased {@value #DEFAULT};</li>
 *   <li>else the local registry: {@code service} alone, or {@code service} + {@code target} (the two never
 *       share a namespace); services of the yuno are registered under their names, {@value #YUNO} is the yuno
 *       itself, and {@code service} + {@code target} also finds the child named {@code target} of a service;</li>
 *   <li>not found locally and {@code to.hub} not set: the link aliased {@value #DEFAULT};</li>
 *   <li>still not delivered: logged and dropped; a {@code cmd} (or a message with {@code "bounce": true}) is
 *       answered to its {@code from} with an error.</li>
 * </ol>
 * Dispatch: a {@code cmd} message runs the command of the target's command table and the envelope goes back to
 * {@code from} as a {@code reply} message ({@code {"type": "reply", "id", "reply": envelope}}); any other type
 * {@code T} goes to the target's input event {@code EV_<T in upper case>} when its current state has one, else
 * to its generic input ({@code EV_ON_MESSAGE}, else {@code EV_SEND_MESSAGE}) with the message's {@code kw}.
 */
@ProviderType
public interface Registry {
    /** Portal alias used when nothing else matches. */
    String DEFAULT = "DEFAULT";
    /** Service name of the yuno itself (its command table: {@code stats-yuno}, {@code command-yuno}, ...). */
    String YUNO = "__yuno__";

    /** This hub's name (the yuno's name). */
    String hub();

    /** Registers {@code gobj} as {@code service} (target null) or {@code service}/{@code target}. */
    void register(String service, String target, GObj gobj);

    /** Removes a registration if it still names {@code gobj}. */
    void unregister(String service, String target, GObj gobj);

    /** {@code alias} (without target) now names what {@code service} names. */
    void alias(String alias, String service);

    void unalias(String alias);

    /** The gobj an address names on this hub, or null. */
    GObj lookup(String service, String target);

    /**
     * Delivers a message (the registry owns it from here). Answers 0 when delivered or handed to a link,
     * -1 when it was dropped (logged, and bounced when asked).
     */
    int deliver(ObjectNode msg);

    /** Delivers a message that arrived on {@code link}: routes back to its {@code from.hub} are learnt. */
    int deliverFrom(Link link, ObjectNode msg);

    /** {@code link} now reaches {@code hub} directly (the hub said its name when the link opened). */
    void addLink(String hub, Link link);

    /** Forgets {@code link} (closed): its hub, its learnt routes and nothing else. */
    void removeLink(Link link);

    /** {@code alias} (e.g. {@value #DEFAULT}) names {@code link}, open or not. */
    void aliasLink(String alias, Link link);

    void unaliasLink(String alias, Link link);

    /** The registry as JSON: hub, services, aliases, links, routes (for {@code view-registry}). */
    ObjectNode view();

    /** A link to another hub: an outgoing portal or a peer connected to the control endpoint. */
    @ConsumerType
    interface Link {
        /** Short text for logs and views (e.g. {@code "portal to_b -> tcp://127.0.0.1:1992"}). */
        String describe();

        /** True while messages can be written. */
        boolean isOpen();

        /** Writes one message (the link serialises it); false when the link is not open. */
        boolean send(ObjectNode msg);
    }
}
