package io.gatehouse.launcher;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

class RunOptionsTest {

    @Test
    void shouldUseDefaultsWhenNoArguments() {
        RunOptions o = RunOptions.parse(List.of());
        assertNull(o.config());
        assertNull(o.data());
        assertNull(o.controlPort());
        assertEquals(false, o.console());
    }

    @Test
    void shouldParseConfigDataAndControlInAnyOrder() {
        RunOptions o = RunOptions.parse(List.of("--data", "/tmp/d", "gw.json", "--control=1991", "--console"));
        assertEquals(Path.of("gw.json"), o.config());
        assertEquals(Path.of("/tmp/d"), o.data());
        assertEquals(1991, o.controlPort());
        assertEquals(true, o.console());
    }

    @Test
    void shouldRejectUnknownOptionsMissingValuesAndBadPorts() {
        assertThrows(IllegalArgumentException.class, () -> RunOptions.parse(List.of("--verbose")));
        assertThrows(IllegalArgumentException.class, () -> RunOptions.parse(List.of("--data")));
        assertThrows(IllegalArgumentException.class, () -> RunOptions.parse(List.of("--control", "x")));
        assertThrows(IllegalArgumentException.class, () -> RunOptions.parse(List.of("--control", "70000")));
        assertThrows(IllegalArgumentException.class, () -> RunOptions.parse(List.of("a.json", "b.json")));
    }

    @Test
    void shouldExitWithUsageCodeWhenCommandUnknownOrMissing() {
        PrintStream devNull = new PrintStream(new ByteArrayOutputStream());
        assertEquals(Main.EXIT_USAGE, Main.run(List.of(), devNull, devNull));
        assertEquals(Main.EXIT_USAGE, Main.run(List.of("start"), devNull, devNull));
        assertEquals(Main.EXIT_USAGE, Main.run(List.of("run", "--nope"), devNull, devNull));
        assertEquals(0, Main.run(List.of("--help"), devNull, devNull));
    }

    @Test
    void shouldExitTwoWhenCmdCannotReachTheControlEndpoint() throws java.io.IOException {
        int port;
        try (java.net.ServerSocket free = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = free.getLocalPort();
        }
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream devNull = new PrintStream(new ByteArrayOutputStream());
        assertEquals(2, Main.run(List.of("cmd", "--port", Integer.toString(port), "--hub", "B", "stats-yuno"), devNull,
                new PrintStream(err, true)));
        assertTrue(err.toString().startsWith("gatehouse cmd: cannot reach the control endpoint"), err.toString());
        assertEquals(Main.EXIT_USAGE, Main.run(List.of("cmd", "--hub"), devNull, devNull));
    }

    @Test
    void shouldSubstituteLauncherVariablesAndKeepUnknownOnes() {
        String s = FelixRunner.substitute("${gatehouse.home}/deploy ${no.such.var}", Map.of("gatehouse.home", "/opt/g"));
        assertEquals("/opt/g/deploy ${no.such.var}", s);
    }
}
