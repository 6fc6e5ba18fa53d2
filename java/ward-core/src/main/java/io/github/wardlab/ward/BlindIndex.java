package io.github.wardlab.ward;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.Arrays;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * A blind index (FORMAT.md, "Blind index"): an HMAC-SHA-256 of a column's
 * normalised value, so a sealed column is searched by equality ({@code
 * WHERE email_idx = ?} with {@link #compute} of the value sought) without
 * being opened. {@link #v2} is the Go library's {@code field.NewIndex}: a
 * key per index from an integrity epoch, bound to the database, stored as
 * {@code 0x02 ‖ epoch ‖ digest}; {@link #v1} reads the older indexes keyed
 * by the keyring's root. Thread-safe.
 */
public final class BlindIndex {
    /** The digest's sizes in bytes, and the default. */
    public static final int MIN_SIZE = 4, MAX_SIZE = 32, DEFAULT_SIZE = 16;

    private final byte[] key;
    private final int size;
    private final Normalizer normalizer;
    private final byte[] prefix; // v2: 0x02 ‖ epoch; v1: empty
    private final byte[] header; // v2: what the digest covers before the value; v1: empty
    private final long epoch;
    private final ThreadLocal<Mac> macs;

    private BlindIndex(byte[] key, int size, Normalizer normalizer, byte[] prefix, byte[] header, long epoch) {
        this.key = key;
        this.size = size;
        this.normalizer = normalizer;
        this.prefix = prefix;
        this.header = header;
        this.epoch = epoch;
        this.macs = ThreadLocal.withInitial(this::newMac);
    }

    /**
     * The options of a v2 index ({@code field.IndexOptions}).
     *
     * @param database   the ledger's database ID, which every v2 index binds (required)
     * @param name       tells apart the indexes of one column (null: the column's name)
     * @param normalizer null: {@link Normalizer#NFC}
     * @param size       the digest's bytes, 4 to 32 (0: 16)
     * @param epoch      the integrity epoch (0: the keyring's primary); a ledger records each index's
     */
    public record Options(String database, String name, Normalizer normalizer, int size, long epoch) {
        /** The defaults for a database. */
        public static Options of(String database) {
            return new Options(database, null, null, 0, 0);
        }
    }

    /** The v2 index of table.column under kr ({@code field.NewIndex} in Go). */
    public static BlindIndex v2(Keyring kr, String table, String column, Options o) {
        if (o.database() == null || o.database().isEmpty()) {
            throw new WardException.Binding("a blind index v2 needs the database's ID (the ledger's)");
        }
        requireNames(table, column);
        String name = o.name() == null || o.name().isEmpty() ? column : o.name();
        Normalizer n = o.normalizer() == null ? Normalizer.NFC : o.normalizer();
        int size = checkSize(o.size() == 0 ? DEFAULT_SIZE : o.size());
        long epoch = o.epoch() == 0 ? kr.primary().id() : o.epoch();
        byte[] key = kr.integrityKeyAt(epoch, purpose(table, column, name, n, size));
        byte[] prefix = ByteBuffer.allocate(5).put((byte) 2).putInt((int) epoch).array();
        ByteArrayOutputStream h = new ByteArrayOutputStream();
        h.writeBytes("ward blind index v2\0".getBytes(StandardCharsets.US_ASCII));
        h.writeBytes(prefix);
        Wire.lp(h, o.database());
        return new BlindIndex(key, size, n, prefix, h.toByteArray(), epoch);
    }

    /** The v1 index of table.column ({@code field.NewBlindIndex}): keyed by the keyring's root, read for indexes written before v2. */
    public static BlindIndex v1(Keyring kr, String table, String column, Normalizer n, int size) {
        requireNames(table, column);
        ByteArrayOutputStream p = new ByteArrayOutputStream();
        p.writeBytes("blind-index\0".getBytes(StandardCharsets.US_ASCII));
        Wire.lp(p, table);
        Wire.lp(p, column);
        return new BlindIndex(kr.deriveBytes(p.toByteArray(), 32), checkSize(size), n, new byte[0], new byte[0], 0);
    }

    /** The integrity-key purpose of a v2 index: table, column, name, the normaliser's name and version, the size. */
    static byte[] purpose(String table, String column, String name, Normalizer n, int size) {
        ByteArrayOutputStream p = new ByteArrayOutputStream();
        p.writeBytes("blind-index v2\0".getBytes(StandardCharsets.US_ASCII));
        Wire.lp(p, table);
        Wire.lp(p, column);
        Wire.lp(p, name);
        Wire.lp(p, n.name());
        Wire.uvarint(p, n.version());
        Wire.uvarint(p, size);
        return p.toByteArray();
    }

    /** The index of a value, in its stored form (v2: version and epoch first). */
    public byte[] compute(String value) {
        requireWellFormed(value);
        byte[] v = normalizer.func().apply(value).getBytes(StandardCharsets.UTF_8);
        try {
            return digest(v);
        } finally {
            Arrays.fill(v, (byte) 0);
        }
    }

    /** The index of a value's bytes: valid UTF-8 is normalised, anything else indexed as given. */
    public byte[] compute(byte[] value) {
        String text = decode(value);
        return text != null ? compute(text) : digest(value);
    }

    /** The stored form of the digest of v (already normalised). */
    private byte[] digest(byte[] v) {
        Mac mac = macs.get();
        mac.update(header);
        mac.update(v);
        byte[] digest = mac.doFinal();
        byte[] out = Arrays.copyOf(prefix, prefix.length + size);
        System.arraycopy(digest, 0, out, prefix.length, size);
        return out;
    }

    /** The integrity epoch this index is computed under; 0 for a v1 index. */
    public long epoch() {
        return epoch;
    }

    /** The epoch a stored v2 index names, from its bytes alone, or {@code Malformed}. */
    public static long epochOf(byte[] stored) {
        if (stored.length < 5 + MIN_SIZE || stored.length > 5 + MAX_SIZE || stored[0] != 2) {
            throw new WardException.Malformed("not a stored blind index v2 (" + stored.length + " bytes)");
        }
        long epoch = Wire.u32(stored, 1);
        if (epoch == 0) {
            throw new WardException.Malformed("not a stored blind index v2 (epoch 0)");
        }
        return epoch;
    }

    private Mac newMac() {
        try {
            Mac m = Mac.getInstance("HmacSHA256");
            m.init(new SecretKeySpec(key, "HmacSHA256"));
            return m;
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK has no HMAC-SHA-256", e);
        }
    }

    private static void requireNames(String table, String column) {
        if (table == null || table.isEmpty() || column == null || column.isEmpty()) {
            throw new WardException.Binding("a blind index needs a table and a column");
        }
    }

    private static int checkSize(int size) {
        if (size < MIN_SIZE || size > MAX_SIZE) {
            throw new WardException.Binding("blind index size " + size + " out of range [" + MIN_SIZE + ", " + MAX_SIZE + "]");
        }
        return size;
    }

    /** Refuses a string with a lone surrogate, which has no UTF-8 (rather than index a replacement). */
    private static void requireWellFormed(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new WardException.Binding("a value with a lone surrogate has no UTF-8: pass its bytes");
            }
        }
    }

    /** The text of valid UTF-8, or null. */
    private static String decode(byte[] b) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    @Override
    public String toString() {
        return "BlindIndex(epoch " + epoch + ")";
    }
}
