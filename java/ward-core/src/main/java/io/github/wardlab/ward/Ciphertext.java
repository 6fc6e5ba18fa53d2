package io.github.wardlab.ward;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Base64;

/**
 * Ciphertext v3 and v4 (FORMAT.md): the header, the context check, sealing
 * and opening, and the text form ({@code w4:} and base64url). Values of v1
 * and v2, which the Go library and the Python package still read, are
 * refused with {@link WardException.UnsupportedVersion}: re-seal them with
 * {@code ward reseal} first.
 */
public final class Ciphertext {
    private Ciphertext() {}

    /** Key class 1: a keyring key. */
    public static final int CLASS_KEYRING = 1;
    /** Key class 2: a subject's own key. */
    public static final int CLASS_SUBJECT = 2;

    static final int HEADER = 11;
    static final int V4_AD_HEADER = 7;
    private static final byte[] V3_CHECK_INFO = "ward ciphertext v3 context check".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] V4_CHECK_INFO = "ward ciphertext v4 context check".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] V4_SCOPE_INFO = "ward ciphertext v4 scope\0".getBytes(StandardCharsets.US_ASCII);

    /** A parsed header. */
    record Header(int version, int keyClass, Algorithm alg, long keyId, byte[] check, int nonceEnd) {}

    /** Parses the header of a binary v3 or v4 ciphertext. */
    static Header header(byte[] ct) {
        if (ct.length == 0) {
            throw new WardException.Malformed("an empty ciphertext");
        }
        int v = ct[0] & 0xff;
        if (v == 1 || v == 2) {
            throw new WardException.UnsupportedVersion("ciphertext v" + v + " is read by the Go library and the Python package only: re-seal it (ward reseal)");
        }
        if (v != 3 && v != 4) {
            throw new WardException.UnsupportedVersion("ciphertext version " + v);
        }
        if (ct.length < HEADER) {
            throw new WardException.Malformed("ciphertext truncated");
        }
        int cls = ct[1] & 0xff;
        if (cls != CLASS_KEYRING && cls != CLASS_SUBJECT) {
            throw new WardException.UnsupportedVersion("key class " + cls);
        }
        Algorithm alg = Algorithm.ofCode(ct[2] & 0xff);
        Header h = new Header(v, cls, alg, Wire.u32(ct, 3), Arrays.copyOfRange(ct, 7, 11), HEADER + alg.nonceSize());
        if (ct.length < h.nonceEnd() + Algorithm.TAG_SIZE) {
            throw new WardException.Malformed("ciphertext truncated");
        }
        return h;
    }

    /** The version byte of a binary ciphertext (3 or 4), after parsing its header. */
    public static int version(byte[] ct) {
        return header(ct).version();
    }

    /** The key ID (class 1) or subject key version (class 2) a ciphertext names. */
    public static long keyId(byte[] ct) {
        return header(ct).keyId();
    }

    /** K_scope of ciphertext v4: HKDF-SHA-256(K, info = label 0 ‖ scope). */
    static byte[] scopedKey(Algorithm alg, byte[] material, byte[] scope) {
        return Crypto.hkdf(material, null, Wire.concat(V4_SCOPE_INFO, scope), alg.keySize());
    }

    /** The 4-byte context check of v3 and v4 under a check key. */
    static byte[] check(Algorithm alg, byte[] checkKey, byte[] nonce, byte[] context) {
        if (alg == Algorithm.XCHACHA20_POLY1305) {
            return Arrays.copyOf(Crypto.seal(alg, checkKey, nonce, new byte[0], context), 4);
        }
        byte[] block = Crypto.aesBlock(checkKey, Arrays.copyOf(nonce, 16));
        byte[] out = new byte[4];
        Wire.putU32(out, 0, Crypto.crc32c(context) ^ Wire.u32(block, 0));
        return out;
    }

    /** K_check of a v4 K_scope. */
    static byte[] v4CheckKey(Algorithm alg, byte[] kScope) {
        return Crypto.hkdf(kScope, null, V4_CHECK_INFO, alg.keySize());
    }

    private static byte[] checkKey(Header h, byte[] key) {
        return Crypto.hkdf(key, null, h.version() == 4 ? V4_CHECK_INFO : V3_CHECK_INFO, h.alg().keySize());
    }

    /**
     * Opens ct, whose header is h, under key (K_scope for v4, the key's
     * material for v3), bound to context; a failure says whether the value
     * is damaged or belongs elsewhere.
     */
    static byte[] open(byte[] ct, Header h, byte[] key, byte[] context) {
        byte[] nonce = Arrays.copyOfRange(ct, HEADER, h.nonceEnd());
        byte[] ad = Wire.concat(Arrays.copyOf(ct, h.version() == 4 ? V4_AD_HEADER : HEADER), context);
        try {
            return Crypto.open(h.alg(), key, nonce, ct, h.nonceEnd(), ct.length - h.nonceEnd(), ad);
        } catch (WardException.Authentication e) {
            if (MessageDigest.isEqual(check(h.alg(), checkKey(h, key), nonce, context), h.check())) {
                throw new WardException.Authentication("the value was damaged: it fails authentication under its own context");
            }
            throw new WardException.WrongContext("the value belongs to another row, column, owner or key");
        }
    }

    /**
     * A v4 ciphertext under K_scope: AD = 7 header bytes ‖ context; the
     * check after, under kCheck ({@link #v4CheckKey}, which callers keep).
     */
    static byte[] sealV4(Algorithm alg, int keyClass, long keyId, byte[] kScope, byte[] kCheck, byte[] plaintext, byte[] context) {
        byte[] head = new byte[V4_AD_HEADER];
        head[0] = 4;
        head[1] = (byte) keyClass;
        head[2] = (byte) alg.code();
        Wire.putU32(head, 3, keyId);
        byte[] nonce = Crypto.random(alg.nonceSize());
        // One array, sealed into in place: header, check, nonce, sealed bytes.
        byte[] out = new byte[HEADER + nonce.length + plaintext.length + Crypto.TAG];
        System.arraycopy(head, 0, out, 0, V4_AD_HEADER);
        System.arraycopy(check(alg, kCheck, nonce, context), 0, out, V4_AD_HEADER, HEADER - V4_AD_HEADER);
        System.arraycopy(nonce, 0, out, HEADER, nonce.length);
        Crypto.sealInto(alg, kScope, nonce, plaintext, Wire.concat(head, context), out, HEADER + nonce.length);
        return out;
    }

    /**
     * A v3 ciphertext under a key's material (a keyring key, or a subject
     * key): the check under the v3 check key, AD = 11 header bytes ‖ context
     * (field context v3), as the Go library writes while a process of the
     * fleet reads v3 only.
     */
    static byte[] sealV3(Algorithm alg, int keyClass, long keyId, byte[] material, byte[] plaintext, byte[] context) {
        byte[] nonce = Crypto.random(alg.nonceSize());
        byte[] head = new byte[HEADER];
        head[0] = 3;
        head[1] = (byte) keyClass;
        head[2] = (byte) alg.code();
        Wire.putU32(head, 3, keyId);
        byte[] checkKey = Crypto.hkdf(material, null, V3_CHECK_INFO, alg.keySize());
        System.arraycopy(check(alg, checkKey, nonce, context), 0, head, V4_AD_HEADER, HEADER - V4_AD_HEADER);
        byte[] out = new byte[HEADER + nonce.length + plaintext.length + Crypto.TAG];
        System.arraycopy(head, 0, out, 0, HEADER);
        System.arraycopy(nonce, 0, out, HEADER, nonce.length);
        Crypto.sealInto(alg, material, nonce, plaintext, Wire.concat(head, context), out, HEADER + nonce.length);
        return out;
    }

    /** The text form: {@code w<version>:} and unpadded base64url of ct. */
    public static String toText(byte[] ct) {
        return "w" + header(ct).version() + ":" + Base64.getUrlEncoder().withoutPadding().encodeToString(ct);
    }

    /**
     * The binary form of a text-form ciphertext, decoded strictly: the
     * prefix, then only base64url characters, unpadded and canonical, and
     * the prefix's digit equal to the version byte.
     */
    public static byte[] fromText(String text) {
        if (text.length() < 4 || text.charAt(0) != 'w' || text.charAt(2) != ':' || text.charAt(1) < '1' || text.charAt(1) > '9') {
            throw new WardException.Malformed("not a ward ciphertext text form");
        }
        String body = text.substring(3);
        for (int i = 0; i < body.length(); i++) {
            char c = body.charAt(i);
            boolean ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
            if (!ok) {
                throw new WardException.Malformed("a character outside base64url in a text form");
            }
        }
        byte[] ct;
        try {
            ct = Base64.getUrlDecoder().decode(body);
        } catch (IllegalArgumentException e) {
            throw new WardException.Malformed("a text form that is not base64url");
        }
        if (!Base64.getUrlEncoder().withoutPadding().encodeToString(ct).equals(body)) {
            throw new WardException.Malformed("a text form that is not canonical base64url");
        }
        if (ct.length == 0 || (ct[0] & 0xff) != text.charAt(1) - '0') {
            throw new WardException.Malformed("a text form whose prefix does not name its version");
        }
        return ct;
    }

    /** A stored value in either form: text if it starts with {@code w}, else binary. */
    public static byte[] decode(byte[] stored) {
        if (stored.length > 0 && stored[0] == 'w') {
            return fromText(new String(stored, StandardCharsets.US_ASCII));
        }
        return stored;
    }
}
