// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.core;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.gatehouse.api.Attr;
import io.gatehouse.api.AttrFlag;
import io.gatehouse.api.GObj;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Attributes live in slots: typed reads, counters every reader sees, handles of the same name from elsewhere. */
class AttrSlotsTest {
    private YunoRuntime rt;

    @BeforeEach
    void setUp() {
        rt = YunoRuntime.builder().name("slots").gclass(TestGClasses.NODE)
                .config("{\"services\": [{\"name\": \"svc\", \"gclass\": \"C_NODE\", \"kw\": {\"limit\": 7, \"label\": \"a\"}}]}")
                .build().start();
    }

    @AfterEach
    void tearDown() {
        rt.close();
    }

    private GObj svc() {
        return rt.service("svc");
    }

    @Test
    void shouldReadConfiguredValuesFromTheirSlots() {
        assertEquals(7, (long) rt.call(() -> svc().readLong(TestGClasses.LIMIT)));
        assertEquals("a", rt.call(() -> svc().read(TestGClasses.LABEL)));
        assertEquals(false, rt.call(() -> svc().readBool(TestGClasses.FLAG)));
    }

    @Test
    void shouldShowEveryIncrementToEveryReader() {
        rt.run(() -> {
            svc().inc(TestGClasses.COUNT);
            svc().add(TestGClasses.COUNT, 4);
        });
        assertEquals(5, rt.command("stats-yuno service=svc").get("data").get("count").asInt());
        ObjectNode attrs = rt.command("read-attrs service=svc");
        assertEquals(5, attrs.get("data").get("count").asInt());
        assertEquals(5, (long) rt.call(() -> svc().read(TestGClasses.COUNT)));
    }

    @Test
    void shouldFindAnAttributeOfTheSameNameAndTypeFromAnotherHandle() {
        Attr<Long> foreign = Attr.integer("limit", 0, AttrFlag.RD, "limit, as another bundle names it");
        assertEquals(7, (long) rt.call(() -> svc().readLong(foreign)));
        Attr<String> wrongType = Attr.string("limit", "", AttrFlag.RD, "limit as text");
        assertThrows(IllegalArgumentException.class, () -> rt.call(() -> svc().read(wrongType)));
        Attr<Long> unknown = Attr.integer("nope", 0, AttrFlag.RD, "no such attribute");
        assertThrows(IllegalArgumentException.class, () -> rt.call(() -> svc().readLong(unknown)));
    }

    @Test
    void shouldPutTheOldValueBackWhenAWriteIsRefused() {
        ObjectNode r = rt.command("write-attr service=svc attr=limit value=-1");
        assertEquals(-1, r.get("result").asInt());
        assertEquals(7, (long) rt.call(() -> svc().readLong(TestGClasses.LIMIT)));
    }
}
