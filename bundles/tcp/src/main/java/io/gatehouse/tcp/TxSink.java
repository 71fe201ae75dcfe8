// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.tcp;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;

/**
 * Where a {@link TxBuffer} puts what it sends: the socket itself when it is on the core loop ({@link #SOCKET}), or
 * the {@link WorkerLink} that carries the writes of one core batch to the socket's worker loop in one task.
 */
interface TxSink {

    /** Takes {@code b} (owned from here on) to send on {@code c}, without flushing it. */
    void write(Channel c, ByteBuf b);

    /** Sends what was written since the last flush. */
    void flush(Channel c);

    /** True while {@code c} takes more without the tx buffer queueing it. */
    boolean writable(Channel c);

    /**
     * The tx buffer holds messages for lack of room: have {@link Tcp#onWritabilityChanged} called when there may be
     * room again.
     */
    void awaitRoom(Channel c);

    /** A socket on the core loop: Netty's own write, flush and writability, whose change event wakes the buffer. */
    TxSink SOCKET = new TxSink() {
        @Override
        public void write(Channel c, ByteBuf b) {
            c.write(b, c.voidPromise());
        }

        @Override
        public void flush(Channel c) {
            c.flush();
        }

        @Override
        public boolean writable(Channel c) {
            return c.isWritable();
        }

        @Override
        public void awaitRoom(Channel c) {
            // channelWritabilityChanged comes by itself
        }
    };
}
