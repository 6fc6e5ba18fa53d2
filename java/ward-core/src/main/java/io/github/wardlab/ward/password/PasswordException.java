package io.github.wardlab.ward.password;

/**
 * Why a password hash could not be checked, or a password not hashed: the
 * kinds of Go's package password. A wrong password is not an exception
 * ({@link Hasher#verify} returns a result); none of these carries the
 * password or the hash's salt or output.
 */
public class PasswordException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** An error with a message. */
    public PasswordException(String message) {
        super(message);
    }

    /** A hash that does not parse in any supported format. */
    public static final class Malformed extends PasswordException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public Malformed(String message) {
            super(message);
        }
    }

    /** A scheme, variant or version this package does not verify. */
    public static final class UnsupportedScheme extends PasswordException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public UnsupportedScheme(String message) {
            super(message);
        }
    }

    /** A stored hash whose parameters exceed the limits: refused before any work. */
    public static final class OverLimit extends PasswordException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public OverLimit(String message) {
            super(message);
        }
    }

    /** Parameters below the minimums, refused for writing. */
    public static final class WeakParams extends PasswordException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public WeakParams(String message) {
            super(message);
        }
    }

    /** A pepper the policy cannot apply, or requires and the hash lacks. */
    public static final class Pepper extends PasswordException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public Pepper(String message) {
            super(message);
        }
    }

    /** A password that is empty, or longer than the policy or the scheme takes. */
    public static final class BadPassword extends PasswordException {
        private static final long serialVersionUID = 1L;

        /** An error with a message. */
        public BadPassword(String message) {
            super(message);
        }
    }
}
