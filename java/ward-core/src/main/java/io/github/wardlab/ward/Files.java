package io.github.wardlab.ward;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;

/** Bounded reads of regular files, as Go's boundfile and Python's read_bounded. */
final class Files {
    private Files() {}

    /**
     * A regular file's bytes, refusing a FIFO, a device or a folder before
     * reading, and a file past limit bytes: nothing put in place can hang
     * a reader or fill its memory. A symbolic link is followed.
     */
    static byte[] readBounded(Path path, int limit, String what) throws IOException {
        BasicFileAttributes a = java.nio.file.Files.readAttributes(path, BasicFileAttributes.class);
        if (!a.isRegularFile()) {
            throw new WardException.CorruptFile(what + " that is not a regular file: " + path);
        }
        try (InputStream in = java.nio.file.Files.newInputStream(path)) {
            byte[] b = in.readNBytes(limit + 1);
            if (b.length > limit) {
                throw new WardException.CorruptFile(what + " larger than " + limit + " bytes: " + path);
            }
            return b;
        }
    }

}
