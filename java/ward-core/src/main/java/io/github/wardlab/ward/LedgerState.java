package io.github.wardlab.ward;

import java.util.Map;
import java.util.Set;

/**
 * A verified ledger (FORMAT.md, "Keyring ledger"): the database's ID, the
 * ledger's counter and state epoch, and the forms the fleet opened
 * (every registered process reads them, so they may be written).
 *
 * @param database the database's ID ({@code db-…}), which blind indexes bind
 * @param counter the ledger's counter: each change raises it
 * @param epoch the keyring state epoch its MAC is under
 * @param openedForms the forms the fleet opened, such as {@code ciphertext:v4}
 * @param counters the ledger's named counters, such as {@code subject.floor:NS}
 *     (how often a namespace's key floor was raised)
 * @param waitingForms the forms whose wait has begun and not ended: the
 *     fleet opens each once every registered process reads it
 * @param marks the ledger's marks, such as {@code integrity:fleet-v2}
 * @param indexes the blind indexes v2 the ledger records, each with the
 *     integrity epoch its stored values are computed under
 * @param tallies the tallies of counters counted by identity, such as
 *     {@code subject.private:NS} (FORMAT.md, "Tallies")
 */
public record LedgerState(String database, long counter, long epoch, Set<String> openedForms, Map<String, Long> counters, Set<String> waitingForms,
        Set<String> marks, java.util.List<Index> indexes, Map<String, Tally> tallies) {
    /**
     * A recorded blind index (FORMAT.md, "Keyring ledger", {@code indexes}):
     * what Go's {@code ledger.IndexColumn} holds.
     *
     * @param table the table
     * @param column the sealed column it indexes
     * @param name the index's name (the column's by default)
     * @param index the column holding it
     * @param spare the second column of a re-keyable index, or ""
     * @param normalizer the normaliser's name
     * @param normalizerVersion the normaliser's version
     * @param size the index's bytes
     * @param epoch the integrity epoch its stored values are computed under (0: v1)
     * @param slot which column holds the current values: 0 the index, 1 the spare
     * @param rekey the re-key under way, or null
     */
    public record Index(String table, String column, String name, String index, String spare, String normalizer, int normalizerVersion, int size,
            long epoch, int slot, Rekey rekey) {
        /** Whether a re-key is under way. */
        public boolean rekeying() {
            return rekey != null;
        }
    }

    /**
     * A blind index's re-key under way ({@code ward keyring reindex}): the
     * epoch of the values it writes into the other slot, and its phase.
     *
     * @param epoch the re-key's integrity epoch
     * @param phase {@value #BOTH} (processes write both slots) or {@value #FILLED} (the new slot alone)
     */
    public record Rekey(long epoch, String phase) {
        /** The first phase: every process writes both slots and looks up both. */
        public static final String BOTH = "both";
        /** The second phase: every process writes the new slot alone and still looks up both. */
        public static final String FILLED = "filled";
    }

    /** The form of ciphertext v4. */
    public static final String CIPHERTEXT_V4 = "ciphertext:v4";

    /** A state with unmodifiable copies of the forms, counters and marks. */
    public LedgerState {
        openedForms = Set.copyOf(openedForms);
        counters = Map.copyOf(counters);
        waitingForms = Set.copyOf(waitingForms);
        marks = Set.copyOf(marks);
        indexes = java.util.List.copyOf(indexes);
        tallies = Map.copyOf(tallies);
    }

    /** A state without named counters, waits or marks. */
    public LedgerState(String database, long counter, long epoch, Set<String> openedForms) {
        this(database, counter, epoch, openedForms, Map.of(), Set.of(), Set.of(), java.util.List.of(), Map.of());
    }

    /**
     * The named counter's tally: the recorded one, or one starting at the
     * counter's count (a counter from before tallies), as Go's {@code
     * State.Tally}.
     */
    public Tally tally(String name) {
        Tally t = tallies.get(name);
        if (t != null) {
            return t;
        }
        long n = counter(name);
        return new Tally(n, n, null);
    }

    /** The ledger's record of the index of table.column named name, or null. */
    public Index index(String table, String column, String name) {
        for (Index i : indexes) {
            if (i.table().equals(table) && i.column().equals(column) && i.name().equals(name)) {
                return i;
            }
        }
        return null;
    }

    /** The named counter's value, 0 when the ledger has none of that name. */
    public long counter(String name) {
        return counters.getOrDefault(name, 0L);
    }

    /** Whether the fleet opened form: every registered process reads it, so it may be written. */
    public boolean allows(String form) {
        return openedForms.contains(form);
    }
}
