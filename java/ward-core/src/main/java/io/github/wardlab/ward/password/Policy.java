package io.github.wardlab.ward.password;

import io.github.wardlab.ward.Keyring;

/**
 * What a {@link Hasher} writes and accepts, as Go's {@code password.Policy}.
 *
 * @param preferred what {@link Hasher#hash} writes (default {@link Params#owasp()});
 *     a stored hash weaker than it, or of another scheme, needs a rehash
 * @param limits caps on stored hashes (default {@link Limits#defaults()})
 * @param allowWeak lets hash write parameters below OWASP's minimums (tests, interoperability)
 * @param pepper if set, every new hash mixes in a secret of the keyring's primary key (keyid=)
 * @param requirePepper refuse unpeppered hashes: a database writer cannot plant a hash of a known password
 * @param bcryptTruncate verify passwords over 72 bytes against bcrypt by truncating them
 */
public record Policy(Params preferred, Limits limits, boolean allowWeak, Keyring pepper, boolean requirePepper,
        boolean bcryptTruncate) {

    /** ward's default: Argon2id at OWASP's parameters, default limits, no pepper. */
    public static Policy defaults() {
        return new Policy(Params.owasp(), Limits.defaults(), false, null, false, false);
    }

    /** This policy with a pepper from kr (and, if require, refusing unpeppered hashes). */
    public Policy withPepper(Keyring kr, boolean require) {
        return new Policy(preferred, limits, allowWeak, kr, require, bcryptTruncate);
    }

    /** This policy writing p (allowWeak: even below OWASP's minimums). */
    public Policy withPreferred(Params p, boolean weak) {
        return new Policy(p, limits, weak, pepper, requirePepper, bcryptTruncate);
    }
}
