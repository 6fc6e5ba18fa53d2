package io.github.wardlab.ward;

import java.io.ByteArrayOutputStream;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.List;
import java.util.UUID;

/**
 * One encrypted column of a table, as Go's {@code field.Column}: every value
 * is bound to its table, column and row, and to the values of the columns
 * the column binds ({@code field.Bind}), so a value copied to another row,
 * or a row re-pointed to another owner, does not open. Seals write
 * ciphertext v4 (the field scope {@code table.column}); opens read v3 and
 * v4, binary or text form.
 *
 * <p>Write v4 only once the fleet reads it: a database whose ledger has not
 * opened the form {@code ciphertext:v4} still has processes that read v3
 * only. {@link #checkedBy} puts a column under a verified ledger's rule
 * (v3 until then); without it the column writes v4 and the caller decides.
 */
public final class Column {
    private final Keyring keyring; // null for a grant's column: it opens, never seals
    private final KeySource source;
    private final String table;
    private final String column;
    private final List<String> bind;
    private final byte[] scope;
    private final byte[] names;
    private final LedgerState ledger; // null: the caller decides the version
    private final SubjectSource subjects; // null: no per-subject values
    private final int subjectIndex; // the subject's column among bind, for subjects

    /** A column of table, binding the named columns' values, in that order. */
    public Column(Keyring keyring, String table, String column, String... bind) {
        this(keyring, keyring, table, column, bind);
    }

    /**
     * A column a grant opens (and never seals): values of another column,
     * of ciphertext v3 or under a key added after the grant are refused.
     */
    public Column(Grant grant, String table, String column, String... bind) {
        this(null, grant, table, column, bind);
    }

    private Column(Keyring keyring, KeySource source, String table, String column, String... bind) {
        this(keyring, source, null, null, -1, table, column, bind);
    }

    private Column(Keyring keyring, KeySource source, LedgerState ledger, SubjectSource subjects, int subjectIndex, String table, String column,
            String... bind) {
        if (table.isEmpty() || column.isEmpty()) {
            throw new WardException.Binding("a column needs a table and a column name");
        }
        this.keyring = keyring;
        this.source = source;
        this.ledger = ledger;
        this.subjects = subjects;
        this.subjectIndex = subjectIndex;
        this.table = table;
        this.column = column;
        this.bind = List.of(bind);
        this.scope = scope(table, column);
        ByteArrayOutputStream n = new ByteArrayOutputStream();
        Wire.uvarint(n, bind.length);
        for (String b : bind) {
            Wire.lp(n, b);
        }
        this.names = n.toByteArray();
    }

    /**
     * This column under the write rule of a verified ledger ({@link
     * Ledger#verify}), as the Go library's and the Python package's: it
     * seals ciphertext v4 once the fleet has opened it (every registered
     * process reads it), and v3 until then.
     */
    public Column checkedBy(LedgerState verified) {
        return new Column(keyring, source, java.util.Objects.requireNonNull(verified, "verified"), subjects, subjectIndex, table, column,
                bind.toArray(String[]::new));
    }

    /**
     * This column sealed per subject, as Go's {@code field.PerSubject}: values
     * under subject keys open with keys (the subject is the value of the
     * bound column subjectColumn, which the column must bind), and values
     * under keyring keys still open with the keyring (or the grant). With
     * {@link SubjectKeys} (a keyring's column) seals go under the subject's
     * own key; a grant's sources ({@link GrantSubjects}, {@link
     * SubjectGrant}) open only. A subject forgotten, holding their key
     * privately, or without one is {@link WardException.SubjectRefused}.
     */
    public Column perSubject(SubjectSource keys, String subjectColumn) {
        if (keys instanceof SubjectKeys && keyring == null) {
            throw new WardException.NotGranted("a grant's column opens subjects' values through GrantSubjects or a SubjectGrant, not SubjectKeys");
        }
        int i = bind.indexOf(subjectColumn);
        if (i < 0) {
            throw new WardException.Binding("the subject's column " + subjectColumn + " is not among the columns " + this + " binds");
        }
        return new Column(keyring, source, ledger, java.util.Objects.requireNonNull(keys, "keys"), i, table, column, bind.toArray(String[]::new));
    }

    /**
     * The column a subject grant opens (its table and column), binding the
     * named columns, subjectColumn among them: it opens that subject's
     * ciphertext v4 values and never seals.
     */
    public static Column of(SubjectGrant grant, String subjectColumn, String... bind) {
        return new Column(null, (h, scope) -> {
            throw new WardException.NotGranted("a subject grant opens values under the subject's key only");
        }, grant.table(), grant.column(), bind).perSubject(grant, subjectColumn);
    }

    /** The v4 scope of a column: {@code "ward/field/v4" 0 ‖ ℓ(table) ‖ ℓ(column)}. */
    public static byte[] scope(String table, String column) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes("ward/field/v4\0".getBytes(StandardCharsets.US_ASCII));
        Wire.lp(out, table);
        Wire.lp(out, column);
        return out.toByteArray();
    }

    /** Field context v4 of a row and its bound values. */
    public byte[] contextV4(Object row, Object... values) {
        if (values.length != bind.size()) {
            throw new WardException.Binding("the column binds " + bind.size() + " columns, " + values.length + " values given");
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes(names);
        Wire.lp(out, rowText(row));
        for (Object v : values) {
            byte[] b = encodeBound(v);
            if (b == null) {
                out.write(0);
            } else {
                Wire.uvarint(out, b.length + 1L);
                out.writeBytes(b);
            }
        }
        return out.toByteArray();
    }

    /** Field context v3: the table and column, then context v4's bytes. */
    public byte[] contextV3(Object row, Object... values) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes("ward/field/v3\0".getBytes(StandardCharsets.US_ASCII));
        Wire.lp(out, table);
        Wire.lp(out, column);
        out.writeBytes(contextV4(row, values));
        return out.toByteArray();
    }

    /** Seals plaintext for a row (binary form): ciphertext v4, or v3 under a ledger whose fleet has not opened v4. */
    public byte[] seal(byte[] plaintext, Object row, Object... values) {
        if (keyring == null) {
            throw new WardException.NotGranted("a grant opens values; sealing needs the keyring");
        }
        if (subjects instanceof SubjectKeys keys) {
            return keys.seal(subject(values), plaintext, scope, contextV4(row, values), contextV3(row, values));
        }
        if (ledger != null && !ledger.allows(LedgerState.CIPHERTEXT_V4)) { // a process of the fleet still reads v3 only
            return keyring.sealV3(plaintext, contextV3(row, values));
        }
        return keyring.seal(plaintext, contextV4(row, values), scope);
    }

    /** Seals a string's UTF-8 bytes for a row, in the text form. */
    public String sealText(String plaintext, Object row, Object... values) {
        return Ciphertext.toText(seal(plaintext.getBytes(StandardCharsets.UTF_8), row, values));
    }

    /** Opens a stored value (binary or text form, v3 or v4) of a row. */
    public byte[] open(byte[] stored, Object row, Object... values) {
        byte[] ct = Ciphertext.decode(stored);
        Ciphertext.Header h = Ciphertext.header(ct);
        byte[] context = h.version() == 4 ? contextV4(row, values) : contextV3(row, values);
        byte[] key = h.keyClass() == Ciphertext.CLASS_SUBJECT && subjects != null ? subjects.resolve(subject(values), h, scope) : source.resolve(h, scope);
        return Ciphertext.open(ct, h, key, context);
    }

    /** The subject a per-subject value of a row belongs to: its bound subject column's value. */
    private String subject(Object[] values) {
        if (values.length != bind.size()) {
            throw new WardException.Binding("the column binds " + bind.size() + " columns, " + values.length + " values given");
        }
        byte[] b = encodeBound(values[subjectIndex]);
        if (b == null) {
            throw new WardException.Binding("a per-subject value needs its subject");
        }
        return new String(b, StandardCharsets.UTF_8);
    }

    /** Opens a stored value of a row as UTF-8 text. */
    public String openText(String stored, Object row, Object... values) {
        return new String(open(stored.getBytes(StandardCharsets.UTF_8), row, values), StandardCharsets.UTF_8);
    }

    /** A row key's text: an integer in decimal, a string or UUID as text. */
    static byte[] rowText(Object row) {
        if (row instanceof Long || row instanceof Integer || row instanceof Short || row instanceof BigInteger) {
            return row.toString().getBytes(StandardCharsets.US_ASCII);
        }
        if (row instanceof String s) {
            return s.getBytes(StandardCharsets.UTF_8);
        }
        if (row instanceof UUID u) {
            return u.toString().getBytes(StandardCharsets.US_ASCII);
        }
        throw new WardException.Binding("a row key of type " + (row == null ? "null" : row.getClass().getSimpleName()) + ": use a long, a String or a UUID");
    }

    /**
     * A bound value's canonical bytes (null is SQL NULL), as field context
     * v3: integers in decimal, strings as UTF-8, bytes as they are,
     * booleans as 1 or 0, times as decimal Unix microseconds in UTC (floor),
     * UUIDs as lowercase hyphenated text.
     */
    static byte[] encodeBound(Object v) {
        if (v == null) {
            return null;
        }
        if (v instanceof Boolean b) {
            return (b ? "1" : "0").getBytes(StandardCharsets.US_ASCII);
        }
        if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte || v instanceof BigInteger) {
            return v.toString().getBytes(StandardCharsets.US_ASCII);
        }
        if (v instanceof String s) {
            return s.getBytes(StandardCharsets.UTF_8);
        }
        if (v instanceof byte[] b) {
            return b.clone();
        }
        if (v instanceof UUID u) {
            return u.toString().getBytes(StandardCharsets.US_ASCII);
        }
        Instant t = instant(v);
        if (t != null) {
            long micros = Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1000);
            return Long.toString(micros).getBytes(StandardCharsets.US_ASCII);
        }
        throw new WardException.Binding("a bound value of type " + v.getClass().getSimpleName() + " has no canonical encoding (integer, String, byte[], Boolean, a time, UUID or null)");
    }

    private static Instant instant(Object v) {
        if (v instanceof Instant i) {
            return i;
        }
        if (v instanceof OffsetDateTime o) {
            return o.toInstant();
        }
        if (v instanceof ZonedDateTime z) {
            return z.toInstant();
        }
        if (v instanceof LocalDateTime l) { // a timestamp column without a zone holds UTC
            return l.toInstant(ZoneOffset.UTC);
        }
        return null;
    }

    @Override
    public String toString() {
        return "Column(" + table + "." + column + ")";
    }
}
