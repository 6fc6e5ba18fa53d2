package io.github.wardlab.ward;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * The subject keys of one namespace in a database (FORMAT.md, "Subject
 * keys"): what a per-subject {@link Column} ({@link Column#perSubject})
 * opens and seals with, as the Go library's {@code subject.Store} and the
 * Python package's {@code SubjectKeys}.
 *
 * <p>A subject's key is a row of {@value #KEYS_TABLE} sealed under the
 * keyring and bound to its namespace, subject and version, so a database
 * writer who moves a key row to another subject makes it fail to open.
 * ward-java opens values under those keys and seals into a subject's
 * newest key, and never creates, forgets or re-keys one (the Go library
 * and CLI do). It refuses, with {@link WardException.SubjectRefused}:
 * a subject without a key (forgotten, or never given one); a key the user
 * holds privately or lost; a seal for a subject with a tombstone; and a
 * seal into a key version under the namespace's key floor (a rolled-back
 * key table). It seals only after the database's ledger verifies, and
 * writes ciphertext v4 only once the fleet opened it (v3 until then).
 *
 * <p>With the fleet's forget journal ({@link #withJournal}), a seal is also
 * refused for a subject the journal records as private whose newest key
 * in the database is keyring-wrapped: a database writer deleted the
 * user-held key rows, or put back keys from before the subject went
 * private (Go's {@code subject.ErrPrivateKeysChanged}). Without it, such a
 * seal goes under the put-back key, which the keyring's holder can open.
 *
 * <p>Unwrapped keys are kept for {@link #DEFAULT_TTL} (as Go's), never
 * longer: a subject forgotten by another process stops opening here within
 * it. Safe for concurrent use.
 */
public final class SubjectKeys implements SubjectSource {
    /** The table of wrapped subject keys. */
    public static final String KEYS_TABLE = "ward_subject_keys";
    /** The table of forgotten subjects' tombstones. */
    public static final String TOMBSTONES_TABLE = "ward_subject_tombstones";
    /** How long an unwrapped key is kept, as Go's {@code subject.DefaultTTL}. */
    public static final Duration DEFAULT_TTL = Duration.ofSeconds(30);
    /** The most unwrapped keys kept. */
    public static final int MAX_ENTRIES = 100_000;

    private static final byte[] WRAP_LABEL = "ward subject key v1\0".getBytes(StandardCharsets.US_ASCII);

    /** An unwrapped subject key of one version, and when it stops being kept (System.nanoTime). */
    record Key(long version, Algorithm alg, byte[] material, long until) {}

    private record CacheId(String subject, long version) {}

    private final DataSource db;
    private final Keyring keyring;
    private final String namespace;
    private final String ledgerTable;
    private final long ttlNanos;
    private final Map<CacheId, Key> cache = new LinkedHashMap<>();
    private final ForgetJournal journal;
    private volatile LedgerState ledger;

    /** The keys of namespace in db, with the default ledger table and TTL. */
    public SubjectKeys(DataSource db, Keyring keyring, String namespace) {
        this(db, keyring, namespace, Ledger.DEFAULT_TABLE, DEFAULT_TTL);
    }

    /** The keys of namespace in db; the ledger is verified from ledgerTable, keys kept for ttl (zero: not kept). */
    public SubjectKeys(DataSource db, Keyring keyring, String namespace, String ledgerTable, Duration ttl) {
        this(db, keyring, namespace, ledgerTable, ttl, null);
    }

    private SubjectKeys(DataSource db, Keyring keyring, String namespace, String ledgerTable, Duration ttl, ForgetJournal journal) {
        this.journal = journal;
        this.db = Objects.requireNonNull(db, "db");
        this.keyring = Objects.requireNonNull(keyring, "keyring");
        if (namespace == null || namespace.isEmpty()) {
            throw new WardException.Binding("subject keys need a namespace");
        }
        if (ttl.isNegative()) {
            throw new WardException.Binding("a negative TTL");
        }
        this.namespace = namespace;
        this.ledgerTable = ledgerTable;
        this.ttlNanos = ttl.toNanos();
    }

    /**
     * These keys, asking journal at each seal whether the subject went
     * private (the folder the fleet's Go processes append to with {@code
     * --forget-journal} or {@code subject.Config.Journal}).
     */
    public SubjectKeys withJournal(ForgetJournal journal) {
        return new SubjectKeys(db, keyring, namespace, ledgerTable, Duration.ofNanos(ttlNanos), Objects.requireNonNull(journal, "journal"));
    }

    /** The namespace. */
    public String namespace() {
        return namespace;
    }

    /** W(ns, subject, version): what a key row's wraps are bound to (its seal under the keyring after a label, a grant's wrap as it is). */
    static byte[] wrapContext(String namespace, String subject, long version) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Wire.lp(out, namespace);
        Wire.lp(out, subject);
        byte[] v = new byte[4];
        Wire.putU32(v, 0, version);
        out.writeBytes(v);
        return out.toByteArray();
    }

    /** A keyring-wrapped subject key's algorithm and material, checked against its row. */
    static Key unwrap(Keyring kr, String namespace, String subject, long version, byte[] wrapped, long until) {
        return payload(kr.open(wrapped, Wire.concat(WRAP_LABEL, wrapContext(namespace, subject, version)), new byte[0]), version, until);
    }

    /**
     * A subject key payload (v1: 1, the algorithm's code, BE32 version, the
     * key), checked against the version of the row it came from: the
     * keyring's wrap of it, or a grant's.
     */
    static Key payload(byte[] payload, long version, long until) {
        if (payload.length < 6 || payload[0] != 1) {
            throw new WardException.UnsupportedVersion("a subject key payload of an unknown version");
        }
        Algorithm alg = Algorithm.ofCode(payload[1] & 0xff);
        if (Wire.u32(payload, 2) != version || payload.length != 6 + alg.keySize()) {
            throw new WardException.Malformed("a subject key payload that does not match its row");
        }
        return new Key(version, alg, Arrays.copyOfRange(payload, 6, payload.length), until);
    }

    /** A subject's key of a version (the newest when version is null), unwrapped. */
    Key key(String subject, Long version) {
        long now = System.nanoTime();
        if (version != null) {
            synchronized (cache) {
                Key k = cache.get(new CacheId(subject, version));
                if (k != null && now - k.until() < 0) {
                    return k;
                }
            }
        }
        Key k = read(subject, version, now + ttlNanos);
        if (ttlNanos > 0) {
            keep(subject, k, now);
        }
        return k;
    }

    private Key read(String subject, Long version, long until) {
        String sql = "SELECT version, held, wrapped FROM " + KEYS_TABLE + " WHERE namespace = ? AND subject = ?"
                + (version == null ? " ORDER BY version DESC LIMIT 1" : " AND version = ?");
        try (Connection c = db.getConnection(); PreparedStatement st = c.prepareStatement(sql)) {
            st.setString(1, namespace);
            st.setString(2, subject);
            if (version != null) {
                st.setLong(3, version);
            }
            try (ResultSet rs = st.executeQuery()) {
                if (!rs.next()) {
                    throw new WardException.SubjectRefused("the subject has no such key: forgotten, or never given one (ward-java never creates a subject key)");
                }
                long v = rs.getLong(1);
                int held = rs.getInt(2);
                if (held != 0) {
                    throw new WardException.SubjectRefused("the subject's key is " + (held == 1 ? "private (wrapped under the user's password)"
                            : held == 2 ? "lost (a password reset without the recovery code)" : "not keyring-wrapped") + ": it opens only inside the user's session");
                }
                byte[] wrapped = rs.getBytes(3);
                return unwrap(keyring, namespace, subject, v, wrapped == null ? new byte[0] : wrapped, until);
            }
        } catch (SQLException e) {
            throw new WardException("reading " + KEYS_TABLE + ": SQLSTATE " + e.getSQLState());
        }
    }

    private void keep(String subject, Key k, long now) {
        synchronized (cache) {
            if (cache.size() >= MAX_ENTRIES) {
                cache.values().removeIf(e -> now - e.until() >= 0);
                for (Iterator<CacheId> it = cache.keySet().iterator(); cache.size() >= MAX_ENTRIES && it.hasNext();) {
                    it.next();
                    it.remove(); // the oldest first
                }
            }
            cache.put(new CacheId(subject, k.version()), k);
        }
    }

    /** The AEAD key of a class-2 value of subject: K_scope for v4, the key itself for v3. */
    @Override
    public byte[] resolve(String subject, Ciphertext.Header h, byte[] scope) {
        if (h.keyClass() != Ciphertext.CLASS_SUBJECT) {
            throw new WardException.UnknownKey("a keyring key sealed this value, not a subject key");
        }
        Key k = key(subject, h.keyId());
        if (k.alg() != h.alg()) {
            throw new WardException.UnknownKey("the value's algorithm is not the subject key's");
        }
        return h.version() == 4 ? Ciphertext.scopedKey(k.alg(), k.material(), scope) : k.material();
    }

    /** The database's ledger, verified once (before the first seal); a typed error otherwise, and again at the next seal. */
    public LedgerState ledger() {
        LedgerState l = ledger;
        if (l == null) {
            l = ledger = Ledger.verify(db, keyring, ledgerTable);
        }
        return l;
    }

    /**
     * Seals for subject under their newest keyring-wrapped key: only after
     * the ledger verifies, as ciphertext v4 bound to contextV4 once the
     * fleet opened v4 and v3 bound to contextV3 until then, never for a
     * forgotten subject or under the key floor.
     */
    byte[] seal(String subject, byte[] plaintext, byte[] scope, byte[] contextV4, byte[] contextV3) {
        LedgerState st = ledger();
        refuseForgotten(subject);
        Key k = key(subject, null);
        if (journal != null && journal.isPrivate(st.database(), namespace, subject, () -> Ledger.verify(db, keyring, ledgerTable))) {
            throw new WardException.SubjectRefused("the forget journal records the subject as private, but its newest key in the database is keyring-wrapped"
                    + " (a database writer deleted its user-held keys or put back older ones): nothing is sealed under it");
        }
        if (k.version() < keyFloor(st.counter("subject.floor:" + namespace))) {
            throw new WardException.SubjectRefused("the subject's newest key version is under the namespace's key floor, which a grant's revocation raised"
                    + " (a database writer deleted the newer ones, or restored the key table): a Go process gives the subject a new version first");
        }
        if (!st.allows(LedgerState.CIPHERTEXT_V4)) { // a process of the fleet still reads v3 only
            return Ciphertext.sealV3(k.alg(), Ciphertext.CLASS_SUBJECT, k.version(), k.material(), plaintext, contextV3);
        }
        byte[] kScope = Ciphertext.scopedKey(k.alg(), k.material(), scope);
        return Ciphertext.sealV4(k.alg(), Ciphertext.CLASS_SUBJECT, k.version(), kScope, Ciphertext.v4CheckKey(k.alg(), kScope), plaintext, contextV4);
    }

    private void refuseForgotten(String subject) {
        try (Connection c = db.getConnection();
                PreparedStatement st = c.prepareStatement("SELECT 1 FROM " + TOMBSTONES_TABLE + " WHERE namespace = ? AND subject = ?")) {
            st.setString(1, namespace);
            st.setString(2, subject);
            try (ResultSet rs = st.executeQuery()) {
                if (rs.next()) {
                    throw new WardException.SubjectRefused("the subject was forgotten: nothing is sealed for them again");
                }
            }
        } catch (SQLException e) {
            throw new WardException("reading " + TOMBSTONES_TABLE + ": SQLSTATE " + e.getSQLState());
        }
    }

    /**
     * The lowest key version a seal may use after raises raises of the
     * namespace's key floor (Go's {@code subject.KeyFloor}): 0, or
     * 2^31 + raises·2^23.
     */
    static long keyFloor(long raises) {
        if (raises == 0) {
            return 0;
        }
        if (raises < 0 || raises > 255) {
            throw new WardException.SubjectRefused("the key floor was raised " + raises + " times, past the 255 versions have room for");
        }
        return (1L << 31) + (raises << 23);
    }

    @Override
    public String toString() {
        return "SubjectKeys(" + namespace + ")";
    }
}
