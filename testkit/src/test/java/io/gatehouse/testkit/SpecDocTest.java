// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.testkit;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.Envelope;
import io.gatehouse.api.Ev;
import io.gatehouse.api.Fsm;
import io.gatehouse.api.GClassSpec;
import io.gatehouse.api.GObj;
import io.gatehouse.api.GObjBehavior;
import io.gatehouse.api.St;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The doc check finds each way a gclass section can drift from its spec. */
class SpecDocTest {
    static final class Gate implements GObjBehavior {
        Gate(GObj g) {}

        int ac(String ev, ObjectNode kw, GObj src) {
            return 0;
        }

        ObjectNode cmdPeek(ObjectNode kw, GObj src) {
            return Envelope.ok(null);
        }
    }

    static final Attr<Long> WINDOW = Attr.integer("window", 10, AttrFlag.PERSIST, "In flight");
    static final Attr<String> NAME = Attr.string("name", "", AttrFlag.RD | AttrFlag.REQUIRED, "Its name");
    static final Attr<Long> SENT = Attr.counter("sent", AttrFlag.RSTATS, "Sent");
    static final Attr<Long> DEPTH = Attr.integer("depth", 0, AttrFlag.STATS, "Queued");

    static final GClassSpec<Gate> SPEC = GClassSpec.builder("C_DOC_GATE", Gate.class)
            .description("a gate to document")
            .attrs(WINDOW, NAME, SENT, DEPTH)
            .fsm(Fsm.<Gate>builder().state(St.ST_IDLE).on(Ev.EV_SEND_MESSAGE, Gate::ac).build())
            .command("peek", "Look", Gate::cmdPeek)
            .traceLevel("messages", "Every message")
            .factory(Gate::new)
            .build();

    static final String DOC = String.join("\n",
            "# Gates", "", "## C_OTHER", "", "| name | type | default | flags | meaning |", "|---|---|---|---|---|",
            "| `other` | int | 1 | rd | not ours |", "",
            "## C_DOC_GATE", "", "### Attributes", "",
            "| name | type | default | flags | meaning |", "|---|---|---|---|---|",
            "| `window` | int | 10 | persist | in flight |",
            "| `name` | string | — | rd, required | its name |", "",
            "Trace levels: `messages` (every message, not `this`).", "",
            "| command | params | answer |", "|---|---|---|", "| `peek` | | |", "| `help` | | |", "",
            "| name | kind | meaning |", "|---|---|---|", "| `sent` | counter | sent |", "| `depth` | gauge | queued |",
            "", "## C_NEXT", "", "Trace levels: `x`.", "");

    @TempDir
    Path tmp;

    private List<String> check(String doc) throws IOException {
        Path md = tmp.resolve("GATES.md");
        Files.writeString(md, doc);
        return SpecDoc.differences(md, SPEC);
    }

    @Test
    void shouldFindNothingWhenTheSectionSaysWhatTheSpecDeclares() throws IOException {
        assertEquals(List.of(), check(DOC));
    }

    @Test
    void shouldFindAWrongDefaultTypeOrFlag() throws IOException {
        assertEquals(List.of("window: default '20', spec '10'"),
                check(DOC.replace("| `window` | int | 10 |", "| `window` | int | 20 |")));
        assertEquals(List.of("window: type 'string', spec int"),
                check(DOC.replace("| `window` | int | 10 |", "| `window` | string | 10 |")));
        assertEquals(List.of("name: flags [rd], spec [rd, required]"), check(DOC.replace("rd, required", "rd")));
    }

    @Test
    void shouldFindAnAttributeMissingOrTooMany() throws IOException {
        assertEquals(List.of("attributes not documented: [name]"),
                check(DOC.replace("| `name` | string | — | rd, required | its name |\n", "")));
        List<String> extra = check(DOC.replace("| `window` |", "| `gone` | int | 1 | rd | x |\n| `window` |"));
        assertEquals(List.of("attribute 'gone' is documented but not in the spec (or is a stats attribute)"), extra);
        assertEquals(List.of("stats attributes not documented: [depth]"),
                check(DOC.replace("| `depth` | gauge | queued |", "")));
        assertEquals(List.of("sent: kind 'gauge', spec counter"), check(DOC.replace("counter", "gauge")));
    }

    @Test
    void shouldFindTraceLevelsAndCommandsThatDiffer() throws IOException {
        assertEquals(List.of("trace levels [messages, tls], spec [messages]"),
                check(DOC.replace("Trace levels: `messages`", "Trace levels: `messages`, `tls`")));
        assertEquals(List.of("commands [], spec [peek]"), check(DOC.replace("| `peek` | | |\n", "")));
    }

    @Test
    void shouldSayWhenTheSectionIsMissing() throws IOException {
        List<String> d = check(DOC.replace("## C_DOC_GATE", "## C_DOC_GATES"));
        assertEquals(1, d.size(), d.toString());
        assertTrue(d.get(0).startsWith("no section '## C_DOC_GATE'"), d.toString());
    }
}
