// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.api.queue;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.*;

class TrQueueOptionsTest {
    @Test
    void shouldKeepTheMaxRecordsThroughEveryWitherAndStartWithoutOne() {
        TrQueueOptions o = TrQueueOptions.defaults();
        assertEquals(0, o.fsyncMaxRecords(), "the library's default: commits on the period only");
        o = o.withFsyncMaxRecords(64).withFsyncPolicy(FsyncPolicy.INTERVAL).withFsyncIntervalMs(7)
                .withSegmentSize(1 << 20).withMaxMessageSize(4096);
        assertEquals(64, o.fsyncMaxRecords());
        assertEquals(7, o.fsyncIntervalMs());
        assertTrue(o.toString().contains("maxRecords=64"), o.toString());
    }

    @Test
    void shouldRefuseANegativeMaxRecords() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> TrQueueOptions.defaults().withFsyncMaxRecords(-1));
        assertTrue(e.getMessage().contains("fsyncMaxRecords"), e.getMessage());
    }
}
