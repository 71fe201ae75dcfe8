package io.gatehouse.testkit.kafka;

import java.lang.reflect.Method;
import java.util.Arrays;

/**
 * Main of every child JVM: {@code ParentWatch <parent pid> <main class> <args...>}. It halts this JVM as soon as
 * the parent is gone, then runs the real main. Without it a broker outlives a test JVM killed by a timeout.
 */
public final class ParentWatch {
    private ParentWatch() {
    }

    public static void main(String[] args) throws Throwable {
        long parent = Long.parseLong(args[0]);
        ProcessHandle.of(parent).ifPresentOrElse(
            h -> h.onExit().thenRun(() -> Runtime.getRuntime().halt(3)),
            () -> Runtime.getRuntime().halt(3));
        Method main = Class.forName(args[1]).getMethod("main", String[].class);
        try {
            main.invoke(null, (Object) Arrays.copyOfRange(args, 2, args.length));
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
