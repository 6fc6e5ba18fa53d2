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
 */
public record LedgerState(String database, long counter, long epoch, Set<String> openedForms, Map<String, Long> counters, Set<String> waitingForms,
        Set<String> marks) {
    /** The form of ciphertext v4. */
    public static final String CIPHERTEXT_V4 = "ciphertext:v4";

    /** A state with unmodifiable copies of the forms, counters and marks. */
    public LedgerState {
        openedForms = Set.copyOf(openedForms);
        counters = Map.copyOf(counters);
        waitingForms = Set.copyOf(waitingForms);
        marks = Set.copyOf(marks);
    }

    /** A state without named counters, waits or marks. */
    public LedgerState(String database, long counter, long epoch, Set<String> openedForms) {
        this(database, counter, epoch, openedForms, Map.of(), Set.of(), Set.of());
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
