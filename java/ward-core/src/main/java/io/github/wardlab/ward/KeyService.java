package io.github.wardlab.ward;

import java.util.Map;

/**
 * What wraps a keyring file's key: a local master key ({@link MasterKey}) or
 * a key in a key service. Implementations bind the encryption context to
 * what they wrap, as AWS KMS does.
 */
public interface KeyService {
    /** The provider's name in a file's {@code wrap} header ("local", "awskms"). */
    String provider();

    /** The key's ID in a file's {@code wrap} header. */
    String keyId();

    /** Wraps plaintext, bound to context. */
    byte[] encrypt(byte[] plaintext, Map<String, String> context);

    /** Unwraps what {@link #encrypt} returned under the same context. */
    byte[] decrypt(byte[] ciphertext, Map<String, String> context);
}
