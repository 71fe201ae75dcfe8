// SPDX-License-Identifier: Apache-2.0
/**
 * The Gatehouse object model: gclasses, gobjs, events, states, the FSM, kw, attributes, commands and stats.
 * The only package every gclass bundle imports.
 */
@Export
@Version("1.2.0")
package io.gatehouse.api;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
