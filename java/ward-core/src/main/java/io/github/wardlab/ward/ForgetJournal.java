package io.github.wardlab.ward;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.GeneralSecurityException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A reader of the forget journal (FORMAT.md, "Forget journal record v1, v2
 * and v3", "Private record v2"): the folder of {@code *.wfj} files Go's
 * {@code forgetlog} appends to, outside the database. ward-java reads it
 * for what Go's subject store reads it for at a seal: whether a subject
 * went private ({@link #isPrivate}), so that a seal never uses a
 * keyring-wrapped key a database writer put back (or left) for a subject
 * whose keys the user holds. ward-java never appends to it.
 *
 * <p>Both keys it needs derive from the keyring (the subject hash key and,
 * per integrity epoch, the records' MAC key): a grant holder has neither,
 * and needs neither (a grant never seals under a subject key). A line that
 * fails its MAC or does not parse is counted ({@link #invalid}) and
 * ignored, so a writer of the folder can delete records but not plant one;
 * a record written with an older keyring file counts only when the
 * ledger's tally proves it committed (below).
 *
 * <p>A private record v2 counts when its MAC is under the keyring's current
 * integrity epoch, or when it lies on the chain back from the ledger's
 * tally of the namespace's private subjects (a record that committed, of
 * any epoch, a retired one included). A v1 private record counts only
 * until the ledger holds the namespace's mark {@code
 * integrity:private-v2:NS}. Each look-up first reads what was appended
 * since the last (complete lines only). Safe for concurrent use.
 */
public final class ForgetJournal {
    /** The extension of a journal file. */
    public static final String EXT = ".wfj";
    /** The largest journal file read (Go's {@code forgetlog.MaxFile}): a larger one is refused, naming it. */
    public static final long MAX_FILE = 1L << 30;
    /** The longest line kept: a longer one is a writer's, counted invalid. */
    static final int MAX_LINE = 2048;
    /** The integrity-key purpose of chained records. */
    static final byte[] EPOCH_PURPOSE = "forget journal".getBytes(StandardCharsets.US_ASCII);

    /**
     * The journal's keys: the subject hash key, the MAC key of v1/v2
     * records (both from the keyring's root), and the integrity keys of
     * chained records, one per epoch.
     */
    interface Keys {
        /** The subject hash key. */
        byte[] hash();

        /** The MAC key of records v1, v2 and private v1. */
        byte[] mac();

        /** The current integrity epoch, or -1 when there is none. */
        long current();

        /** An epoch's integrity key, or null when this keyring cannot give it. */
        byte[] at(long epoch);

        /** Whether the keyring retired that epoch's key: its records are kept unproven, for the chain to prove. */
        boolean ended(long epoch);
    }

    private final Path dir;
    private final Keys keys;
    private final Map<Long, byte[]> epochKeys = new HashMap<>();
    private final Map<Path, Long> offsets = new HashMap<>();
    private String database;
    private JournalRecords records;

    ForgetJournal(Path dir, Keys keys) {
        this.dir = dir;
        this.keys = keys;
    }

    /**
     * The journal in dir, read with the keyring's keys: a typed error when
     * dir is not a folder. Nothing is read until the first look-up.
     */
    public static ForgetJournal open(Path dir, Keyring kr) {
        if (!java.nio.file.Files.isDirectory(dir)) {
            throw new WardException.CorruptFile("the forget journal " + dir + " is not a folder");
        }
        byte[] hash = kr.derive("forget journal subject v1", 32), mac = kr.derive("forget journal mac v1", 32);
        return new ForgetJournal(dir, new Keys() {
            public byte[] hash() {
                return hash;
            }

            public byte[] mac() {
                return mac;
            }

            public long current() {
                Keyring.Key p = kr.primary();
                return p == null ? -1 : p.id();
            }

            public byte[] at(long epoch) {
                try {
                    return kr.integrityKeyAt(epoch, EPOCH_PURPOSE);
                } catch (WardException.UnknownKey | WardException.KeyDisabled e) {
                    return null;
                }
            }

            public boolean ended(long epoch) {
                return kr.removedKey(epoch);
            }
        });
    }

    /** The journal's folder. */
    public Path dir() {
        return dir;
    }

    /** How many lines read so far failed to parse or their MAC. */
    public synchronized int invalid() {
        return records == null ? 0 : records.invalid;
    }

    /**
     * Whether the journal records the subject of namespace as gone private
     * in the database named (the ledger's database ID), under the rules
     * above. ledger gives the verified ledger, asked only when a record of
     * the subject needs its tally; its errors pass through.
     */
    public boolean isPrivate(String database, String namespace, String subject, Supplier<LedgerState> ledger) {
        String ns = hexOf(namespace), id = Wire.hex(subjectHash(keys.hash(), namespace, subject));
        List<JournalRecords.Rec> recs;
        synchronized (this) {
            refresh(database);
            recs = records.privateOf(ns, id);
            long current = keys.current();
            for (JournalRecords.Rec r : recs) {
                if (r.chained() && r.proven() && r.epoch() == current) {
                    return true;
                }
            }
        }
        if (recs.isEmpty()) {
            return false;
        }
        LedgerState st = ledger.get(); // read without the lock: other look-ups do not queue behind the database
        synchronized (this) {
            refresh(database);
            Tally tally = st.tally("subject.private:" + namespace);
            boolean v1 = !st.marks().contains("integrity:private-v2:" + namespace);
            Set<JournalRecords.Rec> on = records.committed(ns, tally);
            for (JournalRecords.Rec r : records.privateOf(ns, id)) {
                if (on.contains(r) || (!r.chained() && v1)) {
                    return true;
                }
            }
            return false;
        }
    }

    /** The keyed hash a record holds instead of the subject: HMAC-SHA-256(hash key, uvarint(len(ns)) ‖ ns ‖ subject). */
    static byte[] subjectHash(byte[] key, String namespace, String subject) {
        java.io.ByteArrayOutputStream in = new java.io.ByteArrayOutputStream();
        Wire.lp(in, namespace);
        in.writeBytes(subject.getBytes(StandardCharsets.UTF_8));
        return hmac(key, in.toByteArray(), in.size());
    }

    static byte[] hmac(byte[] key, byte[] data, int len) {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(key, "HmacSHA256"));
            m.update(data, 0, len);
            return m.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String hexOf(String namespace) {
        return Wire.hex(namespace.getBytes(StandardCharsets.UTF_8));
    }

    /** Reads what was appended to the journal's files since the last call (all of it for another database). */
    private void refresh(String db) {
        if (records == null || !db.equals(database)) {
            records = new JournalRecords(db, new JournalRecords.Checker() {
                public byte[] macKey(JournalRecords.Rec r) {
                    return r.chained() ? epochKey(r.epoch()) : keys.mac();
                }

                public boolean ended(long epoch) {
                    return keys.ended(epoch);
                }
            });
            database = db;
            offsets.clear();
        }
        Map<Path, Boolean> files = new TreeMap<>();
        try (DirectoryStream<Path> ds = java.nio.file.Files.newDirectoryStream(dir, "*" + EXT)) {
            ds.forEach(p -> files.put(p, true));
        } catch (IOException e) {
            throw new WardException("reading the forget journal " + dir + ": " + e.getClass().getSimpleName());
        }
        for (Path f : files.keySet()) {
            readFrom(f);
        }
    }

    /** An epoch's key, derived once per journal (at most 64 kept). */
    private byte[] epochKey(long epoch) {
        byte[] k = epochKeys.get(epoch);
        if (k == null) {
            k = keys.at(epoch);
            if (k != null && epochKeys.size() < 64) {
                epochKeys.put(epoch, k);
            }
        }
        return k;
    }

    /** Reads a file's complete lines after the offset last read, up to the size it has now; a line past MAX_LINE is counted invalid and skipped. */
    private void readFrom(Path f) {
        BasicFileAttributes a;
        try {
            a = java.nio.file.Files.readAttributes(f, BasicFileAttributes.class);
        } catch (IOException e) {
            throw new WardException.CorruptFile("a forget journal file that cannot be read: " + f);
        }
        if (!a.isRegularFile() || a.size() > MAX_FILE) {
            throw new WardException.CorruptFile("a forget journal file that is not a regular file of at most " + MAX_FILE + " bytes: " + f);
        }
        long off = offsets.getOrDefault(f, 0L), end = a.size();
        try (InputStream in = new BufferedInputStream(java.nio.file.Files.newInputStream(f), 1 << 16)) {
            in.skipNBytes(Math.min(off, end));
            byte[] line = new byte[MAX_LINE + 1];
            while (off < end) {
                int n = 0, b = -1;
                while (off + n < end && n < line.length && (b = in.read()) >= 0) {
                    line[n++] = (byte) b;
                    if (b == '\n') {
                        break;
                    }
                }
                if (n == line.length && b != '\n') { // overlong: a writer's; skip to its end
                    records.invalid++;
                    while (off + n < end && (b = in.read()) >= 0 && b != '\n') {
                        n++;
                    }
                    off += n + (b == '\n' ? 1 : 0);
                    continue;
                }
                if (n == 0 || line[n - 1] != '\n') {
                    break; // a last line without its newline: read again next time
                }
                records.add(line, n);
                off += n;
            }
        } catch (IOException e) {
            throw new WardException("reading the forget journal file " + f + ": " + e.getClass().getSimpleName());
        }
        offsets.put(f, off);
    }
}
