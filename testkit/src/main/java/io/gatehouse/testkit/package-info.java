// SPDX-License-Identifier: Apache-2.0
/**
 * What the tests of every bundle share: a {@link io.gatehouse.testkit.ManualClock} that drives the yuno's timers,
 * a {@link io.gatehouse.testkit.Recorder} gobj, stand-ins for the layers around a gclass (tube, bottom, queue
 * store, acking peer) and test certificates. A plain jar on test class paths, never a bundle.
 */
package io.gatehouse.testkit;
