// SPDX-License-Identifier: Apache-2.0
/**
 * The persistent queue contract (Yuneta's tr_queue): the store under every C_QIOGATE.
 * The trqueue bundle publishes a {@link io.gatehouse.api.queue.TrQueueFactory} service; gate bundles find it
 * through this package and never depend on the implementation.
 */
@Export
@Version("1.1.0")
package io.gatehouse.api.queue;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
