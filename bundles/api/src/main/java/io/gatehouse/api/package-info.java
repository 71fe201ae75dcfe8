// SPDX-License-Identifier: Apache-2.0
/**
 * The Gatehouse object model: gclasses, gobjs, events, states, the FSM, kw, attributes, commands and stats.
 * The only package every gclass bundle imports: the contract, and nothing else.
 *
 * <p>2.0.0 (major): the implementation helpers {@code Glog} (with its static sinks and {@code LogSink}),
 * {@code InputGates}, {@code InputThreshold}, {@code RateWindow} and {@code Gbuffers} left this package for
 * {@code io.gatehouse.support}, which is not exported: every bundle embeds its own copy, so a fix in one of them
 * is a release of the bundles that use it (upgraded live), not of the api (which every bundle is wired to).
 * Importers of 1.x get a range bnd computes from this version ({@code [2.0,3)}) when they are rebuilt.
 */
@Export
@Version("2.0.0")
package io.gatehouse.api;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
