package io.github.wardlab.ward;

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
 */
public record LedgerState(String database, long counter, long epoch, Set<String> openedForms) {
    /** The form of ciphertext v4. */
    public static final String CIPHERTEXT_V4 = "ciphertext:v4";

    /** A state with an unmodifiable copy of the forms. */
    public LedgerState {
        openedForms = Set.copyOf(openedForms);
    }

    /** Whether the fleet opened form: every registered process reads it, so it may be written. */
    public boolean allows(String form) {
        return openedForms.contains(form);
    }
}
