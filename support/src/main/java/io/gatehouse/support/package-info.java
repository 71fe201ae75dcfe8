// SPDX-License-Identifier: Apache-2.0
/**
 * Helpers the bundles share as code, not as a contract: {@link io.gatehouse.support.Glog} (structured logging to
 * SLF4J), {@link io.gatehouse.support.InputGates} (the gates a service listens to, and replies through them),
 * {@link io.gatehouse.support.InputThreshold} (seeds/001 input flow control), {@link io.gatehouse.support.RateWindow}
 * (counters with rates computed when read), {@link io.gatehouse.support.Gbuffers} (payloads with header room),
 * {@link io.gatehouse.support.Streak} (a repeated condition said once), {@link io.gatehouse.support.ProtocolBottom}
 * (what a protocol gclass asks of the transport below it) and {@link io.gatehouse.support.JsonScan}
 * (the strict byte walk of a JSON message, with no tree).
 *
 * <p>Never exported and never a bundle: every bundle that uses these classes carries its own copy of this package
 * (bnd {@code -conditionalpackage: io.gatehouse.support.*} in the root pom), so a fix here ships with the bundles
 * that take it and upgrades live with them, while the api (the contract) stays as it is. Two copies of a class in
 * two bundles are two classes: nothing of this package may cross a bundle boundary, or a revision boundary in a
 * live upgrade (hand over JSON, as {@link io.gatehouse.support.RateWindow#exportState} does, never the object).
 */
package io.gatehouse.support;
