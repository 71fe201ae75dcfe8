package io.gatehouse.itests;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.ops4j.pax.exam.CoreOptions.frameworkProperty;
import static org.ops4j.pax.exam.CoreOptions.mavenBundle;
import static org.ops4j.pax.exam.CoreOptions.options;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.jar.JarInputStream;

import io.gatehouse.testkit.BundleJars;
import org.junit.Test;
import org.junit.runner.RunWith;
import org.ops4j.pax.exam.Configuration;
import org.ops4j.pax.exam.Option;
import org.ops4j.pax.exam.junit.PaxExam;
import org.ops4j.pax.exam.spi.reactors.ExamReactorStrategy;
import org.ops4j.pax.exam.spi.reactors.PerClass;

/**
 * The releases an operator must not be able to break a gateway with: {@code update-bundle} of a jar that does not
 * resolve, one that does not start, one of another bundle, an unreadable URL, a lower version without
 * {@code rollback=true}, and a jar that does not resolve dropped into {@code deploy/}. Each gets a clear answer (or,
 * from deploy/, nothing happens), no broken bundle stays installed, and the serving revision goes on serving.
 */
@RunWith(PaxExam.class)
@ExamReactorStrategy(PerClass.class)
public class UpdateBundleBadInputIT extends ITSupport {
    private static final String PORT = "gatehouse.itests.badupdate.control.port";
    private static final String JARS = "gatehouse.itests.badupdate.jars";
    private static final String DEPLOY = "gatehouse.itests.badupdate.deploy";
    private static final String SINK = GROUP + ".sink";
    private static final ObjectMapper JSON = new ObjectMapper();

    @Configuration
    public Option[] config() {
        int port = freePort();
        System.setProperty(PORT, String.valueOf(port));
        Path dir = newTestDir("badupdate");
        Path jars = dir.resolve("jars");
        Path deploy = dir.resolve("deploy");
        try {
            Files.createDirectories(jars);
            Files.createDirectories(deploy);
            Path sink = bundleFile("sink").toPath();
            String imports;
            try (InputStream in = Files.newInputStream(sink); JarInputStream j = new JarInputStream(in)) {
                imports = j.getManifest().getMainAttributes().getValue("Import-Package");
            }
            Files.writeString(jars.resolve("not-a-bundle.jar"), "an HTML error page, say");
            Files.copy(BundleJars.bumped(sink, jars, 1), jars.resolve("up1.jar"));
            Files.copy(BundleJars.bumped(sink, jars, 2), jars.resolve("up2.jar"));
            Files.copy(BundleJars.bumped(sink, jars, 3,
                Map.of("Import-Package", imports + ",io.gatehouse.no.such.pkg"), "-unresolvable"), jars.resolve("unresolvable.jar"));
            Files.copy(BundleJars.bumped(sink, jars, 4,
                Map.of("Bundle-Activator", "io.gatehouse.sink.NoSuchActivator"), "-no-activator"), jars.resolve("no-activator.jar"));
            Files.copy(BundleJars.bumped(sink, jars, 5,
                Map.of("Import-Package", imports + ",io.gatehouse.no.such.pkg"), "-deployed"), jars.resolve("deployed.jar"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        System.setProperty(JARS, jars.toString());
        System.setProperty(DEPLOY, deploy.toString());
        return options(base(), gatehouseBundles("api", "core", "relay", "sink"), yunoConfig("hotswap.json"),
            mavenBundle("org.apache.felix", "org.apache.felix.fileinstall").versionAsInProject(),
            frameworkProperty("felix.fileinstall.dir").value(deploy.toString()),
            // in the test's directory, not a fileinstall-<random> left in /tmp by a container that does not exit
            frameworkProperty("felix.fileinstall.tmpdir").value(dir.resolve("fileinstall-tmp").toString()),
            frameworkProperty("felix.fileinstall.poll").value("100"),
            frameworkProperty("felix.fileinstall.noInitialDelay").value("true"),
            frameworkProperty("gatehouse.deploy.dir").value(deploy.toString()),
            frameworkProperty("gatehouse.control.port").value(String.valueOf(port)));
    }

    private static JsonNode cmd(String line) {
        int port = Integer.getInteger(PORT);
        String[] answer = new String[1];
        await("an answer to '" + line + "'", 10_000, () -> (answer[0] = ControlLink.tryCommand(port, line)) != null);
        try {
            return JSON.readTree(answer[0]);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String jar(String name) {
        return Path.of(System.getProperty(JARS), name).toUri().toString();
    }

    /** Sent once, answered when the command is done (a resend after a read timeout would be a second command). */
    private static JsonNode update(String url, boolean rollback) {
        String line = "update-bundle name=" + SINK + " url=" + url + (rollback ? " rollback=true" : "");
        try {
            return JSON.readTree(ControlLink.command(Integer.getInteger(PORT), line, 180_000));
        } catch (IOException e) {
            throw new AssertionError("no answer to '" + line + "'", e);
        }
    }

    /** The versions of the sink bundle installed, and the one serving C_SINK ("" if none does). */
    private static List<String> sinkBundles(String[] serving) {
        List<String> versions = new ArrayList<>();
        serving[0] = "";
        for (JsonNode b : cmd("list-bundles").path("data")) {
            if (!SINK.equals(b.path("symbolic_name").asText())) continue;
            versions.add(b.path("version").asText());
            for (JsonNode g : b.path("gclasses")) {
                if (g.path("serving").asBoolean() && "ACTIVE".equals(b.path("state").asText())) serving[0] = b.path("version").asText();
            }
        }
        return versions;
    }

    private static void assertRefusedAndStillServing(String what, JsonNode answer, String comment, String servingVersion,
            int installed) {
        assertEquals(what + ": " + answer, -1, answer.path("result").asInt());
        assertTrue(what + ": the answer says why: " + answer, answer.path("comment").asText().contains(comment));
        assertStillServing(what, servingVersion, installed);
    }

    private static void assertStillServing(String what, String servingVersion, int installed) {
        String[] serving = new String[1];
        // FileInstall sees the files update-bundle puts into deploy/ and takes away again: let it settle.
        await(what + ": the sink bundles settled", 15_000,
            () -> sinkBundles(serving).size() == installed && servingVersion.equals(serving[0]));
        List<String> versions = sinkBundles(serving);
        assertEquals(what + ": the serving revision " + versions, servingVersion, serving[0]);
        assertEquals(what + ": nothing broken left installed " + versions, installed, versions.size());
        JsonNode attrs = cmd("read-attrs service=sink");
        assertEquals(what + ": the sink service answers " + attrs, 0, attrs.path("result").asInt());
        assertTrue(what + ": the sink runs, same gobj " + attrs, attrs.path("data").path("echo").asBoolean());
    }

    @Test
    public void shouldRefuseEveryBadReleaseWithAClearAnswerAndKeepTheServingRevision() throws Exception {
        await("the sink service", 30_000, () -> cmd("read-attrs service=sink").path("result").asInt() == 0);
        // Written at run time: still true afterwards means the same gobj went on serving (a rebuild resets it).
        assertEquals(0, cmd("write-attr service=sink attr=echo value=true").path("result").asInt());
        String[] serving = new String[1];
        sinkBundles(serving);
        String original = serving[0];

        assertRefusedAndStillServing("unreadable URL", update(jar("no-such.jar"), false), "cannot read", original, 1);
        assertRefusedAndStillServing("a file that is no bundle", update(jar("not-a-bundle.jar"), false), "not a bundle",
            original, 1);
        assertRefusedAndStillServing("another bundle's jar", update(bundleFile("relay").toURI().toString(), false),
            "the jar is bundle " + GROUP + ".relay, not " + SINK, original, 1);
        assertRefusedAndStillServing("a jar that does not resolve", update(jar("unresolvable.jar"), false), "does not start",
            original, 1);
        assertRefusedAndStillServing("a jar that does not start", update(jar("no-activator.jar"), false), "does not start",
            original, 1);

        String v2 = BundleJars.version(Path.of(System.getProperty(JARS), "up2.jar"));
        String v1 = BundleJars.version(Path.of(System.getProperty(JARS), "up1.jar"));
        JsonNode up = update(jar("up2.jar"), false);
        assertEquals("a good release goes in: " + up, 0, up.path("result").asInt());
        assertEquals(original, up.path("data").path("old_version").asText());
        assertEquals(v2, up.path("data").path("new_version").asText());
        assertStillServing("after the good release", v2, 2);
        assertRefusedAndStillServing("a lower version without rollback", update(jar("up1.jar"), false), "is lower than",
            v2, 2);
        assertRefusedAndStillServing("the serving version again", update(jar("up2.jar"), false), "already the serving",
            v2, 2);
        JsonNode back = update(jar("up1.jar"), true);
        assertEquals("a lower version with rollback=true: " + back, 0, back.path("result").asInt());
        String[] now = new String[1];
        sinkBundles(now);
        assertEquals("rolled back", v1, now[0]);

        // deploy/: FileInstall installs what it is given; a jar that cannot resolve must not take anything over.
        Path deploy = Path.of(System.getProperty(DEPLOY));
        List<String> before = sinkBundles(now);
        Path part = deploy.resolve(".deployed.jar.part");
        Files.copy(Path.of(System.getProperty(JARS), "deployed.jar"), part);
        Files.move(part, deploy.resolve("deployed.jar"), StandardCopyOption.ATOMIC_MOVE);
        String v5 = BundleJars.version(Path.of(System.getProperty(JARS), "deployed.jar"));
        await("FileInstall installed the jar", 30_000, () -> sinkBundles(new String[1]).contains(v5));
        Thread.sleep(1_500);   // several FileInstall polls: it retries a bundle it cannot start
        assertStillServing("a jar from deploy/ that does not resolve", v1, before.size() + 1);
        Files.delete(deploy.resolve("deployed.jar"));
        await("FileInstall uninstalled it", 30_000, () -> !sinkBundles(new String[1]).contains(v5));
        assertStillServing("after the jar left deploy/", v1, before.size());
    }
}
