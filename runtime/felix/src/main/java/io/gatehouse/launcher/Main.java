package io.gatehouse.launcher;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

/**
 * Entry point of the Gatehouse runtime: {@code Main run [CONFIG.json] [--data DIR] [--control PORT]} runs the
 * embedded Felix distribution in the foreground (see {@link FelixRunner}); {@code cmd} and {@code send} talk to a
 * running yuno's control endpoint.
 *
 * <p>Exit codes: 0 clean stop (also on SIGTERM/SIGINT), {@value #EXIT_USAGE} bad command line, 2 config file
 * missing or unreadable, the value of the {@value FelixRunner#EXIT_CODE_PROPERTY} property when core stops the
 * framework with it, 1 any other failure.
 */
public final class Main {
    static final int EXIT_USAGE = 64;

    static final String USAGE = String.join("\n",
        "usage: gatehouse run [CONFIG.json] [--data DIR] [--control PORT] [--console]",
        "       gatehouse cmd [--host H] [--port P] [--hub NAME] [--token T] 'COMMAND key=value ...'",
        "       gatehouse send [--host H] [--port P] ...",
        "",
        "  run      start the Felix runtime in the foreground with CONFIG.json (default: conf/gatehouse.json",
        "           of the distribution); logs go to stdout; SIGTERM or Ctrl-C stops it cleanly (exit 0)",
        "  --data DIR      directory for everything persistent (default: ./data)",
        "  --control PORT  control port of the yuno (bound to 127.0.0.1)",
        "  --console       also open a Gogo shell on stdin (lb, scr:list, ...); end of input stops the runtime",
        "  cmd      send a command to a running yuno (or, with --hub, to another hub through its portals)",
        "           and print the JSON answer; exit 1 when its result is negative, 2 when unreachable",
        "  send     send messages to a running gateway");

    private Main() {}

    public static void main(String[] args) {
        System.exit(run(Arrays.asList(args), System.out, System.err));
    }

    static int run(List<String> args, PrintStream out, PrintStream err) {
        if (args.isEmpty()) {
            err.println(USAGE);
            return EXIT_USAGE;
        }
        String sub = args.get(0);
        List<String> rest = args.subList(1, args.size());
        switch (sub) {
            case "run":
                RunOptions opts;
                try {
                    opts = RunOptions.parse(rest);
                } catch (IllegalArgumentException e) {
                    err.println("gatehouse run: " + e.getMessage());
                    err.println(USAGE);
                    return EXIT_USAGE;
                }
                return new FelixRunner(opts, FelixRunner.findHome()).run();
            case "cmd":
                return ControlClient.run(rest, out, err);
            case "send":
                return Sender.run(rest, out, err);
            case "help":
            case "-h":
            case "--help":
                out.println(USAGE);
                return 0;
            default:
                err.println("gatehouse: unknown command '" + sub + "'");
                err.println(USAGE);
                return EXIT_USAGE;
        }
    }
}
