// SPDX-License-Identifier: Apache-2.0
/** C_QIOGATE: a persistent queue (trqueue) with acks, retries and a credit window in front of one bottom. */
package io.gatehouse.qiogate;
