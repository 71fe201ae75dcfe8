// SPDX-License-Identifier: Apache-2.0
/** C_IOGATE: routes messages between its C_CHANNEL children and the gobjs above it. Not exported. */
package io.gatehouse.iogate;
