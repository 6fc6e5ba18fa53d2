package io.github.wardlab.ward.password;

/**
 * A scheme and its cost parameters, as Go's {@code password.Params}; fields
 * that do not apply to the scheme are zero.
 *
 * @param scheme the scheme
 * @param memory Argon2 memory in KiB
 * @param time Argon2 passes
 * @param parallelism Argon2 lanes
 * @param cost bcrypt's log2 of rounds
 * @param logN scrypt's log2 of N
 * @param r scrypt's block size
 * @param p scrypt's parallelism
 * @param iterations PBKDF2's iterations
 * @param saltLen the salt's length in bytes
 * @param keyLen the output's length in bytes
 */
public record Params(Scheme scheme, long memory, long time, int parallelism, int cost, int logN, int r, int p,
        long iterations, int saltLen, int keyLen) {

    /** OWASP's first Argon2id option, ward's default: m=19456 KiB, t=2, p=1. */
    public static Params owasp() {
        return argon2id(19456, 2, 1);
    }

    /** RFC 9106's second option: m=64 MiB, t=3, p=4. */
    public static Params strong() {
        return argon2id(65536, 3, 4);
    }

    /**
     * Spring Security's {@code Argon2PasswordEncoder.defaultsForSpringSecurity_v5_8()}:
     * m=16384, t=2, p=1, below OWASP's line: writing it needs
     * {@link Policy#allowWeak()}.
     */
    public static Params springV58() {
        return argon2id(16384, 2, 1);
    }

    /** Argon2id with a 16-byte salt and a 32-byte output. */
    public static Params argon2id(long memory, long time, int parallelism) {
        return new Params(Scheme.ARGON2ID, memory, time, parallelism, 0, 0, 0, 0, 0, 16, 32);
    }

    Params withLengths(int salt, int key) {
        return new Params(scheme, memory, time, parallelism, cost, logN, r, p, iterations, salt, key);
    }

    /** Whether this is weaker than want: another scheme, shorter, or cheaper. */
    boolean weakerThan(Params want) {
        if (scheme != want.scheme || saltLen < want.saltLen || keyLen < want.keyLen) {
            return true;
        }
        return switch (scheme.family()) {
            case ARGON2 -> memory < want.memory || time < want.time;
            case BCRYPT -> cost < want.cost;
            case SCRYPT -> logN < want.logN || r < want.r;
            case PBKDF2 -> iterations < want.iterations;
        };
    }

    @Override
    public String toString() {
        return switch (scheme.family()) {
            case ARGON2 -> String.format("%s m=%d,t=%d,p=%d", scheme.id(), memory, time, parallelism);
            case BCRYPT -> "bcrypt cost " + cost;
            case SCRYPT -> String.format("scrypt ln=%d,r=%d,p=%d", logN, r, p);
            case PBKDF2 -> scheme.id() + " i=" + iterations;
        };
    }
}
