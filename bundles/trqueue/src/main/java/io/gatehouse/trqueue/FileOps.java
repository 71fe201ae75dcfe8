// SPDX-License-Identifier: Apache-2.0
package io.gatehouse.trqueue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * Every file-system call the queue makes. Tests subclass it to inject faults (no space, a failing rename, an
 * unreadable file) that mode bits cannot produce when the tests run as root.
 */
public class FileOps {

    public byte[] readAll(Path p) throws IOException {
        return Files.readAllBytes(p);
    }

    /**
     * Replaces {@code p} so that a crash leaves either the old or the new content, never a mix or an empty file:
     * temp file, fsync, rename over, fsync the directory.
     */
    public void writeAtomic(Path p, byte[] data) throws IOException {
        Path tmp = p.resolveSibling(p.getFileName() + ".tmp");
        try (FileChannel ch = open(tmp, EnumSet.of(StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING))) {
            ByteBuffer b = ByteBuffer.wrap(data);
            long pos = 0;
            while (b.hasRemaining()) pos += write(tmp, ch, b, pos);
            force(tmp, ch);
        }
        move(tmp, p);
        fsyncDir(p.getParent());
    }

    public void createDirectory(Path p) throws IOException {
        Files.createDirectory(p);
    }

    public void createDirectories(Path p) throws IOException {
        Files.createDirectories(p);
    }

    /** An atomic rename (same file system). */
    public void move(Path src, Path dst) throws IOException {
        Files.move(src, dst, StandardCopyOption.ATOMIC_MOVE);
    }

    public void deleteTree(Path root) throws IOException {
        if (!Files.exists(root, java.nio.file.LinkOption.NOFOLLOW_LINKS)) return;
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException exc) throws IOException {
                if (exc != null) throw exc;
                Files.delete(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    public void delete(Path p) throws IOException {
        Files.deleteIfExists(p);
    }

    /** The entries of a directory, sorted by name. */
    public List<Path> list(Path dir) throws IOException {
        List<Path> out = new ArrayList<>();
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path p : ds) out.add(p);
        }
        out.sort(null);
        return out;
    }

    public boolean exists(Path p) {
        return Files.exists(p, java.nio.file.LinkOption.NOFOLLOW_LINKS);
    }

    public boolean isDirectory(Path p) {
        return Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS);
    }

    public FileChannel open(Path p, Set<? extends OpenOption> options) throws IOException {
        return FileChannel.open(p, options);
    }

    /** One positional write; answers the bytes written (may be short). */
    public int write(Path p, FileChannel ch, ByteBuffer src, long position) throws IOException {
        return ch.write(src, position);
    }

    /**
     * Called before a frame of {@code len} bytes is stored through the mapping at {@code position} of segment
     * {@code p}. The default has nothing to do: {@link #allocate} already gave those bytes real blocks. Tests
     * override it to fail the store itself.
     */
    public void reserve(Path p, long position, int len) throws IOException {
        // the space is allocated: the store cannot need a new block
    }

    /** Zeros written by {@link #allocate}; never written to, shared through duplicates. */
    private static final ByteBuffer ZEROS = ByteBuffer.allocateDirect(1 << 20);

    /**
     * Gives the bytes {@code [position, position + len)} of segment {@code p} real disk blocks by writing zeros
     * there with positional writes (the bytes must be unwritten space: zeros). A later store through the mapping
     * then never needs a new block, so a full file system is this IOException ("No space left on device") and
     * never a fault (SIGBUS, an InternalError) on a mapped page. Java has no fallocate; writing zeros also works
     * on tmpfs, where the pages themselves are the space.
     */
    public void allocate(Path p, FileChannel ch, long position, int len) throws IOException {
        long pos = position;
        long end = position + len;
        while (pos < end) {
            ByteBuffer z = ZEROS.duplicate();
            z.limit((int) Math.min(z.capacity(), end - pos));
            while (z.hasRemaining()) pos += write(p, ch, z, pos);
        }
    }

    /** Bytes usable on the file system holding {@code p}. */
    public long usableSpace(Path p) throws IOException {
        return Files.getFileStore(p).getUsableSpace();
    }

    public int read(Path p, FileChannel ch, ByteBuffer dst, long position) throws IOException {
        return ch.read(dst, position);
    }

    public void truncate(Path p, FileChannel ch, long size) throws IOException {
        ch.truncate(size);
    }

    public void force(Path p, FileChannel ch) throws IOException {
        ch.force(false);
    }

    /** Makes a directory's entries (created, renamed files) durable. */
    public void fsyncDir(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (NoSuchFileException e) {
            throw e;
        } catch (IOException e) {
            // some file systems refuse to open or force a directory; the rename itself is still atomic there
            if (!isDirectory(dir)) throw e;
        }
    }
}
