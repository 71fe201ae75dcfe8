// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileSystemException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiPredicate;

/** File operations that fail on demand: {@code fault.test(op, path)} true makes {@code op} on {@code path} throw. */
class FaultyOps extends FileOps {
    volatile BiPredicate<String, Path> fault = (op, p) -> false;
    volatile String reason = "No space left on device";

    void fail(BiPredicate<String, Path> f, String why) {
        reason = why;
        fault = f;
    }

    void heal() {
        fault = (op, p) -> false;
    }

    private void check(String op, Path p) throws IOException {
        if (fault.test(op, p)) throw new FileSystemException(p.toString(), null, reason);
    }

    @Override public byte[] readAll(Path p) throws IOException { check("readAll", p); return super.readAll(p); }

    @Override public void createDirectory(Path p) throws IOException { check("mkdir", p); super.createDirectory(p); }

    @Override public void move(Path s, Path d) throws IOException { check("move", s); super.move(s, d); }

    @Override public List<Path> list(Path dir) throws IOException { check("list", dir); return super.list(dir); }

    @Override
    public FileChannel open(Path p, Set<? extends OpenOption> o) throws IOException {
        check("open", p);
        return super.open(p, o);
    }

    /** Makes the next stores through the mapping raise the JVM's fault error, as a SIGBUS on a mapped page does. */
    volatile boolean storeFaults;

    @Override
    public void reserve(Path p, long pos, int len) throws IOException {
        check("write", p);
        if (storeFaults) throw new InternalError("a fault occurred in an unsafe memory access operation");
    }

    @Override
    public void allocate(Path p, FileChannel ch, long pos, int len) throws IOException {
        check("allocate", p);
        super.allocate(p, ch, pos, len);
    }

    /** Forces of a file's data made so far (segments, and the temp files of atomic writes). */
    final AtomicInteger forces = new AtomicInteger();

    @Override
    public void force(Path p, FileChannel ch) throws IOException {
        check("force", p);
        forces.incrementAndGet();
        super.force(p, ch);
    }

    @Override
    public int write(Path p, FileChannel ch, ByteBuffer src, long pos) throws IOException {
        check("write", p);
        return super.write(p, ch, src, pos);
    }
}
