package io.github.wardlab.ward.password;

/** The password hashing schemes ward verifies, by their PHC identifiers. */
public enum Scheme {
    /** Argon2id (RFC 9106), ward's default. */
    ARGON2ID("argon2id", Family.ARGON2, true),
    /** Argon2i, verified and writable. */
    ARGON2I("argon2i", Family.ARGON2, true),
    /** Argon2d, verified for migration only. */
    ARGON2D("argon2d", Family.ARGON2, false),
    /** bcrypt ($2a$, $2b$, $2y$). */
    BCRYPT("bcrypt", Family.BCRYPT, true),
    /** scrypt. */
    SCRYPT("scrypt", Family.SCRYPT, true),
    /** PBKDF2-HMAC-SHA-256. */
    PBKDF2_SHA256("pbkdf2-sha256", Family.PBKDF2, true),
    /** PBKDF2-HMAC-SHA-1, verified for migration only. */
    PBKDF2_SHA1("pbkdf2-sha1", Family.PBKDF2, false),
    /** PBKDF2-HMAC-SHA-512, verified for migration only. */
    PBKDF2_SHA512("pbkdf2-sha512", Family.PBKDF2, false);

    enum Family { ARGON2, BCRYPT, SCRYPT, PBKDF2 }

    private final String id;
    private final Family family;
    private final boolean writable;

    Scheme(String id, Family family, boolean writable) {
        this.id = id;
        this.family = family;
        this.writable = writable;
    }

    /** The PHC identifier ("argon2id"). */
    public String id() {
        return id;
    }

    Family family() {
        return family;
    }

    /** Whether ward writes it (the others are verified for migration only). */
    public boolean writable() {
        return writable;
    }

    static Scheme ofId(String id) {
        for (Scheme s : values()) {
            if (s.id.equals(id)) {
                return s;
            }
        }
        throw new PasswordException.UnsupportedScheme("scheme " + (id.length() > 40 ? id.substring(0, 40) : id));
    }
}
