// SPDX-License-Identifier: Apache-2.0
/** C_PORTAL, links between hubs for the registry of seeds/003. Exports nothing. */
package io.gatehouse.portal;
