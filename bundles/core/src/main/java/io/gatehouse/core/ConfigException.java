package io.gatehouse.core;

/** A config that cannot be built: bad JSON, an unknown gclass or attribute, a value of the wrong type. */
public class ConfigException extends RuntimeException {
    private final String path;

    public ConfigException(String path, String message) {
        super(path == null || path.isEmpty() ? message : message + " (at " + path + ")");
        this.path = path;
    }

    public ConfigException(String message, Throwable cause) {
        super(message, cause);
        this.path = "";
    }

    /** Where in the config tree: service and child names joined by '/'. */
    public String path() {
        return path;
    }
}
