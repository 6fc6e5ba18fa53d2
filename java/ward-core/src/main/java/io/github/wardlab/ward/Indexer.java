package io.github.wardlab.ward;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A blind index the database's ledger records with a spare column (Go's
 * {@code ledger.Ledger.Indexer}), computed as recorded and followed
 * through its re-keys ({@code ward keyring reindex}): the application
 * stores both of the index's columns and looks rows up by either.
 *
 * <pre>{@code
 * byte[][] k = x.lookup(c, email);  // SELECT … WHERE email_idx = k[0] OR email_idx2 = k[1]
 * byte[][] w = x.write(c, email);   // INSERT … (email_idx, email_idx2) VALUES (…, w[0], w[1]), same transaction
 * }</pre>
 *
 * <p>A null value is SQL NULL, which matches nothing. Between re-keys one
 * column holds the values and the other is NULL; during one, writes fill
 * both and then the new one alone, and look-ups try both. Every call reads
 * the ledger again — {@link #write} in the caller's transaction under a
 * shared lock (SQLite and H2 lock on write) — so a re-key moves to its
 * next phase only after a write that read the one before has committed,
 * and this process follows each phase at once. A {@link FleetMember} that
 * {@link FleetMember#follow follows} the indexer therefore acknowledges
 * each phase as soon as its heartbeat reads it (the forms Go's {@code
 * ledger.IndexAck} names), and the re-key's wait counts it; a process
 * that writes the index's columns any other way must not follow it.
 *
 * <p>The index must be recorded by a Go process first (the application's
 * {@code Ledger.Indexer}); an index computed with an application's own
 * normaliser is refused. Thread-safe.
 */
public final class Indexer {
    private final Keyring keyring;
    private final String table;
    private final String column;
    private final String name;
    private final String ledgerTable;
    private final Map<String, BlindIndex> computed = new ConcurrentHashMap<>(); // database/epoch → the index

    /** The index of table.column named as its column, in the default ledger table. */
    public Indexer(Keyring keyring, String table, String column) {
        this(keyring, table, column, column, Ledger.DEFAULT_TABLE);
    }

    /** The index named name (null: the column's) of table.column, whose record is in ledgerTable. */
    public Indexer(Keyring keyring, String table, String column, String name, String ledgerTable) {
        this.keyring = Objects.requireNonNull(keyring, "keyring");
        this.table = Objects.requireNonNull(table, "table");
        this.column = Objects.requireNonNull(column, "column");
        this.name = name == null || name.isEmpty() ? column : name;
        this.ledgerTable = Objects.requireNonNull(ledgerTable, "ledgerTable");
    }

    /** The index's two columns, in the order {@link #lookup} and {@link #write} return their values. */
    public String[] columns(Connection c) {
        LedgerState.Index rec = record(Ledger.verify(c, keyring, ledgerTable, false));
        return new String[] {rec.index(), rec.spare()};
    }

    /** The values that find value's row, one per column: the current one's, and during a re-key the new one's too. */
    public byte[][] lookup(Connection c, String value) {
        LedgerState st = Ledger.verify(c, keyring, ledgerTable, false);
        LedgerState.Index rec = record(st);
        byte[] cur = index(st, rec, rec.epoch()).compute(value);
        byte[] next = rec.rekey() == null ? null : index(st, rec, rec.rekey().epoch()).compute(value);
        return slots(rec, cur, next);
    }

    /**
     * What a row whose indexed value is value stores in each column, for a
     * write in the caller's open transaction on c (auto-commit off): the
     * ledger is read in it under a shared lock, so the re-key moves on
     * only after the transaction ends. Call it after the look-up that
     * checks the value is free, in the same transaction.
     */
    public byte[][] write(Connection c, String value) {
        LedgerState st = Ledger.verify(c, keyring, ledgerTable, true);
        LedgerState.Index rec = record(st);
        LedgerState.Rekey rk = rec.rekey();
        byte[] cur = rk != null && rk.phase().equals(LedgerState.Rekey.FILLED) ? null : index(st, rec, rec.epoch()).compute(value);
        byte[] next = rk == null ? null : index(st, rec, rk.epoch()).compute(value);
        return slots(rec, cur, next);
    }

    /**
     * The forms a process following this index declares for the ledger
     * state st: Go's {@code ledger.IndexAck} of the re-key's phases so far
     * (none between re-keys, or for an index st does not record).
     */
    List<String> acks(LedgerState st) {
        LedgerState.Index rec = st.index(table, column, name);
        List<String> out = new ArrayList<>();
        if (rec == null || rec.rekey() == null || rec.spare().isEmpty()) {
            return out;
        }
        out.add(ack(rec, LedgerState.Rekey.BOTH));
        if (rec.rekey().phase().equals(LedgerState.Rekey.FILLED)) {
            out.add(ack(rec, LedgerState.Rekey.FILLED));
        }
        return out;
    }

    /**
     * Go's {@code ledger.IndexAck}: {@code integrity:index.<hex of the first
     * 8 bytes of SHA-256(table 0x00 column 0x00 name)>@<re-key epoch, 8 hex
     * digits>.<phase>}.
     */
    static String ack(LedgerState.Index rec, String phase) {
        try {
            byte[] h = MessageDigest.getInstance("SHA-256")
                    .digest((rec.table() + "\0" + rec.column() + "\0" + rec.name()).getBytes(StandardCharsets.UTF_8));
            return String.format("integrity:index.%s@%08x.%s", Wire.hex(java.util.Arrays.copyOf(h, 8)), rec.rekey().epoch(), phase);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private LedgerState.Index record(LedgerState st) {
        LedgerState.Index rec = st.index(table, column, name);
        if (rec == null) {
            throw new WardException.Binding("the ledger records no blind index " + name + " of " + table + "." + column
                    + ": a Go process records it at its first use (Ledger.Indexer)");
        }
        if (rec.spare().isEmpty()) {
            throw new WardException.Binding("blind index " + name + " of " + table + "." + column
                    + " has no spare column: compute it with BlindIndex.v2 under the epoch the ledger records");
        }
        return rec;
    }

    /** The index of rec under epoch (0: v1, keyed by the keyring's root), bound to st's database. */
    private BlindIndex index(LedgerState st, LedgerState.Index rec, long epoch) {
        return computed.computeIfAbsent(st.database() + "/" + epoch + "/" + rec.normalizer() + "/" + rec.size(), k -> {
            Normalizer n = Normalizer.parse(rec.normalizer(), rec.normalizerVersion());
            if (epoch == 0) {
                return BlindIndex.v1(keyring, table, column, n, rec.size());
            }
            return BlindIndex.v2(keyring, table, column, new BlindIndex.Options(st.database(), name, n, rec.size(), epoch));
        });
    }

    private static byte[][] slots(LedgerState.Index rec, byte[] cur, byte[] other) {
        return rec.slot() == 1 ? new byte[][] {other, cur} : new byte[][] {cur, other};
    }

    @Override
    public String toString() {
        return "Indexer(" + table + "." + column + ", " + name + ")";
    }
}
