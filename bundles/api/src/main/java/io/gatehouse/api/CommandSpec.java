package io.gatehouse.api;

import java.util.List;

/** One row of a gclass's command table: name, aliases, parameters, description and handler. */
public final class CommandSpec<B> {
    private final String name;
    private final List<String> aliases;
    private final List<Param> params;
    private final String description;
    private final CommandHandler<B> handler;

    public CommandSpec(String name, List<String> aliases, List<Param> params, String description, CommandHandler<B> handler) {
        this.name = name;
        this.aliases = aliases == null ? List.of() : List.copyOf(aliases);
        this.params = params == null ? List.of() : List.copyOf(params);
        this.description = description == null ? "" : description;
        this.handler = handler;
    }

    public static <B> CommandSpec<B> of(String name, String description, CommandHandler<B> handler, Param... params) {
        return new CommandSpec<>(name, List.of(), List.of(params), description, handler);
    }

    public CommandSpec<B> withAliases(String... aliases) {
        return new CommandSpec<>(name, List.of(aliases), params, description, handler);
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
