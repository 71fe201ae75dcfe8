package io.gatehouse.launcher;

import java.nio.file.Path;
import java.util.List;

/**
 * The arguments of {@code run}: an optional config file, {@code --data DIR}, {@code --control PORT} (also accepted
 * as {@code --data=DIR} and {@code --control=PORT}) and {@code --console} (a Gogo shell on stdin). Paths are kept
 * as given; {@link FelixRunner} makes them absolute against the working directory.
 */
record RunOptions(Path config, Path data, Integer controlPort, boolean console) {

    static RunOptions parse(List<String> args) {
        Path config = null;
        Path data = null;
        Integer port = null;
        boolean console = false;
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            String name = a;
            String value = null;
            int eq = a.indexOf('=');
            if (a.startsWith("--") && eq > 0) {
                name = a.substring(0, eq);
                value = a.substring(eq + 1);
            }
            switch (name) {
                case "--data":
                    if (value == null) {
                        value = next(args, ++i, name);
                    }
                    if (value.isEmpty()) {
                        throw new IllegalArgumentException("--data needs a directory");
                    }
                    data = Path.of(value);
                    break;
                case "--control":
                    if (value == null) {
                        value = next(args, ++i, name);
                    }
                    port = parsePort(value);
                    break;
                case "--console":
                    console = true;
                    break;
                default:
                    if (a.startsWith("-")) {
                        throw new IllegalArgumentException("unknown option " + a);
                    }
                    if (config != null) {
                        throw new IllegalArgumentException("only one config file, got " + config + " and " + a);
                    }
                    config = Path.of(a);
            }
        }
        return new RunOptions(config, data, port, console);
    }

    private static String next(List<String> args, int i, String option) {
        if (i >= args.size()) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args.get(i);
    }

    private static int parsePort(String s) {
        try {
            int p = Integer.parseInt(s);
            if (p < 0 || p > 65535) {
                throw new NumberFormatException();
            }
            return p;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--control needs a port number 0..65535, got '" + s + "'");
        }
    }
}
