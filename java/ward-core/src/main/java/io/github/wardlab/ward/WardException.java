package io.github.wardlab.ward;

/**
 * The base of ward's typed errors. Each subclass names one of the kinds the Go
 * library and the Python package report (FORMAT.md, the error kinds), so a
 * caller can tell a value of another row from a damaged one without parsing
 * messages. No message carries a key, a plaintext or a secret.
 */
public class WardException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** An error with a message. */
    public WardException(String message) {
        super(message);
    }

    /** An error with a message and its cause. */
    public WardException(String message, Throwable cause) {
        super(message, cause);
    }

    /** A ciphertext that does not parse: truncated, or not ward's. */
    public static final class Malformed extends WardException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public Malformed(String message) {
            super(message);
        }
    }

    /** A version, key class or algorithm this release does not know. */
    public static final class UnsupportedVersion extends WardException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public UnsupportedVersion(String message) {
            super(message);
        }
    }

    /**
     * The value belongs to another row, column, owner or key: its context
     * check does not match the context presented.
     */
    public static final class WrongContext extends WardException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public WrongContext(String message) {
            super(message);
        }
    }

    /** The value fails authentication under its own context: it was damaged. */
    public static final class Authentication extends WardException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public Authentication(String message) {
            super(message);
        }
    }

    /** The keyring lacks the key a value names. */
    public static final class UnknownKey extends WardException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public UnknownKey(String message) {
            super(message);
        }
    }

    /** The key a value names is disabled in the keyring. */
    public static final class KeyDisabled extends WardException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public KeyDisabled(String message) {
            super(message);
        }
    }

    /** A keyring file that does not parse, unwrap or authenticate. */
    public static final class CorruptFile extends WardException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public CorruptFile(String message) {
            super(message);
        }
    }

    /** A keyring file sealed under another key service than the one given. */
    public static final class WrongWrapper extends WardException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public WrongWrapper(String message) {
            super(message);
        }
    }

    /** A row key or bound value with no canonical encoding, or the wrong count. */
    public static final class Binding extends WardException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public Binding(String message) {
            super(message);
        }
    }

    /**
     * The database's ledger does not verify against the keyring: missing,
     * changed, forged, copied from another database, or an older copy put
     * back (ward ledger recover) — ward writes nothing there.
     */
    public static final class Ledger extends WardException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public Ledger(String message) {
            super(message);
        }
    }

    /**
     * The keyring file is older than the database's ledger (a rotation
     * since it was loaded, or another copy): load the current file.
     */
    public static final class StaleKeyring extends WardException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public StaleKeyring(String message) {
            super(message);
        }
    }

    /**
     * A subject key that is not there to use: the subject was forgotten
     * (its key deleted, a tombstone left), never given one (ward-java never
     * creates a subject key), holds it privately (wrapped under the user's
     * password) or lost it, or its newest version is under the namespace's
     * key floor.
     */
    public static final class SubjectRefused extends WardException {
        private static final long serialVersionUID = 1L;

        /** A refusal saying which. */
        public SubjectRefused(String message) {
            super(message);
        }
    }

    /**
     * The database depends on forms this process does not declare it reads
     * (open, or at a join waiting to open): it must not serve, as Go's
     * {@code fleetgate.MissingError}.
     */
    public static final class FormsMissing extends WardException {
        private static final long serialVersionUID = 1L;

        /** A refusal naming the forms. */
        public FormsMissing(String message) {
            super(message);
        }
    }

    /** What a grant does not open: ciphertext v3, a subject's key, or sealing. */
    public static final class NotGranted extends WardException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public NotGranted(String message) {
            super(message);
        }
    }

    /**
     * A key service (AWS KMS) refused or failed a call, of the Go library's
     * kinds: the key unknown, the ciphertext or its encryption context not
     * the key's, access denied, throttled, unavailable (a timeout or the
     * network included) or misconfigured (credentials, region, endpoint).
     * Its message names the operation and the service's error code, never
     * what was wrapped.
     */
    public static final class KeyServiceFailure extends WardException {
        private static final long serialVersionUID = 1L;

        /** What went wrong, as the Go library's kms errors say. */
        public enum Kind {
            /** The key does not exist (NotFoundException). */
            UNKNOWN_KEY,
            /** Not this key's ciphertext, or another encryption context. */
            INVALID_CIPHERTEXT,
            /** The caller may not use the key, or it is disabled. */
            ACCESS_DENIED,
            /** Too many requests: retry later. */
            THROTTLED,
            /** The service did not answer in time, or failed on its side. */
            UNAVAILABLE,
            /** Credentials, region, endpoint or a request the service refused as invalid. */
            MISCONFIGURED
        }

        private final Kind kind;

        /** A failure of kind with a message that carries no secret. */
        public KeyServiceFailure(Kind kind, String message) {
            super(message);
            this.kind = kind;
        }

        /** What went wrong. */
        public Kind kind() {
            return kind;
        }
    }
}
