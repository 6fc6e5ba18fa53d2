package io.github.wardlab.ward.password;

/**
 * Hard caps on the hashes {@link Hasher#verify} computes, as Go's
 * {@code password.Limits} and with its defaults: a stored hash is input, and
 * one with m=4194304 would make the service allocate 4 GiB. Each parameter
 * and each scheme's total work is capped, and a hash over a limit is
 * refused with {@link PasswordException.OverLimit} before any work.
 *
 * @param maxArgon2Memory KiB (128 MiB)
 * @param maxArgon2Time passes (16)
 * @param maxArgon2Parallelism lanes (16)
 * @param maxArgon2Work m·t in KiB·passes (262144)
 * @param maxBcryptCost bcrypt's cost (13)
 * @param maxScryptLogN log2 N (20)
 * @param maxScryptMemory bytes, 128·N·r (128 MiB)
 * @param maxScryptP scrypt's p (16)
 * @param maxScryptWork N·r·p (2^21)
 * @param maxPBKDF2Iterations iterations (2,000,000)
 * @param maxPBKDF2Work iterations × output blocks (2,000,000)
 * @param maxSaltLen bytes (64)
 * @param maxKeyLen bytes (128)
 * @param minKeyLen the shortest output accepted (16)
 * @param maxPasswordLen bytes (1024)
 */
public record Limits(long maxArgon2Memory, long maxArgon2Time, int maxArgon2Parallelism, long maxArgon2Work,
        int maxBcryptCost, int maxScryptLogN, long maxScryptMemory, int maxScryptP, long maxScryptWork,
        long maxPBKDF2Iterations, long maxPBKDF2Work, int maxSaltLen, int maxKeyLen, int minKeyLen, int maxPasswordLen) {

    /** The Go library's defaults. */
    public static Limits defaults() {
        return new Limits(128 << 10, 16, 16, 256 << 10, 13, 20, 128 << 20, 16, 1 << 21, 2_000_000, 2_000_000, 64, 128, 16, 1024);
    }

    /** Refuses p if a parameter or its work is over a limit. */
    void check(Params p) {
        over("salt length", p.saltLen(), maxSaltLen);
        over("hash length", p.keyLen(), maxKeyLen);
        if (p.scheme() != Scheme.BCRYPT && p.keyLen() < minKeyLen) {
            throw new PasswordException.OverLimit("hash length " + p.keyLen() + " is under the minimum " + minKeyLen);
        }
        switch (p.scheme().family()) {
            case ARGON2 -> {
                if (p.time() < 1 || p.parallelism() < 1 || p.memory() < 8L * p.parallelism() || p.saltLen() < 8) {
                    throw new PasswordException.Malformed("Argon2 needs t>=1, p>=1, m>=8p and a salt of at least 8 bytes");
                }
                over("m", p.memory(), maxArgon2Memory);
                over("t", p.time(), maxArgon2Time);
                over("p", p.parallelism(), maxArgon2Parallelism);
                over("m·t (KiB·passes)", p.memory() * p.time(), maxArgon2Work);
            }
            case BCRYPT -> over("cost", p.cost(), maxBcryptCost);
            case SCRYPT -> {
                if (p.logN() < 1 || p.logN() > 63 || p.r() < 1 || p.p() < 1) {
                    throw new PasswordException.Malformed("scrypt needs ln in 1..63, r>=1, p>=1");
                }
                over("ln", p.logN(), maxScryptLogN);
                over("p", p.p(), maxScryptP);
                over("memory (128·N·r)", 128L * (1L << Math.min(p.logN(), 40)) * p.r(), maxScryptMemory);
                over("N·r·p", p.logN() > 40 ? Long.MAX_VALUE : (1L << p.logN()) * p.r() * p.p(), maxScryptWork);
            }
            case PBKDF2 -> {
                if (p.iterations() < 1) {
                    throw new PasswordException.Malformed("PBKDF2 needs i>=1");
                }
                int size = p.scheme() == Scheme.PBKDF2_SHA1 ? 20 : p.scheme() == Scheme.PBKDF2_SHA512 ? 64 : 32;
                over("iterations", p.iterations(), maxPBKDF2Iterations);
                over("iterations × output blocks", p.iterations() * ((Math.max(p.keyLen(), 1) + size - 1) / size), maxPBKDF2Work);
            }
        }
    }

    private static void over(String what, long v, long max) {
        if (v > max) {
            throw new PasswordException.OverLimit(what + " " + v + " is over the limit " + max);
        }
    }
}
