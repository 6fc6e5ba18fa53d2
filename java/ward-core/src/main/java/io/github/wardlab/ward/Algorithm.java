package io.github.wardlab.ward;

/** ward's AEAD algorithms, by the byte a ciphertext's header names them with. */
public enum Algorithm {
    /** AES-128-GCM, 96-bit random nonces. */
    AES_128_GCM(1, "AES-128-GCM", 16, 12),
    /** AES-256-GCM, 96-bit random nonces. */
    AES_256_GCM(2, "AES-256-GCM", 32, 12),
    /** XChaCha20-Poly1305, 192-bit random nonces. */
    XCHACHA20_POLY1305(3, "XChaCha20-Poly1305", 32, 24);

    /** The tag size of every algorithm. */
    public static final int TAG_SIZE = 16;

    private final int code;
    private final String wardName;
    private final int keySize;
    private final int nonceSize;

    Algorithm(int code, String wardName, int keySize, int nonceSize) {
        this.code = code;
        this.wardName = wardName;
        this.keySize = keySize;
        this.nonceSize = nonceSize;
    }

    /** The header byte. */
    public int code() {
        return code;
    }

    /** The name a keyring file gives it ("AES-256-GCM"). */
    public String wardName() {
        return wardName;
    }

    /** The key size in bytes. */
    public int keySize() {
        return keySize;
    }

    /** The nonce size in bytes. */
    public int nonceSize() {
        return nonceSize;
    }

    /** The algorithm of a header byte, or {@link WardException.UnsupportedVersion}. */
    public static Algorithm ofCode(int code) {
        for (Algorithm a : values()) {
            if (a.code == code) {
                return a;
            }
        }
        throw new WardException.UnsupportedVersion(String.format("algorithm byte 0x%02x", code));
    }

    /** The algorithm of a keyring file's name, or {@link WardException.UnsupportedVersion}. */
    public static Algorithm ofName(String name) {
        for (Algorithm a : values()) {
            if (a.wardName.equals(name)) {
                return a;
            }
        }
        throw new WardException.UnsupportedVersion("algorithm " + Wire.clip(name, 40));
    }
}
