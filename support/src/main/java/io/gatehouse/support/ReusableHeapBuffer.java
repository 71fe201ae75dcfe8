// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.support;

import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.buffer.UnpooledHeapByteBuf;

/**
 * A heap buffer with {@link Gbuffers#HEADROOM} that its maker takes back once every holder has released it: its
 * array is kept at the last release, and {@link #reclaim} gives it one reference again. A sender that makes one
 * buffer per message and whose levels below copy and release it as they go sends each message in the same buffer,
 * with no allocation, while the buffer stays an ordinary one to them: one reference, room to prepend a header.
 *
 * <p>The maker keeps no reference while the buffer is below: a holder that keeps it (a socket's queue) releases it
 * when done, as any buffer, and the maker, finding it still held, makes another. Single-threaded for the maker; a
 * holder on another thread releases it as usual, and {@link #reclaim} sees that release.
 */
public final class ReusableHeapBuffer extends UnpooledHeapByteBuf {
    public ReusableHeapBuffer(int payloadCapacity) {
        super(UnpooledByteBufAllocator.DEFAULT, Gbuffers.HEADROOM + Math.max(0, payloadCapacity), Integer.MAX_VALUE);
        setIndex(Gbuffers.HEADROOM, Gbuffers.HEADROOM);
    }

    /**
     * {@code last} taken back when every holder released it and it holds {@code payloadCapacity} after its headroom,
     * else a new buffer of that capacity (the caller keeps it for the next time): the one way its makers reuse one.
     */
    public static ReusableHeapBuffer reuse(ReusableHeapBuffer last, int payloadCapacity) {
        if (last != null && last.reclaim()) {
            if (last.capacity() - Gbuffers.HEADROOM >= payloadCapacity) return last;
            last.release();
        }
        return new ReusableHeapBuffer(payloadCapacity);
    }

    /** The last release keeps the array, for {@link #reclaim}; the garbage collector takes it if nobody does. */
    @Override
    protected void deallocate() {
    }

    /**
     * True, with one reference again and nothing written after the headroom, when every holder has released the
     * buffer; false while one holds it (it is theirs until they release it, and is not taken back then).
     */
    public boolean reclaim() {
        if (refCnt() != 0) return false;
        resetRefCnt();
        setIndex(Gbuffers.HEADROOM, Gbuffers.HEADROOM);
        return true;
    }
}
