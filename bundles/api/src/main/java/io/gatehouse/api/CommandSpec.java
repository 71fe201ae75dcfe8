// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api;

import java.util.List;
import java.util.Objects;

/**
 * One row of a gclass's command table (Yuneta's SDATACM2 rows): name, aliases, parameters, description and
 * handler. Rows are declared in the spec with {@link GClassSpec.Builder#command}; {@code help} is generated from
 * them.
 */
public final class CommandSpec<B> {
    private final String name;
    private final List<String> aliases;
    private final List<Param> params;
    private final String description;
    private final CommandHandler<B> handler;

    public CommandSpec(String name, List<String> aliases, List<Param> params, String description, CommandHandler<B> handler) {
        this.name = Objects.requireNonNull(name, "command name");
        this.aliases = aliases == null ? List.of() : List.copyOf(aliases);
        this.params = params == null ? List.of() : List.copyOf(params);
        this.description = description == null ? "" : description;
        this.handler = Objects.requireNonNull(handler, "handler of command " + name);
    }

    public String name() { return name; }
    public List<String> aliases() { return aliases; }
    public List<Param> params() { return params; }
    public String description() { return description; }
    public CommandHandler<B> handler() { return handler; }

    public boolean matches(String cmd) {
        return name.equals(cmd) || aliases.contains(cmd);
    }
}
