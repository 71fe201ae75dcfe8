// SPDX-License-Identifier: Apache-2.0
/** C_PORTAL: a link from this hub to another hub's control endpoint, for the hub registry. Not exported. */
package io.gatehouse.portal;
