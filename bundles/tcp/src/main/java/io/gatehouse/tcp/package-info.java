// SPDX-License-Identifier: Apache-2.0
/**
 * C_TCP and C_TCP_S: TCP and TLS connections on Netty, the transport under a protocol gclass. {@link
 * io.gatehouse.tcp.Tcp} is one connection (client or server side) and keeps the tables, the Netty callbacks and
 * the actions; {@link io.gatehouse.tcp.TxBuffer} is what it sends, {@link io.gatehouse.tcp.Reconnector} how a
 * client connects again, {@link io.gatehouse.tcp.WorkerLink} the hop to a worker loop (io_threads &gt; 0).
 * {@link io.gatehouse.tcp.TcpS} listens ({@link io.gatehouse.tcp.Acceptor} is its socket's handler) and hands
 * accepted sockets to server-side C_TCPs. Both hand their state to a new revision in a live upgrade. Not exported:
 * other bundles find these gclasses by name.
 */
package io.gatehouse.tcp;
