// SPDX-License-Identifier: Apache-2.0
/**
 * The persistent queue contract (Yuneta's tr_queue): the store under every C_QIOGATE.
 * The trqueue bundle publishes a {@link io.gatehouse.api.queue.TrQueueFactory} service; gate bundles find it
 * through this package and never depend on the implementation.
 *
 * <p>1.2.0 (minor): {@code TrQueue.appendJson}, a default method (a record appended as its compact JSON bytes,
 * with no tree): a trqueue built against 1.1 still implements the interface, and its queues take the bytes through
 * the default, which parses them and calls {@code append}.
 *
 * <p>1.3.0 (minor): {@code TrQueueFactory.writeHeldBack}, a default method (the records a queue holds back until the
 * end of its owner's loop turn written now, for a caller that notes elsewhere that they were queued): a trqueue built
 * against 1.2 writes through, and the default, true, is right for it.
 *
 * <p>1.4.0 (minor): {@code TrQueueOptions.fsyncMaxRecords} (a group commit that starts early once that many records
 * wait for it): a trqueue built against 1.3 does not read it and commits on its period only.
 *
 * <p>1.5.0 (minor): {@code TrQueue.recordBytes}, a default method (a message's record as stored, for an output that
 * takes it so): the default, null, sends the caller to {@code writeMsgJson}, as for a trqueue built against 1.4.
 *
 * <p>1.6.0 (minor): {@code TrQueue.appendJson} with the record's member index ({@code Kw.RECORD_FIELDS}), a default
 * method: the default drops the index and appends as before, as a trqueue built against 1.5 does.
 *
 * <p>1.7.0 (minor): {@code TrQueueFactory.positions} and {@code TrQueueFactory.earlierRecordsAfter}, default methods
 * (where the queues stand, and after a restart the records written after those positions by the earlier run: MQTT
 * QoS 2 without a duplicate across a kill -9). The defaults, "" and none, keep a caller on the duplicate it had
 * with a trqueue built against 1.6.
 */
@Export
@Version("1.7.0")
package io.gatehouse.api.queue;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
