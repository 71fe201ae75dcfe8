// SPDX-License-Identifier: Apache-2.0
/**
 * What the tests of every bundle share: a {@link io.gatehouse.testkit.ManualClock} that drives the yuno's timers,
 * a {@link io.gatehouse.testkit.Recorder} gobj, stand-ins for the layers around a gclass (tube, socket, bottom,
 * queue store, acking peer), test certificates, the helpers of socket tests (free ports, log capture, bounded
 * polling, thread and leak checks), and checks that keep tests and docs true to a spec (FSM rows covered, the
 * documented tables, the layout of a gobj class). A plain jar on test class paths, never a bundle.
 */
package io.gatehouse.testkit;
