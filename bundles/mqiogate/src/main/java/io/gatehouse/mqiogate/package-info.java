// SPDX-License-Identifier: Apache-2.0
/** C_MQIOGATE: spreads messages over C_QIOGATE children by key (lastdigits, consistent) or to all (broadcast). */
package io.gatehouse.mqiogate;
