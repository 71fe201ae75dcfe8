// SPDX-License-Identifier: Apache-2.0
/**
 * C_PROT_TCP4H: messages framed by a 4-byte big-endian length (payload length + 4) over a transport gobj below
 * it. {@link io.gatehouse.tcp4h.ProtTcp4h} is the gclass (tables, actions, timers, flow control);
 * {@link io.gatehouse.tcp4h.Tcp4hFramer} the byte-level deframer; {@link io.gatehouse.tcp4h.Tcp4hFrameEncoder} the
 * header. Not exported: other bundles find the gclass by name.
 */
package io.gatehouse.tcp4h;
