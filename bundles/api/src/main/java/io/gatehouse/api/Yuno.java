// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import org.osgi.annotation.versioning.ProviderType;

import java.nio.file.Path;
import java.util.List;

/**
 * A running tree of gobjs with its own core thread (a Netty event loop). Every gobj action of the yuno runs
 * on that thread; by default the yuno's sockets are served by the same loop, so a message goes from socket
 * to queue to socket with no thread hop. With the yuno setting {@code io_threads} N > 0 the sockets are served
 * by N worker loops instead ({@link #ioGroup()}), and gobj actions still run only on the core thread.
 */
@ProviderType
public interface Yuno {
    String name();

    String role();

    /** The core thread: every gobj action, timer and command of the yuno runs on it. */
    EventLoop eventLoop();

    /**
     * Where a gclass registers a new socket: with {@code io_threads} 0 (the default) the core loop itself, so
     * socket callbacks run on the core thread; otherwise the yuno's group of worker loops, whose {@code next()}
     * spreads sockets round-robin ({@code Bootstrap.group(ioGroup().next())}, or as a ServerBootstrap child
     * group). Callbacks of a socket on a worker loop must not touch gobj state: they hand work to the core loop
     * with {@link #execute}. A gclass never shuts this group down; the yuno does when it stops.
     */
    EventLoopGroup ioGroup();

    /** Runs work on the core thread (now, if already on it). */
    void execute(Runnable task);

    boolean inCoreThread();

    GClock clock();

    /** Where everything persistent lives (queues, persistent attributes). */
    Path dataDir();

    /** A service by name, or null. */
    GObj service(String name);

    List<GObj> services();

    /** The yuno's own gobj, parent of every service. */
    GObj root();

    /** A registered gclass by name, or null. */
    GClassSpec<?> gclass(String name);

    /** Runs a yuno command ({@code stats-yuno}, {@code command-yuno}, ...) and answers its envelope. */
    ObjectNode command(String command, ObjectNode kw);

    /** Per-yuno extension objects (e.g. a trqueue factory) looked up by type; null if none. */
    <T> T lookup(Class<T> type);
}
