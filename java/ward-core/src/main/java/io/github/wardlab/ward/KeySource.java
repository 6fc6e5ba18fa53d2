package io.github.wardlab.ward;

/**
 * What opens a value: the key for a ciphertext's header under a scope — a
 * {@link Keyring} (any of its keys) or a {@link Grant} (the keys of the
 * columns it names, and nothing else).
 */
interface KeySource {
    /**
     * The key that opens a value with header h in scope: K_scope for v4,
     * the key itself for v3; a typed {@link WardException} when this source
     * does not hold it.
     */
    byte[] resolve(Ciphertext.Header h, byte[] scope);
}
