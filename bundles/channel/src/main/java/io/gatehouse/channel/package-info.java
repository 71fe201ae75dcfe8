// SPDX-License-Identifier: Apache-2.0
/** C_CHANNEL: one logical link (open/closed, counters and rates) over a protocol stack. Not exported. */
package io.gatehouse.channel;
