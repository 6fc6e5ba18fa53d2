package io.github.wardlab.ward;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import java.util.Map;

/**
 * Envelope ciphertext v1 (FORMAT.md, "Envelope ciphertext v1"; Go's
 * {@code kms.Envelope}, {@code ward encrypt --envelope}): a value sealed
 * under a fresh AES-256 data key that the key service (a master key, AWS
 * KMS) wraps, bound to the caller's context (a field context, say) and to
 * an encryption context the key service binds as well. No keyring: each
 * seal calls the key service once, each open once (Go's data-key cache is
 * not kept here).
 */
public final class Envelope {
    /** The format's first byte. */
    public static final int VERSION = 0x81;
    /** The text form's prefix. */
    public static final String TEXT_PREFIX = "e1:";
    /** The longest wrapped data key read: a longer one is refused before any work. */
    public static final int MAX_WRAPPED_KEY = 1024;

    private static final int AES_256_GCM = 0x02, NONCE = 12, TAG = 16;
    private static final SecureRandom RANDOM = new SecureRandom();

    private Envelope() {}

    /** Seals plaintext under a new data key that ks wraps with the encryption context; binds context too. */
    public static byte[] seal(KeyService ks, byte[] plaintext, byte[] context, Map<String, String> encryptionContext) {
        byte[] dataKey = new byte[32];
        RANDOM.nextBytes(dataKey);
        try {
            byte[] wrapped = ks.encrypt(dataKey, encryptionContext);
            if (wrapped.length == 0 || wrapped.length > MAX_WRAPPED_KEY) {
                throw new WardException.Malformed("the key service returned a wrapped key of " + wrapped.length + " bytes");
            }
            ByteArrayOutputStream h = new ByteArrayOutputStream();
            h.write(VERSION);
            h.write(wrapped.length >>> 8);
            h.write(wrapped.length);
            h.writeBytes(wrapped);
            h.write(AES_256_GCM);
            byte[] header = h.toByteArray(), nonce = new byte[NONCE];
            RANDOM.nextBytes(nonce);
            byte[] sealed = Crypto.seal(Algorithm.AES_256_GCM, dataKey, nonce, plaintext, ad(header, context, encryptionContext));
            return Wire.concat(header, nonce, sealed);
        } finally {
            Arrays.fill(dataKey, (byte) 0);
        }
    }

    /** Opens an envelope (binary or text form) with the key service that wrapped its data key, under the same contexts. */
    public static byte[] open(KeyService ks, byte[] envelope, byte[] context, Map<String, String> encryptionContext) {
        byte[] env = decode(envelope);
        int n = wrappedLength(env);
        if (env.length < 4 + n + NONCE + TAG || (env[3 + n] & 0xff) != AES_256_GCM) {
            throw new WardException.Malformed("an envelope too short, or of an unknown algorithm");
        }
        byte[] header = Arrays.copyOf(env, 4 + n);
        byte[] dataKey = ks.decrypt(Arrays.copyOfRange(env, 3, 3 + n), encryptionContext);
        try {
            if (dataKey.length != 32) {
                throw new WardException.Malformed("the key service returned a data key of " + dataKey.length + " bytes");
            }
            return Crypto.open(Algorithm.AES_256_GCM, dataKey, Arrays.copyOfRange(env, 4 + n, 4 + n + NONCE),
                    Arrays.copyOfRange(env, 4 + n + NONCE, env.length), ad(header, context, encryptionContext));
        } finally {
            Arrays.fill(dataKey, (byte) 0);
        }
    }

    /** Whether stored is an envelope: the text form's prefix, or the binary form's first byte. */
    public static boolean isEnvelope(byte[] stored) {
        String t = new String(stored, 0, Math.min(stored.length, 8), StandardCharsets.ISO_8859_1).strip();
        return t.startsWith(TEXT_PREFIX) || (stored.length > 0 && (stored[0] & 0xff) == VERSION);
    }

    /** The text form: {@code e1:} and unpadded base64url. */
    public static String toText(byte[] envelope) {
        return TEXT_PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(envelope);
    }

    private static byte[] decode(byte[] stored) {
        String t = new String(stored, StandardCharsets.ISO_8859_1).strip();
        if (!t.startsWith(TEXT_PREFIX)) {
            return stored;
        }
        String b64 = t.substring(TEXT_PREFIX.length());
        if (b64.contains("=") || b64.length() > (64 << 20)) {
            throw new WardException.Malformed("an envelope's text form is unpadded base64url");
        }
        try {
            return Base64.getUrlDecoder().decode(b64);
        } catch (IllegalArgumentException e) {
            throw new WardException.Malformed("an envelope's text form is unpadded base64url");
        }
    }

    private static int wrappedLength(byte[] env) {
        if (env.length < 3 || (env[0] & 0xff) != VERSION) {
            throw new WardException.UnsupportedVersion("not an envelope of version 1");
        }
        int n = ((env[1] & 0xff) << 8) | (env[2] & 0xff);
        if (n < 1 || n > MAX_WRAPPED_KEY) {
            throw new WardException.Malformed("an envelope's wrapped key of " + n + " bytes");
        }
        return n;
    }

    /** header ‖ uvarint(len(context)) ‖ context ‖ the canonical encryption context. */
    private static byte[] ad(byte[] header, byte[] context, Map<String, String> encryptionContext) {
        ByteArrayOutputStream ad = new ByteArrayOutputStream();
        ad.writeBytes(header);
        Wire.uvarint(ad, context.length);
        ad.writeBytes(context);
        ad.writeBytes(MasterKey.canonical(encryptionContext));
        return ad.toByteArray();
    }
}
