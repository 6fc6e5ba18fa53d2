package io.github.wardlab.ward;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A local master key: 32 random bytes, base64, as {@code ward keyring
 * gen-master-key} writes it. It wraps with AES-256-GCM, the associated data
 * being the canonical encryption context. It is read from a file or from the
 * environment variable {@value #ENV}, never from a command line; its
 * {@link #toString()} shows only its ID.
 */
public final class MasterKey implements KeyService {
    /** The environment variable holding a base64 master key, as for the Go CLI. */
    public static final String ENV = "WARD_MASTER_KEY";

    private final byte[] key;
    private final String keyId;

    private MasterKey(byte[] key) {
        if (key.length != 32) {
            throw new WardException("a master key must be base64 of 32 random bytes");
        }
        Set<Byte> distinct = new HashSet<>();
        for (byte b : key) {
            distinct.add(b);
        }
        if (distinct.size() < 12) {
            throw new WardException("the master key is not random (too few distinct bytes)");
        }
        this.key = key.clone();
        this.keyId = "mk-" + Wire.hex(Arrays.copyOf(sha256(Wire.concat("ward master key id v1\0".getBytes(StandardCharsets.US_ASCII), key)), 8));
    }

    /** Parses base64 (standard or URL alphabet, padded or not) of 32 bytes. */
    public static MasterKey parse(String text) {
        String s = text.strip();
        for (Base64.Decoder d : new Base64.Decoder[] {Base64.getDecoder(), Base64.getUrlDecoder()}) {
            try {
                byte[] raw = d.decode(s);
                if (raw.length == 32) {
                    return new MasterKey(raw);
                }
            } catch (IllegalArgumentException e) {
                // the other alphabet
            }
        }
        throw new WardException("a master key must be base64 of 32 random bytes");
    }

    /** Reads a master key from a file (at most 4 KiB). */
    public static MasterKey load(Path path) {
        try {
            return parse(new String(Files.readBounded(path, 4096, "a master key file"), StandardCharsets.US_ASCII));
        } catch (IOException e) {
            throw new WardException("reading the master key file: " + e.getClass().getSimpleName());
        }
    }

    /** Reads the master key from {@value #ENV} in env (pass System.getenv()). */
    public static MasterKey fromEnvironment(Map<String, String> env) {
        String v = env.getOrDefault(ENV, "");
        if (v.isEmpty()) {
            throw new WardException("no master key: set " + ENV + " or pass a master key file");
        }
        return parse(v);
    }

    /**
     * The master key every ward-java entry point uses: the file if one is
     * named (non-null and non-empty), else {@value #ENV} in env (pass
     * System.getenv()). Keys never come from a command line or a property.
     */
    public static MasterKey resolve(String file, Map<String, String> env) {
        return file != null && !file.isEmpty() ? load(Path.of(file)) : fromEnvironment(env);
    }

    /** A new random master key (tests, and new deployments' tooling). */
    public static MasterKey generate() {
        return new MasterKey(Crypto.random(32));
    }

    @Override
    public String provider() {
        return "local";
    }

    @Override
    public String keyId() {
        return keyId;
    }

    @Override
    public byte[] encrypt(byte[] plaintext, Map<String, String> context) {
        byte[] nonce = Crypto.random(12);
        return Wire.concat(nonce, Crypto.seal(Algorithm.AES_256_GCM, key, nonce, plaintext, canonical(context)));
    }

    @Override
    public byte[] decrypt(byte[] ciphertext, Map<String, String> context) {
        if (ciphertext.length < 28) {
            throw new WardException.Authentication("a wrapped key too short");
        }
        try {
            return Crypto.open(Algorithm.AES_256_GCM, key, Arrays.copyOf(ciphertext, 12), Arrays.copyOfRange(ciphertext, 12, ciphertext.length), canonical(context));
        } catch (WardException.Authentication e) {
            throw new WardException.Authentication("the master key does not unwrap this key");
        }
    }

    /** The canonical encryption context: a count, then each pair sorted by key bytes. */
    static byte[] canonical(Map<String, String> context) {
        TreeMap<String, String> sorted = new TreeMap<>((a, b) -> Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8), b.getBytes(StandardCharsets.UTF_8)));
        sorted.putAll(context);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        Wire.uvarint(out, sorted.size());
        sorted.forEach((k, v) -> {
            Wire.lp(out, k);
            Wire.lp(out, v);
        });
        return out.toByteArray();
    }

    static byte[] sha256(byte[] b) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(b);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public String toString() {
        return "MasterKey(" + keyId + ")";
    }
}
